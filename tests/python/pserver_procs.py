"""Real fabps-pserver processes for Python tests (the Python side of
tests/trainer/pserver_cluster.h): N pservers on loopback, each with its own
checkpoint directory in a temporary directory, ports read from --port-file,
killed by PID."""

import contextlib
import os
import signal
import subprocess
import time


def built_binary(relative):
    """A binary of the build tree: $FABPS_BUILD_DIR/<relative>."""
    build = os.environ.get("FABPS_BUILD_DIR") or os.path.join(
        os.path.dirname(__file__), "..", "..", "build")
    return os.path.abspath(os.path.join(build, relative))


class PServerProcs:
    def __init__(self, provider, n, tmpdir, extra=()):
        self.provider = provider
        self.dir = str(tmpdir)
        self.extra = list(extra)
        self.procs = [None] * n
        self.ports = [0] * n
        self.binary = built_binary("pserver/daemon/fabps-pserver")

    def log(self, i):
        return os.path.join(self.dir, f"pserver-{i}.log")

    def start(self, i, timeout=30.0):
        """Starts pserver i (again after kill/stop: same port, same
        checkpoint directory) and waits until it serves."""
        port_file = os.path.join(self.dir, f"port-{i}")
        if os.path.exists(port_file):
            os.unlink(port_file)
        argv = [self.binary, "--provider", self.provider, "--index", str(i),
                "--num-pservers", str(len(self.procs)),
                "--port", str(self.ports[i]), "--port-file", port_file,
                "--checkpoint-dir", os.path.join(self.dir, f"ckpt-{i}"),
                "--save-period", "0", "--apply-threads", "2"] + self.extra
        with open(self.log(i), "ab") as log:
            self.procs[i] = subprocess.Popen(argv, stdout=log,
                                             stderr=subprocess.STDOUT)
        end = time.monotonic() + timeout
        while True:
            try:
                with open(port_file) as f:
                    text = f.read()
            except FileNotFoundError:
                text = ""
            if text.endswith("\n"):
                self.ports[i] = int(text)
                return
            if self.procs[i].poll() is not None or time.monotonic() > end:
                raise RuntimeError(f"pserver {i} did not start: " +
                                   open(self.log(i)).read())
            time.sleep(0.01)

    def start_all(self):
        for i in range(len(self.procs)):
            self.start(i)
        return self

    @property
    def addresses(self):
        return [f"127.0.0.1:{p}" for p in self.ports]

    def kill(self, i):
        """kill -9 and reap."""
        p = self.procs[i]
        if p is not None and p.poll() is None:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait(10)

    def stop(self, i, timeout=20.0):
        """SIGTERM (the pserver checkpoints and exits); its exit code."""
        p = self.procs[i]
        p.send_signal(signal.SIGCONT)
        p.terminate()
        return p.wait(timeout)

    def freeze(self, i, timeout=10.0):
        """SIGSTOP, and waits until every thread of pserver i has stopped
        (on a loaded machine a runnable thread stops only when it next runs,
        and could serve a request after kill() returned)."""
        pid = self.procs[i].pid
        self.procs[i].send_signal(signal.SIGSTOP)
        end = time.monotonic() + timeout
        while True:
            states = []
            for tid in os.listdir(f"/proc/{pid}/task"):
                try:
                    with open(f"/proc/{pid}/task/{tid}/stat") as f:
                        # The state follows the parenthesized command name.
                        states.append(f.read().rsplit(")", 1)[1].split()[0])
                except FileNotFoundError:
                    pass  # a thread that ended
            if states and all(s in "Tt" for s in states):
                return
            if time.monotonic() > end:
                raise RuntimeError(f"pserver {i} did not stop: {states}")
            time.sleep(0.005)

    def close(self):
        for i in range(len(self.procs)):
            self.kill(i)


@contextlib.contextmanager
def running(provider, n, tmpdir, extra=()):
    """N started PServerProcs, ended by PID when the block ends (a pytest
    fixture yields from it)."""
    procs = PServerProcs(provider, n, tmpdir, extra)
    try:
        yield procs.start_all()
    finally:
        procs.close()
