#include "cmd/launch/launcher.h"

#include <signal.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <thread>

#include "cmd/launch/job_summary.h"

namespace fabps::launch {
namespace {

std::atomic<int> g_signal{0};
void OnSignal(int sig) { g_signal = sig; }

// The live display animates on a terminal only (not in a log, a pipe, CI,
// or a terminal that says it cannot move the cursor).
bool StdoutIsATerminal() {
  const char* term = std::getenv("TERM");
  return ::isatty(STDOUT_FILENO) != 0 &&
         (term == nullptr || std::string(term) != "dumb");
}

size_t TerminalColumns() {
  winsize ws{};
  if (::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
    return ws.ws_col;
  return 0;
}

}  // namespace

void InstallStopSignals() {
  signal(SIGINT, OnSignal);
  signal(SIGTERM, OnSignal);
  signal(SIGPIPE, SIG_IGN);
}

Launcher::Launcher(LaunchFlags flags, ModelSpec* model)
    : f_(std::move(flags)),
      model_(*model),
      run_{f_.run_dir},
      start_(std::chrono::steady_clock::now()),
      display_(f_.passes, StdoutIsATerminal(), TerminalColumns(), stdout,
               model_.metric().label),
      processes_(&f_, &run_, &group_),
      resize_(&f_, &run_, &group_, &processes_,
              [this](const std::string& line) { display_.Note(line); }),
      metrics_(&run_, f_.trainers, model_.metric().key,
               [this](int64_t pass, double metric) {
                 display_.SetAccuracy(pass, metric);
               }),
      publisher_(&f_, model_.metric().label, &group_) {
  if (f_.kill_seed == 0) {
    std::random_device rd;
    f_.kill_seed = (uint64_t{rd()} << 32 | rd()) | 1;
  }
  SupervisorOptions so;
  so.restarts_per_role = f_.restarts_per_role;
  so.before_restart = [this](const std::string& name) {
    // A waiter (and the status poll) must see the new port only.
    ::unlink(run_.PortFile(name).c_str());
  };
  so.note = [this](const std::string& line) { display_.Note(line); };
  sup_ = std::make_unique<Supervisor>(&group_, so);
  answers_.Assign(f_.pservers);
  injector_ = std::make_unique<FaultInjector>(
      &f_, &run_, &group_, sup_.get(),
      [this](const std::string& line) { display_.Note(line); });
  watchdog_ = std::make_unique<JobWatchdog>(&f_, &run_, &group_, sup_.get(),
                                            &answers_, &progress_watch_);
  publisher_.Watch(sup_.get(), watchdog_.get(), &answers_);
}

Launcher::~Launcher() = default;

JobProgress Launcher::Progress() const {
  JobProgress p;
  p.sample = last_sample_;
  p.provider = poller_ ? poller_->provider_seen() : "";
  p.store_spec = processes_.store_spec();
  p.passes = &metrics_.passes();
  p.rates = &rates_;
  p.samples = metrics_.Samples();
  return p;
}

Status Launcher::Start() {
  FABPS_RETURN_IF_ERROR(publisher_.Start(Progress()));
  ModelContext ctx{
      f_, run_, "",
      [this](const std::string& name, const std::vector<std::string>& argv) {
        return processes_.RunHelper(name, argv);
      }};
  FABPS_RETURN_IF_ERROR(model_.PrepareData(ctx));
  FABPS_RETURN_IF_ERROR(processes_.StartStore());
  FABPS_RETURN_IF_ERROR(resize_.ReshardIfCountChanged());
  FABPS_RETURN_IF_ERROR(processes_.StartMasters());
  FABPS_RETURN_IF_ERROR(processes_.StartPservers());
  return processes_.StartTrainers(model_);
}

void Launcher::ReadProgress() {
  metrics_.Read();
  if (!poller_) {
    poller_ = std::make_unique<ProgressPoller>(
        &f_, &run_, processes_.store_spec(), &answers_, &progress_watch_);
  }
  last_sample_ = poller_->Poll(metrics_);
  display_.Update(last_sample_);
  rates_.Add(
      {std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
           .count(),
       last_sample_.samples_per_sec, last_sample_.updates_per_sec,
       last_sample_.loss});
}

bool Launcher::Step(int* code) {
  if (g_signal != 0) {
    display_.Finish(false);
    *code = Finish(false, "interrupted: stopped every process");
    return false;
  }
  ReadProgress();
  Status s = watchdog_->Check(group_.Reap(), poller_->master());
  if (!s.ok()) {
    metrics_.Read();  // what the trainers wrote before the failure
    display_.Finish(false);
    *code = Finish(false, s.message());
    return false;
  }
  if (watchdog_->AllFinished()) {
    // A trainer may have written its last pass line (with the test metric)
    // after the read above and exited before the reap: read what the
    // finished trainers left.
    metrics_.Read();
    display_.Finish(true);
    *code = Finish(true, "");
    return false;
  }
  injector_->MaybeKill(metrics_.Samples());
  switch (resize_.MaybeResize(sup_.get())) {
    case PserverResize::Outcome::kResized:
      progress_watch_.Reset();
      [[fallthrough]];
    case PserverResize::Outcome::kFailed:
      answers_.Assign(f_.pservers);
      break;
    default:
      break;
  }
  publisher_.Publish(Progress());
  return true;
}

int Launcher::Run() {
  std::filesystem::create_directories(f_.run_dir);
  std::printf(
      "fabps-launch: %d pservers, %d trainers, provider %s, %d passes; run dir "
      "%s\n",
      f_.pservers, f_.trainers, f_.provider.c_str(), f_.passes,
      f_.run_dir.c_str());
  if (f_.kill_random > 0) {
    std::printf("fault injection seed: %llu (--kill-seed replays it)\n",
                static_cast<unsigned long long>(f_.kill_seed));
  }
  Status s = Start();
  if (!s.ok()) return Finish(false, s.ToString());
  progress_watch_.Reset();
  answers_.ResetAll();
  int code = 0;
  while (Step(&code))
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  return code;
}

int Launcher::Finish(bool ok, const std::string& why) {
  // The hashed tables as the job left them, before the pservers stop (a
  // failed job keeps the last poll's).
  if (ok && poller_) poller_->AskPservers();
  // Pservers checkpoint on SIGTERM and record the checkpoint and release
  // their claims in the store: a job's own etcd stops only after them (a
  // store stopped beside them made each of those calls wait for its
  // timeout, and left the last checkpoint unrecorded).
  group_.StopAll(15000, "etcd");
  if (group_.Find("etcd") != nullptr) group_.Stop("etcd", 5000);
  publisher_.Publish(Progress(), ok ? "finished" : "failed", why);
  JobSummary sum;
  sum.ok = ok;
  sum.why = why;
  sum.seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_)
          .count();
  sum.provider = poller_ && !poller_->provider_seen().empty()
                     ? poller_->provider_seen()
                     : f_.provider;
  sum.store_spec = processes_.store_spec();
  sum.pservers = f_.pservers;
  sum.trainers = f_.trainers;
  sum.tls = std::getenv("FABPS_TLS_CERT") != nullptr;
  sum.passes = metrics_.passes();
  sum.metric_title = model_.metric().title;
  if (!sum.passes.empty())
    sum.model_note = model_.SummaryNote(sum.passes.rbegin()->second.metric);
  if (poller_) sum.tables = poller_->hashed_tables();
  sum.kills = injector_->log();
  sum.restarts = sup_->log();
  sum.kill_random = f_.kill_random;
  sum.kills_done = injector_->kills_done();
  sum.kill_seed = f_.kill_seed;
  sum.run_dir = f_.run_dir;
  if (ok && ::access(run_.ModelFile().c_str(), F_OK) == 0)
    sum.model_file = run_.ModelFile();
  PrintJobSummary(sum, stdout);
  if (publisher_.on() && f_.status_linger_s > 0 && g_signal == 0) {
    std::printf(
        "status page: serving the final state for %.0f s more "
        "(--status-linger; Ctrl-C ends it)\n",
        f_.status_linger_s);
    std::fflush(stdout);
    auto end = std::chrono::steady_clock::now() +
               std::chrono::duration<double>(f_.status_linger_s);
    while (g_signal == 0 && std::chrono::steady_clock::now() < end)
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return ok ? 0 : 1;
}

}  // namespace fabps::launch
