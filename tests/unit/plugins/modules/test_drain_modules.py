# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""drain_node and node_rollout through their main() (issue 27): a failed drain's result says how long its
evictions were tried; the failed reschedule rate follows the one rounding rule (docs/evidence.md "Rates"),
per node and totalled over the rollout."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import drain as dr
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError
from ansible_collections.gpufleet.dra_gate.plugins.modules import drain_node, node_rollout

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "drain", "lab-drain.json")


@pytest.fixture(scope="module")
def rec():
    with open(FIXTURE) as handle:
        return json.load(handle)


class FakeClock(object):
    def __init__(self):
        self.now = 1000.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += max(seconds, 0.0)


class FakeCluster(object):
    """Node gpu-1 with two ReplicaSet pods under a PodDisruptionBudget that never allows an eviction."""

    api_client = None
    timeout = 5.0

    class policy(object):  # pylint: disable=invalid-name
        deadline = 30.0

    def __init__(self, pods, refusal):
        self.pods = pods
        self.refusal = refusal
        self.unschedulable = False
        self.patches = []

    def get(self, path):
        assert path == "/api/v1/nodes/gpu-1", path
        return {"metadata": {"name": "gpu-1"}, "spec": {"unschedulable": self.unschedulable},
                "status": {"conditions": [{"type": "Ready", "status": "True"}], "allocatable": {"nvidia.com/gpu": "8"},
                           "nodeInfo": {"bootID": "b-1"}}}

    def list(self, path, field_selector=None):
        if path == "/api/v1/pods":
            return self.pods
        if path in ("/apis/resource.k8s.io/v1/resourceslices", "/apis/resource.k8s.io/v1/resourceclaims"):
            return []
        raise AssertionError(path)

    def request(self, method, path, query=None, body=None, content_type=None):
        if method == "PATCH":
            self.patches.append(body)
            self.unschedulable = bool(body["spec"]["unschedulable"])
            return {}
        if method == "POST" and path.endswith("/eviction"):
            raise K8sApiError("POST " + path, 429, self.refusal["message"], status_doc=self.refusal)
        raise AssertionError("unexpected %s %s" % (method, path))

    def get_or_none(self, path):
        name = path.rsplit("/", 1)[-1]
        return next(p for p in self.pods if p["metadata"]["name"] == name)


def test_a_failed_drain_result_says_how_long_evictions_were_tried(run_module, monkeypatch, rec):
    cluster = FakeCluster([p for p in rec["pods_gpu_1"] if p["metadata"]["name"].startswith("web-")],
                          rec["eviction_refused"]["body"])
    clock = FakeClock()

    class FastDrain(dr.Drain):
        def __init__(self, reader, plan, **kwargs):
            super(FastDrain, self).__init__(reader, plan, clock=clock, sleep=clock.sleep, **kwargs)
            self.once = reader

    monkeypatch.setattr(drain_node, "module_reader", lambda module: cluster)
    monkeypatch.setattr(drain_node.dr, "Drain", FastDrain)
    result = run_module(drain_node, {"node": "gpu-1", "timeout": 45, "retry_interval": 5, "poll_interval": 0.5})
    assert result["failed"] is True
    assert "still present after 45 s" in result["msg"] and "nothing was evicted, so the node was uncordoned" in result["msg"]
    timings = result["timings"]
    assert set(timings) == {"cordon_seconds", "evict_seconds", "claims_seconds"}
    assert timings["evict_seconds"] >= 45 and timings["cordon_seconds"] == 0 and timings["claims_seconds"] is None
    assert len(result["evictions"]) == 2 and all(e["pdb_retries"] == 10 and e["evicted_at"] is None
                                                 for e in result["evictions"])
    assert result["cordoned"] is False
    assert cluster.patches == [{"spec": {"unschedulable": True}}, {"spec": {"unschedulable": None}}]


def test_a_refused_drain_has_its_timings_too(run_module, monkeypatch, rec):
    """Blocked before any eviction (an unmanaged pod): the keys are there, null - nothing was tried."""
    cluster = FakeCluster(rec["pods_gpu_1"], rec["eviction_refused"]["body"])
    monkeypatch.setattr(drain_node, "module_reader", lambda module: cluster)
    result = run_module(drain_node, {"node": "gpu-1"})
    assert result["failed"] is True and "cannot be drained" in result["msg"]
    assert result["timings"] == {"cordon_seconds": None, "evict_seconds": None, "claims_seconds": None}
    assert cluster.patches == []


@pytest.mark.parametrize("failed, attempts, percent", [
    (1, 3, 33.34), (2, 3, 66.67), (0, 7, 0.0), (7, 7, 100.0), (0, 0, None), (1, 8, 12.5),
])
def test_the_nodes_failed_reschedule_rate_rounds_up(failed, attempts, percent):
    assert node_rollout.rate(failed, attempts) == {"numerator": failed, "denominator": attempts, "percent": percent}


def test_the_rollouts_rate_is_totalled_from_the_sums(run_module):
    rates = [{"numerator": 1, "denominator": 3, "percent": 33.333}, None, {"numerator": 0, "denominator": 0, "percent": None},
             {"numerator": 0, "denominator": 3, "percent": 0.0}]
    result = run_module(node_rollout, {"state": "totalled", "rates": rates})
    assert result.get("failed") is not True, result
    assert result["failed_reschedule_rate"] == {"numerator": 1, "denominator": 6, "percent": 16.67}
    assert result["changed"] is False and result["msg"] == "failed reschedules: 1 of 6 (16.67 %)"
    empty = run_module(node_rollout, {"state": "totalled", "rates": []})
    assert empty["failed_reschedule_rate"] == {"numerator": 0, "denominator": 0, "percent": None}


@pytest.mark.parametrize("args, message", [
    ({"state": "totalled", "rates": [{"numerator": 4, "denominator": 3}]}, "rates[0].numerator: 4 is more than the denominator 3"),
    ({"state": "totalled", "rates": [{"numerator": "1", "denominator": 3}]}, "rates[0].numerator: expected a whole number >= 0"),
    ({"state": "rescheduled"}, "state is rescheduled but all of the following are missing: node"),
])
def test_totalled_and_node_errors_name_the_field(run_module, args, message):
    result = run_module(node_rollout, args)
    assert result["failed"] is True and message in result["msg"], result["msg"]


@pytest.mark.parametrize("module", [drain_node, node_rollout])
def test_documentation_matches_the_argument_spec(module):
    import yaml
    doc = yaml.safe_load(module.DOCUMENTATION)
    options = doc["options"]
    assert sorted(options) == sorted(module.MODULE_ARG_SPEC)
    for name, spec in module.MODULE_ARG_SPEC.items():
        documented = options[name]
        assert documented["type"] == spec["type"], name
        assert documented.get("elements") == spec.get("elements"), name
        assert bool(documented.get("required", False)) == bool(spec.get("required", False)), name
        assert documented.get("default") == spec.get("default"), name
        assert documented.get("choices") == spec.get("choices"), name
    returned = yaml.safe_load(module.RETURN)
    assert "timings" in returned if module is drain_node else "failed_reschedule_rate" in returned
    examples = yaml.safe_load(module.EXAMPLES)
    key = "gpufleet.dra_gate.%s" % doc["module"]
    assert all(set(task[key]) <= set(options) | {"kubeconfig"} for task in examples if key in task)
