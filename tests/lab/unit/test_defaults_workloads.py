# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Defaulting of apps/v1, batch/v1, resource.k8s.io/v1 and apiextensions.k8s.io/v1 kinds (kubelab.defaults.workloads).

Each fixture under tests/lab/fixtures/defaulting/workloads/ holds a minimal object and the fields a real
cluster (or, where no recording was found, the kind's defaults.go) shows after defaulting; the pod template's
``spec`` belongs to the core/v1 defaulting and is left out of the comparison.
"""

from __future__ import annotations

import copy
import glob
import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
LAB = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(HERE))), "lab")
if LAB not in sys.path:
    sys.path.insert(0, LAB)

from kubelab import defaults  # noqa: E402  pylint: disable=wrong-import-position
from kubelab.defaults import workloads  # noqa: E402  pylint: disable=wrong-import-position

FIXTURES = sorted(glob.glob(os.path.join(os.path.dirname(HERE), "fixtures", "defaulting", "workloads", "*.json")))
STAMP = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$")


class FakeType:
    """The two attributes of a ``resources`` type that ``defaults.apply`` reads."""

    def __init__(self, group: str, kind: str):
        self.group, self.kind, self.custom = group, kind, False


def load(path: str) -> dict:
    with open(path, encoding="utf-8") as handle:
        return json.load(handle)


def without_pod_specs(obj: dict) -> dict:
    """``obj`` minus every pod template's ``spec`` (the core/v1 defaulting's part)."""
    obj = copy.deepcopy(obj)
    spec = obj.get("spec") or {}
    for holder in (spec, ((spec.get("jobTemplate") or {}).get("spec") or {})):
        if isinstance(holder.get("template"), dict):
            holder["template"].pop("spec", None)
    return obj


def defaulted(fixture: dict) -> dict:
    obj = copy.deepcopy(fixture["input"])
    defaults.apply(FakeType(fixture["group"], fixture["kind"]), obj)
    return obj


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.basename(p)[:-5] for p in FIXTURES])
def test_minimal_object_defaults_as_recorded(path):
    fixture = load(path)
    assert fixture.get("source"), "every fixture names its source"
    got = without_pod_specs(defaulted(fixture))
    expected = without_pod_specs(fixture["expected"])
    for section, want in expected.items():
        if section == "metadata":
            for key, value in want.items():
                assert got["metadata"].get(key) == value, key
        else:
            assert got.get(section) == want, section


@pytest.mark.parametrize("path", FIXTURES, ids=[os.path.basename(p)[:-5] for p in FIXTURES])
def test_defaulting_is_idempotent(path):
    fixture = load(path)
    once = defaulted(fixture)
    twice = copy.deepcopy(once)
    defaults.apply(FakeType(fixture["group"], fixture["kind"]), twice)
    assert twice == once


def test_registered_for_the_workload_kinds():
    for key in (("apps", "Deployment"), ("apps", "StatefulSet"), ("apps", "DaemonSet"), ("apps", "ReplicaSet"),
                ("batch", "Job"), ("batch", "CronJob"), ("resource.k8s.io", "ResourceClaim"),
                ("resource.k8s.io", "ResourceClaimTemplate"), ("resource.k8s.io", "ResourceSlice"),
                ("resource.k8s.io", "DeviceTaintRule"), ("apiextensions.k8s.io", "CustomResourceDefinition")):
        assert defaults.DEFAULTERS[key] is workloads.DEFAULTERS[key]
    for key in (("apps", "ControllerRevision"), ("policy", "PodDisruptionBudget"), ("resource.k8s.io", "DeviceClass")):
        assert key not in workloads.DEFAULTERS  # nothing to default in 1.37


def test_minimal_deployment_and_replica_counts():
    deploy = {"spec": {"template": {}}}
    workloads.deployment(deploy)
    assert deploy["spec"]["replicas"] == 1
    zero = {"spec": {"replicas": 0, "strategy": {"type": "Recreate"}}}
    workloads.deployment(zero)
    assert zero["spec"]["replicas"] == 0 and zero["spec"]["strategy"] == {"type": "Recreate"}
    partial = {"spec": {"strategy": {"rollingUpdate": {"maxSurge": 1}}}}
    workloads.deployment(partial)
    assert partial["spec"]["strategy"] == {"type": "RollingUpdate",
                                           "rollingUpdate": {"maxSurge": 1, "maxUnavailable": "25%"}}


def test_statefulset_update_strategy_cases():
    on_delete = {"spec": {"updateStrategy": {"type": "OnDelete"}}}
    workloads.stateful_set(on_delete)
    assert on_delete["spec"]["updateStrategy"] == {"type": "OnDelete"}
    explicit = {"spec": {"updateStrategy": {"type": "RollingUpdate"}}}  # no rollingUpdate is created then
    workloads.stateful_set(explicit)
    assert explicit["spec"]["updateStrategy"] == {"type": "RollingUpdate"}
    given = {"spec": {"updateStrategy": {"rollingUpdate": {"partition": 2}}, "replicas": None,
                      "persistentVolumeClaimRetentionPolicy": {"whenDeleted": "Delete"}}}
    workloads.stateful_set(given)
    assert given["spec"]["updateStrategy"] == {"type": "RollingUpdate",
                                               "rollingUpdate": {"partition": 2, "maxUnavailable": 1}}
    assert given["spec"]["replicas"] == 1
    assert given["spec"]["persistentVolumeClaimRetentionPolicy"] == {"whenDeleted": "Delete", "whenScaled": "Retain"}
    assert given["status"] == {"replicas": 0, "availableReplicas": 0}  # encoded although zero


def test_job_defaults_and_selector():
    job = {"metadata": {"name": "work", "uid": "uid-1"}, "spec": {"template": {"spec": {"containers": []}}}}
    workloads.job(job)
    spec = job["spec"]
    assert (spec["completions"], spec["parallelism"], spec["backoffLimit"]) == (1, 1, 6)
    assert spec["selector"] == {"matchLabels": {"batch.kubernetes.io/controller-uid": "uid-1"}}
    generated = {"batch.kubernetes.io/controller-uid": "uid-1", "controller-uid": "uid-1",
                 "batch.kubernetes.io/job-name": "work", "job-name": "work"}
    assert spec["template"]["metadata"]["labels"] == generated
    assert job["metadata"]["labels"] == generated

    parallel = {"metadata": {"name": "p", "uid": "u", "labels": {"team": "a"}},
                "spec": {"parallelism": 3, "backoffLimitPerIndex": 1,
                         "podFailurePolicy": {"rules": [{"action": "FailJob", "onPodConditions": [{"type": "ConfigIssue"}]}]},
                         "template": {"metadata": {"labels": {"app": "x"}}}}}
    workloads.job(parallel)
    spec = parallel["spec"]
    assert "completions" not in spec and spec["parallelism"] == 3 and spec["backoffLimit"] == workloads.MAX_INT32
    assert spec["podReplacementPolicy"] == "Failed"
    assert spec["podFailurePolicy"]["rules"][0]["onPodConditions"] == [{"type": "ConfigIssue", "status": "True"}]
    assert parallel["metadata"]["labels"] == {"team": "a"}  # the Job's own labels are kept
    assert spec["template"]["metadata"]["labels"]["app"] == "x"


def test_job_labels_shared_with_the_template():
    """Go's ``obj.Labels = labels`` shares the map, so the generated template labels show on the Job."""
    job = {"metadata": {"name": "j", "uid": "u"}, "spec": {"template": {"metadata": {"labels": {"app": "x"}}}}}
    workloads.job(job)
    assert job["metadata"]["labels"] == job["spec"]["template"]["metadata"]["labels"]
    assert job["metadata"]["labels"]["app"] == "x" and job["metadata"]["labels"]["job-name"] == "j"
    assert job["metadata"]["labels"] is not job["spec"]["template"]["metadata"]["labels"]


def test_job_manual_selector_is_left_alone():
    job = {"metadata": {"name": "m", "uid": "u"},
           "spec": {"manualSelector": True, "selector": {"matchLabels": {"app": "m"}},
                    "template": {"metadata": {"labels": {"app": "m"}}}}}
    workloads.job(job)
    assert job["spec"]["selector"] == {"matchLabels": {"app": "m"}}
    assert job["spec"]["template"]["metadata"]["labels"] == {"app": "m"}


def test_device_taints_get_time_added_once():
    rule = {"spec": {"taint": {"key": "k", "effect": "NoSchedule"}}}
    workloads.device_taint_rule(rule)
    stamp = rule["spec"]["taint"]["timeAdded"]
    assert STAMP.match(stamp)
    rule["spec"]["taint"]["timeAdded"] = "2006-01-02T15:04:05Z"
    workloads.device_taint_rule(rule)
    assert rule["spec"]["taint"]["timeAdded"] == "2006-01-02T15:04:05Z"

    slice_ = {"spec": {"driver": "d", "devices": [
        {"name": "gpu-0", "taints": [{"key": "k", "effect": "NoExecute"}],
         "nodeAllocatableResourceMappings": {"memory": {}, "cpu": {"allocationMultiplier": "2"}}}],
        "taints": [{"device": "gpu-0", "taint": {"key": "s", "effect": "NoSchedule"}}]}}
    workloads.resource_slice(slice_)
    device = slice_["spec"]["devices"][0]
    assert STAMP.match(device["taints"][0]["timeAdded"])
    assert STAMP.match(slice_["spec"]["taints"][0]["taint"]["timeAdded"])
    assert device["nodeAllocatableResourceMappings"] == {"memory": {"allocationMultiplier": "1"},
                                                         "cpu": {"allocationMultiplier": "2"}}


def test_crd_webhook_conversion_defaults():
    crd = {"spec": {"names": {"kind": "Thing", "singular": "thingy"},
                    "conversion": {"strategy": "Webhook",
                                   "webhook": {"clientConfig": {"service": {"name": "s", "namespace": "n"}}}},
                    "versions": [{"name": "v1", "storage": False}, {"name": "v2", "storage": True}]},
           "status": {}}
    workloads.custom_resource_definition(crd)
    conversion = crd["spec"]["conversion"]
    assert conversion["conversionReviewVersions"] == ["v1"]
    assert conversion["webhook"]["clientConfig"]["service"]["port"] == 443
    assert crd["spec"]["names"] == {"kind": "Thing", "singular": "thingy", "listKind": "ThingList"}
    assert crd["status"]["storedVersions"] == ["v2"]


def test_wrong_types_are_left_for_validation():
    for function in (workloads.deployment, workloads.stateful_set, workloads.daemon_set, workloads.job,
                     workloads.cron_job, workloads.resource_claim, workloads.resource_slice,
                     workloads.custom_resource_definition):
        for obj in ({"spec": "nope"}, {"spec": {"template": "x", "strategy": 3, "updateStrategy": [],
                                                "volumeClaimTemplates": "x", "jobTemplate": 1, "names": 2,
                                                "devices": "d"}}):
            function(obj)  # must not raise
