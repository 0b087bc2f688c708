"""deploy/slurm/fabps.sbatch on a real Slurm: a two-node cluster on this
machine (munged, slurmctld, a slurmd per node: tests/deploy/local_slurm.py)
started here on free ports; a job over both nodes sbatch'ed that must train
(exit status 0, a test accuracy in its output, a log per role, roles spread
over the nodes, no process left); a job whose trainers fail (a non-zero
exit status); and a job in which a pserver is killed -9 (its
fabps-supervise restarts it in place) and which is then scancel'ed:
nothing of it may be left.

Run by ctest (slurm_job_test) with FABPS_SOURCE_DIR and FABPS_BUILD_DIR set.
"""

import os
import re
import shutil
import signal
import subprocess
import tempfile

import pytest

from local_slurm import LocalSlurm, missing_programs, wait_until

SOURCE = os.environ.get("FABPS_SOURCE_DIR", "")
BUILD = os.environ.get("FABPS_BUILD_DIR", "")
SBATCH = os.path.join(SOURCE, "deploy", "slurm", "fabps.sbatch")


def processes_of(run_dir):
    """Live processes whose command line names run_dir: (pid, argv)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                argv = f.read().split(b"\0")
            with open(f"/proc/{entry}/stat") as f:
                zombie = f.read().rsplit(")", 1)[1].split()[0] == "Z"
        except OSError:
            continue
        text = [a.decode(errors="replace") for a in argv if a]
        if not zombie and any(run_dir in a for a in text):
            out.append((int(entry), text))
    return out


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except OSError:
        return ""


@pytest.fixture(scope="module")
def slurm():
    if os.geteuid() != 0:
        pytest.skip("a local Slurm needs root (munged as munge, slurmd)")
    missing = missing_programs()
    assert not missing, f"{missing} missing: tools/setup.sh installs them"
    assert os.path.isdir(BUILD) and os.path.isfile(SBATCH), \
        "FABPS_SOURCE_DIR and FABPS_BUILD_DIR must name this tree"
    top = tempfile.mkdtemp(prefix="fabps-slurm-test-")
    os.chmod(top, 0o755)  # munged (user munge) reaches its socket in it
    os.makedirs(os.path.join(top, "cluster"))
    try:
        with LocalSlurm(os.path.join(top, "cluster"), nodes=2) as cluster:
            cluster.top = top
            yield cluster
    finally:
        shutil.rmtree(top, ignore_errors=True)


def submit(slurm, name, args, nodes=1):
    """sbatch's the script; (job id, its output file, its output dir)."""
    out = os.path.join(slurm.top, name + ".out")
    run = os.path.join(slurm.top, name)
    p = slurm.run(["sbatch", "--parsable", "--job-name", name, "--time", "10",
                   "-N", str(nodes), "-o", out, SBATCH, "--output-dir", run,
                   "--build-dir", BUILD] + args, cwd=SOURCE)
    return int(p.stdout.strip().split(";")[0]), out, run


def logs(run):
    text = []
    for name in sorted(os.listdir(os.path.join(run, "logs"))):
        tail = read(os.path.join(run, "logs", name)).splitlines()[-8:]
        text.append(f"--- {name}\n" + "\n".join(tail))
    return "\n".join(text)


def test_a_job_trains_and_ends_clean(slurm):
    job, out, run = submit(slurm, "train", [
        "--passes", "1", "--data-dir", os.path.join(slurm.top, "data")],
        nodes=2)
    fields = slurm.wait_job_end(job, 300)
    text = read(out)
    assert fields.get("JobState") == "COMPLETED" and \
        fields.get("ExitCode") == "0:0", \
        f"job {fields}:\n{text}\n{logs(run)}\n{slurm.log_tail()}"
    accuracy = re.findall(r"^pass 1 test accuracy ([0-9.]+)$", text, re.M)
    assert accuracy, text
    # Ten classes: chance is 0.1; one pass of the MLP reaches about 0.85.
    assert float(accuracy[-1]) > 0.6, text
    assert "fabps job finished" in text, text
    assert "provider: auto -> tcp;ofi_rxm (every node's fabps-doctor agrees)" in text, text
    for name in ("etcd", "master-0", "master-1", "pserver-0", "pserver-1",
                 "trainer-0", "trainer-1", "doctor-n1", "doctor-n2"):
        assert read(os.path.join(run, "logs", name + ".log")), \
            f"no log of {name}: {os.listdir(os.path.join(run, 'logs'))}"
    for node in ("n1", "n2"):
        doctor = read(os.path.join(run, "logs", f"doctor-{node}.log"))
        assert "address: 127.0.0.1" in doctor and "auto picks: " in doctor, doctor
    # Ranks go round the nodes: rank r of a step on node r % 2.
    for name, node in (("master-0", 0), ("master-1", 1), ("pserver-0", 0),
                       ("pserver-1", 1), ("trainer-0", 0), ("trainer-1", 1)):
        first = read(os.path.join(run, "logs", name + ".log")).splitlines()[0]
        assert f", node {node}, " in first, f"{name}: {first}"
    assert os.listdir(os.path.join(run, "checkpoints", "ps-0"))
    wait_until(lambda: not processes_of(run), 30,
             f"the job's processes to end: {processes_of(run)}")


def converted_data(slurm):
    """The Fashion-MNIST shards the first job converted (converted here
    when that test did not run)."""
    data = os.path.join(slurm.top, "data")
    if not os.path.exists(os.path.join(data, ".converted")):
        for split, shards in (("train", "8"), ("test", "2")):
            os.makedirs(os.path.join(data, split), exist_ok=True)
            subprocess.run([os.path.join(BUILD, "cmd", "convert", "fabps-convert-fashion-mnist"),
                            "--split", split, "--output-dir", os.path.join(data, split),
                            "--shards", shards], check=True, capture_output=True,
                           timeout=120)
    return data


def pservers_of(run):
    return [pid for pid, argv in processes_of(run)
            if argv[0].endswith("/fabps-pserver")]


def test_a_killed_pserver_restarts_and_scancel_leaves_nothing(slurm):
    data = converted_data(slurm)
    job, out, run = submit(slurm, "cancel", [
        "--passes", "50", "--lease-ttl", "6", "--provider", "tcp;ofi_rxm",
        "--dataset", os.path.join(data, "train", "*"),
        "--test-data", os.path.join(data, "test", "*")])
    wait_until(lambda: "training (" in read(out), 180,
             f"job {job} to start training: {read(out)}")
    assert "fabps-doctor's loopback check passed on every node" in read(out)
    wait_until(lambda: len(pservers_of(run)) == 2, 30, "two pservers")

    victim = pservers_of(run)[0]
    os.kill(victim, signal.SIGKILL)  # a process of this test's job

    # The supervisor's notice of the kill, then the new process serving. Not
    # "restart 1": on a loaded machine a pserver may already have been
    # restarted before (its lease not renewed in time: with a 3 s TTL, under
    # ctest -j3 beside two busy loops, every process of the job lost its
    # lease 4 s in, while etcd took 0.5 s per read).
    killed_then_serving = re.compile(
        r"ended \(signal 9.*\): restart [0-9]+ of[\s\S]*"
        r"fabps-pserver listening on")

    def restarted():
        return any(
            killed_then_serving.search(
                read(os.path.join(run, "logs", f"pserver-{i}.log")))
            for i in (0, 1))

    wait_until(restarted, 60, f"the killed pserver's restart in place:\n{logs(run)}")
    assert victim not in pservers_of(run)
    wait_until(lambda: len(pservers_of(run)) == 2, 30, "two pservers again")

    slurm.run(["scancel", str(job)])
    fields = slurm.wait_job_end(job, 120)
    assert fields.get("JobState") == "CANCELLED", fields
    wait_until(lambda: not processes_of(run), 90,
             f"every process of the cancelled job to end; left: "
             f"{processes_of(run)}")
    assert "fabps job finished" not in read(out)


def test_a_failing_job_says_so_in_its_exit_status(slurm):
    missing = os.path.join(slurm.top, "no-such-data")
    job, out, run = submit(slurm, "fail", [
        "--passes", "1", "--restarts", "0",
        "--dataset", os.path.join(missing, "train-*"),
        "--test-data", os.path.join(missing, "test-*")])
    fields = slurm.wait_job_end(job, 180)
    text = read(out)
    assert fields.get("JobState") == "FAILED", f"{fields}\n{text}"
    assert fields.get("ExitCode", "0:0") != "0:0", fields
    assert re.search(r"fabps job FAILED: the trainers' step exited [1-9]", text), text
    assert "fabps job finished" not in text, text
    assert "no-such-data" in read(os.path.join(run, "logs", "trainer-0.log"))
    wait_until(lambda: not processes_of(run), 60,
             f"the failed job's processes to end: {processes_of(run)}")
