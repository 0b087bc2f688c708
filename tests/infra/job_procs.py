"""The processes of a running fabps-launch job, seen from outside through
/proc: which process plays which role, whether training has started, and the
CPU time of each thread. Shared by tests/infra/chaos/chaos.py (faults) and
bench/profile_job.py (where a job's CPU goes)."""
import os

CLOCK_TICKS = os.sysconf("SC_CLK_TCK")


def role_of(cmdline):
    """The role of a job process from its argv, or None."""
    prog = os.path.basename(cmdline[0]) if cmdline else ""
    if prog == "fabps-pserver":
        return "pserver"
    if prog == "fabps-master":
        return "master"
    if prog == "etcd":
        return "etcd"
    if "trainer" in prog or "torch" in prog or any(
            os.path.basename(a).endswith("-torch") for a in cmdline[:2]):
        return "trainer"
    return None


def job_processes(run_dir):
    """{role: [pid, ...]} of the running processes of the job in run_dir."""
    out = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as f:
                argv = f.read().split(b"\0")
            with open("/proc/%s/stat" % entry) as f:
                state = f.read().rsplit(")", 1)[1].split()[0]
        except OSError:
            continue
        argv = [a.decode(errors="replace") for a in argv if a]
        if state == "Z" or not any(run_dir in a for a in argv):
            continue
        role = role_of(argv)
        if role is not None and os.path.basename(argv[0]) != "fabps-launch":
            out.setdefault(role, []).append(int(entry))
    return out


def training_started(run_dir):
    """Whether a trainer of the job in run_dir has reported progress."""
    for name in os.listdir(run_dir) if os.path.isdir(run_dir) else []:
        if name.endswith(".metrics"):
            with open(os.path.join(run_dir, name), errors="replace") as f:
                if '"progress"' in f.read():
                    return True
    return False


def thread_times(pid):
    """{tid: (name, user s, system s, voluntary, involuntary switches)} of
    the threads of `pid`; threads that end while being read are left out."""
    out = {}
    task = "/proc/%d/task" % pid
    try:
        tids = os.listdir(task)
    except OSError:
        return out
    for tid in tids:
        try:
            with open("%s/%s/stat" % (task, tid)) as f:
                stat = f.read()
            with open("%s/%s/status" % (task, tid)) as f:
                status = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1:stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2:].split()
        # Fields 14 and 15 of stat (utime, stime) are 11 and 12 here.
        user = int(fields[11]) / CLOCK_TICKS
        system = int(fields[12]) / CLOCK_TICKS
        switches = {}
        for line in status.splitlines():
            key, _, value = line.partition(":")
            if key.endswith("ctxt_switches"):
                switches[key] = int(value)
        out[int(tid)] = (name, user, system,
                         switches.get("voluntary_ctxt_switches", 0),
                         switches.get("nonvoluntary_ctxt_switches", 0))
    return out
