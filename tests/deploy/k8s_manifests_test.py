"""deploy/k8s, checked offline (no cluster runs here): every manifest
parses, and the fields that refer to each other agree: names, labels and
selectors, Service ports and container ports, volumes and claims, probes
and the daemons' --metrics-port, the $(VARS) of the arguments and the
container's env, and every flag of a fabps container against the real
`--help` of the binary it runs (from this build tree; /opt/fabps/build in
the image is the build tree).

Run by ctest (k8s_manifests_test) with FABPS_SOURCE_DIR and FABPS_BUILD_DIR.
"""

import glob
import os
import re
import subprocess

import pytest
import yaml

SOURCE = os.environ.get("FABPS_SOURCE_DIR", "")
BUILD = os.environ.get("FABPS_BUILD_DIR", "")
K8S = os.path.join(SOURCE, "deploy", "k8s")
IMAGE_BUILD = "/opt/fabps/build/"
WORKLOADS = ("Deployment", "StatefulSet", "Job")
# The Secret the user creates (deploy/k8s/README.md says how).
USER_SECRETS = {"fabps-job-token"}


def load():
    docs = []
    for path in sorted(glob.glob(os.path.join(K8S, "*.yaml"))):
        with open(path) as f:
            for doc in yaml.safe_load_all(f):
                if doc is not None:
                    docs.append((os.path.basename(path), doc))
    return docs


DOCS = load()
RESOURCES = [d for _, d in DOCS if d.get("kind") != "Kustomization"]


def of_kind(*kinds):
    return [d for d in RESOURCES if d["kind"] in kinds]


def pod_spec(w):
    return w["spec"]["template"]["spec"]


def containers(w, init=False):
    spec = pod_spec(w)
    return spec.get("containers", []) + (spec.get("initContainers", []) if init else [])


def fabps_containers():
    """(workload, container, binary in the build tree) of fabps daemons and
    trainers: those whose command is a program of the build tree."""
    out = []
    for w in of_kind(*WORKLOADS):
        for c in containers(w):
            cmd = c.get("command", [])
            if cmd and cmd[0].startswith(IMAGE_BUILD):
                out.append((w, c, os.path.join(BUILD, cmd[0][len(IMAGE_BUILD):])))
    return out


def help_flags(binary):
    p = subprocess.run([binary, "--help"], capture_output=True, text=True,
                       timeout=30)
    assert p.returncode == 0, f"{binary} --help exited {p.returncode}"
    return set(re.findall(r"--[a-z0-9][a-z0-9-]*", p.stdout))


def args_of(c):
    """{flag: value} of --flag=value arguments (every fabps argument is
    written that way in these manifests)."""
    out = {}
    for a in c.get("args", []):
        assert a.startswith("--") and "=" in a, f"{c['name']}: '{a}' is not --flag=value"
        flag, _, value = a.partition("=")
        out[flag] = value
    return out


def by_component(component):
    found = [w for w in of_kind(*WORKLOADS)
             if w["spec"]["template"]["metadata"]["labels"].get(
                 "app.kubernetes.io/component") == component]
    assert len(found) == 1, f"one workload of component {component}: {found}"
    return found[0]


def container_ports(w):
    ports = {}
    for c in containers(w):
        for p in c.get("ports", []):
            ports[p["containerPort"]] = p["containerPort"]
            if "name" in p:
                ports[p["name"]] = p["containerPort"]
    return ports


def matches(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def test_every_manifest_parses_and_names_itself():
    assert RESOURCES, f"no manifests in {K8S}"
    seen = set()
    for d in RESOURCES:
        assert d.get("apiVersion") and d.get("kind"), d
        name = d["metadata"]["name"]
        assert (d["kind"], name) not in seen, f"two {d['kind']} {name}"
        seen.add((d["kind"], name))
        assert d["metadata"]["labels"]["app.kubernetes.io/name"] == "fabps", name


def test_kustomization_lists_every_manifest():
    kust = [d for _, d in DOCS if d.get("kind") == "Kustomization"]
    assert len(kust) == 1
    files = {os.path.basename(p) for p in glob.glob(os.path.join(K8S, "*.yaml"))}
    files.discard("kustomization.yaml")
    assert set(kust[0]["resources"]) == files


def test_selectors_match_their_pods():
    for w in of_kind("Deployment", "StatefulSet"):
        labels = w["spec"]["template"]["metadata"]["labels"]
        assert matches(w["spec"]["selector"]["matchLabels"], labels), w["metadata"]["name"]
    for s in of_kind("Service"):
        pods = [w for w in of_kind(*WORKLOADS)
                if matches(s["spec"]["selector"], w["spec"]["template"]["metadata"]["labels"])]
        assert len(pods) == 1, f"Service {s['metadata']['name']} selects {len(pods)} workloads"
        ports = container_ports(pods[0])
        for p in s["spec"]["ports"]:
            assert p.get("targetPort", p["port"]) in ports, \
                f"Service {s['metadata']['name']}: no container port {p}"


def test_statefulsets_have_their_headless_service():
    services = {s["metadata"]["name"]: s for s in of_kind("Service")}
    for w in of_kind("StatefulSet"):
        s = services.get(w["spec"]["serviceName"])
        assert s is not None, w["spec"]["serviceName"]
        assert s["spec"].get("clusterIP") == "None"
        assert matches(s["spec"]["selector"], w["spec"]["template"]["metadata"]["labels"])


def test_volumes_and_claims_exist():
    claims = {c["metadata"]["name"] for c in of_kind("PersistentVolumeClaim")}
    with open(os.path.join(K8S, "README.md")) as f:
        readme = f.read()
    for w in of_kind(*WORKLOADS):
        spec = pod_spec(w)
        names = {v["name"] for v in spec.get("volumes", [])}
        names |= {t["metadata"]["name"] for t in w["spec"].get("volumeClaimTemplates", [])}
        for v in spec.get("volumes", []):
            if "persistentVolumeClaim" in v:
                assert v["persistentVolumeClaim"]["claimName"] in claims, v
            if "secret" in v:
                name = v["secret"]["secretName"]
                assert name in USER_SECRETS and f"create secret generic {name}" in readme, v
        for c in containers(w, init=True):
            for m in c.get("volumeMounts", []):
                assert m["name"] in names, f"{w['metadata']['name']}/{c['name']}: {m}"


def test_restart_policies_supervise():
    for w in of_kind("Deployment", "StatefulSet"):
        assert pod_spec(w).get("restartPolicy", "Always") == "Always"
    for w in of_kind("Job"):
        assert pod_spec(w)["restartPolicy"] == "OnFailure"


@pytest.mark.parametrize("w,c,binary", fabps_containers(),
                         ids=[c["name"] for _, c, _ in fabps_containers()])
def test_fabps_arguments_are_real_flags(w, c, binary):
    assert os.access(binary, os.X_OK), f"{binary} is not built"
    flags = help_flags(binary)
    env = {e["name"] for e in c.get("env", [])}
    for flag, value in args_of(c).items():
        assert flag in flags, f"{c['name']}: {flag} is not a flag of {binary}"
        for var in re.findall(r"\$\(([A-Za-z_][A-Za-z0-9_]*)\)", value):
            assert var in env, f"{c['name']}: $({var}) is not in its env"


def test_shell_steps_run_real_programs_and_flags():
    """The data Job's script: the build's converter with its real flags."""
    scripts = [" ".join(c.get("args", [])) for w in of_kind(*WORKLOADS)
               for c in containers(w, init=True)
               if c.get("command", [""])[0] == "/bin/sh"]
    programs = set()
    for text in scripts:
        for path in re.findall(re.escape(IMAGE_BUILD) + r"[A-Za-z0-9_/.-]+", text):
            binary = os.path.join(BUILD, path[len(IMAGE_BUILD):])
            assert os.access(binary, os.X_OK), f"{path}: not a program of the build"
            programs.add(binary)
    assert programs, "the data Job runs no program of the build"
    flags = set().union(*(help_flags(b) for b in programs))
    for text in scripts:
        if IMAGE_BUILD in text:
            for flag in re.findall(r"(?<![\w-])--[a-z][a-z0-9-]*", text):
                assert flag in flags, f"{flag}: not a flag of {sorted(programs)}"


def test_store_job_and_token_agree():
    services = {s["metadata"]["name"]: s for s in of_kind("Service")}
    stores, jobs = set(), set()
    for w, c, _ in fabps_containers():
        a = args_of(c)
        stores.add(a["--store"])
        jobs.add(a["--job"])
        token = a.get("--token-file") or next(
            (e["value"] for e in c.get("env", []) if e["name"] == "FABPS_JOB_TOKEN_FILE"), None)
        assert token, f"{c['name']}: no job token"
        mounts = [m["mountPath"] for m in c["volumeMounts"]]
        assert any(token.startswith(m + "/") for m in mounts), f"{c['name']}: {token}"
    assert len(stores) == 1 and len(jobs) == 1, (stores, jobs)
    m = re.fullmatch(r"etcd:http://([a-z0-9-]+):(\d+)", stores.pop())
    assert m and m.group(1) in services, "--store must name the etcd Service"
    assert int(m.group(2)) in [p["port"] for p in services[m.group(1)]["spec"]["ports"]]


def test_daemons_probe_their_metrics_port():
    for w, c, _ in fabps_containers():
        if w["kind"] == "Job":
            continue  # trainers serve nothing; the restart policy watches them
        a = args_of(c)
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        assert int(a["--port"]) == ports["control"]
        assert int(a["--metrics-port"]) == ports["metrics"]
        probes = [c.get(k) for k in ("readinessProbe", "livenessProbe", "startupProbe")]
        assert c.get("readinessProbe"), c["name"]
        for p in filter(None, probes):
            assert p["httpGet"]["path"] == "/metrics"
            assert ports.get(p["httpGet"]["port"], p["httpGet"]["port"]) == ports["metrics"]
    etcd = by_component("etcd")
    for c in containers(etcd):
        ports = {p["name"]: p["containerPort"] for p in c["ports"]}
        for k in ("readinessProbe", "livenessProbe"):
            assert c[k]["httpGet"]["path"] == "/health"
            assert ports[c[k]["httpGet"]["port"]] == 2379


def test_pservers_stateful_with_checkpoints():
    ps = by_component("pserver")
    assert ps["kind"] == "StatefulSet"
    c = containers(ps)[0]
    a = args_of(c)
    assert int(a["--num-pservers"]) == ps["spec"]["replicas"]
    assert a["--index"] == "$(POD_INDEX)"
    env = {e["name"]: e for e in c["env"]}
    assert env["POD_INDEX"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.labels['apps.kubernetes.io/pod-index']"
    templates = {t["metadata"]["name"] for t in ps["spec"]["volumeClaimTemplates"]}
    mounts = {m["mountPath"]: m["name"] for m in c["volumeMounts"]}
    assert mounts.get(a["--checkpoint-dir"]) in templates
    assert c.get("livenessProbe") and c.get("startupProbe")


def test_masters_two_replicas():
    m = by_component("master")
    assert m["kind"] == "Deployment" and m["spec"]["replicas"] == 2


def test_trainers_indexed_job_reading_the_masters_data():
    t = by_component("trainer")
    assert t["kind"] == "Job" and t["spec"]["completionMode"] == "Indexed"
    assert t["spec"]["completions"] == t["spec"]["parallelism"]
    c = containers(t)[0]
    a = args_of(c)
    env = {e["name"]: e for e in c["env"]}
    assert a["--trainer-id"] == "$(TRAINER_ID)"
    assert env["TRAINER_ID"]["valueFrom"]["fieldRef"]["fieldPath"] == \
        "metadata.annotations['batch.kubernetes.io/job-completion-index']"
    master = by_component("master")

    def claim_at(w, path):
        """The claim mounted over `path` in w's fabps container."""
        c = [x for x in containers(w) if x.get("command", [""])[0].startswith(IMAGE_BUILD)][0]
        vols = {v["name"]: v for v in pod_spec(w)["volumes"]}
        for m in c["volumeMounts"]:
            if path.startswith(m["mountPath"] + "/"):
                return vols[m["name"]]["persistentVolumeClaim"]["claimName"]
        return None

    # The master cuts the files the trainers name into tasks: same claim,
    # same path.
    for flag in ("--dataset", "--test-data"):
        assert claim_at(t, a[flag]) is not None, flag
        assert claim_at(t, a[flag]) == claim_at(master, a[flag]), flag
