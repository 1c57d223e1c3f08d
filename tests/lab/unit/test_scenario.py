# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.scenario: the shipped scenarios load into complete objects; bad input names the field."""

from __future__ import annotations

import json
import os

import pytest
import yaml

from kubelab.scenario import NODE_INFO_FIELDS, ScenarioError, load_scenario, scenario_objects, validate_scenario

SCENARIOS = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))),
                         "lab", "scenarios")


def _write(tmp_path, data, name="s.yml") -> str:
    path = tmp_path / name
    path.write_text(data if isinstance(data, str) else yaml.safe_dump(data))
    return str(path)


def test_every_shipped_scenario_loads():
    names = sorted(n for n in os.listdir(SCENARIOS) if n.endswith(".yml"))
    assert {"empty.yml", "minimal.yml"} <= set(names)
    for name in names:
        scenario = load_scenario(os.path.join(SCENARIOS, name))
        assert scenario["name"] == name[:-4]


def test_empty():
    scenario = load_scenario(os.path.join(SCENARIOS, "empty.yml"))
    assert (scenario["nodes"], scenario["namespaces"], scenario["objects"]) == ([], [], [])
    assert scenario_objects(scenario) == []


def test_minimal_nodes():
    scenario = load_scenario(os.path.join(SCENARIOS, "minimal.yml"))
    nodes = {n["metadata"]["name"]: n for n in scenario["nodes"]}
    assert sorted(nodes) == ["cp-1", "worker-1", "worker-2"]
    control = nodes["cp-1"]
    assert control["metadata"]["labels"]["node-role.kubernetes.io/control-plane"] == ""
    assert control["spec"]["taints"] == [{"key": "node-role.kubernetes.io/control-plane", "effect": "NoSchedule"}]
    for name in ("worker-1", "worker-2"):
        assert "taints" not in nodes[name]["spec"]
        assert nodes[name]["metadata"]["labels"]["kubernetes.io/hostname"] == name
    for node in nodes.values():
        status = node["status"]
        assert sorted(status["nodeInfo"]) == sorted(NODE_INFO_FIELDS)
        assert all(isinstance(v, str) and v for v in status["nodeInfo"].values())
        assert [c for c in status["conditions"] if c["type"] == "Ready"][0]["status"] == "True"
        for key in ("cpu", "memory", "pods"):
            assert isinstance(status["capacity"][key], str) and isinstance(status["allocatable"][key], str)
    # the file spells out all ten nodeInfo fields itself (no defaults needed)
    with open(os.path.join(SCENARIOS, "minimal.yml"), encoding="utf-8") as handle:
        raw = yaml.safe_load(handle)
    for entry in raw["nodes"]:
        assert sorted(entry["nodeInfo"]) == sorted(NODE_INFO_FIELDS)
    kinds = [o["kind"] for o in scenario_objects(scenario)]
    assert kinds == ["Namespace", "Node", "Node", "Node"]


def test_minimal_nodes_deserialize_in_the_python_client():
    kubernetes = pytest.importorskip("kubernetes")
    scenario = load_scenario(os.path.join(SCENARIOS, "minimal.yml"))
    client = kubernetes.client.ApiClient()
    node_list = {"apiVersion": "v1", "kind": "NodeList", "metadata": {"resourceVersion": "1"}, "items": scenario["nodes"]}
    result = client.deserialize(json.dumps(node_list), "V1NodeList", "application/json")
    assert [n.status.node_info.kubelet_version for n in result.items] == ["v1.31.4"] * 3
    assert result.items[0].spec.taints[0].effect == "NoSchedule"


def test_defaults_fill_node_info_and_capacity(tmp_path):
    scenario = load_scenario(_write(tmp_path, {"nodes": [{"name": "n1", "capacity": {"nvidia.com/gpu": 8, "cpu": "500m"}},
                                                         {"name": "n2", "ready": False, "unschedulable": True}]}))
    n1, n2 = scenario["nodes"]
    assert sorted(n1["status"]["nodeInfo"]) == sorted(NODE_INFO_FIELDS)
    assert n1["status"]["capacity"]["nvidia.com/gpu"] == "8"
    assert n1["status"]["allocatable"]["cpu"] == "500m"
    assert n1["status"]["nodeInfo"]["systemUUID"] != n2["status"]["nodeInfo"]["systemUUID"]
    assert n1["status"]["addresses"][0]["address"] != n2["status"]["addresses"][0]["address"]
    assert n2["status"]["conditions"][0]["status"] == "False"
    assert n2["spec"]["unschedulable"] is True
    assert scenario["name"] == "s"


def test_objects_and_namespaces(tmp_path):
    path = _write(tmp_path, {"namespaces": ["gpu-operator"], "objects": [
        {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "c", "namespace": "gpu-operator"}, "data": {"a": "b"}}]})
    objects = scenario_objects(load_scenario(path))
    assert [o["kind"] for o in objects] == ["Namespace", "ConfigMap"]
    assert objects[1]["data"] == {"a": "b"}


def test_empty_file_is_the_empty_scenario(tmp_path):
    assert load_scenario(_write(tmp_path, ""))["nodes"] == []


@pytest.mark.parametrize("data, field", [
    ({"nodes": [{"name": "a"}, {"labels": {}}]}, "nodes[1].name: is required"),
    ({"nodes": [{"name": "Bad_Name"}]}, "nodes[0].name"),
    ({"nodes": [{"name": "a", "taints": [{"key": "k", "effect": "NoSchedul"}]}]}, "nodes[0] (a).taints[0].effect: must be one of"),
    ({"nodes": [{"name": "a", "taints": [{"effect": "NoSchedule"}]}]}, "nodes[0] (a).taints[0].key: is required"),
    ({"nodes": [{"name": "a", "labels": {"gpu": True}}]}, "nodes[0] (a).labels[gpu]: must be a string"),
    ({"nodes": [{"name": "a", "capacity": {"cpu": "lots"}}]}, "nodes[0] (a).capacity.cpu"),
    ({"nodes": [{"name": "a", "nodeInfo": {"kubeletVersion": 131}}]}, "nodes[0] (a).nodeInfo.kubeletVersion: must be a string"),
    ({"nodes": [{"name": "a", "nodeInfo": {"kernel": "x"}}]}, "nodes[0] (a).nodeInfo.kernel: unknown field"),
    ({"nodes": [{"name": "a", "role": "master"}]}, "nodes[0] (a).role"),
    ({"nodes": [{"name": "a", "gpus": 8}]}, "nodes[0]: unknown field(s) gpus"),
    ({"nodes": [{"name": "a"}, {"name": "a"}]}, "nodes[1].name: 'a' is listed twice"),
    ({"nodes": [{"name": "a", "conditions": [{"type": "DiskPressure", "status": False}]}]},
     "nodes[0] (a).conditions[0].status: must be a string"),
    ({"nodes": {"name": "a"}}, "nodes: must be a list"),
    ({"namespaces": ["ok", "Not OK"]}, "namespaces[1]"),
    ({"objects": [{"kind": "ConfigMap", "metadata": {"name": "c"}}]}, "objects[0].apiVersion: is required"),
    ({"objects": [{"apiVersion": "v1", "kind": "ConfigMap", "metadata": {}}]}, "objects[0].metadata.name: is required"),
    ({"objects": [{"apiVersion": "v1", "kind": "ConfigMap"}]}, "objects[0].metadata: must be a mapping"),
    ({"node": []}, "(top level): unknown field(s) node"),
    (["nodes"], "(top level): must be a mapping"),
])
def test_errors_name_the_field(tmp_path, data, field):
    path = _write(tmp_path, data)
    with pytest.raises(ScenarioError) as info:
        load_scenario(path)
    assert str(info.value).startswith(path + ": ")
    assert field in str(info.value)


def test_unreadable_and_bad_yaml(tmp_path):
    with pytest.raises(ScenarioError, match="cannot read"):
        load_scenario(str(tmp_path / "missing.yml"))
    with pytest.raises(ScenarioError, match="not valid YAML"):
        load_scenario(_write(tmp_path, "nodes: [\n"))


def test_validate_does_not_modify_input():
    data = {"nodes": [{"name": "a", "labels": {"x": "y"}}],
            "objects": [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "n"}}]}
    before = json.dumps(data, sort_keys=True)
    result = validate_scenario(data)
    result["objects"][0]["metadata"]["name"] = "changed"
    result["nodes"][0]["metadata"]["labels"]["x"] = "changed"
    assert json.dumps(data, sort_keys=True) == before
