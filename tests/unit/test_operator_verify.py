# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for operator_verify's logic on API-shaped objects (the ClusterPolicy the operator chart
renders, the operand DaemonSets and pods as the API serves them, nodes), read through a fake reader
that answers recorded paths and raises K8sApiError like the real one (404 absent, 403 forbidden)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_verify as ov
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError
from ansible_collections.gpufleet.dra_gate.plugins.modules import operator_verify as module

NS = "gpu-operator"
DIGEST = "sha256:" + "ab" * 32
PLUGIN_IMAGE = "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"
NODES = ("gpu-1", "gpu-2")
OPERATOR_IMAGE = "nvcr.io/nvidia/gpu-operator:v26.3.1"
OPERATOR_ID = "nvcr.io/nvidia/gpu-operator@sha256:" + "0e" * 32


def cluster_policy(plugin_version="v0.19.0", state="ready", message="ClusterPolicy is ready", generation=1):
    ready = state == "ready"
    return {
        "apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy",
        "metadata": {"name": "cluster-policy", "generation": generation, "uid": "u-1"},
        "spec": {
            "operator": {"defaultRuntime": "containerd"},
            "daemonsets": {"updateStrategy": "RollingUpdate", "rollingUpdate": {"maxUnavailable": "1"}},
            "validator": {"repository": "nvcr.io/nvidia/cloud-native", "image": "gpu-operator-validator",
                          "version": "v26.3.1", "imagePullPolicy": "IfNotPresent"},
            "driver": {"enabled": True, "repository": "nvcr.io/nvidia", "image": "driver", "version": "580.126.16"},
            "toolkit": {"enabled": True, "repository": "nvcr.io/nvidia/k8s", "image": "container-toolkit",
                        "version": "v1.19.0"},
            "devicePlugin": {"enabled": True, "repository": "nvcr.io/nvidia", "image": "k8s-device-plugin",
                             "version": plugin_version},
            "dcgmExporter": {"enabled": True, "repository": "nvcr.io/nvidia/k8s", "image": "dcgm-exporter",
                             "version": "4.4.1-4.6.0-distroless"},
            "gfd": {"enabled": True, "repository": "nvcr.io/nvidia", "image": "k8s-device-plugin",
                    "version": "v0.19.0"},
            "cdi": {"enabled": True},
        },
        "status": {"state": state, "namespace": NS, "conditions": [
            {"type": "Ready", "status": "True" if ready else "False", "reason": "Reconciled" if ready else "OperandNotReady",
             "message": message, "observedGeneration": generation},
            {"type": "Error", "status": "False" if ready else "True", "reason": "Ready" if ready else "OperandNotReady",
             "message": "" if ready else message, "observedGeneration": generation}]},
    }


def daemonset(name, image, desired=2, updated=2, available=2, generation=1, observed=1):
    return {"metadata": {"name": name, "namespace": NS, "generation": generation},
            "spec": {"selector": {"matchLabels": {"app": name}},
                     "template": {"metadata": {"labels": {"app": name}},
                                  "spec": {"containers": [{"name": name, "image": image}]}}},
            "status": {"desiredNumberScheduled": desired, "currentNumberScheduled": desired,
                       "numberReady": available, "numberAvailable": available, "updatedNumberScheduled": updated,
                       "observedGeneration": observed}}


def pod(owner, node, image, ready=True, image_id=None, suffix=""):
    repo = image.split("@")[0].rsplit(":", 1)[0]
    return {"metadata": {"name": "%s-%s%s" % (owner, node, suffix), "namespace": NS, "labels": {"app": owner}},
            "spec": {"nodeName": node, "containers": [{"name": owner, "image": image}]},
            "status": {"phase": "Running",
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}],
                       "containerStatuses": [{"name": owner, "image": image,
                                              "imageID": image_id or repo + "@sha256:" + "cd" * 32}]}}


def node(name, gpus="8", ready=True):
    return {"metadata": {"name": name, "labels": {"nvidia.com/gpu.present": "true"}},
            "status": {"allocatable": {"cpu": "96", "nvidia.com/gpu": gpus},
                       "conditions": [{"type": "Ready", "status": "True" if ready else "False"}]}}


def operand_images(plugin=PLUGIN_IMAGE):
    return {"nvidia-device-plugin-daemonset": plugin,
            "nvidia-operator-validator": "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.3.1",
            "nvidia-container-toolkit-daemonset": "nvcr.io/nvidia/k8s/container-toolkit:v1.19.0",
            "gpu-feature-discovery": "nvcr.io/nvidia/k8s-device-plugin:v0.19.0"}


def world(plugin=PLUGIN_IMAGE, policy=None, gpu_clusters=False):
    """path -> answer: a settled 26.3.1 install (lab-shaped: no driver or dcgm-exporter DaemonSet)."""
    images = operand_images(plugin)
    dss = [daemonset(n, i) for n, i in images.items()]
    pods = [pod(n, host, i) for n, i in images.items() for host in NODES]
    resources = [{"name": "clusterpolicies"}, {"name": "clusterpolicies/status"}]
    answers = {
        "/apis/nvidia.com": {"versions": [{"version": "v1"}] + ([{"version": "v1alpha1"}] if gpu_clusters else []),
                             "preferredVersion": {"version": "v1"}},
        "/apis/nvidia.com/v1": {"resources": resources},
        "/apis/nvidia.com/v1/clusterpolicies": [policy or cluster_policy()],
        "/apis/apps/v1/namespaces/%s/daemonsets" % NS: dss,
        "/apis/apps/v1/namespaces/%s/deployments" % NS: [{
            "metadata": {"name": "gpu-operator", "namespace": NS, "generation": 1},
            "spec": {"replicas": 1, "selector": {"matchLabels": {"app": "gpu-operator"}},
                     "template": {"spec": {"containers": [{"name": "gpu-operator",
                                                           "image": "nvcr.io/nvidia/gpu-operator:v26.3.1"}]}}},
            "status": {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 1,
                       "conditions": [{"type": "Available", "status": "True", "reason": "MinimumReplicasAvailable"}]}}],
        "/api/v1/namespaces/%s/pods" % NS: pods + [pod("gpu-operator", "cp-1", OPERATOR_IMAGE, image_id=OPERATOR_ID)],
        "/api/v1/namespaces/%s/serviceaccounts/default" % NS: {"metadata": {"name": "default", "namespace": NS}},
        "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings": [{
            "metadata": {"name": "gpu-operator"}, "roleRef": {"kind": "ClusterRole", "name": "gpu-operator"},
            "subjects": [{"kind": "ServiceAccount", "name": "default", "namespace": NS}]}],
        "/apis/rbac.authorization.k8s.io/v1/clusterroles/gpu-operator": {"metadata": {"name": "gpu-operator"}},
        "/apis/rbac.authorization.k8s.io/v1/namespaces/%s/rolebindings" % NS: [],
        "/api/v1/nodes": [node("cp-1", gpus="0"), node("gpu-1"), node("gpu-2", gpus="7")],
        ov.DRA + "/resourceslices": [], ov.DRA + "/resourceclaims": [], ov.DRA + "/deviceclasses": [],
    }
    if gpu_clusters:
        answers["/apis/nvidia.com/v1alpha1"] = {"resources": [{"name": "gpuclusters"}]}
        answers["/apis/nvidia.com/v1alpha1/gpuclusters"] = [{"metadata": {"name": "gpu-cluster"}}]
    return answers


class FakeReader:
    def __init__(self, answers, script=None):
        self.answers = answers
        self.script = script  # called before each request: script(reader, path) may change answers
        self.paths = []
        self.calls = self.retries = 0

    def _answer(self, path):
        self.paths.append(path)
        self.calls += 1
        if self.script:
            self.script(self, path)
        value = self.answers.get(path)
        if isinstance(value, K8sApiError):
            raise value
        if value is None:
            raise K8sApiError("GET " + path, 404, "the server could not find the requested resource")
        return copy.deepcopy(value)

    def get(self, path, query=None):
        return self._answer(path)

    def list(self, path, label_selector=None, field_selector=None):
        return self._answer(path)


def params(**extra):
    base = {"namespace": NS, "cluster_policy": "", "nodes": list(NODES), "gpu_resource": "nvidia.com/gpu",
            "expect": {"device_plugin_enabled": True, "cdi_enabled": None, "images": {}, "operator_version": None},
            "baseline": None, "wait": False, "wait_timeout": 600.0, "poll_interval": 2.0}
    base.update(extra)
    return base


def expect(**extra):
    base = {"device_plugin_enabled": True, "cdi_enabled": None, "images": {}, "operator_version": None}
    base.update(extra)
    return base


def run(answers, **extra):
    return ov.verify(FakeReader(answers), params(**extra))


def test_settled_device_plugin_mode_is_ok():
    result = run(world())
    assert result["ok"], result["problems"]
    assert result["mode"] == {"cluster_policy": "cluster-policy", "state": "ready", "message": "ClusterPolicy is ready",
                              "device_plugin_enabled": True, "cdi_enabled": True, "gpu_clusters": [],
                              "operator_image": "nvcr.io/nvidia/gpu-operator:v26.3.1", "operator_version": "v26.3.1"}
    assert result["nodes"] == {"gpu-1": {"allocatable": 8, "ready": True}, "gpu-2": {"allocatable": 7, "ready": True}}
    assert result["unassessed"] == []
    plugin = result["device_plugin"]
    assert plugin["image"] == plugin["expected_image"] == PLUGIN_IMAGE
    assert plugin["pods"] == {"gpu-1": PLUGIN_IMAGE, "gpu-2": PLUGIN_IMAGE}
    assert (plugin["desired"], plugin["updated"], plugin["available"]) == (2, 2, 2)
    ops = result["operands"]
    assert sorted(ops) == ["dcgmExporter", "devicePlugin", "driver", "gfd", "toolkit", "validator"]
    assert ops["toolkit"]["ok"] is True and ops["toolkit"]["pinned_by_digest"] is False
    # the lab (and a host-installed driver) has no driver DaemonSet: reported, not a problem
    assert ops["driver"] == {"kind": "DaemonSet", "name": "nvidia-driver-daemonset", "enabled": True, "found": False,
                             "pin": None, "spec_image": "nvcr.io/nvidia/driver:580.126.16",
                             "expected": "nvcr.io/nvidia/driver:580.126.16", "actual": None, "ok": None,
                             "pinned_by_digest": None}
    assert result["dra_objects"] == {"served": True, "resource_slices": {"total": 0, "by_driver": {}, "names": []},
                                     "resource_claims": 0, "resource_claim_names": [], "device_classes": []}
    assert result["wait"] == {"requested": False, "ready": True, "waited_seconds": 0.0, "timeout": 600.0}


def test_not_ready_without_wait_names_the_state():
    answers = world(policy=cluster_policy(state="notReady", message="nvidia-operator-validator: 1/2 pods ready"))
    result = run(answers)
    assert not result["ok"]
    assert result["problems"] == ["ClusterPolicy cluster-policy not ready: state notReady "
                                  "(nvidia-operator-validator: 1/2 pods ready)"]
    assert result["wait"]["ready"] is False


def test_wait_polls_until_ready_with_a_monotonic_deadline():
    answers = world(policy=cluster_policy(state="notReady", message="operands are starting"))
    now = [100.0]
    reads = []

    def script(reader, path):
        if path.endswith("/clusterpolicies"):
            reads.append(now[0])
            if len(reads) == 3:
                reader.answers[path] = [cluster_policy()]

    def sleep(seconds):
        now[0] += seconds

    result = ov.verify(FakeReader(answers, script), params(wait=True, wait_timeout=30.0), clock=lambda: now[0], sleep=sleep)
    assert result["ok"], result["problems"]
    assert reads == [100.0, 102.0, 104.0]
    assert result["wait"] == {"requested": True, "ready": True, "waited_seconds": 4.0, "timeout": 30.0}


def test_wait_stops_at_the_deadline_and_says_why():
    answers = world(policy=cluster_policy(state="notReady", message="kubelab fault operator_never_ready"))
    now = [0.0]

    def sleep(seconds):
        now[0] += seconds

    reader = FakeReader(answers)
    result = ov.verify(reader, params(wait=True, wait_timeout=5.0, poll_interval=2.0), clock=lambda: now[0], sleep=sleep)
    assert result["problems"] == ["ClusterPolicy cluster-policy not ready after 5 s: state notReady "
                                  "(kubelab fault operator_never_ready)"]
    assert result["wait"]["waited_seconds"] == 5.0 and result["wait"]["ready"] is False
    assert reader.paths.count("/apis/nvidia.com/v1/clusterpolicies") == 4  # 0, 2, 4, 5 s
    assert reader.paths.count("/apis/nvidia.com") == 2  # discovery once per poll phase, once for the final read


def test_stale_ready_state_is_not_settled():
    """Right after a helm upgrade the status is still the old spec's: not settled until the operator rolled."""
    policy = cluster_policy(plugin_version="v0.19.2", generation=2)
    policy["status"]["conditions"][0]["observedGeneration"] = 1
    result = run(world(policy=policy))
    problem = result["problems"][0]
    assert problem.startswith("ClusterPolicy cluster-policy not ready: status is for generation 1")
    assert "DaemonSet nvidia-device-plugin-daemonset: the operator has not applied spec.devicePlugin yet" in problem
    assert "device plugin pod nvidia-device-plugin-daemonset-gpu-1 on node gpu-1 runs %s, expected " \
           "nvcr.io/nvidia/k8s-device-plugin:v0.19.2" % PLUGIN_IMAGE in result["problems"]


def test_rollout_in_progress():
    answers = world()
    dss = answers["/apis/apps/v1/namespaces/%s/daemonsets" % NS]
    dss[0].update(daemonset("nvidia-device-plugin-daemonset", PLUGIN_IMAGE, updated=1, available=1, generation=3,
                            observed=3))
    assert ov.rollout_reason(dss[0]) == "nvidia-device-plugin-daemonset: rolling out (desired 2, updated 1, available 1)"
    behind = daemonset("x", "i", generation=4, observed=3)
    assert "observedGeneration 3 < generation 4" in ov.rollout_reason(behind)
    assert "no pods scheduled" in ov.rollout_reason(daemonset("x", "i", desired=0, updated=0, available=0))
    assert not run(answers)["ok"]


def test_validator_pods_not_ready():
    answers = world()
    pods = answers["/api/v1/namespaces/%s/pods" % NS]
    for item in pods:
        if item["metadata"]["name"] == "nvidia-operator-validator-gpu-2":
            item["status"]["conditions"][0]["status"] = "False"
    result = run(answers)
    assert result["problems"] == ["ClusterPolicy cluster-policy not ready: nvidia-operator-validator: pods not Ready: "
                                  "nvidia-operator-validator-gpu-2 on gpu-2"]


def test_mode_asserted_not_assumed():
    policy = cluster_policy()
    policy["spec"]["devicePlugin"]["enabled"] = False
    policy["spec"]["cdi"]["enabled"] = False
    result = run(world(policy=policy), expect=expect(cdi_enabled=True))
    assert "ClusterPolicy cluster-policy: spec.devicePlugin.enabled is false (absent counts as true), expected true" \
        in result["problems"]
    assert "ClusterPolicy cluster-policy: spec.cdi.enabled is false, expected true" in result["problems"]
    assert "device plugin DaemonSet nvidia-device-plugin-daemonset is present although spec.devicePlugin.enabled " \
           "is false" in result["problems"]
    # absent counts as the default true
    policy = cluster_policy()
    del policy["spec"]["devicePlugin"]["enabled"]
    assert ov.device_plugin_enabled(policy) is True
    assert run(world(policy=policy))["ok"]


def test_gpu_cluster_present_is_a_problem_and_an_unserved_kind_is_zero():
    result = run(world(gpu_clusters=True))
    assert result["mode"]["gpu_clusters"] == ["gpu-cluster"]
    assert result["problems"] == ["GPUCluster present: gpu-cluster (the managed DRA path must never coexist with a "
                                  "ClusterPolicy)"]
    # The GPUCluster kind not served at all (26.3): zero, not an error.
    assert run(world())["mode"]["gpu_clusters"] == []


def test_forbidden_is_not_absent():
    answers = world(gpu_clusters=True)
    answers["/apis/nvidia.com/v1alpha1/gpuclusters"] = K8sApiError("GET /apis/nvidia.com/v1alpha1/gpuclusters", 403,
                                                                   "forbidden")
    with pytest.raises(K8sApiError) as info:
        run(answers)
    assert info.value.forbidden and "/apis/nvidia.com/v1alpha1/gpuclusters" in str(info.value)
    answers = world()
    answers["/apis/nvidia.com"] = K8sApiError("GET /apis/nvidia.com", 403, "forbidden")
    with pytest.raises(K8sApiError):
        run(answers)


def test_cluster_policy_selection():
    answers = world()
    assert ov.select_policy(None, "")[1].startswith("no ClusterPolicy: the kind clusterpolicies.nvidia.com is not served")
    del answers["/apis/nvidia.com"]
    result = run(answers)
    assert result["problems"][0].startswith("no ClusterPolicy: the kind clusterpolicies.nvidia.com is not served")
    assert result["mode"]["cluster_policy"] is None
    answers = world()
    second = cluster_policy()
    second["metadata"]["name"] = "other"
    answers["/apis/nvidia.com/v1/clusterpolicies"].append(second)
    assert run(answers)["problems"][0] == "2 ClusterPolicies (cluster-policy, other): name the one to verify with " \
                                          "cluster_policy"
    assert run(answers, cluster_policy="other")["ok"]
    assert run(answers, cluster_policy="nope")["problems"][0] == \
        "ClusterPolicy nope not found (present: cluster-policy, other)"
    answers["/apis/nvidia.com/v1/clusterpolicies"] = []
    assert run(answers, wait=False)["problems"][0] == "no ClusterPolicy found"


def test_nodes_missing_not_ready_and_baseline_allocatable():
    answers = world()
    answers["/api/v1/nodes"] = [node("gpu-1", ready=False), node("gpu-2", gpus="6")]
    baseline = {"nodes": {"gpu-1": {"allocatable": 8, "ready": True}, "gpu-2": {"allocatable": 7, "ready": True}},
                "dra_objects": run(world())["dra_objects"]}
    result = run(answers, nodes=["gpu-1", "gpu-2", "gpu-9"], baseline=baseline)
    assert result["unassessed"] == ["gpu-9"]
    assert "node gpu-9 not found" in result["problems"]
    assert "node gpu-1 is not Ready" in result["problems"]
    assert "node gpu-2: allocatable nvidia.com/gpu changed: before 7, after 6" in result["problems"]
    assert "device plugin: no nvidia-device-plugin-daemonset pod on node gpu-9" not in result["problems"]
    answers = world()
    answers["/api/v1/nodes"] = [node("gpu-1"), node("gpu-2", gpus="0")]
    assert "node gpu-2: no allocatable nvidia.com/gpu (0) with the device plugin enabled" in run(answers)["problems"]


def test_device_plugin_pod_missing_or_wrong_image_on_a_node():
    answers = world()
    pods = answers["/api/v1/namespaces/%s/pods" % NS]
    answers["/api/v1/namespaces/%s/pods" % NS] = [
        p for p in pods if p["metadata"]["name"] != "nvidia-device-plugin-daemonset-gpu-2"]
    result = run(answers)
    assert "device plugin: no nvidia-device-plugin-daemonset pod on node gpu-2" in result["problems"]
    assert result["device_plugin"]["pods"]["gpu-2"] is None


def test_pins_by_digest_and_by_tag():
    pinned = "nvcr.io/nvidia/k8s-device-plugin@" + DIGEST
    # spec and template by digest (version sha256:...), equal to the pin
    answers = world(plugin=pinned, policy=cluster_policy(plugin_version=DIGEST))
    result = run(answers, expect=expect(images={"devicePlugin": pinned}))
    assert result["ok"], result["problems"]
    assert result["operands"]["devicePlugin"]["pinned_by_digest"] is True
    # template by tag, every pod's imageID has the pin's digest: met
    answers = world()
    for item in answers["/api/v1/namespaces/%s/pods" % NS]:
        if item["metadata"]["labels"]["app"] == "nvidia-device-plugin-daemonset":
            item["status"]["containerStatuses"][0]["imageID"] = "nvcr.io/nvidia/k8s-device-plugin@" + DIGEST
    result = run(answers, expect=expect(images={"devicePlugin": pinned}))
    assert result["ok"], result["problems"]
    assert result["operands"]["devicePlugin"]["ok"] is True
    assert result["operands"]["devicePlugin"]["pinned_by_digest"] is False
    # another digest: named
    result = run(world(), expect=expect(images={"devicePlugin": pinned}))
    assert "operand devicePlugin (DaemonSet nvidia-device-plugin-daemonset): runs %s, expected %s (pinned in " \
           "expect.images)" % (PLUGIN_IMAGE, pinned) in result["problems"]
    # a pin for a component without a workload, and for one the spec does not have
    result = run(world(), expect=expect(images={"driver": "nvcr.io/nvidia/driver:580.126.16", "bogus": "x/y:1"}))
    assert "operand driver: DaemonSet nvidia-driver-daemonset not found in namespace gpu-operator (pinned " \
           "nvcr.io/nvidia/driver:580.126.16)" in result["problems"]
    assert "expect.images.bogus: the ClusterPolicy has no component bogus with an image" in result["problems"]


def test_operand_image_mismatch_from_spec():
    answers = world()
    for item in answers["/apis/apps/v1/namespaces/%s/daemonsets" % NS]:
        if item["metadata"]["name"] == "nvidia-container-toolkit-daemonset":
            item["spec"]["template"]["spec"]["containers"][0]["image"] = "nvcr.io/nvidia/k8s/container-toolkit:v1.18.0"
    result = run(answers)
    assert "operand toolkit (DaemonSet nvidia-container-toolkit-daemonset): runs nvcr.io/nvidia/k8s/container-" \
           "toolkit:v1.18.0, expected nvcr.io/nvidia/k8s/container-toolkit:v1.19.0 (from ClusterPolicy spec.toolkit)" \
           in result["problems"]


def test_compose_image_like_the_operator():
    assert ov.compose_image({"repository": "nvcr.io/nvidia", "image": "k8s-device-plugin", "version": "v0.20.0"},
                            "devicePlugin") == "nvcr.io/nvidia/k8s-device-plugin:v0.20.0"
    assert ov.compose_image({"repository": "nvcr.io/nvidia/", "image": "k8s-device-plugin", "version": DIGEST},
                            "devicePlugin") == "nvcr.io/nvidia/k8s-device-plugin@" + DIGEST
    assert ov.compose_image({"image": "registry.local/x/plugin@" + DIGEST}, "devicePlugin") == \
        "registry.local/x/plugin@" + DIGEST
    assert ov.compose_image({"repository": "nvcr.io/nvidia/cloud-native", "image": "gpu-operator-validator",
                             "version": ""}, "validator", "v26.7.0") == \
        "nvcr.io/nvidia/cloud-native/gpu-operator-validator:v26.7.0"
    assert ov.compose_image({"repository": "nvcr.io/nvidia", "image": "toolkit", "version": ""}, "toolkit") is None
    assert ov.image_matches("nvcr.io/nvidia/driver:580.126.16-ubuntu24.04", "nvcr.io/nvidia/driver:580.126.16", "driver")
    assert not ov.image_matches("nvcr.io/nvidia/driver:580.126.16-ubuntu24.04", "nvcr.io/nvidia/driver:580.126.16",
                                "toolkit")
    assert ov.image_tag("nvcr.io/nvidia/gpu-operator:v26.7.0") == "v26.7.0"
    assert ov.image_tag("localhost:5000/gpu-operator@" + DIGEST) == ""
    assert ov.digest_of("docker-pullable://nvcr.io/x@" + DIGEST) == DIGEST


def test_operator_version():
    assert run(world(), expect=expect(operator_version="26.3.1"))["ok"]
    result = run(world(), expect=expect(operator_version="v26.7.0"))
    assert result["problems"] == ["operator version: Deployment gpu-operator/gpu-operator runs "
                                  "nvcr.io/nvidia/gpu-operator:v26.3.1, expected v26.7.0"]


def test_dra_objects_against_the_baseline():
    before = run(world())
    answers = world()
    answers[ov.DRA + "/deviceclasses"] = [{"metadata": {"name": "gpu.nvidia.com"}}]
    answers[ov.DRA + "/resourceslices"] = [{"metadata": {"name": "gpu-1-gpu.nvidia.com-x"},
                                            "spec": {"driver": "gpu.nvidia.com"}}]
    answers[ov.DRA + "/resourceclaims"] = [{"metadata": {"name": "c", "namespace": "team"}}]
    result = run(answers, baseline={"nodes": before["nodes"], "dra_objects": before["dra_objects"]})
    assert result["dra_objects"]["resource_slices"] == {"total": 1, "by_driver": {"gpu.nvidia.com": 1},
                                                        "names": ["gpu-1-gpu.nvidia.com-x"]}
    assert result["dra_objects"]["resource_claims"] == 1
    assert result["problems"] == ["DRA objects created: resourceslice gpu-1-gpu.nvidia.com-x, resourceclaim team/c, "
                                  "deviceclass gpu.nvidia.com"]
    # a baseline with counts only is compared by counts
    counts = {"resource_slices": {"total": 0, "by_driver": {}}, "resource_claims": 0, "device_classes": []}
    assert ov.new_dra_objects(result["dra_objects"], counts) == [
        "1 resourceslice(s) of driver gpu.nvidia.com (baseline 0)", "1 resourceclaim(s) (baseline 0)",
        "deviceclass gpu.nvidia.com"]
    # resource.k8s.io/v1 not served: none, not an error
    answers = world()
    for kind in ("resourceslices", "resourceclaims", "deviceclasses"):
        del answers[ov.DRA + "/" + kind]
    assert run(answers)["dra_objects"]["served"] is False


@pytest.mark.parametrize("extra, message", [
    ({"nodes": []}, "nodes: expected a non-empty list of node names"),
    ({"nodes": ["gpu-1", ""]}, "nodes[1]: expected a node name"),
    ({"wait_timeout": -1}, "wait_timeout: expected seconds >= 0"),
    ({"poll_interval": 0}, "poll_interval: expected seconds between 0.05 and 600"),
    ({"expect": {"images": {"devicePlugin": "a b"}}}, "expect.images.devicePlugin: expected an image reference"),
    ({"expect": {"images": {"devicePlugin": "x/y@sha256:abc"}}}, "expect.images.devicePlugin: the digest"),
    ({"expect": {"images": ["x"]}}, "expect.images: expected a mapping component -> image reference"),
    ({"expect": {"imgs": {}}}, "expect.imgs: unknown key"),
    ({"baseline": {"nodes": ["gpu-1"]}}, "baseline.nodes: expected a mapping node name"),
    ({"baseline": {"other": 1}}, "baseline: expected an earlier operator_verify result"),
])
def test_bad_input_names_the_field(extra, message):
    with pytest.raises(ov.VerifyError) as info:
        ov.check_params(params(**extra))
    assert str(info.value).startswith(message), str(info.value)


def test_module_fails_on_bad_input_before_connecting(run_module):
    result = run_module(module, {"nodes": [], "kubeconfig": "/nonexistent"})
    assert result["failed"] and result["msg"].startswith("nodes: expected a non-empty list")
    result = run_module(module, {"nodes": ["gpu-1"], "poll_interval": 0, "kubeconfig": "/nonexistent"})
    assert result["failed"] and result["msg"].startswith("poll_interval:")


# -- the operator itself ------------------------------------------------------------------------

DEPLOYMENTS = "/apis/apps/v1/namespaces/%s/deployments" % NS
RBAC = "/apis/rbac.authorization.k8s.io/v1"


def operator_problems(answers, **extra):
    result = run(answers, **extra)
    return result, [p for p in result["problems"] if p.startswith("operator: ")]


def test_the_operator_itself_is_reported_when_it_is_there():
    result, problems = operator_problems(world())
    assert problems == [] and result["ok"]
    assert result["operator"]["found"] and result["operator"]["available"]
    assert result["operator"]["images"] == {"gpu-operator": OPERATOR_IMAGE}
    assert result["operator"]["pods"] == [{"pod": "gpu-operator-cp-1", "container": "gpu-operator", "image": OPERATOR_IMAGE,
                                           "digest": "sha256:" + "0e" * 32}]
    assert result["operator"]["service_account"] == {"name": "default", "found": True}
    assert result["operator"]["bindings"] == [{"kind": "ClusterRoleBinding", "name": "gpu-operator",
                                               "role": "ClusterRole/gpu-operator", "role_found": True}]


def test_a_deleted_operator_deployment_is_a_problem_even_when_the_policy_looks_ready():
    answers = world()
    answers[DEPLOYMENTS] = []
    result, problems = operator_problems(answers)
    assert not result["ok"] and result["operator"]["found"] is False
    assert problems == ["operator: Deployment gpu-operator/gpu-operator not found (nothing runs the GPU Operator: the "
                        "ClusterPolicy is not reconciled)"]
    assert result["wait"]["ready"] is False


@pytest.mark.parametrize("change, fragment", [
    ({"status": {"observedGeneration": 1, "updatedReplicas": 1, "availableReplicas": 0,
                 "conditions": [{"type": "Available", "status": "False", "reason": "MinimumReplicasUnavailable"}]}},
     "1/1 replicas updated, 0 available"),
    ({"spec": {"replicas": 0, "selector": {"matchLabels": {"app": "gpu-operator"}},
               "template": {"spec": {"containers": [{"name": "gpu-operator", "image": OPERATOR_IMAGE}]}}}},
     "scaled to 0 replicas"),
    ({"status": {"observedGeneration": 1, "updatedReplicas": 0, "availableReplicas": 0, "conditions": [
        {"type": "ReplicaFailure", "status": "True", "reason": "FailedCreate",
         "message": 'pods "gpu-operator-x" is forbidden: error looking up service account gpu-operator/gpu-operator: '
                    'serviceaccount "gpu-operator" not found'}]}},
     "cannot create its pods: pods \"gpu-operator-x\" is forbidden"),
    ({"metadata": {"name": "gpu-operator", "namespace": NS, "generation": 2}}, "observedGeneration 1 < generation 2"),
])
def test_an_operator_deployment_that_is_not_available_is_a_problem_and_is_waited_for(change, fragment):
    answers = world()
    deployment = answers[DEPLOYMENTS][0]
    for key, value in change.items():
        deployment[key] = value
    result, problems = operator_problems(answers)
    assert len(problems) == 1 and fragment in problems[0], problems
    clock = [0.0]
    waited = ov.verify(FakeReader(answers), params(wait=True, wait_timeout=5.0, poll_interval=1.0),
                       clock=lambda: clock[0], sleep=lambda s: clock.__setitem__(0, clock[0] + s))
    assert waited["wait"]["ready"] is False and waited["wait"]["waited_seconds"] == 5.0


def test_missing_service_account_and_rbac_are_named():
    answers = world()
    del answers["/api/v1/namespaces/%s/serviceaccounts/default" % NS]
    del answers[RBAC + "/clusterroles/gpu-operator"]
    result, problems = operator_problems(answers)
    assert problems == [
        "operator: ServiceAccount gpu-operator/default of Deployment gpu-operator not found (its pods cannot be created)",
        "operator: no RoleBinding or ClusterRoleBinding grants ServiceAccount gpu-operator/default an existing role: "
        "ClusterRoleBinding gpu-operator -> ClusterRole/gpu-operator (missing)"]
    answers[RBAC + "/clusterrolebindings"] = []
    answers[RBAC + "/namespaces/%s/rolebindings" % NS] = [{
        "metadata": {"name": "gpu-operator"}, "roleRef": {"kind": "Role", "name": "gpu-operator"},
        "subjects": [{"kind": "ServiceAccount", "name": "default"}]}]
    answers[RBAC + "/namespaces/%s/roles/gpu-operator" % NS] = {"metadata": {"name": "gpu-operator"}}
    result, problems = operator_problems(answers)
    assert problems == [
        "operator: ServiceAccount gpu-operator/default of Deployment gpu-operator not found (its pods cannot be created)"]
    assert result["operator"]["bindings"] == [{"kind": "RoleBinding", "name": "gpu-operator", "role": "Role/gpu-operator",
                                               "role_found": True}]


def test_forbidden_rbac_reads_are_errors_not_absent():
    answers = world()
    answers[RBAC + "/clusterrolebindings"] = K8sApiError("GET clusterrolebindings", 403, "forbidden")
    with pytest.raises(K8sApiError) as info:
        run(answers)
    assert info.value.status == 403


def images_doc(image=OPERATOR_IMAGE, digests=("sha256:" + "0e" * 32,), revision=1, deployment="gpu-operator"):
    return {"release": "gpu-operator", "namespace": NS, "revision": revision,
            "manifest_images": [{"kind": "Deployment", "name": deployment, "namespace": NS, "container": "gpu-operator",
                                 "init": False, "image": image}],
            "digests": {image: list(digests)}}


def test_recorded_operator_images_and_digests_are_checked():
    recorded = ov.recorded_operator_images(images_doc(), NS)
    assert recorded == {"gpu-operator": {"image": OPERATOR_IMAGE, "digests": ["sha256:" + "0e" * 32]}}
    result, problems = operator_problems(world(), recorded_operator=recorded)
    assert problems == []
    other = ov.recorded_operator_images(images_doc(image="nvcr.io/nvidia/gpu-operator:v26.7.0",
                                                   digests=("sha256:" + "1f" * 32,)), NS)
    result, problems = operator_problems(world(), recorded_operator=other)
    assert problems == [
        "operator: Deployment gpu-operator/gpu-operator container gpu-operator runs %s, recorded "
        "nvcr.io/nvidia/gpu-operator:v26.7.0" % OPERATOR_IMAGE,
        "operator: Deployment gpu-operator/gpu-operator container gpu-operator does not run the recorded digest sha256:%s "
        "(gpu-operator-cp-1: sha256:%s)" % ("1f" * 32, "0e" * 32)]


def test_a_recorded_release_without_the_operator_deployment_is_refused_by_name():
    with pytest.raises(ov.VerifyError) as info:
        ov.recorded_operator_images(images_doc(deployment="something-else", revision=1), NS)
    assert "revision 1" in str(info.value) and "no Deployment gpu-operator/gpu-operator" in str(info.value)
    with pytest.raises(ov.VerifyError):
        ov.recorded_operator_images({"manifest_images": []}, NS)


@pytest.mark.parametrize("recorded, fragment", [
    ({}, "recorded_operator: expected a non-empty mapping"),
    ({"gpu-operator": {"image": ""}}, "recorded_operator.gpu-operator: expected {image"),
    ({"gpu-operator": {"image": "x", "digests": ["md5:1"]}}, "recorded_operator.gpu-operator.digests"),
])
def test_bad_recorded_operator_input(recorded, fragment):
    with pytest.raises(ov.VerifyError) as info:
        ov.check_params(params(recorded_operator=recorded))
    assert fragment in str(info.value)
