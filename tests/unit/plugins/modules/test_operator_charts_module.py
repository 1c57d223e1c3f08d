# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""operator_charts through its main(): compat_check's path in, hops out; check mode; every refusal
as a failed result naming the field or the hop (no traceback); the documentation matches the
argument spec."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os

import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts import directory_digest
from ansible_collections.gpufleet.dra_gate.plugins.modules import operator_charts

COMPAT_PATH = [{"from": "26.3.1", "to": "26.6.x", "kind": "next_major"},
               {"from": "26.6.x", "to": "26.7.0", "kind": "next_major"}]
RELEASES = ["26.3.x", "26.6.x", "26.7.0"]
OCI_DIGEST = "sha256:" + "d" * 64


def charts(tmp_path):
    archive = tmp_path / "gpu-operator-v26.6.2.tgz"
    archive.write_bytes(b"\x1f\x8b archive bytes")
    chart = tmp_path / "gpu-operator-26.7.0"
    (chart / "templates").mkdir(parents=True, exist_ok=True)
    (chart / "Chart.yaml").write_text("apiVersion: v2\nname: gpu-operator\nversion: v26.7.0\n")
    (chart / "templates" / "operator.yaml").write_text("kind: Deployment\n")
    return {
        "v26.6.2": {"path": str(archive), "sha256": hashlib.sha256(archive.read_bytes()).hexdigest()},
        "v26.7.0": {"path": str(chart), "sha256": directory_digest(str(chart)),
                    "images": {"devicePlugin": "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "c" * 64}},
    }


def test_compat_path_in_hops_out(run_module, tmp_path):
    result = run_module(operator_charts, {"charts": charts(tmp_path), "upgrade_path": COMPAT_PATH, "target_version": "26.7.0"})
    assert result.get("failed") is not True, result
    assert result["changed"] is False and result["verified"] is True
    assert result["current_version"] == "26.3.1" and result["target_version"] == "26.7.0"
    assert [(h["from"], h["to"], h["planned_to"], h["chart"]["kind"]) for h in result["hops"]] == [
        ("26.3.1", "26.6.2", "26.6.x", "archive"), ("26.6.2", "26.7.0", "26.7.0", "directory")]
    assert result["hops"][1]["chart"]["images"]["devicePlugin"].endswith("c" * 64)
    assert result["msg"] == "2 hop(s) 26.3.1 -> 26.6.2 -> 26.7.0; charts verified"


def test_check_mode_is_the_same(run_module, tmp_path):
    args = {"charts": charts(tmp_path), "upgrade_path": COMPAT_PATH}
    normal = run_module(operator_charts, args)
    checked = run_module(operator_charts, dict(args, _ansible_check_mode=True))
    assert checked["hops"] == normal["hops"] and checked["changed"] is False


def test_current_and_target_with_releases(run_module, tmp_path):
    mapping = charts(tmp_path)
    mapping["v26.6.2"] = {"oci": "oci://registry.example.com/nvidia/gpu-operator", "sha256": OCI_DIGEST}
    result = run_module(operator_charts, {"charts": mapping, "current_version": "v26.3.1", "target_version": "26.7.0",
                                          "releases": RELEASES})
    assert result["verified"] is False
    assert result["hops"][0]["chart"] == {
        "version": "26.6.2", "chart_version": "v26.6.2", "key": "v26.6.2", "kind": "oci", "verified": False,
        "source": "oci://registry.example.com/nvidia/gpu-operator", "sha256": OCI_DIGEST, "images": {}}
    assert "verified except 26.6.2 (remote: the pull step checks the pinned digest)" in result["msg"]


def test_no_hop(run_module):
    result = run_module(operator_charts, {"charts": {}, "upgrade_path": [], "current_version": "26.7.0", "target_version": "26.7.0"})
    assert result["hops"] == [] and result["verified"] is True and result["msg"] == "no hop: 26.7.0 is the target"


def test_mismatch_fails_closed(run_module, tmp_path):
    mapping = charts(tmp_path)
    mapping["v26.6.2"]["sha256"] = "e" * 64
    result = run_module(operator_charts, {"charts": mapping, "upgrade_path": COMPAT_PATH})
    assert result["failed"] is True and "hops" not in result
    actual = hashlib.sha256(b"\x1f\x8b archive bytes").hexdigest()
    assert "hop 26.3.1 -> 26.6.2: chart v26.6.2 (archive %s): sha256 mismatch: expected %s, actual %s" % (
        mapping["v26.6.2"]["path"], "e" * 64, actual) in result["msg"]
    assert "Traceback" not in result["msg"]


def test_missing_hop_and_skipped_major(run_module, tmp_path):
    mapping = charts(tmp_path)
    del mapping["v26.6.2"]
    result = run_module(operator_charts, {"charts": mapping, "upgrade_path": COMPAT_PATH})
    assert result["failed"] is True
    assert "26.3.1 -> 26.6.x (next_major; needs a chart of a 26.6 release)" in result["msg"]
    result = run_module(operator_charts, {"charts": charts(tmp_path), "upgrade_path": COMPAT_PATH, "max_hops": 1})
    assert result["failed"] is True and "needs 2 hops (26.3.1 -> 26.6.x -> 26.7.0), more than max_hops 1" in result["msg"]


def test_bad_mapping_named_with_charts_name(run_module):
    result = run_module(operator_charts, {"charts": {"26.6.2": {"path": "/c.tgz", "sha256": "abc"}}, "upgrade_path": COMPAT_PATH})
    assert result["failed"] is True
    assert result["msg"] == "dra_gate_operator_charts[\"26.6.2\"].sha256: expected 64 hex characters, got 'abc'"
    result = run_module(operator_charts, {"charts": {"26.6.2": {"path": "/c.tgz", "sha256": "abc"}}, "charts_name": "site",
                                          "upgrade_path": COMPAT_PATH})
    assert result["msg"].startswith("site[\"26.6.2\"].sha256")


def test_inputs_refused(run_module):
    result = run_module(operator_charts, {"charts": {}, "current_version": "26.3.1"})
    assert result["failed"] is True
    assert "upgrade_path is missing or null" in result["msg"] and "(missing: target_version, releases)" in result["msg"]
    result = run_module(operator_charts, {"charts": {}, "upgrade_path": COMPAT_PATH, "max_hops": 0})
    assert result["failed"] is True and result["msg"] == "max_hops: expected 1 or more, got 0"
    result = run_module(operator_charts, {"charts": {}, "upgrade_path": ["26.7.0"]})
    assert result["failed"] is True and "upgrade_path" in result["msg"]
    result = run_module(operator_charts, {"charts": {}, "upgrade_path": COMPAT_PATH, "bogus": 1})
    assert result["failed"] is True and "bogus" in result["msg"]


def _docs():
    return (yaml.safe_load(operator_charts.DOCUMENTATION), yaml.safe_load(operator_charts.EXAMPLES),
            yaml.safe_load(operator_charts.RETURN))


def test_documentation_matches_the_argument_spec():
    doc, examples, returned = _docs()
    options = doc["options"]
    assert sorted(options) == sorted(operator_charts.MODULE_ARG_SPEC)
    for name, spec in operator_charts.MODULE_ARG_SPEC.items():
        documented = options[name]
        assert documented["type"] == spec["type"], name
        assert documented.get("elements") == spec.get("elements"), name
        assert bool(documented.get("required", False)) == bool(spec.get("required", False)), name
        assert documented.get("default") == spec.get("default"), name
        assert documented.get("choices") == spec.get("choices"), name
    assert doc["module"] == "operator_charts"
    assert set(returned) == {"hops", "verified", "current_version", "target_version"}
    assert set(returned["hops"]["contains"]["chart"]["contains"]) == {
        "version", "chart_version", "key", "source", "kind", "sha256", "verified", "images"}
    tasks = [task for task in examples if "gpufleet.dra_gate.operator_charts" in task]
    assert tasks and all(set(task["gpufleet.dra_gate.operator_charts"]) <= set(options) for task in tasks)
    assert tasks[0]["gpufleet.dra_gate.operator_charts"]["upgrade_path"] == "{{ compat.upgrade_path }}"


def test_returned_keys_are_documented(run_module, tmp_path):
    returned = _docs()[2]
    result = run_module(operator_charts, {"charts": charts(tmp_path), "upgrade_path": COMPAT_PATH})
    assert set(returned) <= set(result)
    assert set(result["hops"][0]) == set(returned["hops"]["contains"])
    assert set(result["hops"][0]["chart"]) == set(returned["hops"]["contains"]["chart"]["contains"])
    assert os.path.isabs(result["hops"][0]["chart"]["source"])
