# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.controllers against a real etcd and LabServer: outcomes are polled for, with bounds."""

from __future__ import annotations

import json
import time

import pytest

from kubelab.controllers.all import install
from kubelab.errors import ApiError
from kubelab.etcd import EtcdProcess
from kubelab.scenario import validate_scenario
from kubelab.server import LabServer
from kubelab import testing

NODES = [
    {"name": "cp-1", "role": "control-plane"},
    {"name": "node-1", "labels": {"gpu": "true"}, "capacity": {"nvidia.com/gpu": "2"}},
    {"name": "node-2", "labels": {"gpu": "true", "zone": "b"}, "capacity": {"nvidia.com/gpu": "1"}},
    {"name": "node-3", "taints": [{"key": "dedicated", "value": "infra", "effect": "NoSchedule"}]},
]
WORKERS = {"node-1", "node-2"}  # untainted, schedulable


def wait_for(check, timeout: float = 20.0, what: str = "condition"):
    return testing.wait_for(check, timeout, what, interval=0.1)


@pytest.fixture(scope="module")
def etcd():
    with EtcdProcess() as proc:
        yield proc


@pytest.fixture
def lab(etcd, request):
    knobs = getattr(request, "param", {}) or {}
    scenario = validate_scenario({"nodes": NODES})
    scenario.update({"pod_start_seconds": 0.1, "pod_stop_seconds": 0.1, "job_pod_seconds": 0.2})
    scenario.update(knobs)
    server = LabServer(etcd.client_url, scenario=scenario)
    for node in scenario["nodes"]:
        try:
            server.api.create(server.registry.get("", "v1", "nodes"), None, node)
        except ApiError as exc:
            assert exc.code == 409
    install(server)
    server.start()
    yield server
    for controller in server.controllers:  # stop them all at once rather than one resync period each
        controller.stop_event.set()
    with server.store.changed:
        server.store.changed.notify_all()
    server.stop()
    assert not server.controller_errors, server.controller_errors
    _wipe(server)


def _wipe(server):
    for rtype in server.registry.all():
        items, _rev = server.store.list(rtype)
        for obj in items:
            try:
                server.store.delete(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"])
            except ApiError:
                pass


class Kube:
    """Small conveniences over lab.api for the tests."""

    def __init__(self, server, namespace: str):
        self.server = server
        self.api = server.api
        self.ns = namespace
        wait_for(lambda: self.api.store.get_or_none(self.t("namespaces"), None, "default"), what="namespace default")
        self.api.create(self.t("namespaces"), None, {"metadata": {"name": namespace}})

    def t(self, plural: str):
        for rtype in self.server.registry.all():
            if rtype.plural == plural:
                return rtype
        raise KeyError(plural)

    def get(self, plural, name, namespace=None):
        if namespace is None and self.t(plural).namespaced:
            namespace = self.ns
        return self.api.get(self.t(plural), namespace, name)

    def list(self, plural, selector=""):
        return self.api.list(self.t(plural), self.ns if self.t(plural).namespaced else None, selector)["items"]

    def create(self, plural, obj):
        return self.api.create(self.t(plural), self.ns if self.t(plural).namespaced else None, obj)

    def patch(self, plural, name, body, namespaced=True):
        return self.api.patch(self.t(plural), self.ns if namespaced else None, name,
                              "application/merge-patch+json", json.dumps(body).encode())[0]

    def ready_pods(self, selector):
        return [p for p in self.list("pods", selector) if not p["metadata"].get("deletionTimestamp")
                and p.get("status", {}).get("phase") == "Running"
                and any(c["type"] == "Ready" and c["status"] == "True" for c in p["status"].get("conditions", []))]


def deployment(name, replicas=3, labels=None, **pod_spec):
    labels = labels or {"app": name}
    spec = {"containers": [{"name": "web", "image": "nginx:1.27"}]}
    spec.update(pod_spec)
    return {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name},
            "spec": {"replicas": replicas, "selector": {"matchLabels": labels},
                     "template": {"metadata": {"labels": labels}, "spec": spec}}}


def deployment_ready(kube, name, replicas):
    dep = kube.get("deployments", name)
    st = dep.get("status", {})
    conds = {c["type"]: c for c in st.get("conditions", [])}
    ok = (st.get("observedGeneration", 0) >= dep["metadata"]["generation"]
          and st.get("replicas") == st.get("updatedReplicas") == st.get("readyReplicas") == st.get("availableReplicas")
          == replicas and conds.get("Available", {}).get("status") == "True"
          and conds.get("Progressing", {}).get("reason") == "NewReplicaSetAvailable")
    return dep if ok else None


def test_system_namespaces_and_nodes(lab):
    kube = Kube(lab, "t-nodes")
    for name in ("default", "kube-system", "kube-public", "kube-node-lease"):
        assert kube.get("namespaces", name)["status"]["phase"] == "Active"
    nodes = wait_for(lambda: all(n["spec"].get("podCIDR") for n in kube.list("nodes")) and kube.list("nodes"))
    assert len({n["spec"]["podCIDR"] for n in nodes}) == len(NODES)
    for node in nodes:
        ready = [c for c in node["status"]["conditions"] if c["type"] == "Ready"]
        assert ready[0]["status"] == "True" and ready[0]["reason"] == "KubeletReady"


def test_deployment_becomes_ready_as_helm_expects(lab):
    kube = Kube(lab, "t-deploy")
    kube.create("deployments", deployment("web"))
    dep = wait_for(lambda: deployment_ready(kube, "web", 3), what="deployment ready")
    assert dep["status"]["conditions"][0]["reason"] == "MinimumReplicasAvailable"
    rs_list = kube.list("replicasets", "app=web")
    assert len(rs_list) == 1
    rs = rs_list[0]
    template_hash = rs["metadata"]["labels"]["pod-template-hash"]
    assert len(template_hash) == 10 and rs["metadata"]["name"] == "web-" + template_hash
    owner = rs["metadata"]["ownerReferences"][0]
    assert owner["controller"] is True and owner["uid"] == dep["metadata"]["uid"] and owner["kind"] == "Deployment"
    template = json.loads(json.dumps(rs["spec"]["template"]))
    assert template["metadata"]["labels"].pop("pod-template-hash") == template_hash
    assert template == dep["spec"]["template"]
    assert rs["status"]["readyReplicas"] == rs["status"]["availableReplicas"] == rs["status"]["fullyLabeledReplicas"] == 3
    pods = kube.ready_pods("app=web,pod-template-hash=" + template_hash)
    assert len(pods) == 3
    for pod in pods:
        assert pod["metadata"]["name"].startswith(rs["metadata"]["name"] + "-")
        assert pod["metadata"]["ownerReferences"][0]["uid"] == rs["metadata"]["uid"]
        assert pod["spec"]["nodeName"] in WORKERS
        st = pod["status"]
        assert st["podIP"] and st["hostIP"] and st["startTime"]
        assert {c["type"] for c in st["conditions"] if c["status"] == "True"} >= {
            "PodScheduled", "Initialized", "ContainersReady", "Ready"}
        cs = st["containerStatuses"][0]
        assert cs["ready"] and cs["started"] and cs["restartCount"] == 0 and cs["state"]["running"]["startedAt"]
        assert cs["imageID"].startswith("docker.io/library/nginx@sha256:") and cs["containerID"].startswith("containerd://")
    # Settled: no more writes (no status churn).
    rv = kube.get("deployments", "web")["metadata"]["resourceVersion"]
    time.sleep(1.5)
    assert kube.get("deployments", "web")["metadata"]["resourceVersion"] == rv


def test_rollout_and_scale(lab):
    kube = Kube(lab, "t-rollout")
    kube.create("deployments", deployment("web", replicas=2))
    wait_for(lambda: deployment_ready(kube, "web", 2), what="first rollout")
    kube.patch("deployments", "web", {"spec": {"template": {"spec": {"containers": [{"name": "web", "image": "nginx:1.28"}]}}}})
    wait_for(lambda: deployment_ready(kube, "web", 2), what="second rollout")
    rs_list = kube.list("replicasets", "app=web")
    assert sorted(rs["spec"]["replicas"] for rs in rs_list) == [0, 2]
    wait_for(lambda: len(kube.list("pods", "app=web")) == 2, what="old pods gone")
    assert all(p["spec"]["containers"][0]["image"] == "nginx:1.28" for p in kube.list("pods", "app=web"))
    kube.patch("deployments", "web", {"spec": {"replicas": 4}})
    wait_for(lambda: deployment_ready(kube, "web", 4), what="scaled up")
    kube.patch("deployments", "web", {"spec": {"replicas": 1}})
    wait_for(lambda: deployment_ready(kube, "web", 1) and len(kube.list("pods", "app=web")) == 1, what="scaled down")


def test_cordoned_node_gets_no_new_pods(lab):
    kube = Kube(lab, "t-cordon")
    kube.patch("nodes", "node-1", {"spec": {"unschedulable": True}}, namespaced=False)
    kube.create("deployments", deployment("web", replicas=3))
    wait_for(lambda: deployment_ready(kube, "web", 3), what="deployment ready")
    assert {p["spec"]["nodeName"] for p in kube.list("pods", "app=web")} == {"node-2"}


def test_scheduler_constraints_and_unschedulable(lab):
    kube = Kube(lab, "t-sched")
    pod = {"metadata": {"name": "big"}, "spec": {"containers": [
        {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "3"}}}]}}
    kube.create("pods", pod)
    cond = wait_for(lambda: [c for c in kube.get("pods", "big")["status"].get("conditions", [])
                             if c["type"] == "PodScheduled" and c["status"] == "False"], what="unschedulable")[0]
    assert cond["reason"] == "Unschedulable" and cond["message"].startswith("0/4 nodes are available")
    assert "Insufficient nvidia.com/gpu" in cond["message"]
    one_gpu = {"name": "c", "image": "cuda", "resources": {"limits": {"nvidia.com/gpu": "2"}}}
    kube.create("pods", {"metadata": {"name": "two-gpus"}, "spec": {"containers": [one_gpu]}})
    kube.create("pods", {"metadata": {"name": "zone-b"}, "spec": {"containers": [{"name": "c", "image": "x"}], "affinity": {
        "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [
            {"matchExpressions": [{"key": "zone", "operator": "In", "values": ["b"]}]}]}}}}})
    kube.create("pods", {"metadata": {"name": "infra"}, "spec": {
        "containers": [{"name": "c", "image": "x"}], "nodeSelector": {"kubernetes.io/hostname": "node-3"},
        "tolerations": [{"key": "dedicated", "operator": "Equal", "value": "infra", "effect": "NoSchedule"}]}})
    kube.create("pods", {"metadata": {"name": "no-gpu-label"}, "spec": {"containers": [{"name": "c", "image": "x"}],
                                                                        "nodeSelector": {"gpu": "false"}}})
    wait_for(lambda: all(kube.get("pods", n).get("status", {}).get("phase") == "Running"
                         for n in ("two-gpus", "zone-b", "infra")), what="pods running")
    assert kube.get("pods", "two-gpus")["spec"]["nodeName"] == "node-1"
    assert kube.get("pods", "zone-b")["spec"]["nodeName"] == "node-2"
    assert kube.get("pods", "infra")["spec"]["nodeName"] == "node-3"
    assert not kube.get("pods", "no-gpu-label")["spec"].get("nodeName")
    assert not kube.get("pods", "big")["spec"].get("nodeName")


def test_pdb_and_eviction(lab):
    kube = Kube(lab, "t-pdb")
    kube.create("deployments", deployment("web", replicas=3))
    wait_for(lambda: deployment_ready(kube, "web", 3), what="deployment ready")
    kube.create("poddisruptionbudgets", {"apiVersion": "policy/v1", "kind": "PodDisruptionBudget",
                                         "metadata": {"name": "web"},
                                         "spec": {"minAvailable": 2, "selector": {"matchLabels": {"app": "web"}}}})
    pdb = wait_for(lambda: kube.get("poddisruptionbudgets", "web").get("status", {}).get("disruptionsAllowed") == 1
                   and kube.get("poddisruptionbudgets", "web"), what="pdb status")
    st = pdb["status"]
    assert (st["expectedPods"], st["currentHealthy"], st["desiredHealthy"]) == (3, 3, 2)
    assert st["observedGeneration"] == pdb["metadata"]["generation"]
    assert st["conditions"][0]["type"] == "DisruptionAllowed" and st["conditions"][0]["status"] == "True"
    names = sorted(p["metadata"]["name"] for p in kube.ready_pods("app=web"))
    kube.api.evict(kube.ns, names[0], {})
    with pytest.raises(ApiError) as err:
        kube.api.evict(kube.ns, names[1], {})
    assert err.value.code == 429
    # The evicted pod is replaced and the budget recovers.
    wait_for(lambda: len(kube.ready_pods("app=web")) == 3 and names[0] not in
             {p["metadata"]["name"] for p in kube.list("pods", "app=web")}, what="replacement")
    wait_for(lambda: kube.get("poddisruptionbudgets", "web")["status"]["disruptionsAllowed"] == 1, what="budget back")


def test_daemonset_on_every_eligible_node(lab):
    kube = Kube(lab, "t-ds")
    kube.patch("nodes", "node-2", {"spec": {"unschedulable": True}}, namespaced=False)
    labels = {"app": "agent"}
    kube.create("daemonsets", {"apiVersion": "apps/v1", "kind": "DaemonSet", "metadata": {"name": "agent"},
                               "spec": {"selector": {"matchLabels": labels}, "template": {
                                   "metadata": {"labels": labels},
                                   "spec": {"containers": [{"name": "a", "image": "busybox"}],
                                            "tolerations": [{"key": "dedicated", "operator": "Exists"}]}}}})

    def settled():
        ds = kube.get("daemonsets", "agent")
        st = ds.get("status", {})
        return ds if st.get("numberReady") == st.get("desiredNumberScheduled") == 3 and \
            st.get("updatedNumberScheduled") == st.get("numberAvailable") == st.get("currentNumberScheduled") == 3 else None
    ds = wait_for(settled, what="daemonset ready")
    assert ds["status"]["observedGeneration"] == ds["metadata"]["generation"]
    pods = kube.list("pods", "app=agent")
    assert sorted(p["spec"]["nodeName"] for p in pods) == ["node-1", "node-2", "node-3"]  # not the control plane
    assert all(p["metadata"]["ownerReferences"][0]["kind"] == "DaemonSet" for p in pods)


def test_delete_deployment_collects_replicasets_and_pods(lab):
    kube = Kube(lab, "t-gc")
    kube.create("deployments", deployment("web", replicas=2))
    wait_for(lambda: deployment_ready(kube, "web", 2), what="deployment ready")
    kube.api.delete(kube.t("deployments"), kube.ns, "web", {"propagationPolicy": "Background"})
    wait_for(lambda: not kube.list("replicasets") and not kube.list("pods"), what="dependents collected")
    time.sleep(1)
    assert not kube.list("replicasets") and not kube.list("pods")


def test_statefulset_and_job(lab):
    kube = Kube(lab, "t-sets")
    labels = {"app": "db"}
    kube.create("statefulsets", {"apiVersion": "apps/v1", "kind": "StatefulSet", "metadata": {"name": "db"},
                                 "spec": {"replicas": 3, "serviceName": "db", "selector": {"matchLabels": labels},
                                          "template": {"metadata": {"labels": labels},
                                                       "spec": {"containers": [{"name": "db", "image": "postgres:17"}]}}}})
    kube.create("jobs", {"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "once"},
                         "spec": {"completions": 2, "template": {"spec": {
                             "restartPolicy": "Never", "containers": [{"name": "j", "image": "busybox"}]}}}})

    def sts_ready():
        st = kube.get("statefulsets", "db").get("status", {})
        return st if st.get("readyReplicas") == st.get("replicas") == st.get("currentReplicas") == \
            st.get("updatedReplicas") == st.get("availableReplicas") == 3 else None
    st = wait_for(sts_ready, what="statefulset ready")
    assert st["currentRevision"] == st["updateRevision"]
    assert sorted(p["metadata"]["name"] for p in kube.ready_pods("app=db")) == ["db-0", "db-1", "db-2"]
    job = wait_for(lambda: kube.get("jobs", "once").get("status", {}).get("succeeded") == 2 and kube.get("jobs", "once"),
                   what="job complete")
    assert any(c["type"] == "Complete" and c["status"] == "True" for c in job["status"]["conditions"])
    assert job["status"]["completionTime"] and job["status"]["active"] == 0
    kube.patch("statefulsets", "db", {"spec": {"replicas": 1}})
    wait_for(lambda: [p["metadata"]["name"] for p in kube.list("pods", "app=db")] == ["db-0"], what="sts scaled down")


@pytest.mark.parametrize("lab", [{"nodes_not_ready": ["node-1"]}], indirect=True)
def test_node_not_ready_fault(lab):
    kube = Kube(lab, "t-fault")
    node = wait_for(lambda: [c for c in kube.get("nodes", "node-1")["status"]["conditions"]
                             if c["type"] == "Ready" and c["status"] == "False"], what="node-1 NotReady")
    assert node[0]["reason"] == "KubeletNotReady"
    kube.create("deployments", deployment("web", replicas=2))
    wait_for(lambda: deployment_ready(kube, "web", 2), what="deployment ready")
    assert {p["spec"]["nodeName"] for p in kube.list("pods", "app=web")} == {"node-2"}
    lab.scenario["nodes_not_ready"] = ["node-2"]
    wait_for(lambda: not kube.ready_pods("app=web"), what="pods on the failed node not ready")
    lab.scenario["nodes_not_ready"] = []
    wait_for(lambda: deployment_ready(kube, "web", 2), what="recovered")
