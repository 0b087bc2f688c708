#include "cmd/launch/job_summary.h"

namespace fabps::launch {

void PrintJobSummary(const JobSummary& s, std::FILE* out) {
  std::fprintf(out, "\n== fabps job %s in %.1f s ==\n",
               s.ok ? "finished" : "FAILED", s.seconds);
  if (!s.why.empty()) std::fprintf(out, "%s\n", s.why.c_str());
  std::fprintf(out,
               "provider: %s | %d pservers, %d trainers | store: %s | "
               "control plane: %s\n",
               s.provider.c_str(), s.pservers, s.trainers, s.store_spec.c_str(),
               s.tls ? "TLS" : "TCP");
  if (!s.passes.empty()) {
    std::fprintf(out, "%-6s %-10s %-14s %s\n", "pass", "loss",
                 s.metric_title.c_str(), "seconds");
    for (const auto& [p, r] : s.passes) {
      std::fprintf(out, "%-6d %-10.4f %-14.4f %.1f\n", p + 1, r.loss, r.metric,
                   r.seconds);
    }
  }
  if (!s.model_note.empty()) std::fprintf(out, "%s\n", s.model_note.c_str());
  for (const HashedTableSummary& t : s.tables) {
    std::fprintf(out,
                 "hashed table %s: %lld rows held (%.1f MiB on %d pservers), "
                 "%lld admitted, %lld evicted (ttl %lld, budget %lld), %lld "
                 "pushed rows not admitted\n",
                 t.name.c_str(), static_cast<long long>(t.rows),
                 static_cast<double>(t.bytes) / (1 << 20), t.pservers,
                 static_cast<long long>(t.admitted),
                 static_cast<long long>(t.evicted_ttl + t.evicted_budget),
                 static_cast<long long>(t.evicted_ttl),
                 static_cast<long long>(t.evicted_budget),
                 static_cast<long long>(t.not_admitted));
  }
  for (const auto& k : s.kills)
    std::fprintf(out, "fault injected: %s\n", k.c_str());
  for (const auto& r : s.restarts)
    std::fprintf(out, "supervisor: %s\n", r.c_str());
  if (s.kill_random > 0)
    std::fprintf(out, "fault injection seed: %llu (--kill-seed replays it)\n",
                 static_cast<unsigned long long>(s.kill_seed));
  if (s.kills_done < s.kill_random)
    std::fprintf(out,
                 "fault injection: %d of %d kills done before the job ended\n",
                 s.kills_done, s.kill_random);
  std::fprintf(out,
               "run directory: %s (logs: *.log, metrics: trainer-*.metrics)\n",
               s.run_dir.c_str());
  std::fprintf(out, "checkpoints:   %s/checkpoints\n", s.run_dir.c_str());
  if (!s.model_file.empty())
    std::fprintf(out, "model:         %s\n", s.model_file.c_str());
  std::fflush(out);
}

}  // namespace fabps::launch
