"""A fabps job spread over network-namespace hosts (netns_hosts.HostSet):
etcd (one member or a cluster), masters, pservers and Fashion-MNIST
trainers, each started on the host the test names, every address the host's
own 198.18.x address.

Data: Fashion-MNIST from the Debian package dataset-fashion-mnist, converted
into recordio shards the way fabps-launch does (8 training shards, 2 test
shards), once per test into its temporary directory.
"""
import base64
import glob
import json
import os
import subprocess

from netns_hosts import built_binary, skip, wait_for

ETCD_CLIENT_PORT = 2379
ETCD_PEER_PORT = 2380
MASTER_PORT = 7100
PSERVER_PORT = 7000
FASHION_MNIST = "/usr/share/datasets/fashion-mnist"


def convert_fashion_mnist(data_dir):
    if not os.path.isdir(FASHION_MNIST):
        skip("no Fashion-MNIST in %s (Debian package dataset-fashion-mnist)" %
             FASHION_MNIST)
    for split, shards in (("train", "8"), ("test", "2")):
        out = os.path.join(data_dir, split)
        os.makedirs(out, exist_ok=True)
        subprocess.run([
            built_binary("cmd/convert/fabps-convert-fashion-mnist"), "--split",
            split, "--output-dir", out, "--shards", shards
        ], check=True, capture_output=True, timeout=120)


class Job:
    """One job. `provider` is the fabric (tcp;ofi_rxm, sockets);
    `lease_ttl` the daemons' --lease-ttl; `supervise` runs masters and
    pservers under fabps-supervise (restarted after a lost lease),
    `supervise_trainers` the trainers too."""

    def __init__(self, hostset, tmp, provider, lease_ttl=10, passes=2,
                 supervise=False, job="netns", train_shards=8,
                 task_timeout_ms=10000, supervise_trainers=False):
        self.hostset = hostset
        self.tmp = tmp
        self.provider = provider
        self.lease_ttl = lease_ttl
        self.passes = passes
        self.supervise = supervise
        self.job = job
        self.train_shards = train_shards  # of the 8, 7500 examples each
        self.task_timeout_ms = task_timeout_ms
        self.supervise_trainers = supervise_trainers
        self.data_dir = os.path.join(tmp, "data")
        self.ckpt_dir = os.path.join(tmp, "checkpoints")
        self.etcd = {}  # name -> (host, Process)
        self.etcd_argv = {}  # name -> its command line
        self.trainers = {}  # trainer id -> Process
        self.store_spec = None
        convert_fashion_mnist(self.data_dir)

    # etcd ----------------------------------------------------------------
    def start_etcd(self, hosts):
        """One etcd member on each host (a cluster when several); returns
        the store spec naming every member."""
        cluster = ",".join("e%d=http://%s:%d" % (h.index, h.addr,
                                                  ETCD_PEER_PORT)
                           for h in hosts)
        for h in hosts:
            name = "e%d" % h.index
            url = "http://%s:%d" % (h.addr, ETCD_CLIENT_PORT)
            peer = "http://%s:%d" % (h.addr, ETCD_PEER_PORT)
            argv = ["etcd", "--name", name, "--data-dir",
                    os.path.join(self.tmp, "etcd-" + name),
                    "--listen-client-urls", url, "--advertise-client-urls",
                    url, "--listen-peer-urls", peer,
                    "--initial-advertise-peer-urls", peer,
                    "--initial-cluster", cluster, "--initial-cluster-state",
                    "new", "--initial-cluster-token", self.hostset.set_name,
                    "--log-outputs", "stderr"]
            self.etcd[name] = (h, h.spawn("etcd-" + name, argv))
            self.etcd_argv[name] = argv
        self.store_spec = "etcd:" + ",".join(
            "http://%s:%d" % (h.addr, ETCD_CLIENT_PORT) for h in hosts)
        for h in hosts:
            wait_for("etcd on %s to be healthy" % h.addr,
                     lambda h=h: self.etcd_healthy(h), timeout=30,
                     interval=0.2)
        return self.store_spec

    def restart_etcd(self, name):
        """Starts member `name` again on its data directory (it rejoins)."""
        host, _ = self.etcd[name]
        self.etcd[name] = (host, host.spawn("etcd-%s-again" % name,
                                            self.etcd_argv[name]))
        return self.etcd[name][1]

    def etcd_leader(self, host):
        """The name of the member that leads now, asked from `host` of the
        members still running; None while they elect one."""
        live = ",".join("http://%s:%d" % (h.addr, ETCD_CLIENT_PORT)
                        for h, p in self.etcd.values() if p.alive())
        out = self.etcdctl(host, ["endpoint", "status", "-w", "json"],
                           endpoints=live)
        for e in json.loads(out):
            st = e["Status"]
            if st["header"]["member_id"] == st["leader"]:
                addr = e["Endpoint"].split("//")[1].split(":")[0]
                for name, (h, _) in self.etcd.items():
                    if h.addr == addr:
                        return name
        return None

    def etcd_endpoints(self):
        return self.store_spec[len("etcd:"):]

    def etcd_healthy(self, host):
        out = host.run(["etcdctl", "--endpoints",
                        "http://%s:%d" % (host.addr, ETCD_CLIENT_PORT),
                        "--command-timeout=2s", "endpoint", "health"],
                       check=False, stderr_too=True)
        return "is healthy" in out

    def etcdctl(self, host, args, timeout=20, endpoints=None):
        return host.run(["etcdctl", "--endpoints",
                         endpoints or self.etcd_endpoints(),
                         "--command-timeout=5s"] + args, timeout=timeout)

    def store_keys(self, host):
        """{key relative to /<job>/: value} as etcd holds them now."""
        out = self.etcdctl(host, ["get", "--prefix", "/%s/" % self.job,
                                  "-w", "json"])
        kvs = json.loads(out).get("kvs", [])
        prefix = "/%s/" % self.job
        keys = {}
        for kv in kvs:
            k = base64.b64decode(kv["key"]).decode()
            v = base64.b64decode(kv.get("value", "")).decode(errors="replace")
            keys[k[len(prefix):]] = v
        return keys

    # daemons -------------------------------------------------------------
    def _daemon(self, host, name, role, argv):
        if self.supervise:
            argv = [built_binary("cmd/launch/fabps-supervise"), role,
                    "--"] + argv
        return host.spawn(name, argv)

    @staticmethod
    def _host_flags(host, listen_all):
        """--host, or (listen_all) every interface and --advertise-host."""
        if listen_all:
            return ["--host", "0.0.0.0", "--advertise-host", host.addr]
        return ["--host", host.addr]

    def start_master(self, host, name="master", listen_all=False):
        return self._daemon(host, name, "master", [
            built_binary("master/fabps-master"), "--store", self.store_spec,
            "--job", self.job] + self._host_flags(host, listen_all) + [
            "--port",
            str(MASTER_PORT), "--task-timeout", str(self.task_timeout_ms),
            "--chunks-per-task", "1", "--lease-ttl", str(self.lease_ttl)
        ])

    def start_pserver(self, host, name, num_pservers=2, listen_all=False):
        return self._daemon(host, name, "pserver", [
            built_binary("pserver/daemon/fabps-pserver"), "--store",
            self.store_spec, "--job", self.job, "--lease-ttl",
            str(self.lease_ttl), "--num-pservers", str(num_pservers),
            "--provider", self.provider] +
            self._host_flags(host, listen_all) + ["--port",
            str(PSERVER_PORT), "--checkpoint-dir", self.ckpt_dir,
            "--save-period", "2", "--apply-threads", "1"
        ])

    def start_trainer(self, host, trainer_id, interface=True):
        """interface: pass --interface with the host's address (else the
        trainer chooses)."""
        metrics = self.metrics_path(trainer_id)
        supervisor = [built_binary("cmd/launch/fabps-supervise"), "trainer",
                      "--"] if self.supervise_trainers else []
        p = host.spawn("trainer-%d" % trainer_id, supervisor + [
            built_binary(
                "examples/fashion_mnist/fabps-fashion-mnist-trainer"),
            "--provider", self.provider] +
            (["--interface", host.addr] if interface else []) + [
            "--trainer-id", str(trainer_id), "--dataset",
            self.train_glob(), "--test-data",
            self.data_dir + "/test/*", "--passes", str(self.passes),
            "--seed", "1", "--store", self.store_spec, "--job", self.job,
            "--metrics-file", metrics, "--timeout-ms", "10000", "--batch",
            "64", "--rule", "adam", "--lr", "0.001", "--lr-final", "0.00005",
            "--lr-decay-steps", str(self.decay_steps())
        ])
        self.trainers[trainer_id] = p
        return p

    def decay_steps(self):
        """Updates of each block over the whole job (64-example batches of
        every trainer): the learning rate decays linearly to 5e-5 by the
        end, as fabps-launch does, so that runs end close to each other
        (a constant rate leaves the last passes' noise in the accuracy)."""
        return max(1, self.passes * self.examples_per_pass() // 64)

    def train_glob(self):
        return ",".join("%s/train/fashion-mnist-train-%05d-of-00008" %
                        (self.data_dir, i) for i in range(self.train_shards))

    def examples_per_pass(self):
        return 7500 * self.train_shards

    def metrics_path(self, trainer_id):
        return os.path.join(self.tmp, "trainer-%d.metrics" % trainer_id)

    def wait_trainers(self, timeout):
        """Waits for every trainer to end; raises naming one that failed."""
        for tid, p in self.trainers.items():
            rc = p.wait(timeout)
            if rc != 0:
                raise AssertionError("trainer %d exited %s:\n%s" %
                                     (tid, rc, p.log_tail()))

    def wait_serving(self, host, what, key, timeout=60):
        """Waits until the store's `key` names `host` (what: for the
        message)."""
        wait_for("%s to publish %s" % (what, key),
                 lambda: self.store_keys(host).get(key), timeout=timeout,
                 interval=0.2)

    # results -------------------------------------------------------------
    def pass_events(self):
        """[{trainer, pass, samples, test_accuracy?, ...}] of every trainer."""
        events = []
        for path in glob.glob(os.path.join(self.tmp, "trainer-*.metrics")):
            with open(path) as f:
                for line in f:
                    try:
                        e = json.loads(line)
                    except ValueError:
                        continue
                    if e.get("event") == "pass":
                        events.append(e)
        return events

    def final_accuracy(self):
        acc = [(e["pass"], e["test_accuracy"]) for e in self.pass_events()
               if "test_accuracy" in e]
        if not acc:
            raise AssertionError("no trainer reported a test accuracy")
        return max(acc)[1]

    def samples_per_pass(self):
        out = {}
        for e in self.pass_events():
            out[e["pass"]] = out.get(e["pass"], 0) + e["samples"]
        return out

    def job_status(self, host):
        """fabps-status -o json, run inside `host`."""
        out = host.run([
            built_binary("cmd/status/fabps-status"), "--store",
            self.store_spec, "--job", self.job, "-o", "json"
        ], check=False)
        return json.loads(out)

    # a whole job ---------------------------------------------------------
    def start_all(self, etcd_hosts, master_hosts, pserver_hosts,
                  trainer_hosts, spare_hosts=()):
        """etcd on etcd_hosts, a master on each of master_hosts (the first
        leads), a pserver on each of pserver_hosts (one index each), then
        pservers on spare_hosts (they wait for a free index), then a trainer
        on each of trainer_hosts. Returns once the trainers are started."""
        self.start_etcd(etcd_hosts)
        store_host = etcd_hosts[0]
        self.masters = [self.start_master(master_hosts[0], "master-0")]
        self.wait_serving(store_host, "the master", "master/addr")
        for i, h in enumerate(master_hosts[1:]):
            self.masters.append(self.start_master(h, "master-%d" % (i + 1)))
        n = len(pserver_hosts)
        self.pservers = [
            self.start_pserver(h, "pserver-%d" % i, num_pservers=n)
            for i, h in enumerate(pserver_hosts)
        ]
        for i in range(n):
            self.wait_serving(store_host, "pserver %d" % i, "ps/%d/addr" % i)
        self.spares = [
            self.start_pserver(h, "pserver-spare-%d" % i, num_pservers=n)
            for i, h in enumerate(spare_hosts)
        ]
        for t, h in enumerate(trainer_hosts):
            self.start_trainer(h, t)

    def samples_trained(self):
        """Examples the trainers have reported so far (progress lines)."""
        total = 0
        for t in self.trainers:
            try:
                with open(self.metrics_path(t)) as f:
                    lines = f.read().splitlines()
            except OSError:
                continue
            done = {}
            for line in lines:
                try:
                    e = json.loads(line)
                except ValueError:
                    continue
                done[e.get("pass", 0)] = e.get("samples", 0)
            total += sum(done.values())
        return total

    def check_trained(self, store_host):
        """The master ended every pass with no failed task; returns its
        status."""
        m = self.job_status(store_host)["master"]
        if m["pass"] != self.passes or m["tasks"]["failed"] != 0:
            raise AssertionError("the master did not end %d passes cleanly: "
                                 "%s" % (self.passes, m))
        return m
