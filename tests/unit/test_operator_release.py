# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Unit tests of module_utils/phases/operator_release.py (with a fake HelmBackend) and of the module's input checks."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import tarfile

import pytest

import operator_charts  # tests/ is on pytest's pythonpath (pytest.ini)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import helm_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_release as orl
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmBackend,
    HelmCommandError,
    HelmForbidden,
    RetryingHelm,
    release_summary,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import RetryPolicy
from ansible_collections.gpufleet.dra_gate.plugins.modules import operator_release as module

REL, NS = "gpu-operator", "gpu-operator"
CHART_2662 = {"name": "gpu-operator", "version": "v26.6.2", "app_version": "v26.6.2", "kind": "path",
              "reference": "/charts/gpu-operator-v26.6.2.tgz"}
CHART_2631 = dict(CHART_2662, version="v26.3.1", app_version="v26.3.1", reference="/charts/v26.3.1/gpu-operator")
USER = {"daemonsets": {"labels": {"fleet": "lab"}}, "ngc": {"apiKey": "s3cret"}}
OVERRIDES = {"daemonsets": {"labels": {"hop": "two"}}}
NOT_FOUND = HelmCommandError(["helm", "history", REL], 1, "Error: release: not found\n")


class FakeHelm(HelmBackend):
    """A release in memory: ``revisions`` = [(status, chart version, user values)], revision 1 first."""

    kind = "fake"

    def __init__(self, revisions=(), fail=None, history_error=None):
        self.revisions = [list(r) for r in revisions]
        self.offset = 0  # revisions pruned from the front
        self.fail = fail
        self.history_error = history_error
        self.writes = []

    def _entry(self, number):
        status, version, _values = self.revisions[number - 1]
        return {"revision": number, "status": status, "chart": "gpu-operator-" + version, "chart_name": "gpu-operator",
                "chart_version": version, "app_version": version, "description": None, "updated": None}

    def history(self, release, max_revisions=256):
        if self.history_error is not None:
            raise self.history_error
        if not self.revisions:
            raise NOT_FOUND
        return [self._entry(n) for n in range(self.offset + 1, len(self.revisions) + 1)]

    def get_values(self, release, revision, all_values=False):
        return json.loads(json.dumps(self.revisions[revision - 1][2]))

    def version_text(self):
        return "v4.2.3"

    def _new(self, status, version, values):
        for item in self.revisions:
            if item[0] == "deployed":
                item[0] = "superseded"
        self.revisions.append([status, version, values])
        number = len(self.revisions)
        return release_summary(REL, NS, number, status, "gpu-operator", version, version, None)

    def _write(self, what, **kwargs):
        self.writes.append(dict(kwargs, op=what))
        if self.fail:
            self.revisions.append(["failed", kwargs.get("version") or "v0", kwargs.get("values") or {}])
            raise HelmCommandError(["helm", what], 1, self.fail)

    def upgrade(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=600, dry_run=None, description=None, history_max=10, rollback_on_failure=False,
                server_side="auto", force_conflicts=False):
        version = chart_version or ("v26.6.2" if "26.6.2" in chart else "v26.3.1")
        self._write("upgrade", chart=chart, values=values, wait=wait, timeout=timeout, version=version,
                    chart_version=chart_version)
        return self._new("deployed", version, values)

    def install(self, release, chart, values=None, values_files=(), chart_version=None, repo_url=None, wait="watcher",
                timeout=600, dry_run=None, description=None, create_namespace=False, rollback_on_failure=False,
                server_side="auto", force_conflicts=False):
        self._write("install", chart=chart, values=values, wait=wait, timeout=timeout)
        return self._new("deployed", "v26.3.1", values)

    def rollback(self, release, revision, wait="watcher", timeout=600, dry_run=None, history_max=10, server_side="auto",
                 force_conflicts=False):
        self._write("rollback", revision=revision, wait=wait, timeout=timeout)
        _status, version, values = self.revisions[revision - 1]
        return self._new("deployed", version, values)


def merged(user=None, overrides=None):
    return helm_values.plan(USER if user is None else user, OVERRIDES if overrides is None else overrides,
                            redact=orl.DEFAULT_REDACT)


MERGED = helm_values.merge_values(USER, OVERRIDES)


# -- chart metadata ---------------------------------------------------------------------------------


def test_chart_metadata_from_directory_and_archive(tmp_path):
    directory = operator_charts.write_chart(str(tmp_path), "26.3.1")
    archive = operator_charts.chart_archive(str(tmp_path), "26.6.2")
    meta = orl.chart_metadata(directory)
    assert (meta["name"], meta["version"], meta["app_version"], meta["kind"]) == ("gpu-operator", "v26.3.1", "v26.3.1",
                                                                                  "path")
    assert meta["reference"] == os.path.abspath(directory)
    meta = orl.chart_metadata(archive, chart_version="26.6.2")  # a leading v aside, the same version
    assert (meta["name"], meta["version"]) == ("gpu-operator", "v26.6.2")  # not the NFD subchart's Chart.yaml


def test_chart_metadata_refusals(tmp_path):
    archive = operator_charts.chart_archive(str(tmp_path), "26.6.2")
    with pytest.raises(orl.ChartError, match=r"chart_version: '26.7.0', but .* is version v26.6.2"):
        orl.chart_metadata(archive, chart_version="26.7.0")
    with pytest.raises(orl.ChartError, match="chart_version: required for the remote chart"):
        orl.chart_metadata("oci://nvcr.io/nvidia/gpu-operator")
    with pytest.raises(orl.ChartError, match="is not an existing chart directory"):
        orl.chart_metadata("charts/missing.tgz")
    (tmp_path / "empty").mkdir()
    with pytest.raises(orl.ChartError, match="directory without Chart.yaml"):
        orl.chart_metadata(str(tmp_path / "empty"))
    bad = tmp_path / "bad.tgz"
    bad.write_bytes(b"not a tar")
    with pytest.raises(orl.ChartError, match="not a chart archive"):
        orl.chart_metadata(str(bad))
    nochart = tmp_path / "nochart.tgz"
    with tarfile.open(str(nochart), "w:gz") as tar:
        tar.add(str(tmp_path / "empty"), arcname="gpu-operator")
    with pytest.raises(orl.ChartError, match="no <chart>/Chart.yaml"):
        orl.chart_metadata(str(nochart))


def test_chart_metadata_remote_references():
    oci = orl.chart_metadata("oci://nvcr.io/nvidia/gpu-operator", chart_version="v26.7.0")
    assert (oci["name"], oci["version"], oci["kind"]) == ("gpu-operator", "v26.7.0", "oci")
    url = orl.chart_metadata("https://helm.ngc.nvidia.com/nvidia/charts/gpu-operator-v26.7.0.tgz", chart_version="v26.7.0")
    assert (url["name"], url["version"], url["kind"]) == ("gpu-operator", "v26.7.0", "url")


def test_same_version_and_redaction():
    assert orl.same_version("v26.7.0", "26.7.0") and orl.same_version("26.7.0", "26.7.0")
    assert not orl.same_version("v26.7.0", "26.7.1") and not orl.same_version(None, "26.7.0")
    shown = orl.redacted({"ngc": {"APIKEY": "x", "other": 1}, "list": [{"token": "t"}]}, ["apiKey", "token"])
    assert shown["ngc"]["APIKEY"].startswith(helm_values.REDACTED_PREFIX) and shown["ngc"]["other"] == 1
    assert shown["list"][0]["token"].startswith(helm_values.REDACTED_PREFIX)


def test_load_values_file(tmp_path):
    (tmp_path / "v.json").write_text(json.dumps(USER))
    (tmp_path / "v.yaml").write_text("a:\n  b: 1\n")
    (tmp_path / "list.yaml").write_text("- 1\n")
    assert orl.load_values_file(str(tmp_path / "v.json")) == USER
    assert orl.load_values_file(str(tmp_path / "v.yaml")) == {"a": {"b": 1}}
    with pytest.raises(helm_values.ValuesError, match="must hold a map"):
        orl.load_values_file(str(tmp_path / "list.yaml"))
    with pytest.raises(helm_values.ValuesError, match="cannot read"):
        orl.load_values_file(str(tmp_path / "none.json"))


# -- the upgrade decision ---------------------------------------------------------------------------


def test_upgrade_unchanged_only_when_deployed_with_the_same_chart_and_values():
    same = FakeHelm([("superseded", "v26.3.1", USER), ("deployed", "26.6.2", MERGED)])
    plan = orl.plan_upgrade(same, REL, NS, CHART_2662, merged())
    assert plan["op"] == "unchanged" and plan["revision_before"] == 2
    assert orl.apply_plan(same, plan) == {"revision": 2, "status": "deployed", "summary": None} and not same.writes
    for revisions in ([("deployed", "v26.6.2", USER)],                       # other values
                      [("deployed", "v26.3.1", MERGED)],                     # other chart version
                      [("deployed", "v26.6.2", MERGED), ("failed", "v26.6.2", MERGED)]):  # a failed newest revision
        assert orl.plan_upgrade(FakeHelm(revisions), REL, NS, CHART_2662, merged())["op"] == "upgrade", revisions


def test_upgrade_writes_merged_values_and_reports():
    helm = FakeHelm([("deployed", "v26.3.1", USER)])
    plan = orl.plan_upgrade(helm, REL, NS, CHART_2662, merged())
    assert plan["op"] == "upgrade" and plan["deployed_values"] == USER
    assert orl.apply_plan(helm, plan, check_mode=True)["revision"] == 1 and not helm.writes   # check mode: no write
    applied = orl.apply_plan(helm, plan, wait=False, timeout=900)
    assert helm.writes == [{"op": "upgrade", "chart": CHART_2662["reference"], "values": MERGED, "wait": "hookOnly",
                            "timeout": 900, "version": "v26.6.2", "chart_version": None}]
    result = orl.result_of(plan, applied, False, orl.DEFAULT_REDACT)
    assert (result["changed"], result["action"], result["revision_before"], result["revision"], result["status"]) == (
        True, "upgraded", 1, 2, "deployed")
    assert result["chart_before"]["version"] == "v26.3.1" and result["chart_after"]["version"] == "v26.6.2"
    assert result["values_diff"] == [{"path": "daemonsets.labels.hop", "before": None, "after": "two", "change": "added"}]
    assert result["deployed_values_diff"] == result["values_diff"]
    assert result["values"]["ngc"]["apiKey"].startswith(helm_values.REDACTED_PREFIX)
    assert "s3cret" not in json.dumps(result) and '"hop": "two"' in result["diff_text"]
    files = orl.evidence_files(plan, orl.DEFAULT_REDACT)
    assert json.loads(files["values.merged.json"])["daemonsets"] == MERGED["daemonsets"]
    assert "s3cret" not in files["values.merged.json"] + files["values.diff.txt"]
    assert orl.action_of(plan, True) == "would_upgrade"
    diff = orl.diff_of(plan, orl.DEFAULT_REDACT)
    assert "v26.3.1" in diff["before"] and "v26.6.2" in diff["after"] and "s3cret" not in json.dumps(diff)


def test_an_oci_chart_gets_its_version():
    helm = FakeHelm([("deployed", "v26.3.1", USER)])
    chart = orl.chart_metadata("oci://nvcr.io/nvidia/gpu-operator", chart_version="v26.6.2")
    orl.apply_plan(helm, orl.plan_upgrade(helm, REL, NS, chart, merged()))
    assert helm.writes[0]["chart"] == "oci://nvcr.io/nvidia/gpu-operator" and helm.writes[0]["chart_version"] == "v26.6.2"


def test_missing_release_is_an_error_and_forbidden_is_not_absent():
    with pytest.raises(orl.ReleaseError, match="helm release gpu-operator/gpu-operator not found: this module upgrades"):
        orl.plan_upgrade(FakeHelm([]), REL, NS, CHART_2662, merged())
    denied = HelmCommandError(["helm", "history"], 1, 'Error: secrets is forbidden: User "x" cannot list resource')
    helm = RetryingHelm(FakeHelm([("deployed", "v26.3.1", USER)], history_error=denied), RetryPolicy(deadline=1),
                        (HelmCommandError,), NS, REL)
    with pytest.raises(HelmForbidden):
        orl.plan_upgrade(helm, REL, NS, CHART_2662, merged())
    other = FakeHelm([("deployed", "v26.3.1", USER)], history_error=HelmCommandError(["helm"], 1, "Error: boom"))
    with pytest.raises(HelmCommandError):
        orl.plan_rollback(other, REL, NS, 1)


def test_failed_write_reports_the_state_read_back():
    helm = FakeHelm([("deployed", "v26.3.1", USER)], fail="Error: UPGRADE FAILED: context deadline exceeded")
    plan = orl.plan_upgrade(helm, REL, NS, CHART_2662, merged())
    with pytest.raises(orl.ReleaseError) as error:
        orl.apply_plan(helm, plan, timeout=60)
    extra = error.value.extra
    assert (extra["revision_before"], extra["revision"], extra["status"], extra["failed_revision"]) == (1, 2, "failed", 2)
    assert "context deadline exceeded" in str(error.value) and "now at revision 2 (failed)" in str(error.value)


# -- the rollback decision --------------------------------------------------------------------------


def test_rollback_unchanged_when_it_is_or_equals_the_revision():
    is_it = FakeHelm([("deployed", "v26.3.1", USER)])
    assert orl.plan_rollback(is_it, REL, NS, 1)["op"] == "unchanged"
    rolled = FakeHelm([("superseded", "v26.3.1", USER), ("superseded", "v26.6.2", MERGED), ("deployed", "v26.3.1", USER)])
    plan = orl.plan_rollback(rolled, REL, NS, 1)
    assert plan["op"] == "unchanged" and plan["revision_before"] == 3
    result = orl.result_of(plan, orl.apply_plan(rolled, plan), False, [])
    assert (result["changed"], result["action"], result["revision"]) == (False, "unchanged", 3) and not rolled.writes


def test_rollback_in_history():
    helm = FakeHelm([("superseded", "v26.3.1", USER), ("deployed", "v26.6.2", MERGED)])
    plan = orl.plan_rollback(helm, REL, NS, 1)
    assert plan["op"] == "rollback" and plan["target_values"] == USER
    assert orl.action_of(plan, True) == "would_roll_back"
    applied = orl.apply_plan(helm, plan, timeout=120)
    assert helm.writes == [{"op": "rollback", "revision": 1, "wait": "watcher", "timeout": 120}]
    result = orl.result_of(plan, applied, False, [])
    assert (result["action"], result["revision"], result["chart_after"]["version"]) == ("rolled_back", 3, "v26.3.1")
    assert result["deployed_values_diff"] == [{"path": "daemonsets.labels.hop", "before": "two", "after": None,
                                               "change": "removed"}]
    assert result["values_diff"] == []  # no captured values given


OPERATOR_MANIFEST = """---
# Source: gpu-operator/templates/serviceaccount.yaml
apiVersion: v1
kind: ServiceAccount
metadata: {name: gpu-operator, namespace: gpu-operator}
---
# Source: gpu-operator/templates/operator.yaml
apiVersion: apps/v1
kind: Deployment
metadata: {name: gpu-operator, namespace: gpu-operator}
"""


@pytest.mark.parametrize("manifest, refused", [
    ("", True),  # the prod-26.3 scenario's old release: an empty manifest
    ("---\n# Source: x\n", True),
    (OPERATOR_MANIFEST.replace("name: gpu-operator, namespace: gpu-operator}\n---", "name: gpu-operator, namespace: other}\n---"), False),
    (OPERATOR_MANIFEST.replace("kind: Deployment\nmetadata: {name: gpu-operator, namespace: gpu-operator}",
                               "kind: Deployment\nmetadata: {name: gpu-operator, namespace: elsewhere}"), True),
    (OPERATOR_MANIFEST, False),
], ids=["empty", "no objects", "service account elsewhere", "deployment in another namespace", "the operator"])
def test_a_rollback_to_a_revision_without_the_operator_deployment_is_refused_before_any_write(manifest, refused):
    helm = FakeHelm([("superseded", "v26.3.1", USER), ("deployed", "v26.6.2", MERGED)])
    helm.get_manifest = lambda release, revision: manifest if revision == 1 else OPERATOR_MANIFEST
    if not refused:
        assert orl.plan_rollback(helm, REL, NS, 1, keep_deployment="gpu-operator")["op"] == "rollback"
        return
    with pytest.raises(orl.ReleaseError) as info:
        orl.plan_rollback(helm, REL, NS, 1, keep_deployment="gpu-operator")
    text = str(info.value)
    assert "to revision 1 would remove Deployment %s/gpu-operator" % NS in text and "nothing was changed" in text
    assert info.value.extra["removes"] == "gpu-operator" and not helm.writes
    # without keep_deployment the rollback is planned as before (the caller's choice)
    assert orl.plan_rollback(helm, REL, NS, 1)["op"] == "rollback"


def test_rollback_reinstalls_a_pruned_revision_or_a_gone_release():
    pruned = FakeHelm([("superseded", "v26.3.1", USER), ("deployed", "v26.6.2", MERGED)])
    pruned.offset = 1
    with pytest.raises(orl.ReleaseError, match=r"revision 1 .* not in the history \(revisions 2-2\): reinstalling it "
                                               r"needs chart and user_values or user_values_file"):
        orl.plan_rollback(pruned, REL, NS, 1)
    with pytest.raises(orl.ReleaseError, match="needs user_values or user_values_file"):
        orl.plan_rollback(pruned, REL, NS, 1, chart=CHART_2631)
    plan = orl.plan_rollback(pruned, REL, NS, 1, chart=CHART_2631, merged=merged(USER, {}))
    assert plan["op"] == "reinstall" and orl.action_of(plan, True) == "would_reinstall"
    orl.apply_plan(pruned, plan)
    assert pruned.writes[0]["op"] == "upgrade" and pruned.writes[0]["values"] == USER
    assert pruned.writes[0]["chart"] == CHART_2631["reference"]
    # the rerun: the newest revision already runs the recorded chart and values
    assert orl.plan_rollback(pruned, REL, NS, 1, chart=CHART_2631, merged=merged(USER, {}))["op"] == "unchanged"

    gone = FakeHelm([])
    plan = orl.plan_rollback(gone, REL, NS, 4, chart=CHART_2631, merged=merged(USER, {}))
    assert plan["op"] == "install" and plan["revision_before"] is None
    result = orl.result_of(plan, orl.apply_plan(gone, plan), False, [])
    assert gone.writes[0]["op"] == "install" and (result["action"], result["revision"]) == ("reinstalled", 1)
    assert result["chart_before"] == {"name": None, "version": None, "app_version": None}
    with pytest.raises(orl.ReleaseError, match="the release is gone"):
        orl.plan_rollback(FakeHelm([]), REL, NS, 4)
    with pytest.raises(orl.ReleaseError, match="revision: .* integer >= 1"):
        orl.plan_rollback(gone, REL, NS, 0)


# -- the module's input checks (they fail before any Helm call) --------------------------------------


@pytest.mark.parametrize("args, message", [
    ({}, "chart: required for state=upgraded"),
    ({"chart": "oci://nvcr.io/nvidia/gpu-operator", "user_values": {}}, "chart_version: required for the remote chart"),
    ({"chart": "./missing-chart.tgz", "user_values": {}}, "is neither a chart directory nor a chart archive"),
    ({"chart": "oci://x/gpu-operator", "chart_version": "v26.7.0"}, "user_values or user_values_file: one is required"),
    ({"state": "rolled_back"}, "revision: required for state=rolled_back"),
    ({"state": "rolled_back", "revision": 0}, "revision: must be a recorded revision"),
    ({"state": "rolled_back", "revision": 1, "overrides": {"a": 1}}, "overrides: need user_values"),
    ({"chart": "oci://x/gpu-operator", "chart_version": "1", "user_values": {}, "timeout": 0}, "timeout: must be a positive"),
    ({"chart": "oci://x/gpu-operator", "chart_version": "1", "user_values": {}, "revision": 2}, "revision: only for"),
    ({"chart": "oci://x/gpu-operator", "chart_version": "1", "user_values": {}, "user_values_file": "/x"},
     "mutually exclusive"),
])
def test_module_bad_input(run_module, args, message):
    result = run_module(module, args)
    assert result["failed"] and message in result["msg"], result["msg"]
    assert not result.get("changed")
    if "mutually exclusive" not in message:  # AnsibleModule's own check, before main() runs
        assert result["started_at"].endswith("Z") and "duration_seconds" in result


class FailingRun:
    def fail(self, msg, **extra):
        raise AssertionError(msg)


def test_evidence_files_are_private_and_never_replaced(tmp_path):
    directory = str(tmp_path / "evidence" / "hop-1")
    files = {"values.merged.json": "{}\n", "values.diff.txt": "# diff\n"}
    paths = module.write_evidence(FailingRun(), directory, files)
    assert sorted(os.path.basename(p) for p in paths) == ["values.diff.txt", "values.merged.json"]
    assert all(os.stat(p).st_mode & 0o777 == 0o600 for p in paths) and os.stat(directory).st_mode & 0o777 == 0o700
    assert module.write_evidence(FailingRun(), directory, files) == paths   # the same content: kept
    with pytest.raises(AssertionError, match="values.merged.json exists with other content"):
        module.write_evidence(FailingRun(), directory, dict(files, **{"values.merged.json": "{\"a\": 1}\n"}))
    assert open(paths[1]).read() == "{}\n"


# -- state=installed: a first install, unchanged on the rerun -----------------------------------------


def test_install_plans_a_first_install_then_nothing():
    gone = FakeHelm([])
    plan = orl.plan_install(gone, REL, NS, CHART_2631, merged(USER, OVERRIDES))
    assert (plan["op"], plan["state"], plan["revision_before"]) == ("install", "installed", None)
    assert orl.action_of(plan, True) == "would_install"
    # check mode: nothing written, the plan reported
    dry = orl.result_of(plan, orl.apply_plan(gone, plan, check_mode=True), True, orl.DEFAULT_REDACT)
    assert (dry["action"], dry["changed"], dry["revision"]) == ("would_install", True, None) and not gone.writes
    diff = orl.diff_of(plan, orl.DEFAULT_REDACT)
    assert diff["before"] == "" and "v26.3.1" in diff["after"] and "s3cret" not in diff["after"]
    result = orl.result_of(plan, orl.apply_plan(gone, plan), False, orl.DEFAULT_REDACT)
    assert [w["op"] for w in gone.writes] == ["install"] and gone.writes[0]["values"] == MERGED
    assert gone.writes[0]["chart"] == CHART_2631["reference"]
    assert (result["action"], result["revision"], result["chart_after"]["version"]) == ("installed", 1, "v26.3.1")
    assert result["chart_before"] == {"name": None, "version": None, "app_version": None}
    # the rerun: the release runs that chart and those values
    again = orl.plan_install(gone, REL, NS, CHART_2631, merged(USER, OVERRIDES))
    assert (again["op"], orl.action_of(again, False)) == ("unchanged", "unchanged")
    assert len(gone.writes) == 1


def test_install_over_an_existing_release_decides_as_an_upgrade():
    helm = FakeHelm([("deployed", "v26.3.1", USER)])
    plan = orl.plan_install(helm, REL, NS, CHART_2662, merged(USER, OVERRIDES))
    assert (plan["op"], plan["state"], orl.action_of(plan, False)) == ("upgrade", "installed", "upgraded")
    orl.apply_plan(helm, plan)
    assert helm.writes[0]["op"] == "upgrade"
    # a failed newest revision is never "already there"
    failed = FakeHelm([("failed", "v26.3.1", MERGED)])
    assert orl.plan_install(failed, REL, NS, CHART_2631, merged(USER, OVERRIDES))["op"] == "upgrade"
    # forbidden is not absent
    forbidden = FakeHelm([], history_error=HelmForbidden(["helm", "history", REL], 1, "Error: forbidden"))
    with pytest.raises(HelmForbidden):
        orl.plan_install(forbidden, REL, NS, CHART_2631, merged(USER, OVERRIDES))


def test_install_failure_reports_the_state_read_back():
    helm = FakeHelm([], fail="Error: INSTALLATION FAILED: timed out waiting for the condition")
    plan = orl.plan_install(helm, REL, NS, CHART_2631, merged(USER, {}))
    with pytest.raises(orl.ReleaseError, match=r"helm install of release gpu-operator/gpu-operator failed: .*INSTALLATION "
                                               r"FAILED.*the release was at revision None") as info:
        orl.apply_plan(helm, plan)
    assert info.value.extra["revision_before"] is None
    assert (info.value.extra["revision"], info.value.extra["status"]) == (1, "failed")


@pytest.mark.parametrize("args, message", [
    ({"state": "installed"}, "chart: required for state=installed"),
    ({"state": "installed", "chart": "oci://x/gpu-operator", "chart_version": "1"},
     "user_values or user_values_file: one is required for state=installed"),
    ({"state": "installed", "chart": "oci://x/gpu-operator", "chart_version": "1", "user_values": {}, "revision": 1},
     "revision: only for"),
])
def test_module_bad_input_installed(run_module, args, message):
    result = run_module(module, args)
    assert result["failed"] and message in result["msg"], result["msg"]
    assert not result.get("changed")
