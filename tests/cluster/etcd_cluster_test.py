#!/usr/bin/python3
"""A fabps job on a three-member etcd cluster, one member per namespace host
(h1-h3); master and standby (h4, h5), two pservers (h6, h7), two trainers
(h8, h9). Every process is given all three endpoints; masters, pservers and
trainers run under fabps-supervise; the lease TTL is 10 s.

--scenario leader: kill -9 the etcd leader 2 s into training. The two others
  elect a new leader; the store's clients fail over to them within their
  deadlines: the job finishes with no lease lost (no process restarted), the
  master ended every pass with no failed task.

--scenario leader-cut: the etcd leader's host loses its link for twice the
  TTL (its connections hang rather than fail): the same, clients must give
  up on the silent member within their deadlines and use the others.

--scenario quorum: kill -9 the leader, then a second member: no quorum, no
  lease can be renewed. Every master and pserver must stop serving (exit 3,
  "lost the claim" / "lost master/lock") within the TTL plus a margin, and
  no two processes may ever hold one index or the master lock at the same
  time (checked on the claim and loss times in every log). Then the second
  member comes back: the supervised restarts claim again, the pservers from
  their checkpoints, the master from its journal, and the job finishes.
"""
import argparse
import os
import re
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import HostSet, test_directory, wait_for  # noqa: E402
from netns_job import Job  # noqa: E402

LEASE_TTL = 10
CUT_SECONDS = 2 * LEASE_TTL  # longer than a lease: only failover saves it
CLAIM_RE = re.compile(r"^I (\d\d:\d\d:\d\d\.\d+) .*claimed index (\d+) ")
LOST_RE = re.compile(r"^E (\d\d:\d\d:\d\d\.\d+) .*lost the claim on index "
                     r"(\d+)")
LEAD_RE = re.compile(r"^I (\d\d:\d\d:\d\d\.\d+) .*holding master/lock")
UNLEAD_RE = re.compile(r"^E (\d\d:\d\d:\d\d\.\d+) .*lost master/lock")


def seconds_of(hms):
    h, m, s = hms.split(":")
    return int(h) * 3600 + int(m) * 60 + float(s)


def ownership(procs, start_re, end_re):
    """{what: [(start s, end s or None, process name)]} from the logs: a
    process owns from its start line to its loss line (or to the end of the
    log when it neither lost nor exited)."""
    spans = {}
    for p in procs:
        open_span = None
        for line in p.log_text().splitlines():
            m = start_re.match(line)
            if m:
                what = m.group(2) if m.re.groups > 1 else "master"
                open_span = [what, seconds_of(m.group(1)), None]
                spans.setdefault(what, []).append(
                    (open_span, p.name))
                continue
            m = end_re.match(line)
            if m and open_span is not None:
                open_span[2] = seconds_of(m.group(1))
                open_span = None
            elif re.search(r"fabps-supervise: .* (exited|killed)", line) and \
                    open_span is not None:
                open_span = None  # ended without a loss line: end unknown
    return spans


def check_single_owner(spans, label):
    """No two spans of one `what` overlap: each begins after the previous
    one's loss line."""
    for what, lst in spans.items():
        lst.sort(key=lambda s: s[0][1])
        for (a, an), (b, bn) in zip(lst, lst[1:]):
            if a[2] is None or b[1] < a[2]:
                raise AssertionError(
                    "%s %s: %s claimed at %.3f while %s held it (lost at %s)"
                    % (label, what, bn, b[1], an, a[2]))
    return sum(len(v) for v in spans.values())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--scenario", choices=("leader", "leader-cut", "quorum"),
                    required=True)
    ap.add_argument("--provider", default="tcp;ofi_rxm")
    # Enough that the faults, 2 s and more into training, strike while it
    # runs (a pass of the C++ trainer takes about 1.5 s on a quiet machine).
    ap.add_argument("--passes", type=int, default=8)
    args = ap.parse_args()

    with test_directory("fabps-etcd-cluster-") as tmp:
        with HostSet(9, tmp) as hs:
            h = hs.hosts
            job = Job(hs, tmp, args.provider, lease_ttl=LEASE_TTL,
                      passes=args.passes, supervise=True,
                      supervise_trainers=True)
            start = time.monotonic()
            job.start_all(etcd_hosts=h[0:3], master_hosts=h[3:5],
                          pserver_hosts=h[5:7], trainer_hosts=h[7:9])
            print("store %s" % job.store_spec, flush=True)
            wait_for("training to start", lambda: job.samples_trained() > 0,
                     timeout=120, interval=0.1)
            time.sleep(2)
            leader = wait_for("an etcd leader",
                              lambda: job.etcd_leader(h[3]), timeout=30,
                              interval=0.5)
            daemons = job.masters + job.pservers
            if args.scenario == "leader-cut":
                # No RST here: connections to it just stop answering.
                host = job.etcd[leader][0]
                print("cut etcd leader %s's host off for %d s (%.1f s in)" %
                      (leader, CUT_SECONDS, time.monotonic() - start),
                      flush=True)
                host.cut()
                time.sleep(CUT_SECONDS)
                host.restore()
            else:
                print("kill -9 etcd leader %s (%.1f s in)" %
                      (leader, time.monotonic() - start), flush=True)
                job.etcd[leader][1].kill()
            if args.scenario in ("leader", "leader-cut"):
                job.wait_trainers(timeout=600)
                job.check_trained(h[3])
                for p in daemons:
                    log = p.log_text()
                    assert "lost the claim" not in log and \
                        "lost master/lock" not in log, \
                        "%s lost its lease:\n%s" % (p.name, p.log_tail())
                new_leader = wait_for("an etcd leader",
                                      lambda: job.etcd_leader(h[3]),
                                      timeout=30, interval=0.5)
                print("new etcd leader %s; the job finished in %.1f s with "
                      "no lease lost, test accuracy %.4f" %
                      (new_leader, time.monotonic() - start,
                       job.final_accuracy()))
            else:
                second = next(n for n, (_, p) in job.etcd.items()
                              if n != leader and p.alive())
                wait_for("a new etcd leader", lambda: job.etcd_leader(h[3]),
                         timeout=30, interval=0.5)
                lost_at = time.monotonic()
                print("kill -9 etcd member %s: no quorum" % second,
                      flush=True)
                job.etcd[second][1].kill()
                # Every master and pserver stops serving.
                wait_for(
                    "every pserver and the leading master to stop serving",
                    lambda: all("lost the claim" in p.log_text()
                                for p in job.pservers) and any(
                                    "lost master/lock" in p.log_text()
                                    for p in job.masters),
                    timeout=LEASE_TTL + 20, interval=0.2)
                print("every pserver and the master stopped serving %.1f s "
                      "after quorum was lost" % (time.monotonic() - lost_at),
                      flush=True)
                time.sleep(3)
                print("etcd member %s back" % second, flush=True)
                job.restart_etcd(second)
                job.wait_trainers(timeout=600)
                job.check_trained(h[3])
                for p in job.pservers:
                    assert p.log_text().count("claimed index") >= 2
                print("the job finished %.1f s in, test accuracy %.4f" %
                      (time.monotonic() - start, job.final_accuracy()))
                recovered = sum("(recovered)" in p.log_text()
                                for p in job.pservers)
                print("pservers that recovered from a checkpoint: %d" %
                      recovered)
                assert recovered == len(job.pservers)
            n = check_single_owner(
                ownership(job.pservers, CLAIM_RE, LOST_RE), "index")
            m = check_single_owner(
                ownership(job.masters, LEAD_RE, UNLEAD_RE), "master/lock")
            print("ownership: %d index claims and %d master leads, never two "
                  "at once" % (n, m))


if __name__ == "__main__":
    main()
