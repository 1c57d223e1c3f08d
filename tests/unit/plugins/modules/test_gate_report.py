# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""gate_report: the reports of a decision record written 0600, only when their bytes differ; check
mode writes nothing; a record of another schema is refused naming the field."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import stat

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import report_render as rr
from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_report

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "decision", "decision-sample.json")
NAMES = {"html": "report.html", "markdown": "summary.md", "junit": "junit.xml"}


def decision_file(tmp_path, record=None):
    run_dir = tmp_path / "run"
    run_dir.mkdir(mode=0o700)
    path = run_dir / "decision.json"
    if record is None:
        shutil.copy(FIXTURE, str(path))
    else:
        path.write_text(json.dumps(record))
    return path


def test_writes_the_three_reports_private_and_idempotent(tmp_path, run_module):
    path = decision_file(tmp_path)
    result = run_module(gate_report, {"decision": str(path)})
    assert result["changed"] is True, result
    for name, filename in NAMES.items():
        written = result["paths"][name]
        assert written == str(path.parent / filename)
        assert stat.S_IMODE(os.stat(written).st_mode) == 0o600
    record = json.loads(path.read_text())
    assert open(result["paths"]["markdown"]).read() == rr.render_markdown(record)
    assert open(result["paths"]["junit"]).read() == rr.render_junit(record)
    assert open(result["paths"]["html"]).read() == rr.render_html(record)
    assert result["stats"]["dra_promotion"] == "promote" and result["stats"]["decision_record"] == str(path)
    assert len(result["worksheet"]) == 15 and result["worksheet"][0].startswith("compatibility ")
    assert result["started_at"] and "duration_seconds" in result
    again = run_module(gate_report, {"decision": str(path)})
    assert again["changed"] is False and again["changed_files"] == []


def test_check_mode_writes_nothing_and_says_so(tmp_path, run_module):
    path = decision_file(tmp_path)
    result = run_module(gate_report, {"decision": str(path), "_ansible_check_mode": True, "_ansible_diff": True})
    assert result["changed"] is True
    assert result["msg"].startswith("check mode: nothing written; would write ")
    assert sorted(os.listdir(str(path.parent))) == ["decision.json"]
    assert result["diff"]["before"] == "" and "**promote**" in result["diff"]["after"]


def test_dest_and_formats(tmp_path, run_module):
    path = decision_file(tmp_path)
    dest = tmp_path / "ci" / "results"
    result = run_module(gate_report, {"decision": str(path), "dest": str(dest), "formats": ["junit"]})
    assert result["paths"] == {"html": None, "markdown": None, "junit": str(dest / "junit.xml")}
    assert os.listdir(str(dest)) == ["junit.xml"]
    assert stat.S_IMODE(os.stat(str(dest)).st_mode) == 0o700


def test_changed_record_rewrites_with_diff(tmp_path, run_module):
    path = decision_file(tmp_path)
    run_module(gate_report, {"decision": str(path)})
    record = json.loads(path.read_text())
    record["decisions"]["dra_promotion"]["outcome"] = "incomplete"
    path.write_text(json.dumps(record))
    result = run_module(gate_report, {"decision": str(path), "_ansible_diff": True})
    assert result["changed"] is True and len(result["changed_files"]) == 3
    assert "**promote**" in result["diff"]["before"] and "**incomplete**" in result["diff"]["after"]


def test_refuses_another_schema(tmp_path, run_module):
    path = decision_file(tmp_path, {"schema": "gpufleet.dra_gate/evidence-record", "schema_version": 1})
    result = run_module(gate_report, {"decision": str(path)})
    assert result["failed"] is True
    assert "schema: found 'gpufleet.dra_gate/evidence-record', expected 'gpufleet.dra_gate/decision-record'" in result["msg"]
    assert sorted(os.listdir(str(path.parent))) == ["decision.json"]


def test_missing_and_bad_files(tmp_path, run_module):
    result = run_module(gate_report, {"decision": str(tmp_path / "nothing.json")})
    assert result["failed"] is True and "cannot be read" in result["msg"]
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = run_module(gate_report, {"decision": str(bad)})
    assert result["failed"] is True and "is not JSON" in result["msg"]


def test_missing_library_fails_naming_it(tmp_path, run_module, monkeypatch):
    path = decision_file(tmp_path)
    monkeypatch.setattr(rr, "HAS_MATPLOTLIB", False)
    result = run_module(gate_report, {"decision": str(path)})
    assert result["failed"] is True and "matplotlib" in result["msg"]
    result = run_module(gate_report, {"decision": str(path), "formats": ["markdown"]})
    assert result["changed"] is True
