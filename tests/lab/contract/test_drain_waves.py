# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: drain_node, node_rollout and playbooks/drain_waves.yml (through ansible-playbook) against the lab,
scenario ``drain-waves`` (6 GPU nodes: gpu-1..gpu-5 device plugin, gpu-6 DRA) with Deployments, a StatefulSet,
a DaemonSet and PodDisruptionBudgets:

drain_node - check mode changes nothing; a PDB that never allows -> failure at the deadline naming the pod, the
node uncordoned again (nothing was evicted); an unmanaged pod blocks the drain before anything changes.
drain_waves - 6 nodes in 3 waves with a PDB that refuses for a while then allows (retries, no failure), API
500/429 bursts and slow evictions (survived), reboots as the maintenance, a DRA node whose claim must be released
first; check mode changes nothing; a node that does not come back stops the rollout (later waves untouched), a
rerun resumes without draining a finished node, device health not restored stops it, and a workload that cannot
reschedule anywhere is a failed reschedule (named, counted) that stops it.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import threading
import time

import pytest
import yaml
from kubernetes import client, config

from kubelab.testing import start_lab, stop_lab, wait_for

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
NS = "apps"
NODES = ["gpu-%d" % i for i in range(1, 7)]

MAINTENANCE = """---
# The lab's maintenance: a reboot (kubelab fault), or a node replaced without its label (drain_test_drop_label)
- name: Reboot the node (lab fault)
  ansible.builtin.uri:
    url: "{{ drain_test_lab_url }}/kubelab/faults"
    method: POST
    body_format: json
    body: {reboot: {node: "{{ drain_waves_node }}", seconds: "{{ drain_test_reboot_seconds | default(1) | float }}",
                    comes_back: "{{ drain_test_comes_back | default(true) | bool }}"}}
    status_code: [201]
- name: Make the node's devices unhealthy (lab fault)
  ansible.builtin.uri:
    url: "{{ drain_test_lab_url }}/kubelab/faults"
    method: POST
    body_format: json
    body: {device_unhealthy: {node: "{{ drain_waves_node }}"}}
    status_code: [201]
  when: drain_test_unhealthy | default(false) | bool
- name: Drop the node's pool label (a replacement without it)
  ansible.builtin.command:
    argv: [kubectl, --kubeconfig, "{{ dra_gate_kubeconfig }}", label, node, "{{ drain_waves_node }}", "pool-"]
  changed_when: true
  when: drain_test_drop_label | default(false) | bool
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("drain-waves"))
    cluster = start_lab(work, "drain-waves")
    cluster.workdir = work
    api = config.new_client_from_config(config_file=cluster.kubeconfig)
    cluster.core, cluster.apps, cluster.policy = client.CoreV1Api(api), client.AppsV1Api(api), client.PolicyV1Api(api)
    cluster.custom = client.CustomObjectsApi(api)
    wait_for(lambda: len(cluster.custom.list_cluster_custom_object("resource.k8s.io", "v1", "resourceslices")["items"]) >= 1,
             60, "gpu-6's ResourceSlice")
    with open(os.path.join(work, "maintenance.yml"), "w", encoding="utf-8") as handle:
        handle.write(MAINTENANCE)
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


@pytest.fixture(autouse=True)
def no_faults(lab):
    lab.server.fault_engine.remove()
    yield
    reset(lab)


def reset(lab):
    """After each test, also a failed one: no faults, none of the tests' objects, every node uncordoned and
    without the ``pool`` label a test sets; the next test starts from the scenario as it was."""
    lab.server.fault_engine.remove()

    def gone(call, *args, **kwargs):
        try:
            call(*args, **kwargs)
        except client.exceptions.ApiException as exc:
            assert exc.status == 404, exc
    for item in lab.apps.list_namespaced_deployment(NS).items:
        gone(lab.apps.delete_namespaced_deployment, item.metadata.name, NS)
    for item in lab.apps.list_namespaced_stateful_set(NS).items:
        gone(lab.apps.delete_namespaced_stateful_set, item.metadata.name, NS)
    for item in lab.apps.list_namespaced_daemon_set(NS).items:
        gone(lab.apps.delete_namespaced_daemon_set, item.metadata.name, NS)
    for item in lab.policy.list_namespaced_pod_disruption_budget(NS).items:
        gone(lab.policy.delete_namespaced_pod_disruption_budget, item.metadata.name, NS)
    for item in lab.custom.list_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaimtemplates")["items"]:
        gone(lab.custom.delete_namespaced_custom_object, "resource.k8s.io", "v1", NS, "resourceclaimtemplates",
             item["metadata"]["name"])
    for item in lab.core.list_namespaced_pod(NS).items:
        if not item.metadata.owner_references:
            gone(lab.core.delete_namespaced_pod, item.metadata.name, NS, grace_period_seconds=0)
    for name in NODES:
        current = node(lab, name)
        if current.spec.unschedulable or "pool" in (current.metadata.labels or {}):
            lab.core.patch_node(name, {"spec": {"unschedulable": None}, "metadata": {"labels": {"pool": None}}})
    wait_for(lambda: not lab.core.list_namespaced_pod(NS).items, 90, "every pod of the namespace gone")


# -- helpers ----------------------------------------------------------------------------------------

def run_module(lab, tmp_path, module, args, check=False, name="module"):
    out = str(tmp_path / ("%s.json" % name))
    task = {"name": "Run", "gpufleet.dra_gate.%s" % module: dict(args, kubeconfig=lab.kubeconfig), "register": "result",
            "ignore_errors": True}
    if check:
        task["check_mode"] = True
    play = yaml.safe_dump([{"hosts": "localhost", "gather_facts": False, "tasks": [
        task, {"name": "Keep", "ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": out, "mode": "0600"},
               "check_mode": False}]}])
    proc = lab.run_playbook(play, tmp_path, name="%s.yml" % name, timeout=300)
    assert os.path.exists(out), proc.stdout[-3000:] + proc.stderr[-3000:]
    with open(out, encoding="utf-8") as handle:
        return json.load(handle)


def inventory(lab, tmp_path, hostvars=None, name="hosts.yml", groups=None):
    hosts = {node: dict({"ansible_connection": "local"}, **((hostvars or {}).get(node) or {})) for node in NODES}
    children = {"gpu_nodes": {"hosts": hosts}}
    for group, members in (groups or {}).items():
        children[group] = {"hosts": {member: {} for member in members}}
    data = {"all": {"children": children, "vars": {
        "ansible_python_interpreter": os.path.join(REPO, ".venv", "bin", "python"),
        "dra_gate_kubeconfig": lab.kubeconfig, "dra_gate_evidence_root": str(tmp_path / "evidence"),
        "drain_test_lab_url": lab.url, "dra_gate_drain_expect_reboot": True, "dra_gate_drain_poll_interval": 0.2, "dra_gate_drain_retry_interval": 0.5,
        "dra_gate_drain_maintenance_tasks": os.path.join(lab.workdir, "maintenance.yml")}}}
    path = str(tmp_path / name)
    with open(path, "w", encoding="utf-8") as handle:
        yaml.safe_dump(data, handle)
    return path


def run_waves(lab, tmp_path, run_id, extra, hostvars=None, check=False, name="waves", groups=None):
    """playbooks/drain_waves.yml with an inventory of the 6 GPU nodes; (process, the drain record or None)."""
    import subprocess  # noqa: PLC0415
    (tmp_path / "evidence").mkdir(mode=0o700, exist_ok=True)
    inv = inventory(lab, tmp_path, hostvars, name="%s-hosts.yml" % name, groups=groups)
    env = lab.env()
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_NOCOLOR="1", TMPDIR=str(tmp_path), ANSIBLE_FORKS="6")
    argv = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", inv, os.path.join(REPO, "playbooks", "drain_waves.yml"),
            "-e", json.dumps(dict({"dra_gate_run_id": run_id}, **extra))]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=600, check=False)
    records = sorted(glob.glob(str(tmp_path / "evidence" / run_id / "drain-*.json")), key=os.path.getmtime)
    record = None
    if records:
        with open(records[-1], encoding="utf-8") as handle:
            record = json.load(handle)
    return proc, record


def deployment(lab, name, replicas, labels=None, node_selector=None, gpus=0, claim_template=None, volumes=None):
    labels = dict(labels or {}, app=name)
    container = {"name": "c", "image": "registry.k8s.io/pause:3.10"}
    if gpus:
        container["resources"] = {"limits": {"nvidia.com/gpu": str(gpus)}}
    pod_spec = {"containers": [container], "terminationGracePeriodSeconds": 1}
    if node_selector:
        pod_spec["nodeSelector"] = node_selector
    if claim_template:
        pod_spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": claim_template}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if volumes:
        pod_spec["volumes"] = volumes
    body = {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": NS},
            "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": labels}, "spec": pod_spec}}}
    lab.apps.create_namespaced_deployment(NS, body)


def pdb(lab, name, app, min_available):
    lab.policy.create_namespaced_pod_disruption_budget(NS, {
        "apiVersion": "policy/v1", "kind": "PodDisruptionBudget", "metadata": {"name": name, "namespace": NS},
        "spec": {"minAvailable": min_available, "selector": {"matchLabels": {"app": app}}}})


def pods_of(lab, app):
    return [p for p in lab.core.list_namespaced_pod(NS, label_selector="app=%s" % app).items if not p.metadata.deletion_timestamp]


def running(lab, app, count):
    return wait_for(lambda: len([p for p in pods_of(lab, app) if p.status.phase == "Running"]) >= count, 60,
                    "%d %s pods Running" % (count, app))


def node(lab, name):
    return lab.core.read_node(name)


def set_cordon(lab, names, value):
    for name in names:
        lab.core.patch_node(name, {"spec": {"unschedulable": value or None}})


def cleanup(lab, *apps):
    for app in apps:
        lab.apps.delete_namespaced_deployment(app, NS)
    for item in lab.policy.list_namespaced_pod_disruption_budget(NS).items:
        lab.policy.delete_namespaced_pod_disruption_budget(item.metadata.name, NS)
    wait_for(lambda: not [p for p in lab.core.list_namespaced_pod(NS).items
                          if (p.metadata.labels or {}).get("app") in apps], 60, "the test's pods gone")


# -- drain_node ---------------------------------------------------------------------------------------

def test_drain_node_check_mode_pdb_timeout_and_unmanaged(lab, tmp_path):
    deployment(lab, "stuck", 1, node_selector={"kubernetes.io/hostname": "gpu-5"})
    pdb(lab, "stuck", "stuck", 1)
    [before] = running(lab, "stuck", 1) and pods_of(lab, "stuck")
    wait_for(lambda: (lab.policy.read_namespaced_pod_disruption_budget("stuck", NS).status.current_healthy or 0) >= 1, 30,
             "the PDB's status")

    checked = run_module(lab, tmp_path, "drain_node", {"node": "gpu-5"}, check=True, name="check")
    assert checked["changed"] is True and not checked.get("failed"), checked
    assert [p["name"] for p in checked["would_evict"]] == [before.metadata.name]
    assert not node(lab, "gpu-5").spec.unschedulable, "check mode cordoned the node"
    assert [p.metadata.uid for p in pods_of(lab, "stuck")] == [before.metadata.uid]

    started = time.monotonic()
    result = run_module(lab, tmp_path, "drain_node", {"node": "gpu-5", "timeout": 3, "retry_interval": 0.5,
                                                      "poll_interval": 0.2}, name="pdb")
    assert result["failed"] and time.monotonic() - started < 60
    assert "still present after 3 s" in result["msg"] and "apps/%s" % before.metadata.name in result["msg"], result["msg"]
    assert "PodDisruptionBudget" in result["msg"] and "uncordoned again" in result["msg"]
    [ev] = result["evictions"]
    assert ev["pdb_retries"] >= 3 and ev["evicted_at"] is None and "needs 1 healthy" in ev["last_refusal"]
    assert not node(lab, "gpu-5").spec.unschedulable and result["cordoned"] is False
    assert [p.metadata.uid for p in pods_of(lab, "stuck")] == [before.metadata.uid]

    lab.core.create_namespaced_pod(NS, {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "bare", "labels": {"app": "bare"}},
                                        "spec": {"nodeName": "gpu-4", "containers": [{"name": "c", "image": "pause"}]}})
    blocked = run_module(lab, tmp_path, "drain_node", {"node": "gpu-4"}, name="bare")
    assert blocked["failed"] and "apps/bare not managed by a controller" in blocked["msg"]
    assert "delete_unmanaged" in blocked["msg"] and "nothing was changed" in blocked["msg"]
    assert not node(lab, "gpu-4").spec.unschedulable
    lab.core.delete_namespaced_pod("bare", NS, grace_period_seconds=0)
    cleanup(lab, "stuck")


# -- drain waves ----------------------------------------------------------------------------------------

def workloads(lab, web_min_available=2):
    """web (2 replicas, both on gpu-1, PDB minAvailable 2: refused until the test scales it to 3),
    trainer (4 pods of 1 GPU), db (a StatefulSet of 2), agent (a DaemonSet), dra (1 pod with a claim on gpu-6)."""
    set_cordon(lab, NODES[1:], True)
    deployment(lab, "web", 2)
    running(lab, "web", 2)
    set_cordon(lab, NODES[1:], False)
    pdb(lab, "web", "web", web_min_available)
    deployment(lab, "trainer", 4, gpus=1)
    lab.apps.create_namespaced_stateful_set(NS, {
        "apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db", "namespace": NS},
        "spec": {"replicas": 2, "serviceName": "db", "selector": {"matchLabels": {"app": "db"}},
                 "template": {"metadata": {"labels": {"app": "db"}}, "spec": {
                     "terminationGracePeriodSeconds": 1, "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
    lab.apps.create_namespaced_daemon_set(NS, {
        "apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent", "namespace": NS},
        "spec": {"selector": {"matchLabels": {"app": "agent"}}, "template": {"metadata": {"labels": {"app": "agent"}}, "spec": {
            "nodeSelector": {"nvidia.com/gpu.present": "true"},
            "containers": [{"name": "c", "image": "registry.k8s.io/pause:3.10"}]}}}})
    lab.custom.create_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})
    deployment(lab, "dra", 1, claim_template="one-gpu")
    for app, count in (("trainer", 4), ("db", 2), ("agent", 6), ("dra", 1)):
        running(lab, app, count)
    wait_for(lambda: (lab.policy.read_namespaced_pod_disruption_budget("web", NS).status.current_healthy or 0) == 2, 30,
             "the web PDB's status")


def allow_later(lab, seconds):
    """Once gpu-1 is cordoned (its drain began), wait ``seconds`` and scale web to 3: the PDB then allows."""
    def scale():
        wait_for(lambda: node(lab, "gpu-1").spec.unschedulable, 120, "gpu-1 cordoned", interval=0.05)
        time.sleep(seconds)
        lab.apps.patch_namespaced_deployment_scale("web", NS, {"spec": {"replicas": 3}})
    thread = threading.Thread(target=scale, daemon=True)
    thread.start()
    return thread


def uids(lab):
    return sorted(p.metadata.uid for p in lab.core.list_namespaced_pod(NS).items)


def remove_workloads(lab):
    lab.apps.delete_namespaced_stateful_set("db", NS)
    lab.apps.delete_namespaced_daemon_set("agent", NS)
    cleanup(lab, "web", "trainer", "dra")
    lab.custom.delete_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaimtemplates", "one-gpu")
    wait_for(lambda: not lab.core.list_namespaced_pod(NS).items, 60, "every pod of the namespace gone")


def test_waves_with_pdb_retries_api_bursts_reboots_and_a_dra_node(lab, tmp_path):
    workloads(lab)
    before = uids(lab)
    proc, record = run_waves(lab, tmp_path, "waves-check", {"dra_gate_drain_waves": [1, 2, 3]}, check=True, name="check")
    assert proc.returncode == 0, proc.stdout[-4000:]
    assert record is None, "check mode wrote a record"
    assert "Unable to find" not in proc.stdout + proc.stderr, "check mode looked for records in a directory it did not create"
    assert not any(node(lab, n).spec.unschedulable for n in NODES) and uids(lab) == before, "check mode changed the cluster"

    engine = lab.server.fault_engine
    engine.add([{"eviction": {"delay": 0.3}},
                {"api_error": {"code": 500, "count": 3, "path": "/eviction$", "method": "POST"}},
                {"api_error": {"code": 429, "count": 3, "path": "^/api/v1/pods$", "method": "GET"}},
                {"api_error": {"code": 503, "count": 2, "path": "^/api/v1/nodes/gpu-[0-9]$", "method": "PATCH"}}])
    scaler = allow_later(lab, 1.5)
    proc, record = run_waves(lab, tmp_path, "waves-ok", {"dra_gate_drain_waves": [1, 2, 3]}, name="ok")
    scaler.join(5)
    assert proc.returncode == 0, proc.stdout[-6000:]
    results = record["results"]
    assert [w["nodes"] for w in results["waves"]] == [["gpu-1"], ["gpu-2", "gpu-3"], ["gpu-4", "gpu-5", "gpu-6"]]
    assert all(w["started_at"] <= w["finished_at"] for w in results["waves"])
    assert results["waves"][0]["finished_at"] <= results["waves"][1]["started_at"] <= results["waves"][2]["started_at"]
    nodes = {n["node"]: n for n in results["nodes"]}
    assert all(n["status"] == "done" for n in nodes.values()), [(n["node"], n.get("stopped_reason")) for n in nodes.values()]
    assert results["device_health_restored"] == dict((n, True) for n in NODES)
    web = [e for e in nodes["gpu-1"]["evictions"] if e["owner"]["kind"] == "ReplicaSet" and e["name"].startswith("web-")]
    assert len(web) == 2 and min(e["pdb_retries"] for e in web) >= 1, web  # each refused until a replacement was Ready
    assert all(e["method"] == "eviction" and e["gone_at"] for n in nodes.values() for e in n["evictions"])
    assert sum(e["api_retries"] for n in nodes.values() for e in n["evictions"]) >= 3
    assert any(e["name"].startswith("dra-") for e in nodes["gpu-6"]["evictions"]) and nodes["gpu-6"]["before"]["slice_devices"]
    assert nodes["gpu-6"]["after"]["slice_devices"] == nodes["gpu-6"]["before"]["slice_devices"]
    assert all(s["reason"].startswith("DaemonSet") for n in nodes.values() for s in n["skipped_pods"])
    evicted = sum(len(n["evictions"]) for n in nodes.values())
    assert results["failed_reschedules"] == [] and results["failed_reschedule_rate"]["numerator"] == 0
    assert results["failed_reschedule_rate"]["denominator"] == evicted >= 9
    assert all(n["steps"]["maintenance_seconds"] >= 0 and n["steps"]["restore_seconds"] >= 0 for n in nodes.values())
    # the restore waited the reboot out: a new bootID exists only once the node is back (how long the wait
    # itself took depends on the machine's load: the reboot may be over before the restore task starts)
    assert all(n["after"]["boot_id"] != n["before"]["boot_id"] for n in nodes.values())
    assert nodes["gpu-1"]["before"]["allocatable_gpu"] == 8 and nodes["gpu-1"]["after"]["allocatable_gpu"] == 8
    assert not any(node(lab, n).spec.unschedulable for n in NODES)
    assert record["results"]["verdict"] == "warn" and {f["id"] for f in results["findings"]} == {"drain.pdb_waited"}
    for app, count in (("web", 3), ("trainer", 4), ("db", 2), ("dra", 1)):
        running(lab, app, count)
    assert "wave 1: 1 of 1 node(s) done" in proc.stdout and "wave 3: 3 of 3 node(s) done" in proc.stdout
    for path in glob.glob(str(tmp_path / "evidence" / "waves-ok" / "drain" / "*" / "*.json")):
        assert os.stat(path).st_mode & 0o777 == 0o600, path
    remove_workloads(lab)


def test_bad_waves_groups_and_settings_are_refused_once_before_any_node_is_touched(lab, tmp_path):
    """Wave sizes Ansible's serial would read as "every node at once" (0, "0%", -1), an unknown wave group and a bad
    timeout: each refused by the input check (module_utils/inputs/drain_waves.py) once, on the controller, naming the
    value and the expected form, before any node is cordoned or any evidence is written."""
    header = "drain_waves: 1 input wrong, nothing was changed:"
    sizes = "expected a non-empty list of wave sizes, each a whole number above 0 (nodes in the wave) or a percentage above 0%"
    cases = [
        ("zero", {"dra_gate_drain_waves": [0]}, ["- dra_gate_drain_waves ", "entry 0 (0): 0 is not a wave size", sizes]),
        ("zero-pct", {"dra_gate_drain_waves": [1, "0%"]}, ["entry 1 ('0%'): 0% is not a wave size", sizes]),
        ("negative", {"dra_gate_drain_waves": [-1]}, ["entry 0 (-1): a negative size is not a wave size", sizes]),
        ("group", {"dra_gate_drain_wave_groups": ["wave_a", "nosuch_pool"]},
         ["- dra_gate_drain_wave_groups ", "entry 1 ('nosuch_pool') is not an inventory group; "
          "the inventory's groups are: gpu_nodes, wave_a", "expected a list of inventory groups"]),
        ("timeout", {"dra_gate_drain_timeout": "ten"},
         ["- dra_gate_drain_timeout (role variable drain_waves_timeout): it is not a number; got 'ten'; "
          "expected seconds above 0"]),
    ]
    for name, extra, shown in cases:
        proc, record = run_waves(lab, tmp_path, "waves-bad-%s" % name, extra, groups={"wave_a": ["gpu-1"]}, name=name)
        assert proc.returncode != 0 and record is None, (name, proc.stdout[-3000:])
        assert not os.path.exists(str(tmp_path / "evidence" / ("waves-bad-%s" % name))), "%s: evidence written" % name
        assert not any(node(lab, n).spec.unschedulable for n in NODES), "%s: a node was cordoned" % name
        assert "Roll out this wave's nodes" not in proc.stdout and "argument_spec" not in proc.stdout + proc.stderr, name
        # printed once: one failed task (not one per host) - its message as the error, and in its result
        out = proc.stdout + proc.stderr
        error = "[ERROR]: Task failed: Module failed: " + header
        assert out.count(error) == 1 and out.count("fatal: [") == 1 and out.count(header) == 2, (name, out[-4000:])
        error = out[out.index(error):].split("\nOrigin:")[0]
        assert all(text in error for text in shown), (name, error)
        assert error.count("\n- ") == 1, (name, error)  # only the one setting named
        # the waves and groups before any play on the drain hosts; the timeout by the start play's full check
        assert ("PLAY [Drain waves - start" in proc.stdout) == (name == "timeout"), (name, proc.stdout[-3000:])


def test_drain_node_waits_until_the_dra_claims_are_released(lab, tmp_path):
    """A DRA node is not drained while a claim allocated on it is still reserved (claim_leak keeps the claim's
    reservedFor after its pod is gone): the drain fails naming the claim, and passes once it is released."""
    lab.custom.create_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaimtemplates", {
        "apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate", "metadata": {"name": "one-gpu", "namespace": NS},
        "spec": {"spec": {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": "gpu.nvidia.com"}}]}}}})
    deployment(lab, "dra", 1, claim_template="one-gpu")
    [pod] = running(lab, "dra", 1) and pods_of(lab, "dra")
    claim = pod.status.resource_claim_statuses[0].resource_claim_name
    lab.server.fault_engine.add({"claim_leak": {}})
    held = run_module(lab, tmp_path, "drain_node", {"node": "gpu-6", "timeout": 3, "poll_interval": 0.2}, name="held")
    assert held["failed"] and "ResourceClaim(s) allocated on it are still reserved" in held["msg"], held["msg"]
    assert "apps/%s (reserved for pods/%s)" % (claim, pod.metadata.name) in held["msg"]
    assert [c["name"] for c in held["claims_waited"]] == [claim] and held["evictions"][0]["gone_at"]
    assert held["cordoned"] is True and node(lab, "gpu-6").spec.unschedulable, "a node with evictions stays cordoned"
    lab.server.fault_engine.remove()
    set_cordon(lab, ["gpu-6"], False)
    [pod] = running(lab, "dra", 1) and pods_of(lab, "dra")
    drained = run_module(lab, tmp_path, "drain_node", {"node": "gpu-6", "timeout": 30, "poll_interval": 0.2}, name="drained")
    assert not drained.get("failed") and drained["changed"], drained
    assert [e["uid"] for e in drained["evictions"]] == [pod.metadata.uid] and drained["timings"]["claims_seconds"] >= 0
    undo = run_module(lab, tmp_path, "drain_node", {"node": "gpu-6", "state": "uncordoned"}, name="uncordon")
    assert undo["changed"] and not node(lab, "gpu-6").spec.unschedulable
    again = run_module(lab, tmp_path, "drain_node", {"node": "gpu-6", "state": "uncordoned"}, name="uncordon2")
    assert again["changed"] is False
    cleanup(lab, "dra")
    lab.custom.delete_namespaced_custom_object("resource.k8s.io", "v1", NS, "resourceclaimtemplates", "one-gpu")


def node_pods(lab, name):
    return sorted(p.metadata.uid for p in lab.core.list_namespaced_pod(NS, field_selector="spec.nodeName=%s" % name).items)


def node_record(tmp_path, run_id, name):
    with open(str(tmp_path / "evidence" / run_id / "drain" / "nodes" / ("%s.json" % name)), encoding="utf-8") as handle:
        return json.load(handle)


def test_stop_when_a_node_does_not_come_back_resume_and_device_health(lab, tmp_path):
    workloads(lab, web_min_available=1)
    untouched = {n: node_pods(lab, n) for n in ("gpu-5", "gpu-6")}
    extra = {"dra_gate_drain_waves": [2, 2, 2], "dra_gate_drain_restore_timeout": 4}
    proc, record = run_waves(lab, tmp_path, "waves-stop", extra, hostvars={"gpu-3": {"drain_test_comes_back": False}},
                             name="run1")
    assert proc.returncode != 0 and "verdict BLOCK" in proc.stdout, proc.stdout[-4000:]
    results = record["results"]
    nodes = {n["node"]: n for n in results["nodes"]}
    assert [nodes[n]["status"] for n in NODES] == ["done", "done", "stopped", "done", "not_started", "not_started"]
    assert nodes["gpu-3"]["stopped_step"].startswith("Wait until the node is Ready")
    assert "node gpu-3 is not Ready" in nodes["gpu-3"]["stopped_reason"] and nodes["gpu-3"]["device_health_restored"] is False
    assert "stopped at gpu-3 (wave 2)" in nodes["gpu-5"]["why"]
    assert node(lab, "gpu-3").spec.unschedulable and nodes["gpu-3"]["cordoned"] is True
    for name in ("gpu-5", "gpu-6"):  # nothing evicted there (replacements from the drained nodes may have arrived)
        assert set(untouched[name]) <= set(node_pods(lab, name)), "a later wave was touched: %s" % name
    assert not node(lab, "gpu-5").spec.unschedulable and not node(lab, "gpu-6").spec.unschedulable
    ids = {(f["id"], f["subject"]) for f in results["findings"] if f["severity"] == "block"}
    assert {("drain.node_stopped", "node gpu-3"), ("drain.node_not_done", "node gpu-5"), ("drain.node_not_done", "node gpu-6"),
            ("drain.device_health", "node gpu-3")} <= ids, ids

    lab.server.fault_engine.remove()  # the node comes back
    finished = {n: node_record(tmp_path, "waves-stop", n)["started_at"] for n in ("gpu-1", "gpu-2", "gpu-4")}
    proc, record = run_waves(lab, tmp_path, "waves-stop", extra, hostvars={"gpu-5": {"drain_test_unhealthy": True}}, name="run2")
    assert proc.returncode != 0, proc.stdout[-4000:]
    nodes = {n["node"]: n for n in record["results"]["nodes"]}
    assert [nodes[n]["status"] for n in NODES] == ["done", "done", "done", "done", "stopped", "done"]
    assert {n: node_record(tmp_path, "waves-stop", n)["started_at"] for n in finished} == finished, "a finished node ran again"
    assert nodes["gpu-3"]["attempt_stamp"] == nodes["gpu-5"]["attempt_stamp"] != nodes["gpu-1"]["attempt_stamp"]
    assert "allocatable nvidia.com/gpu is 0, recorded 8" in nodes["gpu-5"]["stopped_reason"], nodes["gpu-5"]["stopped_reason"]
    assert node(lab, "gpu-5").spec.unschedulable and not node(lab, "gpu-3").spec.unschedulable

    lab.server.fault_engine.remove()  # the devices are healthy again
    proc, record = run_waves(lab, tmp_path, "waves-stop", extra, name="run3")
    assert proc.returncode == 0, proc.stdout[-4000:]
    nodes = {n["node"]: n for n in record["results"]["nodes"]}
    assert all(nodes[n]["status"] == "done" for n in NODES) and not any(node(lab, n).spec.unschedulable for n in NODES)
    assert [w["nodes"] for w in record["results"]["waves"] if w["attempt_stamp"] == nodes["gpu-5"]["attempt_stamp"]] == [["gpu-5"]]
    assert record["results"]["failed_reschedule_rate"]["numerator"] == 0
    remove_workloads(lab)


def test_a_workload_that_cannot_reschedule_stops_the_rollout(lab, tmp_path):
    """Explicit wave groups (wave_a: gpu-2, wave_b: gpu-4); gpu-2's maintenance drops the label its workload needs."""
    lab.core.patch_node("gpu-2", {"metadata": {"labels": {"pool": "special"}}})
    deployment(lab, "pinned", 1, node_selector={"pool": "special"})
    [pod] = running(lab, "pinned", 1) and pods_of(lab, "pinned")
    assert pod.spec.node_name == "gpu-2"
    before = node_pods(lab, "gpu-4")
    proc, record = run_waves(lab, tmp_path, "waves-resched", {"dra_gate_drain_wave_groups": ["wave_a", "wave_b"],
                                                              "dra_gate_drain_reschedule_timeout": 3},
                             hostvars={"gpu-2": {"drain_test_drop_label": True}}, groups={"wave_a": ["gpu-2"], "wave_b": ["gpu-4"]},
                             name="resched")
    assert proc.returncode != 0, proc.stdout[-4000:]
    results = record["results"]
    assert [w["nodes"] for w in results["waves"]] == [["gpu-2"]]
    assert [(w["wave"], w["hosts"]) for w in record["inputs"]["waves_planned"]] == [(1, ["gpu-2"]), (2, ["gpu-4"])]
    nodes = {n["node"]: n for n in results["nodes"]}
    assert nodes["gpu-2"]["status"] == "stopped" and nodes["gpu-4"]["status"] == "not_started"
    [failed] = results["failed_reschedules"]
    assert failed["namespace"] == NS and failed["name"] == pod.metadata.name and failed["uid"] == pod.metadata.uid
    assert failed["owner"]["kind"] == "ReplicaSet" and failed["owner"]["name"].startswith("pinned-")
    assert failed["reason"].startswith("Unschedulable"), failed
    assert results["failed_reschedule_rate"] == {"numerator": 1, "denominator": 1, "percent": 100.0}
    assert nodes["gpu-2"]["cordoned"] is False and not node(lab, "gpu-2").spec.unschedulable  # healthy: uncordoned
    assert set(before) <= set(node_pods(lab, "gpu-4")) and not node(lab, "gpu-4").spec.unschedulable
    assert ("drain.failed_reschedule", "pod %s/%s" % (NS, pod.metadata.name)) in {
        (f["id"], f["subject"]) for f in results["findings"]}
    cleanup(lab, "pinned")
