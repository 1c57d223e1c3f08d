# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""dra_canary_check reads only; the canary's writes are dra_canary_workloads' (issue 30): the DeviceClass
(created, unchanged, refused when not ours, deleted; dryRun=All in check mode; --diff) and the smoke
workloads (check mode plans the waves and submits nothing), both through main() with an API in memory."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import dra_canary as dc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError
from ansible_collections.gpufleet.dra_gate.plugins.modules import dra_canary_check, dra_canary_workloads

CLASSES = "/apis/resource.k8s.io/v1/deviceclasses"
NAME = "gpu-extended.nvidia.com"


class FakeApi(object):
    """Objects by path; every request recorded as (method, path, query)."""

    def __init__(self, objects=None):
        self.objects = dict(objects or {})
        self.calls = []

    def close(self):
        pass

    def get(self, path, query=None):
        self.calls.append(("GET", path, None))
        if path not in self.objects:
            raise K8sApiError("GET %s" % path, 404, "not found")
        return copy.deepcopy(self.objects[path])

    def list(self, path, label_selector=None, field_selector=None):
        self.calls.append(("LIST", path, None))
        prefix = path.rstrip("/") + "/"
        return [copy.deepcopy(v) for k, v in sorted(self.objects.items()) if k.startswith(prefix) and "/" not in k[len(prefix):]]

    def request(self, method, path, query=None, body=None, content_type=None):
        self.calls.append((method, path, dict(query or [])))
        dry = dict(query or []).get("dryRun") == "All"
        if method == "POST":
            obj = copy.deepcopy(body)
            if not dry:
                self.objects["%s/%s" % (path, obj["metadata"]["name"])] = obj
            return obj
        if method == "PUT":
            if not dry:
                self.objects[path] = copy.deepcopy(body)
            return copy.deepcopy(body)
        if method == "DELETE":
            if path not in self.objects:
                raise K8sApiError("DELETE %s" % path, 404, "not found")
            if not dry:
                del self.objects[path]
            return {}
        raise AssertionError(method)

    def writes(self):
        return [c for c in self.calls if c[0] in ("POST", "PUT", "PATCH", "DELETE")]


@pytest.fixture
def api(monkeypatch):
    fake = FakeApi()
    for module in (dra_canary_check, dra_canary_workloads):
        monkeypatch.setattr(module, "module_api_client", lambda module, **extra: fake)
        monkeypatch.setattr(module, "reader_from_params", lambda client, params: fake)
    return fake


def ours():
    return dc.desired_device_class(NAME, "nvidia.com/gpu")


def test_device_class_created_then_unchanged(run_module, api):
    result = run_module(dra_canary_workloads, {"step": "device_class", "_ansible_diff": True})
    assert (result["changed"], result["ok"], result["device_class"]["action"]) == (True, True, "created")
    assert result["diff"]["before"] == "" and NAME in result["diff"]["after"]
    assert result["started_at"].endswith("Z") and "duration_seconds" in result
    assert "%s/%s" % (CLASSES, NAME) in api.objects
    again = run_module(dra_canary_workloads, {"step": "device_class"})
    assert (again["changed"], again["device_class"]["action"]) == (False, "unchanged")


def test_device_class_check_mode_sends_dry_run_only(run_module, api):
    result = run_module(dra_canary_workloads, {"step": "device_class", "_ansible_check_mode": True})
    assert (result["changed"], result["device_class"]["action"]) == (True, "would_create")
    assert [c[2].get("dryRun") for c in api.writes()] == ["All"]
    assert not api.objects


def test_device_class_not_ours_is_refused_and_absent_deletes_ours(run_module, api):
    foreign = ours()
    foreign["metadata"]["labels"] = {"team": "ml"}
    api.objects["%s/%s" % (CLASSES, NAME)] = foreign
    result = run_module(dra_canary_workloads, {"step": "device_class"})
    assert result["failed"] and "is not managed by gpufleet.dra_gate" in result["msg"]
    assert result["msg"].startswith("device_class: ") and not api.writes()
    api.objects["%s/%s" % (CLASSES, NAME)] = ours()
    gone = run_module(dra_canary_workloads, {"step": "device_class", "device_class_state": "absent"})
    assert (gone["changed"], gone["device_class"]["action"]) == (True, "deleted") and not api.objects
    again = run_module(dra_canary_workloads, {"step": "device_class", "device_class_state": "absent"})
    assert (again["changed"], again["device_class"]["action"]) == (False, "absent")


def test_workloads_check_mode_plans_and_submits_nothing(run_module, api):
    workloads = [{"name": "extended-gpu", "kind": "extended", "node": "canary-1"},
                 {"name": "container-claim", "kind": "container"},
                 {"name": "vfio-canary-2", "kind": "vfio", "node": "canary-2"}]
    result = run_module(dra_canary_workloads, {"step": "workloads", "workloads": workloads,
                                               "_ansible_check_mode": True})
    assert not result["changed"] and result["ok"] and result["workloads"] == []
    assert sorted(n for wave in result["waves"] for n in wave["workloads"]) == sorted(w["name"] for w in workloads)
    assert len(result["waves"]) >= 2  # container and VFIO claims never in the same wave (serialize)
    assert not api.writes()


def test_workloads_bad_input_is_named(run_module, api):
    result = run_module(dra_canary_workloads, {"step": "workloads", "workloads": [{"kind": "container"}]})
    assert result["failed"] and "workloads[0]: expected a dict with name" in result["msg"]
    result = run_module(dra_canary_workloads, {"step": "workloads", "workload_timeout": 0})
    assert result["failed"] and "workload_timeout: must be a positive number" in result["msg"]


def test_check_module_has_only_read_only_checks(run_module, api):
    spec = dra_canary_check.MODULE_ARG_SPEC["check"]["choices"]
    assert sorted(spec) == ["cdi", "chart", "ownership", "passthrough"]
    for gone in ("device_class_name", "device_class_state", "workloads", "guard", "run_id"):
        assert gone not in dra_canary_check.MODULE_ARG_SPEC
    result = run_module(dra_canary_check, {"check": "device_class"})
    assert result["failed"] and "value of check must be one of" in result["msg"]
    result = run_module(dra_canary_check, {"check": "ownership", "nodes": ["canary-1"], "isolation": "cluster"})
    assert not result["changed"] and not api.writes()
