#!/usr/bin/python3
"""Network faults on a fabps job across namespace hosts: etcd (h1), master
and standby (h2, h3), pservers (h4, h5), trainers (h6, h7), and for the
long cut a spare pserver (h8) waiting for a free index. Masters and
pservers run under fabps-supervise; the lease TTL is 10 s.

Faults (--fault):
  none       the undisturbed run (the baseline the others compare with)
  cut        pserver host h4 loses its link (ip link set eth0 down inside it)
             for --seconds, 2 s into training. Shorter than the TTL (5 s):
             ridden out, the pserver keeps its index and process. Longer
             (30 s): its lease runs out, it exits and restarts, the spare
             takes the index over from its checkpoint, the job goes on.
  delay      tc netem delay 2ms 1ms on every host's eth0
  loss       tc netem loss 1% on every host's eth0
The netem faults need sch_netem in the kernel; without it the test is
skipped (exit 77) with that reason.

Each run checks: the trainers finish, the master ended every pass with no
failed task (every chunk trained once per pass), and, given
--baseline-accuracy (else an undisturbed run first, on its own hosts), the
test accuracy is within 0.01 of it. Prints the throughput (examples/s over
the training) for the table in docs/cluster-testing.md.
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import (NETNS_SH, SKIP, HostSet, skip,  # noqa: E402
                         test_directory, wait_for)
from netns_job import PSERVER_PORT, Job  # noqa: E402

LEASE_TTL = 10


def netem(hosts, args):
    for h in hosts:
        r = subprocess.run([NETNS_SH, "netem", h.ns] + args,
                           capture_output=True, text=True)
        if r.returncode == SKIP:
            skip(r.stderr.strip())
        if r.returncode != 0:
            raise RuntimeError("netem %s: %s" % (args, r.stderr.strip()))


def run_job(tmp, provider, passes, fault, seconds):
    """One job with `fault`; returns (test accuracy, examples/s)."""
    os.makedirs(tmp, exist_ok=True)
    with HostSet(8, tmp) as hs:
        h = hs.hosts
        job = Job(hs, tmp, provider, lease_ttl=LEASE_TTL, passes=passes,
                  supervise=True)
        if fault == "delay":
            netem(h, ["delay", "2ms", "1ms"])
        elif fault == "loss":
            netem(h, ["loss", "1%"])
        spares = [h[7]] if fault == "cut" and seconds > LEASE_TTL else []
        job.start_all(etcd_hosts=[h[0]], master_hosts=h[1:3],
                      pserver_hosts=h[3:5], trainer_hosts=h[5:7],
                      spare_hosts=spares)
        wait_for("training to start", lambda: job.samples_trained() > 0,
                 timeout=120, interval=0.1)
        start = time.monotonic()
        cut_host = h[3]
        before = None
        if fault == "cut":
            time.sleep(2)  # into training
            before = job.store_keys(h[0])
            owner = next(i for i in range(2) if before["ps/%d/addr" % i] ==
                         "%s:%d" % (cut_host.addr, PSERVER_PORT))
            print("cutting %s (pserver of index %d) off for %.0f s" %
                  (cut_host.addr, owner, seconds), flush=True)
            cut_host.cut()
            time.sleep(seconds)
            cut_host.restore()
            print("link of %s back" % cut_host.addr, flush=True)
        job.wait_trainers(timeout=900)
        wall = time.monotonic() - start
        m = job.check_trained(h[0])
        acc = job.final_accuracy()
        samples = job.samples_per_pass()
        for p in range(passes):
            # Lost steps (a push to an unreachable pserver) are not counted
            # by the trainer; the master's done tasks are the proof above.
            print("pass %d: %d examples trained" % (p, samples.get(p, 0)))
        if fault == "cut":
            after = job.store_keys(h[0])
            key = "ps/%d/lock" % owner
            if seconds < LEASE_TTL:
                # Ridden out: the same process holds the same claim.
                assert after[key] == before[key], (before[key], after[key])
                assert "ps/%d/addr" % owner in after
                log = job.pservers[0].log_text()
                assert "lost the claim" not in log, log[-2000:]
                print("ridden out: %s still %s" % (key, after[key]))
            else:
                assert after.get(key) != before[key], after.get(key)
                log = job.pservers[0].log_text()
                assert "lost the claim" in log, log[-2000:]
                spare_log = job.spares[0].log_text()
                new_addr = after.get("ps/%d/addr" % owner)
                print("index %d: lost by %s, now served at %s" %
                      (owner, cut_host.addr, new_addr))
                if new_addr == "%s:%d" % (h[7].addr, PSERVER_PORT):
                    assert "(recovered)" in spare_log, spare_log[-2000:]
                    print("the spare took it over from its checkpoint")
        rate = sum(samples.values()) / wall
        print("fault %s: %d passes in %.1f s, %.0f examples/s, test accuracy "
              "%.4f, master %s" % (fault, passes, wall, rate, acc, m["tasks"]),
              flush=True)
        return acc, rate


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--provider", default="tcp;ofi_rxm")
    # Enough that the faults, 2 s and more into training, strike while it
    # runs (a pass of the C++ trainer takes about 1.5 s on a quiet machine).
    ap.add_argument("--passes", type=int, default=8)
    ap.add_argument("--fault", choices=("none", "cut", "delay", "loss"),
                    required=True)
    ap.add_argument("--seconds", type=float, default=5)
    ap.add_argument("--baseline-accuracy", type=float, default=None)
    ap.add_argument("--tolerance", type=float, default=0.01)
    args = ap.parse_args()

    if args.fault in ("delay", "loss"):
        r = subprocess.run([NETNS_SH, "check-netem"], capture_output=True,
                           text=True)
        if r.returncode == SKIP:
            skip(r.stderr.strip())
    with test_directory("fabps-netns-fault-") as tmp:
        base = args.baseline_accuracy
        if base is None and args.fault != "none":
            base, _ = run_job(os.path.join(tmp, "baseline"), args.provider,
                              args.passes, "none", 0)
        acc, _ = run_job(os.path.join(tmp, args.fault), args.provider,
                         args.passes, args.fault, args.seconds)
        if base is not None:
            assert abs(acc - base) <= args.tolerance, \
                "accuracy %.4f, undisturbed %.4f" % (acc, base)
            print("accuracy %.4f, undisturbed %.4f: within %.2f" %
                  (acc, base, args.tolerance))


if __name__ == "__main__":
    main()
