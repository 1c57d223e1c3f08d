# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for operator_restore's pure logic: choosing the capture, checking its files against the index,
the plan of writes from captured vs live objects, the node label/taint merge patch with node-lifecycle
taints left alone; and the module refusing a tampered capture before it connects to anything."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import hashlib
import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import artifacts as af
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import state as cs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_restore as orr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError
from ansible_collections.gpufleet.dra_gate.plugins.modules import operator_restore as module

RUN = "/ev/run1"
ROOT = RUN + "/artifacts/cluster-state"


def crd(description="v26.3", extra_field=False, labels=None, rv="10"):
    spec = {"type": "object", "description": description, "properties": {"version": {"type": "string"}}}
    if extra_field:
        spec["properties"]["labNewIn2607"] = {"type": "string"}
    return {"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
            "metadata": {"name": "clusterpolicies.nvidia.com", "uid": "u1", "resourceVersion": rv, "generation": 3,
                         "creationTimestamp": "2026-11-30T08:00:00Z", "labels": labels or {"helm": "yes"}},
            "spec": {"group": "nvidia.com", "scope": "Cluster",
                     "names": {"plural": "clusterpolicies", "kind": "ClusterPolicy"},
                     "versions": [{"name": "v1", "served": True, "storage": True,
                                   "schema": {"openAPIV3Schema": {"type": "object", "properties": {"spec": spec}}}}]},
            "status": {"conditions": [{"type": "Established", "status": "True"}], "storedVersions": ["v1"]}}


def node(labels=None, taints=None, unschedulable=False, rv="5"):
    obj = {"apiVersion": "v1", "kind": "Node",
           "metadata": {"name": "gpu-1", "uid": "n1", "resourceVersion": rv, "labels": labels or {}},
           "spec": {"taints": taints or []}}
    if unschedulable:
        obj["spec"]["unschedulable"] = True
    return obj


def entry(stamp, relpath, kind, data=b"{}", captured_at="2026-11-30T08:00:00Z"):
    return {"path": "%s/%s/%s" % (ROOT, stamp, relpath), "kind": kind, "sha256": hashlib.sha256(data).hexdigest(),
            "size": len(data), "source": "x", "captured_at": captured_at}


# -- the capture ---------------------------------------------------------------------------------

def test_newest_capture_is_chosen_by_time_then_suffix():
    index = {"artifacts": [
        entry("20261130T080000Z", "crds/a.json", "crd", captured_at="2026-11-30T08:00:00Z"),
        entry("20261130T090000Z", "crds/a.json", "crd", captured_at="2026-11-30T09:00:00Z"),
        entry("20261130T090000Z-2", "crds/a.json", "crd", captured_at="2026-11-30T09:00:00Z"),
        entry("20261130T090000Z-10", "crds/a.json", "crd", captured_at="2026-11-30T09:00:00Z"),
        {"path": RUN + "/artifacts/etcd/x/m/snap.db", "kind": "etcd-snapshot", "sha256": "0" * 64, "size": 1},
        dict(entry("20261201T000000Z", "crds/a.json", "crd"), path="/elsewhere/cluster-state/20261201T000000Z/a.json"),
    ]}
    stamp, directory, entries = orr.choose_capture(index, RUN)
    assert stamp == "20261130T090000Z-10" and directory == ROOT + "/20261130T090000Z-10"
    assert [e["relpath"] for e in entries] == ["crds/a.json"]
    assert orr.choose_capture(index, RUN + "/", "20261130T080000Z")[0] == "20261130T080000Z"
    with pytest.raises(orr.RestoreError, match="capture: the index lists no cluster-state file under .*nope"):
        orr.choose_capture(index, RUN, "nope")
    with pytest.raises(orr.RestoreError, match="capture: '../x' is not"):
        orr.choose_capture(index, RUN, "../x")
    with pytest.raises(orr.RestoreError, match="no cluster-state capture under /other"):
        orr.choose_capture(index, "/other")


def test_entries_for_the_sections_restored():
    entries = [entry("s", "crds/a.json", cs.KIND_CRD), entry("s", "node-labels-taints/n.json", cs.KIND_NODE),
               entry("s", "deviceclasses/d.json", cs.KIND_DEVICE_CLASS),
               entry("s", "clusterpolicies.nvidia.com/cp.json", cs.KIND_CUSTOM_RESOURCE)]
    assert [e["kind"] for e in orr.entries_for(entries, ["gpu_nodes", "crds"])] == ["crd", "node-labels-taints"]
    assert [e["kind"] for e in orr.entries_for(entries, ["custom_resources"])] == ["custom-resource"]


def test_check_file_names_size_and_sha_mismatch():
    data = b'{"a": 1}\n'
    item = entry("s", "crds/a.json", "crd", data)
    assert orr.check_file(item, data) == []
    problems = orr.check_file(item, b'{"a": 2}\n')
    assert problems == ["sha256 mismatch: indexed %s, found %s" % (item["sha256"], hashlib.sha256(b'{"a": 2}\n').hexdigest())]
    assert orr.check_file(item, data + b" ")[0] == "size mismatch: indexed 9 bytes, found 10"
    assert orr.check_file(dict(item, sha256=None), data) == ["the index entry has no sha256 and size to check it against"]


def test_parse_index_and_load_object_name_the_file():
    with pytest.raises(orr.RestoreError, match="^/i.json: the index is not JSON"):
        orr.parse_index("{", "/i.json")
    with pytest.raises(orr.RestoreError, match="^/i.json: the artifact index is empty"):
        orr.parse_index("", "/i.json")
    item = entry("s", "crds/a.json", cs.KIND_CRD)
    with pytest.raises(orr.RestoreError, match="crds/a.json: expected a CustomResourceDefinition"):
        orr.load_object(item, json.dumps(node()).encode())
    with pytest.raises(orr.RestoreError, match="crds/a.json: not a JSON object"):
        orr.load_object(item, b"nope")
    cr = {"apiVersion": "nvidia.com/v1", "kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}, "spec": {}}
    good = entry("s", "clusterpolicies.nvidia.com/cluster-policy.json", cs.KIND_CUSTOM_RESOURCE)
    assert orr.load_object(good, json.dumps(cr).encode()) == cr
    assert orr.custom_resource_paths(good, cr) == ("/apis/nvidia.com/v1/clusterpolicies",
                                                   "/apis/nvidia.com/v1/clusterpolicies/cluster-policy")
    namespaced = dict(cr, metadata={"name": "d", "namespace": "ns"})
    assert orr.custom_resource_paths(good, namespaced)[1] == "/apis/nvidia.com/v1/namespaces/ns/clusterpolicies/d"
    wrong = entry("s", "clusterpolicies.other.io/cluster-policy.json", cs.KIND_CUSTOM_RESOURCE)
    with pytest.raises(orr.RestoreError, match="not under a <plural>.<group> directory"):
        orr.load_object(wrong, json.dumps(cr).encode())


# -- CRDs and custom resources --------------------------------------------------------------------

def test_plan_create_strips_server_fields_and_status():
    planned = orr.plan_object(crd(), None)
    assert planned["action"] == "create"
    assert set(planned["body"]["metadata"]) == {"name", "labels"} and "status" not in planned["body"]


def test_plan_replace_takes_captured_spec_and_labels_under_live_metadata():
    captured = crd(labels={"helm": "yes"}, rv="10")
    live = crd("v26.7", extra_field=True, labels={"helm": "yes", "new": "1"}, rv="42")
    live["metadata"]["managedFields"] = [{"manager": "dra-gate"}]
    live["status"]["storedVersions"] = ["v1"]
    planned = orr.plan_object(captured, live)
    assert planned["action"] == "replace"
    body = planned["body"]
    assert body["spec"] == captured["spec"]
    assert body["metadata"]["resourceVersion"] == "42" and body["metadata"]["uid"] == "u1"
    assert body["metadata"]["labels"] == {"helm": "yes"} and "managedFields" not in body["metadata"]
    assert "annotations" not in body["metadata"]
    assert body["status"] == live["status"]


def test_plan_unchanged_ignores_server_fields_and_status():
    live = crd(rv="99")
    live["status"] = {"conditions": []}
    live["metadata"]["managedFields"] = [{}]
    assert orr.plan_object(crd(), live) == {"action": "unchanged", "body": None}
    only_label = crd(labels={"helm": "no"})
    assert orr.plan_object(crd(), only_label)["action"] == "replace"


def test_extras_are_live_objects_of_the_captured_groups_only():
    captured = [crd()]
    gpuclusters = copy.deepcopy(crd())
    gpuclusters["metadata"]["name"] = "gpuclusters.nvidia.com"
    nfd = {"metadata": {"name": "nodefeatures.nfd.k8s-sigs.io"}, "spec": {"group": "nfd.k8s-sigs.io"}}
    domains = {"metadata": {"name": "computedomains.resource.nvidia.com"}, "spec": {"group": "resource.nvidia.com"}}
    other = {"metadata": {"name": "things.example.com"}, "spec": {"group": "example.com"}}
    found = orr.extra_crds(captured, [crd(), gpuclusters, nfd, domains])
    assert found == ["computedomains.resource.nvidia.com", "gpuclusters.nvidia.com"]
    assert orr.extra_crds(captured, [domains, other], also_groups=()) == []
    assert orr.extra_crds([dict(crd(), spec={"group": "example.com"})], [domains, other], ()) == ["things.example.com"]
    live = [{"kind": "ClusterPolicy", "metadata": {"name": "cluster-policy"}},
            {"kind": "ClusterPolicy", "metadata": {"name": "second"}}]
    assert orr.extra_names(["ClusterPolicy/cluster-policy"], live) == ["ClusterPolicy/second"]


# -- GPU nodes ------------------------------------------------------------------------------------

PREFIXES = list(orr.DEFAULT_LABEL_PREFIXES)


def test_label_patch_restores_and_removes_only_prefixed_keys():
    captured = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "H100", "feature.node.kubernetes.io/a": "1",
                "team": "a"}
    live = {"nvidia.com/gpu.present": "true", "nvidia.com/gpu.product": "H200", "nvidia.com/new": "x",
            "team": "b", "other": "y"}
    assert orr.label_patch(captured, live, PREFIXES) == {"nvidia.com/gpu.product": "H100",
                                                         "feature.node.kubernetes.io/a": "1", "nvidia.com/new": None}
    assert orr.label_patch(captured, captured, PREFIXES) == {}


def test_node_patch_keeps_lifecycle_taints_and_restores_the_rest():
    gpu_taint = {"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}
    lifecycle_then = {"key": "node.kubernetes.io/not-ready", "effect": "NoExecute", "timeAdded": "2026-11-30T08:00:00Z"}
    lifecycle_now = {"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}
    added = {"key": "dra-gate/upgrade", "value": "x", "effect": "NoSchedule"}
    captured = node({"nvidia.com/gpu.present": "true"}, [gpu_taint, lifecycle_then])
    live = node({"nvidia.com/gpu.present": "true", "nvidia.com/x": "1"}, [lifecycle_now, added], unschedulable=True,
                rv="77")
    patch, after = orr.node_patch(captured, live, PREFIXES)
    assert patch == {"metadata": {"labels": {"nvidia.com/x": None}, "resourceVersion": "77"},
                     "spec": {"taints": [gpu_taint, lifecycle_now], "unschedulable": False}}
    assert after == {"labels": {"nvidia.com/gpu.present": "true"}, "taints": [gpu_taint, lifecycle_now],
                     "unschedulable": False}
    # the lifecycle taint the capture had and the node has no longer is not re-added; once equal: no patch
    settled = node({"nvidia.com/gpu.present": "true"}, [lifecycle_now, dict(gpu_taint)], rv="78")
    assert orr.node_patch(captured, settled, PREFIXES) == (None, orr.node_state(settled))


def test_node_patch_without_taints_and_order_of_taints_ignored():
    first = {"key": "a", "effect": "NoSchedule"}
    second = {"key": "b", "value": "1", "effect": "NoExecute"}
    captured = node({}, [first, second], unschedulable=False)
    live = node({}, [second, first], unschedulable=True)
    assert orr.node_patch(captured, live, PREFIXES, taints=False) == (None, orr.node_state(live))
    patch, _after = orr.node_patch(captured, live, PREFIXES)
    assert patch == {"spec": {"unschedulable": False}}      # same taints in another order: not rewritten
    patch, _after = orr.node_patch(node({}, []), node({}, [first], rv="9"), PREFIXES)
    assert patch == {"metadata": {"resourceVersion": "9"}, "spec": {"taints": None}}


# -- the module refuses a tampered capture before anything else -------------------------------------

def write_capture(run_dir):
    """A capture (one CRD, one node) and its index, as cluster_state + artifact_index write them."""
    files = cs.render(cs.plan(crds=[crd()], nodes=[dict(node({"nvidia.com/gpu.present": "true"}), status={})]))
    stamp_dir = os.path.join(run_dir, "artifacts", "cluster-state", "20261130T080000Z")
    index = af.empty_index("run1")
    for item in files:
        path = os.path.join(stamp_dir, item["relpath"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "wb") as handle:
            handle.write(item["text"])
        index["artifacts"].append({"path": path, "kind": item["kind"], "sha256": item["sha256"], "size": item["size"],
                                   "source": item["source"], "captured_at": "2026-11-30T08:00:00Z"})
    with open(os.path.join(run_dir, "artifacts", "index.json"), "w") as handle:
        handle.write(af.dumps(index))
    return [os.path.join(stamp_dir, item["relpath"]) for item in files]


def test_module_refuses_a_tampered_file_naming_it(run_module, tmp_path):
    paths = write_capture(str(tmp_path))
    with open(paths[0], "a") as handle:
        handle.write(" ")
    # no cluster to connect to: the refusal comes before any connection
    result = run_module(module, {"run_dir": str(tmp_path), "kubeconfig": str(tmp_path / "absent")})
    assert result["failed"] and not result["changed"]
    assert "do not match the index" in result["msg"] and paths[0] in result["msg"] and "nothing was written" in result["msg"]
    assert "size mismatch" in result["msg"] and "sha256 mismatch" in result["msg"]
    assert result["api_calls"] == 0 and result["restored"] == {"crds": [], "custom_resources": [], "nodes": []}
    for key in ("started_at", "finished_at", "duration_seconds"):
        assert key in result


def test_module_refuses_a_missing_file_and_a_bad_index(run_module, tmp_path):
    paths = write_capture(str(tmp_path))
    os.unlink(paths[-1])
    result = run_module(module, {"run_dir": str(tmp_path), "restore": ["gpu_nodes"]})
    assert result["failed"] and paths[-1] in result["msg"] and "cannot read" in result["msg"]
    # only the files of the sections restored are read: the CRDs alone pass the check (then fail to connect)
    result = run_module(module, {"run_dir": str(tmp_path), "restore": ["crds"], "kubeconfig": str(tmp_path / "absent")})
    assert result["failed"] and result["msg"].startswith("cannot connect to the cluster")
    assert result["capture"]["files"] == [paths[0]]
    with open(os.path.join(str(tmp_path), "artifacts", "index.json"), "w") as handle:
        handle.write("{not json")
    result = run_module(module, {"run_dir": str(tmp_path)})
    assert result["failed"] and result["msg"].startswith(os.path.join(str(tmp_path), "artifacts", "index.json") + ":")


def test_module_bad_options_name_the_field(run_module, tmp_path):
    result = run_module(module, {"run_dir": str(tmp_path), "capture": "../up"})
    assert result["failed"] and result["msg"].startswith("capture: '../up'")
    result = run_module(module, {"run_dir": str(tmp_path), "label_prefixes": ["nvidia.com/", ""]})
    assert result["failed"] and result["msg"].startswith("label_prefixes[1]: expected a non-empty string")
    result = run_module(module, {"run_dir": str(tmp_path), "restore": []})
    assert result["failed"] and result["msg"].startswith("restore: expected at least one")


# -- the writes: 409 retried after a fresh read, 403 never absent, a missing node reported ----------

class FakeReader:
    """GET answers from ``objects`` (path -> object or an HTTP status to raise); writes recorded, the
    first ``conflicts`` writes answered 409 (each conflict bumps the stored resourceVersion)."""

    def __init__(self, objects, conflicts=0):
        self.objects = objects
        self.conflicts = conflicts
        self.writes = []
        self.calls = self.retries = 0

    def get(self, path):
        self.calls += 1
        value = self.objects.get(path, 404)
        if isinstance(value, int):
            raise K8sApiError("GET " + path, value, "status %d" % value)
        return copy.deepcopy(value)

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls += 1
        self.writes.append((method, path, copy.deepcopy(body), content_type))
        if self.conflicts:
            self.conflicts -= 1
            self.objects[path]["metadata"]["resourceVersion"] += "1"
            raise K8sApiError("%s %s" % (method, path), 409, "the object has been modified")
        return copy.deepcopy(body)


CRD_PATH = cs.CRD_PATH + "/clusterpolicies.nvidia.com"


def test_a_conflicting_replace_is_retried_after_a_fresh_read():
    reader = FakeReader({CRD_PATH: crd("v26.7", extra_field=True, rv="42")}, conflicts=2)
    restorer = module.Restorer(reader, False, None, "s", deadline=30)
    assert restorer.put_object("crds", "clusterpolicies.nvidia.com", "c", crd(), cs.CRD_PATH, CRD_PATH) == "replaced"
    assert [(m, b["metadata"]["resourceVersion"]) for m, _p, b, _c in reader.writes] == [
        ("PUT", "42"), ("PUT", "421"), ("PUT", "4211")]          # each attempt under the fresh resourceVersion
    assert restorer.restored["crds"] == ["clusterpolicies.nvidia.com"]


def test_conflicts_stop_after_the_attempts_and_check_mode_writes_nothing():
    reader = FakeReader({CRD_PATH: crd("v26.7", rv="42")}, conflicts=99)
    restorer = module.Restorer(reader, False, None, "s", deadline=30)
    with pytest.raises(K8sApiError) as caught:
        restorer.put_object("crds", "x", "x", crd(), cs.CRD_PATH, CRD_PATH)
    assert caught.value.status == 409 and len(reader.writes) == module.CONFLICT_ATTEMPTS
    checking = FakeReader({CRD_PATH: crd("v26.7", rv="42")})
    restorer = module.Restorer(checking, True, "/nonexistent/evidence", "s", deadline=30)
    assert restorer.put_object("crds", "x", "x", crd(), cs.CRD_PATH, CRD_PATH) == "replaced"
    assert checking.writes == [] and restorer.restored["crds"] == ["x"] and restorer.artifacts == []
    assert restorer.diffs[0]["after_header"] == "crds x (would be replaced)"


def test_forbidden_read_is_an_error_and_a_missing_node_is_reported():
    reader = FakeReader({CRD_PATH: 403})
    restorer = module.Restorer(reader, False, None, "s", deadline=30)
    with pytest.raises(K8sApiError) as caught:
        restorer.put_object("crds", "x", "x", crd(), cs.CRD_PATH, CRD_PATH)
    assert caught.value.forbidden and reader.writes == []
    captured = node({"nvidia.com/gpu.present": "true"})
    restorer.patch_node(captured, PREFIXES, True)
    assert restorer.missing_nodes == ["gpu-1"] and reader.writes == []
    reader.objects[cs.NODE_PATH + "/gpu-1"] = node({"nvidia.com/gpu.present": "true", "nvidia.com/x": "1"})
    restorer.patch_node(captured, PREFIXES, True)
    assert reader.writes == [("PATCH", cs.NODE_PATH + "/gpu-1", {"metadata": {"labels": {"nvidia.com/x": None}}},
                              orr.MERGE_PATCH)]
    assert restorer.restored["nodes"] == ["gpu-1"]
