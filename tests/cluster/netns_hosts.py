"""Test hosts as network namespaces (tests/infra/netns/netns.sh) and the processes
a test runs on them.

HostSet(k) makes a set of k hosts, each a namespace with one address of
198.18.0.0/15 (hosts[i].addr) and no route out, and removes it on close():
every process the test started is killed by PID first, then the namespaces
go (netns.sh down also kills anything left inside them: only this test's
processes run there). A set that a killed test left behind is removed by the
next test's `netns.sh down --stale`.

The test process itself stays in the root namespace, which has no route to
198.18.0.0/15 (nothing is added to it): everything that talks to a daemon
(etcdctl, fabps-status) runs inside one of the hosts through Host.run().

Exit code SKIP (77) tells ctest the test was skipped (SKIP_RETURN_CODE);
skip() prints the reason first.
"""
import contextlib
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SKIP = 77
SOURCE_DIR = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
NETNS_SH = os.path.join(SOURCE_DIR, "tests", "infra", "netns", "netns.sh")


def skip(reason):
    print("SKIPPED: " + reason, flush=True)
    sys.exit(SKIP)


def built_binary(relative):
    build = os.environ.get("FABPS_BUILD_DIR") or os.path.join(
        SOURCE_DIR, "build")
    path = os.path.join(build, relative)
    if not os.access(path, os.X_OK):
        raise RuntimeError("%s is not built (tools/build.sh)" % path)
    return path


def wait_for(what, predicate, timeout, interval=0.1):
    """Polls predicate() until it returns a true value (returned) or raises
    TimeoutError naming `what` after `timeout` seconds."""
    end = time.monotonic() + timeout
    while True:
        got = predicate()
        if got:
            return got
        if time.monotonic() > end:
            raise TimeoutError("timed out after %.0f s waiting for %s" %
                               (timeout, what))
        time.sleep(interval)


class Process:
    """One process the test started in a host; ended by PID only."""

    def __init__(self, name, host, argv, log_path, env):
        self.name = name
        self.host = host
        self.argv = argv
        self.log_path = log_path
        self._log = open(log_path, "ab")
        self.popen = subprocess.Popen(
            ["ip", "netns", "exec", host.ns] + argv, stdout=self._log,
            stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, env=env)
        # `ip netns exec` execs the program: this PID is the program's.
        self.pid = self.popen.pid

    def alive(self):
        return self.popen.poll() is None

    def signal(self, sig):
        if self.alive():
            os.kill(self.pid, sig)

    def wait(self, timeout):
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError("%s (pid %d) still running after %.0f s; log "
                               "tail:\n%s" % (self.name, self.pid, timeout,
                                              self.log_tail()))

    def stop(self, timeout=20):
        """SIGTERM, then SIGKILL when it has not ended within timeout."""
        if not self.alive():
            return self.popen.returncode
        self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        try:
            return self.popen.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.kill()
            return None

    def kill(self):
        self.signal(signal.SIGKILL)
        try:
            self.popen.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass

    def log_text(self):
        self._log.flush()
        with open(self.log_path, errors="replace") as f:
            return f.read()

    def log_tail(self, lines=15):
        return "\n".join(self.log_text().splitlines()[-lines:])


class Host:
    def __init__(self, hostset, index, ns, addr):
        self.hostset = hostset
        self.index = index  # 1-based, as in the namespace name
        self.ns = ns
        self.addr = addr

    def spawn(self, name, argv, env=None):
        p = Process(name, self, argv,
                    os.path.join(self.hostset.log_dir, name + ".log"), env)
        self.hostset.processes.append(p)
        return p

    def run(self, argv, timeout=30, check=True, stderr_too=False):
        """Runs argv inside this host to its end; returns its stdout (and
        stderr after it when stderr_too)."""
        r = subprocess.run(["ip", "netns", "exec", self.ns] + argv,
                           capture_output=True, text=True, timeout=timeout)
        if stderr_too:
            r.stdout += r.stderr
        if check and r.returncode != 0:
            raise RuntimeError("%s in %s: exit %d: %s" %
                               (" ".join(argv), self.ns, r.returncode,
                                r.stderr.strip()))
        return r.stdout

    def cut(self):
        """Takes this host's only link down: it can reach no other host."""
        subprocess.run([NETNS_SH, "cut", self.ns], check=True)

    def restore(self):
        subprocess.run([NETNS_SH, "restore", self.ns], check=True)


class HostSet:
    def __init__(self, k, log_dir, private_nic=False):
        self.log_dir = log_dir
        self.processes = []
        self.set_name = None
        subprocess.run([NETNS_SH, "down", "--stale"], check=False)
        r = subprocess.run([NETNS_SH, "check"], capture_output=True,
                           text=True)
        if r.returncode != 0:
            skip(r.stderr.strip() or "network namespaces cannot be made here")
        r = subprocess.run([NETNS_SH, "up", str(k)] +
                           (["--private-nic"] if private_nic else []),
                           capture_output=True, text=True)
        if r.returncode != 0:
            raise RuntimeError("netns.sh up %d: %s" % (k, r.stderr.strip()))
        values = {}
        for line in r.stdout.splitlines():
            key, _, value = line.partition("=")
            values[key] = value.strip('"')
        self.set_name = values["NETNS_SET"]
        self.hosts = [
            Host(self, i + 1, ns, addr) for i, (ns, addr) in enumerate(
                zip(values["NETNS_HOSTS"].split(),
                    values["NETNS_ADDRS"].split()))
        ]
        # A SIGTERM (ctest's timeout, a Ctrl-C'd parent) still tears down.
        signal.signal(signal.SIGTERM, lambda *_: sys.exit(143))

    def close(self):
        for p in self.processes:
            if p.alive():
                p.kill()
        if self.set_name:
            subprocess.run([NETNS_SH, "down", self.set_name], check=False)
            self.set_name = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


@contextlib.contextmanager
def test_directory(prefix):
    """A temporary directory for one test's data and logs: removed when the
    test passes (then "PASSED" is printed) or is skipped, kept and named when
    it fails."""
    tmp = tempfile.mkdtemp(prefix=prefix)
    try:
        yield tmp
    except SystemExit as e:
        if e.code == SKIP:
            shutil.rmtree(tmp, ignore_errors=True)
        else:
            print("logs kept in " + tmp)
        raise
    except BaseException:
        print("logs kept in " + tmp)
        raise
    shutil.rmtree(tmp, ignore_errors=True)
    print("PASSED")
