#!/usr/bin/env bash
# Runs fabps_pushpull_bench beside fabps_fabric_bench's RMA write bandwidth on
# the same provider in the same run, and prints (bench/README.md, "Push and
# pull") push+pull GB/s at SIZES MiB (1 trainer, 1 pserver) and at 64 MiB
# with 2 trainers x 2 pservers, against issue 15's targets: on tcp;ofi_rxm
# >= 0.6x the 4 MiB RMA write at 4 MiB and >= 0.9x at 16 and 64; on shm
# >= 1.5x tcp's figure at every size; 2 x 2 >= 1 x 1 (no collapse).
# With PIPELINED=1 (the default) every configuration also runs with
# --pipelined (each step one PushPull: a block's read starts at its credit),
# printed as its own rows ("PushPull") and compared like with like.
# Everything is measured REPEAT times, the providers alternating round by
# round, and medians are compared. With SWEEP=1 it also prints the whole sweep
# (model sizes x trainers x pservers, each the median of REPEAT runs, with
# their spread). Every run measures at least 2 s (--min-seconds).
# Usage: bench/run_pushpull_bench.sh [BUILD_DIR] [PROVIDER ...]
# Environment: REPEAT (3), SIZES (4,16,64,256), PIPELINED (1), SWEEP (0),
# QUICK (0: with SWEEP, the --quick sweep), APPLY_THREADS (0: the pserver's
# default, all cores).
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
build="${1:-$root/build}"
shift || true
providers=("$@")
[ ${#providers[@]} -eq 0 ] && providers=("tcp;ofi_rxm" "shm")
repeat="${REPEAT:-3}"
sizes="${SIZES:-4,16,64,256}"
apply_threads="${APPLY_THREADS:-0}"
modes=("")
[ "${PIPELINED:-1}" = "1" ] && modes+=("--pipelined")
fabric="$build/bench/transport/fabps_fabric_bench"
pushpull="$build/bench/trainer/fabps_pushpull_bench"
for b in "$fabric" "$pushpull"; do
  [ -x "$b" ] || { echo "build first: $b missing" >&2; exit 1; }
done
py=/usr/bin/python3
out="$(mktemp -d)"
pids=()
cleanup() { for p in "${pids[@]:-}"; do [ -n "$p" ] && kill "$p" 2>/dev/null || true; done; }
trap 'cleanup; rm -rf "$out"' EXIT

free_port() { $py -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# RMA write GB/s at 4 MiB: a server and a client of fabps_fabric_bench.
rma_write_gbs() {
  local prov="$1" port spid
  port="$(free_port)"
  "$fabric" -p "$prov" -t write_bw -S 4194304 -W 16 -P "$port" --json >"$out/srv" 2>&1 &
  spid=$!; pids+=("$spid")
  sleep 0.3
  timeout 300 "$fabric" -p "$prov" -t write_bw -S 4194304 -W 16 -P "$port" --json 127.0.0.1 |
    $py -c 'import json,sys; r=[json.loads(l) for l in sys.stdin if l.startswith("{")]; print(r[-1]["MB_per_sec"]/1000)'
  wait "$spid" 2>/dev/null || true
}

# The JSON rows of one run: 1 trainer x 1 pserver at $sizes, then 2 x 2 at
# 64 MiB; each row tagged with the provider's round and its RMA write.
pushpull_rows() {
  local prov="$1" round="$2" rma="$3" mode
  for mode in "${modes[@]}"; do
    timeout 600 "$pushpull" -p "$prov" --sizes "$sizes" --trainers 1 --pservers 1 \
      --repeat 1 --apply-threads "$apply_threads" --json $mode
    timeout 600 "$pushpull" -p "$prov" --sizes 64 --trainers 2 --pservers 2 \
      --repeat 1 --apply-threads "$apply_threads" --json $mode
  done | grep '^{' | $py -c 'import json,sys
for l in sys.stdin:
    r = json.loads(l); r["round"] = int(sys.argv[1]); r["rma_GBps"] = float(sys.argv[2])
    print(json.dumps(r))' "$round" "$rma"
}

echo "<!-- $(date -u '+%Y-%m-%d %H:%M UTC'), $(nproc) cores, load: $(cut -d' ' -f1-3 /proc/loadavg), REPEAT=$repeat, APPLY_THREADS=$apply_threads -->"
# Rounds alternate the providers, so that each provider's runs spread over
# the same minutes.
for ((i = 0; i < repeat; i++)); do
  for prov in "${providers[@]}"; do
    pushpull_rows "$prov" "$i" "$(rma_write_gbs "$prov")" >>"$out/rows"
  done
done
$py - "$out/rows" <<'PY'
import collections, json, statistics, sys

rows = [json.loads(l) for l in open(sys.argv[1])]
med = statistics.median
runs = lambda v: ", ".join(f"{x:.2f}" for x in v)
by = collections.defaultdict(list)  # (provider, MiB, trainers) -> rows
rma = collections.defaultdict(dict)  # provider -> round -> GB/s
for r in rows:
    rma[r["provider"]][r["round"]] = r["rma_GBps"]
    # A pipelined run is its own series ("PushPull"), against its own kind.
    if r.get("pipelined"):
        r["provider"] += " PushPull"
    by[(r["provider"], r["mib"], r["trainers"])].append(r)
provs = list(dict.fromkeys(r["provider"] for r in rows))
tcp = "tcp;ofi_rxm"
# The issue 15 targets: tcp push+pull against its own 4 MiB RMA write; shm
# against tcp in the same run; 2 x 2 against 1 x 1 (no collapse).
tcp_target = {4: 0.6, 16: 0.9, 64: 0.9}
# Push and pull are timed apart only when they are separate calls.
push_pull = lambda rs: ("-" if rs[0].get("pipelined") else
                        f"{med(r['push_GBps'] for r in rs):.2f} / "
                        f"{med(r['pull_GBps'] for r in rs):.2f}")
print("| provider | MiB | trainers x pservers | push+pull GB/s (runs) | median | push / pull GB/s | step ms | RMA write 4 MiB GB/s | / RMA write | / tcp | target |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
for p in provs:
    base = p.replace(" PushPull", "")
    tcp_of_p = tcp + p[len(base):]  # tcp of the same kind (PushPull or not)
    m_rma = med(rma[base].values())
    for (prov, mib, t), rs in sorted(by.items(), key=lambda kv: (kv[0][2], kv[0][1])):
        if prov != p:
            continue
        pp = [r["pushpull_GBps"] for r in rs]
        m = med(pp)
        vs_rma = m / m_rma
        vs_tcp = ""
        target = ""
        if t == 1 and (tcp_of_p, mib, 1) in by and p != tcp_of_p:
            m_tcp = med(r["pushpull_GBps"] for r in by[(tcp_of_p, mib, 1)])
            vs_tcp = f"{m / m_tcp:.2f}x"
            if base == "shm":
                target = ">= 1.5x tcp: " + ("met" if m >= 1.5 * m_tcp else "not met")
        if t == 1 and p == tcp_of_p and mib in tcp_target:
            want = tcp_target[mib]
            target = f">= {want}x RMA write: " + ("met" if vs_rma >= want else "not met")
        if t == 2:
            one = by.get((p, mib, 1))
            if one:
                m_one = med(r["pushpull_GBps"] for r in one)
                target = f">= 1 x 1 ({m_one:.2f}): " + ("met" if m >= m_one else "not met")
        print(f"| {p} | {mib} | {t} x {rs[0]['pservers']} | {runs(pp)} | **{m:.2f}** | "
              f"{push_pull(rs)} | "
              f"{med(r['step_ms'] for r in rs):.1f} | {m_rma:.2f} ({runs(rma[base].values())}) | "
              f"{vs_rma:.2f}x | {vs_tcp} | {target} |")
PY

[ "${SWEEP:-0}" = "1" ] || exit 0
quick=()
[ "${QUICK:-0}" = "1" ] && quick=(--quick)
echo
echo "<!-- sweep: $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
printf "| provider | MiB | trainers | pservers | push GB/s | pull GB/s | push+pull GB/s | step ms | spread |\n"
printf "|---|---|---|---|---|---|---|---|---|\n"
for prov in "${providers[@]}"; do
  timeout 3600 "$pushpull" -p "$prov" --repeat "$repeat" --apply-threads "$apply_threads" \
    "${quick[@]}" --json | grep '^{' |
    $py -c 'import json,sys
for l in sys.stdin:
    print("| {provider} | {mib} | {trainers} | {pservers} | {push_GBps:.2f} | {pull_GBps:.2f} | "
          "{pushpull_GBps:.2f} | {step_ms:.1f} | {spread:.0%} |".format(**json.loads(l)))'
done
echo "<!-- end: $(date -u '+%H:%M UTC'), load: $(cut -d' ' -f1-3 /proc/loadavg) -->"
