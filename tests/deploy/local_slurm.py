"""A real Slurm cluster on this machine for tests: munged, slurmctld and one
slurmd per node (Debian's munge and slurm-wlm; nodes n1..nN, all of them
this host, each slurmd with its own port, spool, log and pid file) started
in a temporary directory of their own, on free ports, and stopped by PID.

Nothing system-wide is touched: munged runs as the munge user with its own
key and socket (slurm.conf's AuthInfo=socket=... points Slurm at it), and
Slurm keeps its configuration, state, spool, logs and pid files in the
directory. Clients are run with env() (SLURM_CONF set, inherited SLURM_*
variables dropped). Needs root (munged as munge, slurmd as root). Every
wait is bounded.
"""

import os
import pwd
import shutil
import signal
import socket
import subprocess
import time


class SlurmError(Exception):
    pass


def free_ports(n):
    """n distinct free loopback ports: every socket stays bound until all
    are chosen, so the kernel cannot hand out one port twice."""
    socks = [socket.socket(socket.AF_INET, socket.SOCK_STREAM) for _ in range(n)]
    try:
        for s in socks:
            s.bind(("127.0.0.1", 0))
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


def wait_until(predicate, seconds, what):
    """Polls predicate every 0.2 s; TimeoutError naming `what` after
    `seconds`."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise TimeoutError(f"{what}: not within {seconds} s")


class LocalSlurm:
    """with LocalSlurm(dir, nodes=2) as slurm: slurm.run(["sbatch", ...])"""

    def __init__(self, directory, nodes=1, cpus=2):
        self.dir = directory
        self.host = socket.gethostname().split(".")[0]
        self.nodes = [f"n{i + 1}" for i in range(nodes)]
        self.cpus = cpus
        self.conf = os.path.join(directory, "slurm", "slurm.conf")
        self.procs = {}

    # A port chosen free can be taken by another process before the daemon
    # binds it; the daemons then start again on new ports.
    START_TRIES = 3

    def __enter__(self):
        try:
            self._start_munge()
            for attempt in range(1, self.START_TRIES + 1):
                try:
                    self._start_slurm()
                    break
                except SlurmError as e:
                    if ("Address already in use" not in str(e)
                            or attempt == self.START_TRIES):
                        raise
                    self._stop_slurm()
        except BaseException:
            self.stop()
            raise
        return self

    def _start_slurm(self):
        self._write_conf()
        self._start("slurmctld", ["/usr/sbin/slurmctld", "-D", "-f", self.conf])
        for node in self.nodes:
            self._start("slurmd-" + node, ["/usr/sbin/slurmd", "-D", "-N",
                                           node, "-f", self.conf])
        wait_until(self._nodes_idle, 60, "the Slurm nodes to become idle")

    def __exit__(self, *exc):
        self.stop()

    def env(self):
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLURM_")}
        env["SLURM_CONF"] = self.conf
        return env

    def run(self, argv, timeout=30, check=True, cwd=None):
        """Runs a Slurm client command; its CompletedProcess."""
        p = subprocess.run(argv, env=self.env(), cwd=cwd, capture_output=True,
                           text=True, timeout=timeout)
        if check and p.returncode != 0:
            raise SlurmError(f"{' '.join(argv)} exited {p.returncode}: "
                             f"{p.stderr.strip()}")
        return p

    def job(self, job_id):
        """scontrol's fields of a job ({} once Slurm forgot it)."""
        p = self.run(["scontrol", "show", "job", "-o", str(job_id)], check=False)
        if p.returncode != 0:
            return {}
        fields = {}
        for word in p.stdout.split():
            key, _, value = word.partition("=")
            fields.setdefault(key, value)
        return fields

    def wait_job_end(self, job_id, seconds):
        """Waits for a job to end; its scontrol fields (JobState, ExitCode)."""
        ended = {}

        def done():
            fields = self.job(job_id)
            state = fields.get("JobState", "")
            if state and state not in ("PENDING", "RUNNING", "CONFIGURING",
                                       "COMPLETING", "SUSPENDED"):
                ended.update(fields)
                return True
            return False

        wait_until(done, seconds, f"Slurm job {job_id} to end")
        return ended

    def log_tail(self, lines=30):
        out = []
        for name in ["slurmctld.log"] + [f"slurmd-{n}.log" for n in self.nodes]:
            path = os.path.join(self.dir, "slurm", name)
            try:
                with open(path, errors="replace") as f:
                    out.append(f"--- {name}\n" + "".join(f.readlines()[-lines:]))
            except OSError:
                pass
        return "\n".join(out)

    # --- start and stop

    def _start_munge(self):
        munge = pwd.getpwnam("munge")
        key_dir = os.path.join(self.dir, "munge")
        sock_dir = os.path.join(self.dir, "munge-socket")
        os.makedirs(key_dir, mode=0o700)
        os.makedirs(sock_dir, mode=0o755)  # clients must reach the socket
        key = os.path.join(key_dir, "munge.key")
        with open(key, "wb") as f:
            f.write(os.urandom(1024))
        os.chmod(key, 0o400)
        for path in (key_dir, sock_dir, key):
            os.chown(path, munge.pw_uid, munge.pw_gid)
        # munged wants every directory above its socket open to all.
        d = self.dir
        while d != "/":
            if os.stat(d).st_mode & 0o755 != 0o755:
                raise SlurmError(f"{d}: mode must include 0755 for munged")
            d = os.path.dirname(d)
        self.munge_socket = os.path.join(sock_dir, "munge.socket")
        self._start("munged", [
            "/usr/sbin/munged", "-F", "--socket", self.munge_socket,
            "--key-file", key, "--pid-file", os.path.join(key_dir, "munged.pid"),
            "--log-file", os.path.join(key_dir, "munged.log"),
            "--seed-file", os.path.join(key_dir, "munged.seed")],
            user=munge.pw_uid, group=munge.pw_gid)
        wait_until(lambda: self._running() and os.path.exists(self.munge_socket),
              30, "munged's socket")

    def _write_conf(self):
        d = os.path.join(self.dir, "slurm")
        os.makedirs(os.path.join(d, "state"), exist_ok=True)
        ctld_port, *node_ports = free_ports(1 + len(self.nodes))
        conf = f"""\
ClusterName=fabpstest
SlurmctldHost={self.host}(127.0.0.1)
SlurmctldPort={ctld_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={self.munge_socket}
StateSaveLocation={d}/state
SlurmdSpoolDir={d}/spool-%n
SlurmctldPidFile={d}/slurmctld.pid
SlurmdPidFile={d}/slurmd-%n.pid
SlurmctldLogFile={d}/slurmctld.log
SlurmdLogFile={d}/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
JobCompType=jobcomp/none
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
MinJobAge=600
"""
        for node, port in zip(self.nodes, node_ports):
            conf += (f"NodeName={node} NodeHostname={self.host} NodeAddr=127.0.0.1 "
                     f"Port={port} CPUs={self.cpus} State=UNKNOWN\n")
        conf += (f"PartitionName=fabps Nodes={','.join(self.nodes)} Default=YES "
                 "MaxTime=INFINITE State=UP OverSubscribe=FORCE:8\n")
        with open(self.conf, "w") as f:
            f.write(conf)

    def _start(self, name, argv, **kwargs):
        out = open(os.path.join(self.dir, name + ".out"), "wb")
        self.procs[name] = subprocess.Popen(
            argv, stdout=out, stderr=subprocess.STDOUT, env=self.env(),
            stdin=subprocess.DEVNULL, **kwargs)
        out.close()

    def _running(self):
        """True, or SlurmError naming a daemon that exited, with its output."""
        for name, p in self.procs.items():
            if p.poll() is not None:
                out = open(os.path.join(self.dir, name + ".out"),
                           errors="replace").read()[-2000:]
                raise SlurmError(f"{name} exited {p.returncode}:\n{out}\n"
                                 + self.log_tail())
        return True

    def _nodes_idle(self):
        self._running()
        try:
            p = self.run(["sinfo", "-h", "-N", "-o", "%t"], check=False,
                         timeout=10)
        except subprocess.TimeoutExpired:  # slurmctld busy, or not it
            return False
        return p.returncode == 0 and p.stdout.split() == ["idle"] * len(self.nodes)

    def stop(self):
        """Cancels every job, then stops the slurmds, slurmctld and munged
        by PID (SIGTERM, SIGKILL after 15 s)."""
        if "slurmctld" in self.procs and self.procs["slurmctld"].poll() is None:
            try:
                self.run(["scancel", "--quiet", "--user", "root"], check=False)
                wait_until(lambda: not self.run(["squeue", "-h"], check=False)
                      .stdout.strip(), 60, "the jobs to end")
            except (TimeoutError, SlurmError, subprocess.TimeoutExpired):
                pass
        self._stop_slurm()
        self._stop_procs(["munged"])

    def _stop_slurm(self):
        self._stop_procs([f"slurmd-{n}" for n in self.nodes] + ["slurmctld"])

    def _stop_procs(self, names):
        """Stops the named daemons by PID (SIGTERM, SIGKILL after 15 s)."""
        for name in names:
            p = self.procs.pop(name, None)
            if p is None or p.poll() is not None:
                continue
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(15)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait(15)


def missing_programs():
    """The Slurm and munge programs this module needs that are absent."""
    return [p for p in ("/usr/sbin/munged", "/usr/sbin/slurmctld",
                        "/usr/sbin/slurmd", "/usr/bin/sbatch")
            if shutil.which(p) is None]
