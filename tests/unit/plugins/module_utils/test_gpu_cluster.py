# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gpu_cluster facts from API objects as the lab serves them (tests/fixtures/cluster/lab-gpu-cluster.json:
a real Helm v4 release Secret, ResourceSlices in the NVIDIA driver's format, allocated claims), the
read plan of gpu_cluster_gather with a recorded reader, and the kubernetes client wrapper."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import gzip
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import gpu_cluster as gc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import client as k8s_client
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.gpu_cluster_gather import SECTIONS, gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, K8sReader

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cluster", "lab-gpu-cluster.json")


@pytest.fixture(scope="module")
def lab_objects():
    with open(FIXTURE) as handle:
        return json.load(handle)


def objs(lab_objects, kind):
    return copy.deepcopy(lab_objects[kind])


# -- versions, quantities ------------------------------------------------------------------------

@pytest.mark.parametrize("text, plain", [("v1.37.0-kubelab", "1.37.0"), ("v1.30.4-eks-a737599", "1.30.4"),
                                         ("v1.36.4+k3s1", "1.36.4"), ("1.33", "1.33"), ("", None), (None, None)])
def test_plain_version(text, plain):
    assert gc.plain_version(text) == plain


def test_api_server_and_groups():
    version = {"major": "1", "minor": "37", "gitVersion": "v1.37.0-kubelab", "platform": "linux/amd64"}
    assert gc.api_server(version) == {"version": "1.37.0", "git_version": "v1.37.0-kubelab", "platform": "linux/amd64",
                                      "major": "1", "minor": "37"}
    groups = {"kind": "APIGroupList", "groups": [
        {"name": "resource.k8s.io", "versions": [{"groupVersion": "resource.k8s.io/v1beta2", "version": "v1beta2"}]}]}
    assert gc.api_groups(groups) == {"resource_k8s_io_v1": False, "groups": {"resource.k8s.io": ["v1beta2"]}}


@pytest.mark.parametrize("value, number", [("8", 8), ("0", 0), (4, 4), ("2k", 2000)])
def test_quantity_int(value, number):
    assert kube.quantity_int(value) == number


@pytest.mark.parametrize("value", ["1.5", "100m", "abc", "-1"])
def test_quantity_int_refuses(value):
    with pytest.raises(ValueError):
        kube.quantity_int(value)


# -- nodes and DRA devices -----------------------------------------------------------------------

def test_nodes_and_backends_from_the_lab(lab_objects):
    problems = []
    nodes = gc.nodes_facts(objs(lab_objects, "nodes"), objs(lab_objects, "resourceslices"), problems)
    assert {n: f["gpu_backend"] for n, f in nodes.items()} == {
        "gpu-dp-1": "device_plugin", "gpu-dra-1": "dra", "gpu-both-1": "both", "gpu-down-1": "none"}
    assert nodes["gpu-dra-1"]["dra_devices"][0] == {
        "name": "gpu-0", "driver": "gpu.nvidia.com", "pool": "gpu-dra-1", "uuid": "GPU-gpu-dra-1-0000",
        "product": "NVIDIA H200", "numa_node": 0, "pci_bus_id": "0000:17:00.0", "type": "gpu"}
    assert [d["numa_node"] for d in nodes["gpu-both-1"]["dra_devices"]] == [0, 0, 1, 1]
    assert nodes["gpu-down-1"]["ready"] is False and nodes["gpu-down-1"]["unschedulable"] is True
    assert nodes["gpu-dp-1"]["kubelet_version"] == "1.36.4"
    assert problems == []


def test_dra_not_gathered_leaves_backend_unassessed(lab_objects):
    nodes = gc.nodes_facts(objs(lab_objects, "nodes"), None, [])
    assert nodes["gpu-both-1"]["gpu_backend"] is None and nodes["gpu-both-1"]["dra_devices"] is None


def _slice(lab_objects, node):
    for item in objs(lab_objects, "resourceslices"):
        if item["spec"].get("nodeName") == node and item["spec"]["driver"] == gc.GPU_DRIVER:
            return item
    raise AssertionError(node)


def test_outdated_pool_generation_is_ignored(lab_objects):
    current = _slice(lab_objects, "gpu-dra-1")
    old = copy.deepcopy(current)
    old["metadata"]["name"] += "-old"
    old["spec"]["pool"]["generation"] = current["spec"]["pool"]["generation"] - 1
    old["spec"]["devices"] = [dict(old["spec"]["devices"][0], name="gpu-7")]
    by_node = gc.dra_devices_by_node([old, current], [])
    assert [d["name"] for d in by_node["gpu-dra-1"]] == ["gpu-0", "gpu-1"]


def test_incomplete_pool_and_unknown_node_are_problems(lab_objects):
    item = _slice(lab_objects, "gpu-dra-1")
    item["spec"]["pool"]["resourceSliceCount"] = 2
    gone = _slice(lab_objects, "gpu-both-1")
    gone["spec"]["nodeName"] = gone["spec"]["pool"]["name"] = "gpu-gone-1"
    problems = []
    nodes = gc.nodes_facts([n for n in objs(lab_objects, "nodes") if n["metadata"]["name"] == "gpu-dra-1"],
                           [item, gone], problems)
    assert nodes["gpu-dra-1"]["gpu_backend"] == "dra"
    assert problems == [
        gc.problem("resourceslices gpu.nvidia.com pool gpu-dra-1", "incomplete pool: 1 of 2 slices published"),
        gc.problem("resourceslices of node gpu-gone-1", "gpu.nvidia.com publishes devices for a node that does not exist")]


def test_per_device_node_selection_and_attribute_forms(lab_objects):
    item = _slice(lab_objects, "gpu-dra-1")
    spec = item["spec"]
    del spec["nodeName"]
    spec["perDeviceNodeSelection"] = True
    first, second = spec["devices"]
    first["nodeName"] = "gpu-dra-1"
    second["nodeName"] = "gpu-dra-2"
    # fully qualified names and the list form of numaNode (DRAListTypeAttributes) are read as well
    attrs = second["attributes"]
    attrs["gpu.nvidia.com/uuid"] = attrs.pop("uuid")
    attrs["resource.kubernetes.io/numaNode"] = {"ints": [0, 1]}
    by_node = gc.dra_devices_by_node([item], [])
    assert by_node["gpu-dra-2"][0]["uuid"] == "GPU-gpu-dra-1-0001"
    assert by_node["gpu-dra-2"][0]["numa_node"] == [0, 1]
    assert [d["name"] for d in by_node["gpu-dra-1"]] == ["gpu-0"]


def test_other_drivers_are_not_gpus(lab_objects):
    slices = [s for s in objs(lab_objects, "resourceslices") if s["spec"]["driver"] != gc.GPU_DRIVER]
    assert slices and gc.dra_devices_by_node(slices, []) == {}


def test_bad_allocatable_is_a_problem(lab_objects):
    node = objs(lab_objects, "nodes")[0]
    node["status"]["allocatable"][gc.GPU_RESOURCE] = "1.5"
    problems = []
    facts = gc.node_facts(node, [], problems)
    assert facts["allocatable_gpu"] is None and facts["gpu_backend"] == "none"
    assert problems[0]["what"].endswith("allocatable nvidia.com/gpu")


# -- claims, classes, PDBs -----------------------------------------------------------------------

def test_claims_from_the_lab(lab_objects):
    claims = gc.resource_claims(objs(lab_objects, "resourceclaims"))
    assert {k: claims[k] for k in ("total", "allocated", "reserved", "deleting_allocated")} == {
        "total": 4, "allocated": 2, "reserved": 2, "deleting_allocated": 1}
    assert [(s["name"], s["state"]) for s in claims["stuck"]] == [("c-stuck", "deleted,allocated,reserved")]


@pytest.mark.parametrize("deleted, allocation, reserved, state", [
    (False, False, False, "pending"),
    (False, True, False, "allocated"),
    (False, True, True, "allocated,reserved"),
    (True, True, True, "deleted,allocated,reserved"),
    (True, True, False, "deleted,allocated,deallocating"),
    (True, False, False, "deleted"),
])
def test_claim_state_as_kubectl_prints_it(deleted, allocation, reserved, state):
    claim = {"metadata": {"name": "c", "namespace": "n"}, "status": {}}
    if deleted:
        claim["metadata"]["deletionTimestamp"] = "2026-08-21T10:00:00Z"
    if allocation:
        claim["status"]["allocation"] = {"devices": {"results": [{"request": "gpu", "driver": "gpu.nvidia.com",
                                                                  "pool": "n1", "device": "gpu-0"}]}}
    if reserved:
        claim["status"]["reservedFor"] = [{"resource": "pods", "name": "p", "uid": "u"}]
    assert gc.claim_state(claim) == state


def test_device_classes_pdbs_runtime_classes(lab_objects):
    classes = gc.device_classes(objs(lab_objects, "deviceclasses"))
    assert [(c["name"], c["extended_resource_name"]) for c in classes] == [
        ("gpu.nvidia.com", "nvidia.com/gpu"), ("mig.nvidia.com", None)]
    assert classes[0]["selectors"] == [
        "device.driver == 'gpu.nvidia.com' && device.attributes['gpu.nvidia.com'].type == 'gpu'"]
    (pdb,) = gc.pdbs(objs(lab_objects, "pdbs"))
    assert pdb == {"namespace": "train", "name": "trainer", "min_available": 1, "max_unavailable": None,
                   "disruptions_allowed": 0, "current_healthy": 0, "desired_healthy": 1, "expected_pods": 0}
    assert gc.runtime_classes([{"metadata": {"name": "nvidia"}, "handler": "nvidia"}]) == [
        {"name": "nvidia", "handler": "nvidia"}]


def test_cluster_policy_and_crd(lab_objects):
    (policy,) = gc.custom_resources(objs(lab_objects, "clusterpolicies"))
    assert policy["name"] == "cluster-policy" and policy["state"] == "notReady"
    assert "PrerequisiteNotMet" in [c["reason"] for c in policy["conditions"]]
    crd = {"metadata": {"name": "gpuclusters.nvidia.com"},
           "spec": {"group": "nvidia.com", "scope": "Cluster", "names": {"kind": "GPUCluster", "plural": "gpuclusters"},
                    "versions": [{"name": "v1alpha1", "served": True, "storage": True},
                                 {"name": "v1alpha0", "served": False, "storage": False}]},
           "status": {"storedVersions": ["v1alpha0", "v1alpha1"]}}
    assert gc.crd_facts(crd) == {"name": "gpuclusters.nvidia.com", "group": "nvidia.com", "kind": "GPUCluster",
                                 "scope": "Cluster", "served_versions": ["v1alpha1"],
                                 "stored_versions": ["v1alpha0", "v1alpha1"]}
    assert gc.read_version(crd) == "v1alpha1"


# -- Helm release --------------------------------------------------------------------------------

def test_helm_release_from_real_storage_secrets(lab_objects):
    problems = []
    release = gc.helm_release(objs(lab_objects, "helm_secrets"), "gpu-operator", "gpu-operator", problems)
    assert {k: release[k] for k in ("name", "namespace", "revision", "chart", "chart_version", "app_version", "status")} == {
        "name": "gpu-operator", "namespace": "gpu-operator", "revision": 2, "chart": "gpu-operator",
        "chart_version": "v26.7.0", "app_version": "v26.7.0", "status": "deployed"}
    assert release["last_deployed"]
    assert problems == []


def test_helm_interrupted_upgrade_is_a_problem(lab_objects):
    secrets = objs(lab_objects, "helm_secrets")
    newer = copy.deepcopy(max(secrets, key=lambda s: int(s["metadata"]["labels"]["version"])))
    newer["metadata"]["labels"].update(version="3", status="pending-upgrade")
    problems = []
    release = gc.helm_release(secrets + [newer], "gpu-operator", "gpu-operator", problems)
    assert release["revision"] == 2
    assert problems == [gc.problem("helm release gpu-operator/gpu-operator",
                                   "revision 3 is pending-upgrade (newer than the deployed revision 2)")]


def test_helm_without_deployed_revision_reports_the_newest(lab_objects):
    secrets = [s for s in objs(lab_objects, "helm_secrets") if s["metadata"]["labels"]["version"] == "1"]
    secrets[0]["metadata"]["labels"]["status"] = "failed"
    problems = []
    release = gc.helm_release(secrets, "gpu-operator", "gpu-operator", problems)
    assert release["revision"] == 1 and release["status"] == "superseded"  # the JSON's own status
    assert "no deployed revision" in problems[0]["reason"]


def test_helm_encodings_and_broken_data():
    release = {"name": "r", "namespace": "n", "version": 4, "info": {"status": "deployed"},
               "chart": {"metadata": {"name": "gpu-operator", "version": "v26.7.0", "appVersion": "v26.7.0"}}}
    raw = json.dumps(release).encode()
    for helm_encoded in (base64.b64encode(gzip.compress(raw)), base64.b64encode(raw)):
        assert gc.decode_helm_release(base64.b64encode(helm_encoded).decode()) == release
    secret = {"metadata": {"labels": {"owner": "helm", "name": "r", "status": "deployed", "version": "4"}},
              "data": {"release": base64.b64encode(b"not base64 of gzip").decode()}}
    problems = []
    assert gc.helm_release([secret], "r", "n", problems) is None
    assert "not decodable" in problems[0]["reason"]
    problems = []
    assert gc.helm_release([], "r", "n", problems) is None
    assert problems[0]["reason"].startswith("not found")


# -- workloads -----------------------------------------------------------------------------------

def test_workloads_join_pods_by_owner(lab_objects):
    result = gc.workloads(objs(lab_objects, "daemonsets"), objs(lab_objects, "deployments"),
                          objs(lab_objects, "replicasets"), objs(lab_objects, "pods"))
    by_name = {(w["kind"], w["name"]): w for w in result}
    nfd = by_name[("DaemonSet", "gpu-operator-node-feature-discovery-worker")]
    assert nfd["images"] == ["nvcr.io/nvidia/gpu-operator:v26.7.0", "registry.k8s.io/nfd/node-feature-discovery:v0.19.0"]
    assert sorted(i.split("@")[0] for i in nfd["image_ids"]) == [
        "nvcr.io/nvidia/gpu-operator", "registry.k8s.io/nfd/node-feature-discovery"]
    operator = by_name[("Deployment", "gpu-operator")]
    assert [i.split("@")[0] for i in operator["image_ids"]] == ["nvcr.io/nvidia/gpu-operator"]
    assert operator["desired"] == 1 and operator["ready"] == 1


# -- the read plan -------------------------------------------------------------------------------

class RecordedReader:
    """``get``/``list`` answered from a dict of path -> document/items; unknown paths are 404."""

    def __init__(self, answers, errors=None):
        self.answers, self.errors, self.calls = answers, errors or {}, []

    def _answer(self, path):
        self.calls.append(path)
        if path in self.errors:
            raise K8sApiError("GET " + path, self.errors[path], "recorded error")
        if path not in self.answers:
            raise K8sApiError("GET " + path, 404, "the server could not find the requested resource")
        return copy.deepcopy(self.answers[path])

    def get(self, path):
        return self._answer(path)

    def list(self, path, label_selector=None):
        return self._answer(path)


def bare_cluster(groups):
    return {"/version": {"major": "1", "minor": "32", "gitVersion": "v1.32.9", "platform": "linux/amd64"},
            "/apis": {"groups": [{"name": g, "versions": [{"version": v} for v in vs]} for g, vs in groups.items()]},
            "/api/v1/nodes": [], "/apis/policy/v1/poddisruptionbudgets": [],
            "/apis/node.k8s.io/v1/runtimeclasses": [], "/api/v1/namespaces/gpu-operator/secrets": [],
            "/apis/apps/v1/namespaces/gpu-operator/daemonsets": [],
            "/apis/apps/v1/namespaces/gpu-operator/deployments": [],
            "/apis/apps/v1/namespaces/gpu-operator/replicasets": [], "/api/v1/namespaces/gpu-operator/pods": []}


def test_not_served_groups_are_problems_not_errors():
    reader = RecordedReader(bare_cluster({"policy": ["v1"], "node.k8s.io": ["v1"]}))
    facts = gather(reader)
    assert facts["apis"]["resource_k8s_io_v1"] is False
    assert facts["device_classes"] == [] and facts["resource_claims"]["total"] == 0
    assert facts["operator"]["crds"] == [] and facts["operator"]["cluster_policies"] == []
    whats = [p["what"] for p in facts["problems"]]
    assert "resource.k8s.io/v1" in whats and "nvidia.com" in whats
    assert not [c for c in reader.calls if "resource.k8s.io" in c]


def test_one_list_per_kind_whatever_the_node_count(lab_objects):
    answers = bare_cluster({"policy": ["v1"], "node.k8s.io": ["v1"], "resource.k8s.io": ["v1"]})
    node = objs(lab_objects, "nodes")[0]
    many = []
    for index in range(100):
        item = copy.deepcopy(node)
        item["metadata"]["name"] = "gpu-%03d" % index
        many.append(item)
    answers.update({"/api/v1/nodes": many, "/apis/resource.k8s.io/v1/resourceslices": [],
                    "/apis/resource.k8s.io/v1/deviceclasses": [], "/apis/resource.k8s.io/v1/resourceclaims": []})
    reader = RecordedReader(answers)
    facts = gather(reader)
    assert len(facts["nodes"]) == 100
    assert len(reader.calls) == len(set(reader.calls)) == 13
    assert facts["included"] == list(SECTIONS)


def test_include_limits_the_reads():
    reader = RecordedReader(bare_cluster({"policy": ["v1"]}))
    facts = gather(reader, include=["pdbs"])
    assert reader.calls == ["/version", "/apis", "/apis/policy/v1/poddisruptionbudgets"]
    assert facts["nodes"] is None and facts["operator"] is None and facts["pdbs"] == []


@pytest.mark.parametrize("path,include", [
    ("/apis/policy/v1/poddisruptionbudgets", ["pdbs"]),
    ("/api/v1/namespaces/gpu-operator/secrets", ["operator"]),
    ("/api/v1/nodes", ["nodes"]),
])
def test_forbidden_is_not_absent_it_fails_naming_the_read(path, include):
    answers = bare_cluster({"policy": ["v1"], "node.k8s.io": ["v1"]})
    with pytest.raises(K8sApiError) as exc:
        gather(RecordedReader(answers, errors={path: 403}), include=include)
    assert exc.value.status == 403 and exc.value.forbidden
    assert str(exc.value).startswith("forbidden: cannot list ")
    assert path in str(exc.value)


def test_forbidden_crd_or_custom_resources_fail():
    groups = {"nvidia.com": ["v1"], "node.k8s.io": ["v1"]}
    answers = bare_cluster(groups)
    answers["/apis/nvidia.com/v1"] = {"resources": [{"name": "clusterpolicies"}]}
    crd_path = "/apis/apiextensions.k8s.io/v1/customresourcedefinitions/clusterpolicies.nvidia.com"
    with pytest.raises(K8sApiError) as exc:
        gather(RecordedReader(answers, errors={crd_path: 403}), include=["operator"])
    assert 'get customresourcedefinitions.apiextensions.k8s.io "clusterpolicies.nvidia.com"' in str(exc.value)
    answers[crd_path] = {"metadata": {"name": "clusterpolicies.nvidia.com"},
                         "spec": {"group": "nvidia.com", "versions": [{"name": "v1", "served": True, "storage": True}]}}
    with pytest.raises(K8sApiError) as exc:
        gather(RecordedReader(answers, errors={"/apis/nvidia.com/v1/clusterpolicies": 403}), include=["operator"])
    assert "forbidden: cannot list clusterpolicies.nvidia.com" in str(exc.value)


def test_other_errors_propagate():
    answers = bare_cluster({"policy": ["v1"]})
    with pytest.raises(K8sApiError) as exc:
        gather(RecordedReader(answers, errors={"/apis/policy/v1/poddisruptionbudgets": 500}), include=["pdbs"])
    assert "GET /apis/policy/v1/poddisruptionbudgets" in str(exc.value)


# -- the client wrapper --------------------------------------------------------------------------

class FakeResponse:
    def __init__(self, status, doc):
        self.status, self.data = status, json.dumps(doc).encode()

    def read(self):
        return self.data


class FakeApiClient:
    """The kubernetes >= 35 ApiClient surface K8sReader uses: param_serialize + call_api."""

    def __init__(self, pages):
        self.pages, self.urls = pages, []

    def param_serialize(self, method, resource_path, query_params=None, header_params=None, auth_settings=None):
        return method, resource_path + "?" + "&".join("%s=%s" % kv for kv in query_params), header_params, None, None

    def call_api(self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None):
        self.urls.append(url)
        return self.pages.pop(0)


def test_reader_pages_with_limit_and_continue():
    client = FakeApiClient([FakeResponse(200, {"items": [1, 2], "metadata": {"continue": "t1"}}),
                            FakeResponse(200, {"items": [3], "metadata": {}})])
    reader = K8sReader(client, page_size=2)
    assert reader.list("/api/v1/nodes", label_selector="a=b") == [1, 2, 3]
    assert client.urls == ["/api/v1/nodes?labelSelector=a=b&limit=2", "/api/v1/nodes?labelSelector=a=b&limit=2&continue=t1"]
    assert reader.calls == 2


def test_reader_restarts_an_expired_list_once():
    expired = {"kind": "Status", "message": "The provided continue parameter is too old", "reason": "Expired"}
    client = FakeApiClient([FakeResponse(200, {"items": [1], "metadata": {"continue": "t1"}}), FakeResponse(410, expired),
                            FakeResponse(200, {"items": [1, 2], "metadata": {}})])
    assert K8sReader(client, page_size=1).list("/api/v1/pods") == [1, 2]


def test_reader_errors_name_the_call():
    status = {"kind": "Status", "message": "nodes is forbidden: User \"x\" cannot list resource \"nodes\"",
              "reason": "Forbidden", "code": 403}
    with pytest.raises(K8sApiError) as exc:
        K8sReader(FakeApiClient([FakeResponse(403, status)])).list("/api/v1/nodes")
    assert exc.value.status == 403 and exc.value.attempts == 1  # never retried
    assert str(exc.value).startswith("forbidden: cannot list nodes (GET /api/v1/nodes?limit=500 answered HTTP 403: "
                                     "nodes is forbidden")


def test_configuration_from_options(tmp_path):
    pytest.importorskip("kubernetes")
    config = k8s_client.build_configuration({"host": "https://api.gpu.example:6443/", "api_key": "s3cret",
                                             "validate_certs": False, "ca_cert": None})
    assert config.host == "https://api.gpu.example:6443"
    assert config.api_key == {"authorization": "Bearer s3cret"} and config.verify_ssl is False
    with pytest.raises(k8s_client.K8sConfigError, match="/nonexistent/kubeconfig"):
        k8s_client.build_configuration({"kubeconfig": "/nonexistent/kubeconfig"})
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text(json.dumps({
        "apiVersion": "v1", "kind": "Config", "current-context": "a",
        "clusters": [{"name": "a", "cluster": {"server": "http://127.0.0.1:1"}},
                     {"name": "b", "cluster": {"server": "http://127.0.0.1:2"}}],
        "users": [{"name": "u", "user": {"token": "t"}}],
        "contexts": [{"name": "a", "context": {"cluster": "a", "user": "u"}},
                     {"name": "b", "context": {"cluster": "b", "user": "u"}}]}))
    assert k8s_client.build_configuration({"kubeconfig": str(kubeconfig), "context": "b"}).host == "http://127.0.0.1:2"
    with pytest.raises(k8s_client.K8sConfigError, match="context nope"):
        k8s_client.build_configuration({"kubeconfig": str(kubeconfig), "context": "nope"})
