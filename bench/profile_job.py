#!/usr/bin/python3
"""Where a fabps job's CPU goes: per thread, per role, and (with --perf) per
function.

Runs one fabps-launch job (Fashion-MNIST, 2 pservers x 2 trainers on
tcp;ofi_rxm unless told otherwise), waits until training has run for
--settle seconds, then measures a window of --window seconds while the job
trains: the user and system CPU seconds of every thread of every job
process (/proc/<pid>/task/<tid>/stat; threads are named, e.g.
fabps-progress, fabps-apply, fabps-rpc), their context switches (voluntary:
the thread blocked; involuntary: it was preempted), and the samples the job
trained meanwhile. With --perf, `perf record -g` samples the same processes
over the same window and the top functions per role are printed (kernel
symbols need root or kernel.perf_event_paranoid <= 1).

  bench/profile_job.py --build-dir build --perf
  bench/profile_job.py -- --provider shm --passes 4

Everything after `--` goes to fabps-launch. The machine's load is printed:
these machines are noisy, so compare runs made side by side.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "..", "tests", "infra"))
from job_procs import job_processes, thread_times, training_started  # noqa


def samples_trained(run_dir):
    """Samples the job's trainers reported so far: per trainer and pass, the
    largest count its progress and pass lines gave (a pass restarts it)."""
    total = 0
    for name in os.listdir(run_dir):
        if not (name.startswith("trainer-") and name.endswith(".metrics")):
            continue
        per_pass = {}
        with open(os.path.join(run_dir, name), errors="replace") as f:
            for line in f:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue  # a line being written
                if not isinstance(e, dict) or e.get("event") not in (
                        "progress", "pass"):
                    continue
                key = e.get("pass", 0)
                per_pass[key] = max(per_pass.get(key, 0),
                                    int(e.get("samples", 0)))
        total += sum(per_pass.values())
    return total


def snapshot(run_dir):
    """{(role, pid, tid): (name, user, sys, vol, invol)} of the job now."""
    snap = {}
    for role, pids in job_processes(run_dir).items():
        for pid in pids:
            for tid, t in thread_times(pid).items():
                snap[(role, pid, tid)] = t
    return snap


def thread_table(before, after, window):
    """Rows (role, thread name, threads, user s, sys s, vol, invol) summed
    over processes of a role, for threads that lived through the window."""
    rows = {}
    for key, a in after.items():
        b = before.get(key)
        if b is None:
            continue
        role = key[0]
        r = rows.setdefault((role, a[0]), [0, 0.0, 0.0, 0, 0])
        r[0] += 1
        for i in range(1, 5):
            r[i] += a[i] - b[i]
    out = [(role, name) + tuple(v) for (role, name), v in rows.items()]
    out.sort(key=lambda r: -(r[3] + r[4]))
    return out


def print_tables(rows, window, samples, load):
    cores = os.cpu_count()
    print("<!-- %s UTC, %d cores, window %.1f s, load before/after: %s -->" %
          (time.strftime("%Y-%m-%d %H:%M", time.gmtime()), cores, window,
           load))
    print("| role | thread | threads | user s | sys s | share of the "
          "machine | voluntary switches/s | involuntary/s |")
    print("|---|---|---|---|---|---|---|---|")
    for role, name, n, user, system, vol, invol in rows:
        if user + system < 0.005 and vol + invol < window:
            continue  # idle threads
        print("| %s | %s | %d | %.2f | %.2f | %.1f %% | %.0f | %.0f |" %
              (role, name, n, user, system,
               100 * (user + system) / (window * cores), vol / window,
               invol / window))
    print()
    print("| role | CPU s | of it system | share of the machine | CPU ms per "
          "1k samples |")
    print("|---|---|---|---|---|")
    by_role = {}
    for role, _, _, user, system, _, _ in rows:
        r = by_role.setdefault(role, [0.0, 0.0])
        r[0] += user
        r[1] += system
    for role, (user, system) in sorted(by_role.items()):
        cpu = user + system
        per_k = "%.0f" % (1e6 * cpu / samples) if samples > 0 else "-"
        print("| %s | %.2f | %.0f %% | %.1f %% | %s |" %
              (role, cpu, 100 * system / cpu if cpu else 0,
               100 * cpu / (window * cores), per_k))
    print()
    print("samples trained in the window: %d (%.0f/s)" %
          (samples, samples / window))


def perf_report(data, roles_of_tid, top):
    """Top functions per role from `perf report` of `data` (threads that
    started after the window opened count as "other")."""
    out = subprocess.run(
        ["perf", "report", "-i", data, "--no-children", "--stdio",
         "--sort", "pid,sym", "--percent-limit", "0.5", "-g", "none"],
        capture_output=True, text=True)
    per_role = {}
    for line in out.stdout.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "%" not in line:
            continue
        parts = line.split(None, 2)
        if len(parts) < 3:
            continue
        pct, pidcomm, sym = parts
        pid = pidcomm.split(":")[0]
        role = roles_of_tid.get(int(pid) if pid.isdigit() else -1, "other")
        per_role.setdefault(role, []).append((float(pct.rstrip("%")),
                                              sym.strip()))
    for role, items in sorted(per_role.items()):
        agg = {}
        for pct, sym in items:
            agg[sym] = agg.get(sym, 0.0) + pct
        print("top functions, %s (%% of all samples):" % role)
        for sym, pct in sorted(agg.items(), key=lambda x: -x[1])[:top]:
            print("  %5.1f %%  %s" % (pct, sym))


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build-dir", default="build")
    p.add_argument("--data-dir",
                   default=os.path.expanduser("~/.cache/fabps/fashion-mnist"))
    p.add_argument("--settle", type=float, default=3,
                   help="seconds of training before the window opens")
    p.add_argument("--window", type=float, default=8,
                   help="seconds measured")
    p.add_argument("--perf", action="store_true",
                   help="also perf record -g the job's processes")
    p.add_argument("--top", type=int, default=12,
                   help="functions per role in the perf summary")
    p.add_argument("launch_args", nargs="*",
                   help="fabps-launch arguments (after --)")
    args = p.parse_args()
    if args.window <= 0 or args.settle < 0:
        p.error("--window must be > 0 and --settle >= 0")
    launch = os.path.join(os.path.abspath(args.build_dir),
                          "cmd/launch/fabps-launch")
    if not os.access(launch, os.X_OK):
        p.error("%s is missing: build first" % launch)
    if args.perf and shutil.which("perf") is None:
        p.error("--perf: perf is not installed (Debian: linux-perf)")

    work = tempfile.mkdtemp(prefix="fabps-profile-")
    run_dir = os.path.join(work, "run")
    cmd = [launch, "--run-dir", run_dir, "--data-dir", args.data_dir]
    if "--passes" not in args.launch_args:
        cmd += ["--passes", "10"]  # ended after the window
    cmd += args.launch_args
    print("job: %s" % " ".join(cmd), file=sys.stderr)
    out = open(os.path.join(work, "launch.out"), "w")
    job = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                           stdin=subprocess.DEVNULL)
    code = 1
    try:
        deadline = time.monotonic() + 300
        while not training_started(run_dir):
            if job.poll() is not None or time.monotonic() > deadline:
                print("the job did not start training; its output: %s" %
                      os.path.join(work, "launch.out"), file=sys.stderr)
                return 1
            time.sleep(0.1)
        time.sleep(args.settle)
        load_before = open("/proc/loadavg").read().split()[0]
        pids = job_processes(run_dir)
        roles_of_pid = {pid: role for role, ps in pids.items() for pid in ps}
        # perf reports threads by their own id: map those too.
        roles_of_tid = dict(roles_of_pid)
        for pid, role in roles_of_pid.items():
            for tid in thread_times(pid):
                roles_of_tid[tid] = role
        perf = None
        data = os.path.join(work, "perf.data")
        if args.perf:
            perf = subprocess.Popen(
                ["perf", "record", "-g", "-F", "499", "-o", data, "-p",
                 ",".join(str(x) for x in roles_of_pid)],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        samples0 = samples_trained(run_dir)
        before = snapshot(run_dir)
        t0 = time.monotonic()
        time.sleep(args.window)
        after = snapshot(run_dir)
        window = time.monotonic() - t0
        samples = samples_trained(run_dir) - samples0
        if perf is not None:
            perf.send_signal(subprocess.signal.SIGINT)
            perf.wait(timeout=60)
        load_after = open("/proc/loadavg").read().split()[0]
        if job.poll() is not None:
            print("the job ended inside the window: raise --passes (after "
                  "--)", file=sys.stderr)
            return 1
        print_tables(thread_table(before, after, window), window, samples,
                     "%s/%s" % (load_before, load_after))
        if perf is not None:
            print()
            perf_report(data, roles_of_tid, args.top)
        code = 0
    finally:
        if job.poll() is None:
            job.terminate()
            try:
                job.wait(timeout=60)
            except subprocess.TimeoutExpired:
                job.kill()
                job.wait()
        out.close()
        if code == 0:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print("kept: %s" % work, file=sys.stderr)
    return code


if __name__ == "__main__":
    sys.exit(main())
