#!/usr/bin/python3
"""fabps chaos: faults from outside the launcher, N jobs per fault kind.

Runs fabps-launch jobs one after the other and, in each, injects one fault
the way a cluster would see it, from another process: kill -9 of a random
process of a role, two such kills 0.2-3 s apart (the second victim may be a
process the launcher has just restarted), SIGSTOP of one for a random
0.5-30 s (then SIGCONT), or SIGSTOP of the job's etcd for 1-30 s. The
fault comes at a random moment 2-15 s after training starts. Prints one
line per trial and a table per kind: survived/total, wall time, test
accuracy (the last pass), and jobs that did not end by themselves within
3x the undisturbed run's time. A job survived when it exited 0 and its
output shows every pass with all its tasks done (every chunk of the
dataset trained in every pass).

Every random choice comes from --seed (random unless given, printed): the
same seed on the same --kinds and --trials replays the same roles, moments
and durations (the processes' PIDs differ, the choices do not).

Kinds: FAULT:ROLE with FAULT kill, kill2 (two kills) or stop and ROLE
trainer, pserver, master, any (a random role of the three; for kill2 each
kill draws its own) or etcd (stop only; the job runs on --start-etcd).
Example:

  tests/infra/chaos/chaos.py --build-dir build --trials 20 \\
      --kinds kill:any,kill2:any,stop:any,stop:etcd
"""
import argparse
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from job_procs import job_processes, training_started  # noqa: E402

ROLES = ("trainer", "pserver", "master")


def passes_complete(out, passes):
    """Whether the launcher's output shows every pass 1..passes with all
    its tasks done (each chunk of the dataset trained in each pass)."""
    done = set()
    for m in re.finditer(r"pass (\d+)/(\d+) \[#+\] (\d+)/(\d+) tasks", out):
        if int(m.group(2)) == passes and m.group(3) == m.group(4):
            done.add(int(m.group(1)))
    return done == set(range(1, passes + 1))


def last_accuracy(out):
    rows = re.findall(r"^\d+\s+[0-9.naN]+\s+([0-9.]+)\s", out, re.M)
    return float(rows[-1]) if rows else None


class Trial:
    def __init__(self, kind, rng, args):
        self.fault, self.role = kind.split(":")
        self.delay = rng.uniform(2, 15)
        lo, hi = (1, 30) if self.role == "etcd" else (0.5, 30)
        self.duration = rng.uniform(max(lo, args.stop_min),
                                    min(hi, args.stop_max))
        self.role_pick = rng.choice(ROLES) if self.role == "any" else self.role
        self.victim_pick = rng.random()  # which process of the role
        # kill2: the second kill's gap, role and process.
        self.gap = rng.uniform(0.2, 3)
        self.role_pick2 = rng.choice(ROLES) if self.role == "any" else self.role
        self.victim_pick2 = rng.random()
        self.describe = ""
        self.injected = False  # the fault happened (the job still ran)


def run_job(args, run_dir, trial, time_limit):
    """Runs one launcher job with `trial`'s fault (None: undisturbed).
    Returns (exit code or None when killed for hanging, wall s, output)."""
    data_dir = os.path.abspath(args.data_dir)
    cmd = [os.path.join(args.build_dir, "cmd/launch/fabps-launch"),
           "--passes", str(args.passes), "--provider", args.provider,
           "--run-dir", run_dir, "--data-dir", data_dir, "--save-period", "2"]
    if trial is not None and trial.role == "etcd":
        cmd.append("--start-etcd")
    cmd += args.launch_arg
    out_path = run_dir + ".out"
    start = time.monotonic()
    with open(out_path, "w") as out:
        job = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT,
                               stdin=subprocess.DEVNULL)
    stopped = []
    try:
        if trial is not None:
            inject(trial, run_dir, job, start, time_limit, stopped)
        try:
            code = job.wait(timeout=max(1, time_limit -
                                        (time.monotonic() - start)))
        except subprocess.TimeoutExpired:
            code = None
    finally:
        for pid in stopped:
            try:
                os.kill(pid, signal.SIGCONT)
            except OSError:
                pass
        if job.poll() is None:
            job.kill()
            job.wait()
        for pids in job_processes(run_dir).values():
            for pid in pids:
                try:
                    os.kill(pid, signal.SIGKILL)
                except OSError:
                    pass
    wall = time.monotonic() - start
    with open(out_path, errors="replace") as f:
        return code, wall, f.read()


def pick_victim(run_dir, role, draw):
    """The process of `role` that `draw` (in [0, 1)) names among those
    running now, by PID order; None when none runs."""
    pids = sorted(job_processes(run_dir).get(role, []))
    return pids[int(draw * len(pids))] if pids else None


def inject(trial, run_dir, job, start, time_limit, stopped):
    # Wait for training, then for the trial's moment.
    while not training_started(run_dir):
        if job.poll() is not None or time.monotonic() - start > time_limit:
            trial.describe = "job ended before training started"
            return
        time.sleep(0.2)
    at = time.monotonic() + trial.delay
    while time.monotonic() < at:
        if job.poll() is not None:
            trial.describe = "job ended before the fault (%.1f s in)" % (
                trial.delay)
            return
        time.sleep(0.1)
    pid = pick_victim(run_dir, trial.role_pick, trial.victim_pick)
    if pid is None:
        trial.describe = "no %s running at the fault" % trial.role_pick
        return
    trial.injected = True
    if trial.fault in ("kill", "kill2"):
        os.kill(pid, signal.SIGKILL)
        trial.describe = "kill -9 %s (pid %d) %.1f s into training" % (
            trial.role_pick, pid, trial.delay)
        if trial.fault == "kill2":
            time.sleep(trial.gap)
            pid = pick_victim(run_dir, trial.role_pick2, trial.victim_pick2)
            if pid is None:
                trial.describe += ", then no %s running" % trial.role_pick2
                return
            os.kill(pid, signal.SIGKILL)
            trial.describe += ", then %s (pid %d) %.1f s later" % (
                trial.role_pick2, pid, trial.gap)
        return
    os.kill(pid, signal.SIGSTOP)
    stopped.append(pid)
    trial.describe = "SIGSTOP %s (pid %d) %.1f s into training, for %.1f s" % (
        trial.role_pick, pid, trial.delay, trial.duration)
    end = time.monotonic() + trial.duration
    while time.monotonic() < end and job.poll() is None:
        time.sleep(0.1)
    try:
        os.kill(pid, signal.SIGCONT)
    except OSError:
        pass
    stopped.remove(pid)


def main():
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    p.add_argument("--build-dir", default="build")
    p.add_argument("--trials", type=int, default=3, help="jobs per kind")
    p.add_argument("--kinds", default="kill:any,stop:any,stop:etcd",
                   help="comma-separated FAULT:ROLE (see above)")
    p.add_argument("--seed", type=int, default=0,
                   help="0: a random seed (printed)")
    p.add_argument("--passes", type=int, default=2)
    p.add_argument("--provider", default="tcp;ofi_rxm")
    p.add_argument("--stop-min", type=float, default=0.5,
                   help="shortest SIGSTOP, s")
    p.add_argument("--stop-max", type=float, default=30,
                   help="longest SIGSTOP, s")
    p.add_argument("--data-dir",
                   default=os.path.expanduser("~/.cache/fabps/fashion-mnist"))
    p.add_argument("--work-dir", default="",
                   help="run directories go here (default: a temp dir, "
                   "removed unless a trial failed)")
    p.add_argument("--launch-arg", action="append", default=[],
                   help="one more fabps-launch argument (repeatable)")
    p.add_argument("--baseline-seconds", type=float, default=0,
                   help="the undisturbed job's wall time (0: measure it)")
    args = p.parse_args()
    args.build_dir = os.path.abspath(args.build_dir)
    kinds = [k for k in args.kinds.split(",") if k]
    for k in kinds:
        fault, _, role = k.partition(":")
        ok_role = role in ROLES + ("any",) or (role == "etcd" and
                                               fault == "stop")
        if not ok_role or fault not in ("kill", "kill2", "stop"):
            p.error("--kinds: %r is not kill:ROLE, kill2:ROLE or stop:ROLE "
                    "(ROLE trainer, pserver, master, any; stop:etcd)" % k)
    if args.trials < 1:
        p.error("--trials: must be at least 1")
    seed = args.seed or random.SystemRandom().randrange(1, 2**31)
    print("chaos seed: %d (--seed %d replays it)" % (seed, seed), flush=True)
    work = args.work_dir or tempfile.mkdtemp(prefix="fabps-chaos-")
    os.makedirs(work, exist_ok=True)

    base_s = args.baseline_seconds
    base_acc = None
    if base_s <= 0:
        code, base_s, out = run_job(args, os.path.join(work, "baseline"),
                                    None, 600)
        base_acc = last_accuracy(out)
        if code != 0:
            print("the undisturbed job failed (exit %s); see %s/baseline.out"
                  % (code, work))
            return 1
        print("undisturbed: %.1f s, accuracy %s" % (base_s, base_acc),
              flush=True)
    limit = 3 * base_s
    results = {k: [] for k in kinds}
    failed_any = False
    for k in kinds:
        for i in range(args.trials):
            rng = random.Random("%d/%s/%d" % (seed, k, i))
            trial = Trial(k, rng, args)
            run_dir = os.path.join(work, "%s-%d" % (k.replace(":", "-"), i))
            # A SIGSTOP adds its length to the job at most.
            own_limit = limit + (trial.duration if trial.fault == "stop"
                                 else 0)
            code, wall, out = run_job(args, run_dir, trial, own_limit)
            acc = last_accuracy(out)
            complete = passes_complete(out, args.passes)
            ok = code == 0 and complete
            failed_any |= not ok
            # A job that ended before its fault proves nothing: not counted.
            if trial.injected or not ok:
                results[k].append((ok, wall, acc, code is None,
                                   wall <= limit))
            print("%-13s #%-3d %s %6.1f s acc %s  %s%s" % (
                k, i, "no fault" if ok and not trial.injected else
                "survived" if ok else ("HUNG" if code is None else
                                             "FAILED(%d)" % code if code != 0
                                             else "TASKS MISSING"),
                wall, "%.4f" % acc if acc is not None else "-",
                trial.describe, "" if ok else "  [" + run_dir + "]"),
                flush=True)
    print()
    print("| kind | survived | wall s (mean / max) | within 3x undisturbed "
          "| accuracy (min / mean) |")
    print("| --- | --- | --- | --- | --- |")
    for k in kinds:
        r = results[k]
        if not r:
            print("| %s | 0/0 (no fault landed) | - | - | - |" % k)
            continue
        accs = [a for ok, _, a, _, _ in r if ok and a is not None]
        walls = [w for _, w, _, _, _ in r]
        print("| %s | %d/%d | %.1f / %.1f | %d/%d | %s |" % (
            k, sum(ok for ok, *_ in r), len(r), sum(walls) / len(walls),
            max(walls), sum(w3 for *_, w3 in r), len(r),
            "%.4f / %.4f" % (min(accs), sum(accs) / len(accs))
            if accs else "-"))
    if base_acc is not None:
        print("undisturbed: %.1f s, accuracy %.4f (3x: %.0f s)" % (
            base_s, base_acc, limit))
    print("chaos seed: %d" % seed)
    if not args.work_dir and not failed_any:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed_any else 0


if __name__ == "__main__":
    sys.exit(main())
