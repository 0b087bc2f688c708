#!/usr/bin/python3
"""A fabps job across network-namespace hosts, every process on its own
host: etcd (h1), the master (h2), a standby master (h3), two pservers (h4,
h5), two Fashion-MNIST trainers (h6, h7). Each host also has a second NIC
that reaches nobody (netns.sh --private-nic), listed before eth0: a process
that advertises it, or 127.0.0.1, cannot be reached.

Checks:
- every address in the store (master/addr, master/lock, ps/<i>/addr) is the
  address of the host that runs the process;
- every TCP socket of every fabps process (control plane, etcd client,
  fabric connections and listeners) is bound to its host's eth0 address,
  never 127.0.0.1 or the private NIC; trainer 0 is given --interface,
  trainer 1 is not (its fabric must find the interface that reaches the
  pservers by itself);
- the job trains: every pass ends on the master with no failed task, the
  trainers together train at least every example of each pass, and the
  test accuracy is that of a real model;
- kill -9 of the leading master: the standby on another host takes over
  and publishes its own address;
- the standby master and one pserver listen on every interface (--host
  0.0.0.0) and publish --advertise-host; without it a daemon refuses to
  start rather than publish 0.0.0.0.

  netns_job_test.py --provider 'tcp;ofi_rxm' [--passes 1] [--train-shards N]
                    [--min-accuracy A]
"""
import argparse
import os
import signal
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from netns_hosts import HostSet, built_binary, test_directory, wait_for  # noqa: E402
from netns_job import MASTER_PORT, PSERVER_PORT, Job  # noqa: E402

FABPS_PROGRAMS = ("fabps-master", "fabps-pserver", "fabps-fashion-m",
                  "fabps-supervise")


def check_sockets(host, listen_all=False):
    """Every TCP socket of a fabps process in `host` is bound to its eth0
    address (with listen_all, a listening one may be on every interface);
    returns how many were checked."""
    out = host.run(["ss", "-tanpH"])
    checked = 0
    for line in out.splitlines():
        if not any('"%s"' % p in line for p in FABPS_PROGRAMS):
            continue
        fields = line.split()
        local = fields[3]
        addr = local.rsplit(":", 1)[0]
        if listen_all and fields[0] == "LISTEN" and addr in ("0.0.0.0", "*"):
            checked += 1
            continue
        if addr != host.addr:
            raise AssertionError("%s: a fabps socket is bound to %s, not the "
                                 "host's address %s:\n%s" %
                                 (host.ns, local, host.addr, line))
        checked += 1
    return checked


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--provider", default="tcp;ofi_rxm")
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--min-accuracy", type=float, default=0.75)
    ap.add_argument("--train-shards", type=int, default=8,
                    help="of the 8 training shards (7500 examples each)")
    ap.add_argument("--task-timeout-ms", type=int, default=10000,
                    help="the master's; a task is 3750 examples")
    args = ap.parse_args()

    with test_directory("fabps-netns-job-") as tmp:
        with HostSet(7, tmp, private_nic=True) as hs:
            h = hs.hosts
            job = Job(hs, tmp, args.provider, lease_ttl=3,
                      passes=args.passes, train_shards=args.train_shards,
                      task_timeout_ms=args.task_timeout_ms)
            start = time.monotonic()
            job.start_etcd([h[0]])
            leader = job.start_master(h[1], "master")
            job.wait_serving(h[0], "the master", "master/addr")
            # The standby and pserver-b listen on every interface and
            # advertise eth0's address.
            job.start_master(h[2], "master-standby", listen_all=True)
            job.start_pserver(h[3], "pserver-a")
            job.start_pserver(h[4], "pserver-b", listen_all=True)
            job.wait_serving(h[0], "pserver 0", "ps/0/addr")
            job.wait_serving(h[0], "pserver 1", "ps/1/addr")
            job.start_trainer(h[5], 0, interface=True)
            job.start_trainer(h[6], 1, interface=False)

            # The addresses in the store.
            keys = job.store_keys(h[0])
            assert keys["master/addr"] == "%s:%d" % (h[1].addr, MASTER_PORT), \
                keys["master/addr"]
            assert keys["master/lock"].endswith(" serving on " + h[1].addr), \
                keys["master/lock"]
            ps_addrs = sorted(keys["ps/%d/addr" % i] for i in range(2))
            want = sorted("%s:%d" % (x.addr, PSERVER_PORT) for x in h[3:5])
            assert ps_addrs == want, (ps_addrs, want)
            print("store: master/addr %s, ps addrs %s" %
                  (keys["master/addr"], ps_addrs))

            # The sockets, once both trainers have registered with both
            # pservers (they hold fabric connections to both then).
            def registered():
                ps = job.job_status(h[0])["pservers"]
                return len(ps) == 2 and all(p["trainers"] == 2 for p in ps)

            wait_for("both trainers to register with both pservers",
                     registered, timeout=120, interval=0.2)
            trainers_checked = 0
            for host in h[1:]:
                n = check_sockets(host, listen_all=host in (h[2], h[4]))
                print("%s (%s): %d fabps sockets, all on %s" %
                      (host.ns, host.addr, n, host.addr))
                trainer = [p for p in job.trainers.values() if p.host is host]
                if trainer and not trainer[0].alive():
                    # It had no task left: it ended before the check.
                    assert trainer[0].popen.returncode == 0, \
                        trainer[0].log_tail()
                    continue
                assert n > 0, "no fabps socket in %s" % host.ns
                trainers_checked += 1 if trainer else 0
            assert trainers_checked > 0, "both trainers ended before the check"

            job.wait_trainers(timeout=600)
            train_s = time.monotonic() - start

            # The master's view: every pass ended with no failed task.
            st = job.job_status(h[0])
            m = st["master"]
            assert m["pass"] == args.passes, m
            assert m["tasks"]["failed"] == 0, m
            samples = job.samples_per_pass()
            for p in range(args.passes):
                assert samples.get(p, 0) >= job.examples_per_pass(), samples
            acc = job.final_accuracy()
            assert acc >= args.min_accuracy, acc
            print("trained %d passes in %.1f s: samples per pass %s, test "
                  "accuracy %.4f" % (args.passes, train_s, samples, acc))

            # The standby on h3 takes over and advertises h3.
            leader.signal(signal.SIGKILL)
            wait_for(
                "the standby master to publish its address",
                lambda: job.store_keys(h[0]).get("master/addr") ==
                "%s:%d" % (h[2].addr, MASTER_PORT), timeout=60, interval=0.2)
            keys = job.store_keys(h[0])
            assert keys["master/lock"].endswith(" serving on " + h[2].addr), \
                keys["master/lock"]
            print("standby took over: master/addr %s" % keys["master/addr"])
            assert check_sockets(h[2], listen_all=True) > 0
            # Listening everywhere without an address to publish: refused.
            out = h[0].run([built_binary("pserver/daemon/fabps-pserver"),
                            "--store", job.store_spec, "--host", "0.0.0.0"],
                           check=False, stderr_too=True)
            assert "--advertise-host" in out, out
            print("--host 0.0.0.0 without --advertise-host: %s" %
                  out.strip())


if __name__ == "__main__":
    main()
