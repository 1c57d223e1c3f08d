# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report_render: the reports of a decision record (report.html, summary.md, junit.xml, set_stats).

The record is tests/unit/fixtures/decision/decision-sample.json (a promote case with every section
filled: 40 latency samples, 3 drain nodes in 2 waves, 6 rollback steps, one excepted gate); a
do-not-promote variant is derived from it here. The HTML is read back with the standard library's
HTML parser, the JUnit XML with junitparser (not our code)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import copy
import json
import os
import re
from html.parser import HTMLParser

import junitparser
import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import report_render as rr

FIXTURE = os.path.join(os.path.dirname(__file__), "..", "..", "fixtures", "decision", "decision-sample.json")
SECTIONS = ("decisions", "worksheet", "latency", "drain", "rollback", "compatibility", "evidence", "inputs")
PNG = b"\x89PNG\r\n\x1a\n"


def sample():
    with open(FIXTURE) as handle:
        return json.load(handle)


def gate_of(record, gate_id):
    return next(gate for gate in record["gates"] if gate["id"] == gate_id)


def do_not_promote():
    """The sample with claim_success failing and rollback_time not measured."""
    record = sample()
    claims = gate_of(record, "claim_success")
    claims["status"] = "fail"
    claims["measured"].update(text="380 successful of 400 attempted (95.0 %)", value=95.0, numerator=380,
                              denominator=400, percent=95.0)
    claims["reasons"] = ["claim success 95.0 % below the threshold 99.0 %", "20 claims failed: allocation timeout"]
    rollback = gate_of(record, "rollback_time")
    rollback["status"] = "not_measured"
    rollback["measured"] = {"text": "no rollback record", "value": None, "unit": None, "numerator": None,
                            "denominator": None, "percent": None}
    rollback["reasons"] = ["phase rollback: missing (no run has it)"]
    record["decisions"]["dra_promotion"] = {
        "outcome": "do-not-promote", "gates": record["decisions"]["dra_promotion"]["gates"],
        "reasons": ["claim_success: fail (claim success 95.0 % below the threshold 99.0 %)",
                    "rollback_time: not measured (phase rollback: missing)"]}
    return record


class Page(HTMLParser):
    """What the tests read of report.html: sections (id -> h2 text, text), worksheet rows (gate id ->
    attributes and cell texts by class), images, decisions."""

    def __init__(self, html):
        HTMLParser.__init__(self, convert_charrefs=True)
        self.sections, self.rows, self.images, self.decisions = {}, {}, [], {}
        self._section = self._row = self._cell = None
        self._h2 = False
        self.feed(html)

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "section":
            self._section = attrs["id"]
            self.sections[self._section] = {"h2": "", "text": ""}
        elif tag == "h2":
            self._h2 = True
        elif tag == "tr" and "data-gate" in attrs:
            self._row = attrs["data-gate"]
            self.rows[self._row] = {"attrs": attrs, "cells": {}}
        elif tag == "td" and self._row is not None:
            self._cell = (attrs.get("class") or "").split()
            for name in self._cell:
                self.rows[self._row]["cells"][name] = ""
        elif tag == "img":
            self.images.append((self._section, attrs))
        elif tag == "div" and "data-decision" in attrs:
            self.decisions[attrs["data-decision"]] = attrs["data-outcome"]

    def handle_endtag(self, tag):
        if tag == "section":
            self._section = None
        elif tag == "h2":
            self._h2 = False
        elif tag == "tr":
            self._row = None
        elif tag == "td":
            self._cell = None

    def handle_data(self, data):
        if self._section is not None:
            self.sections[self._section]["text"] += data
            if self._h2:
                self.sections[self._section]["h2"] += data
        if self._row is not None and self._cell:
            for name in self._cell:
                self.rows[self._row]["cells"][name] += data


@pytest.fixture(scope="module")
def promote_html():
    return rr.render_html(sample())


def test_sample_is_the_record_format():
    record = sample()
    assert record["schema"] == rr.SCHEMA and record["schema_version"] == 1
    assert len(record["outcomes"]["allocation_latency_samples"]) >= 30
    assert len(record["timelines"]["drain"]) == 3 and len(set(n["wave"] for n in record["timelines"]["drain"])) == 2
    assert len(record["timelines"]["rollback"]["steps"]) == 6
    assert [gate["id"] for gate in record["gates"]] == [
        "compatibility", "snapshot", "upgrade_canary", "upgrade_production", "ownership", "runtime_cdi",
        "claim_success", "allocation_latency_p95", "cleanup", "cleanup_defect_rate", "numa_placement",
        "taint_behaviour", "restart_recovery", "drain_reschedule", "rollback_time"]


def test_html_has_every_section_with_a_heading(promote_html):
    page = Page(promote_html)
    assert list(page.sections) == list(SECTIONS)
    for section in SECTIONS:
        assert page.sections[section]["h2"].strip(), section


def test_html_decisions_show_outcomes_and_every_reason(promote_html):
    record = sample()
    page = Page(promote_html)
    assert page.decisions == {"operator_upgrade": "accept", "dra_promotion": "promote"}
    text = page.sections["decisions"]["text"]
    for decision in record["decisions"].values():
        for reason in decision["reasons"]:
            assert reason in text


def test_html_worksheet_rows_are_the_records_gates(promote_html):
    record = sample()
    page = Page(promote_html)
    assert list(page.rows) == [gate["id"] for gate in record["gates"]]
    for gate in record["gates"]:
        row = page.rows[gate["id"]]
        measured = gate["measured"]
        assert row["attrs"]["data-measured"] == measured["text"]
        assert row["attrs"]["data-status"] == gate["status"]
        assert row["cells"]["measured"] == measured["text"]
        for field in ("numerator", "denominator"):
            expected = "not recorded" if measured[field] is None else str(measured[field])
            assert row["cells"][field] == expected, (gate["id"], field)
            if measured[field] is not None:
                assert int(row["cells"][field]) == measured[field]
        assert row["cells"]["status"].startswith(gate["status"])
        assert row["cells"]["owner"] == gate["owner"]
        if gate["threshold"]:
            assert float(row["cells"]["threshold"].split()[1]) == gate["threshold"]["value"]
    excepted = page.rows["allocation_latency_p95"]["cells"]["exception"]
    assert "accepted by Head of platform" in excepted and "2027-01-31" in excepted


def test_html_pictures_are_embedded_pngs_and_nothing_is_external(promote_html):
    page = Page(promote_html)
    assert sorted(section for section, _attrs in page.images) == ["drain", "latency", "rollback"]
    for _section, attrs in page.images:
        prefix = "data:image/png;base64,"
        assert attrs["src"].startswith(prefix)
        assert base64.b64decode(attrs["src"][len(prefix):]).startswith(PNG)
        assert attrs["alt"]
    outside = re.sub(r"data:image/png;base64,[A-Za-z0-9+/=]+", "", promote_html)
    assert not re.search(r"(?i)(https?:|ftp:|//[a-z0-9]|<script|<link|@import|url\()", outside)
    assert "@media print" in promote_html


def test_html_latency_drain_rollback_numbers_are_the_records(promote_html):
    record = sample()
    page = Page(promote_html)
    latency = page.sections["latency"]["text"]
    for name in ("p50", "p95", "p99", "max"):
        assert str(record["outcomes"]["allocation_latency_seconds"][name]) in latency
    assert "not measured" not in latency
    drain = page.sections["drain"]["text"]
    for node in record["timelines"]["drain"]:
        assert node["node"] in drain and node["started_at"] in drain and node["finished_at"] in drain
    assert "200.25" in drain  # gpu-node-a: 12:10:00 to 12:13:20.25
    rollback = page.sections["rollback"]["text"]
    assert "612.5" in rollback and "900" in rollback
    for step in record["timelines"]["rollback"]["steps"]:
        assert step["name"] in rollback


def test_html_evidence_and_inputs_tables(promote_html):
    record = sample()
    page = Page(promote_html)
    evidence = page.sections["evidence"]["text"]
    for key, phase in record["phases"].items():
        assert key in evidence and phase["sha256"] in evidence and phase["file"] in evidence
    inputs = page.sections["inputs"]["text"]
    assert record["inputs"]["sha256"] in inputs and record["inputs"]["policy"]["sha256"] in inputs
    assert record["inputs"]["policy"]["path"] in inputs and record["decided_at"] in inputs
    for run in record["inputs"]["runs"]:
        assert run["run_id"] in inputs
    compatibility = page.sections["compatibility"]["text"]
    for finding in record["compatibility"]:
        assert finding["message"] in compatibility


def test_rendering_is_deterministic():
    record = sample()
    assert rr.render_html(record).encode("utf-8") == rr.render_html(copy.deepcopy(record)).encode("utf-8")
    assert rr.latency_png(record) == rr.latency_png(record)
    assert rr.drain_png(record) == rr.drain_png(record)
    assert rr.rollback_png(record) == rr.rollback_png(record)
    assert rr.render_markdown(record) == rr.render_markdown(record)
    assert rr.render_junit(record) == rr.render_junit(record)


def test_pictures_absent_read_not_measured():
    record = sample()
    record["outcomes"]["allocation_latency_samples"] = []
    record["timelines"] = {"drain": [], "rollback": None}
    page = Page(rr.render_html(record))
    assert page.images == []
    for section in ("latency", "drain", "rollback"):
        assert "not measured" in page.sections[section]["text"], section
    assert rr.latency_png(record) is None and rr.drain_png(record) is None and rr.rollback_png(record) is None


def test_steps_without_stamps_are_not_drawn():
    record = sample()
    for node in record["timelines"]["drain"]:
        node["finished_at"] = None
    record["timelines"]["rollback"]["decision_at"] = None
    assert rr.drain_png(record) is None and rr.rollback_png(record) is None
    html = rr.render_html(record)
    assert "gpu-node-a" in Page(html).sections["drain"]["text"]


@pytest.mark.parametrize("record", [
    {"schema": rr.SCHEMA},
    {"schema": rr.SCHEMA, "gates": [None, {"id": "claim_success", "measured": None, "threshold": None}],
     "decisions": {"dra_promotion": None}, "phases": {"drain": None}, "inputs": {"runs": [None]},
     "outcomes": {"allocation_latency_samples": [1.0, "x", None, True]}, "timelines": {"drain": [{}], "rollback": {}},
     "exceptions": [None], "findings": "bad", "compatibility": [{}], "topology": [None], "versions": None},
], ids=["schema-only", "broken-fields"])
def test_partial_records_never_crash(record):
    html = rr.render_html(record)
    page = Page(html)
    assert list(page.sections) == list(SECTIONS)
    assert "not recorded" in page.sections["decisions"]["text"]
    assert rr.render_markdown(record)
    junit = junitparser.JUnitXml.fromstring(rr.render_junit(record).encode("utf-8"))
    assert [suite.name for suite in junit] == ["dra_gate.operator_upgrade", "dra_gate.dra_promotion"]
    assert isinstance(rr.stats(record), dict)
    assert isinstance(rr.worksheet_lines(record), list)


def test_one_sample_latency_picture():
    record = {"schema": rr.SCHEMA, "outcomes": {"allocation_latency_samples": [2.5], "allocation_latency_seconds": None}}
    assert rr.latency_png(record).startswith(PNG)


def test_values_are_escaped():
    record = sample()
    record["decisions"]["dra_promotion"]["reasons"] = ["<script>alert(1)</script> & \"quoted\""]
    gate_of(record, "claim_success")["measured"]["text"] = "a \"quoted\" <b>text</b>"
    html = rr.render_html(record)
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt; &amp;" in html
    assert Page(html).rows["claim_success"]["attrs"]["data-measured"] == "a \"quoted\" <b>text</b>"


def test_check_record_names_the_field():
    with pytest.raises(rr.ReportError, match=r"^schema: found 'gpufleet.dra_gate/evidence-record', expected"):
        rr.check_record({"schema": "gpufleet.dra_gate/evidence-record"})
    with pytest.raises(rr.ReportError, match="JSON object"):
        rr.check_record([])
    rr.check_record(sample())


def test_markdown_summary():
    record = do_not_promote()
    text = rr.render_markdown(record)
    assert "## Decision 1: operator upgrade: **accept**" in text
    assert "## Decision 2: DRA promotion: **do-not-promote**" in text
    for decision in record["decisions"].values():
        for reason in decision["reasons"]:
            assert "- %s" % reason in text
    lines = text.splitlines()
    for gate in record["gates"]:
        row = next(line for line in lines if line.startswith("| %s | " % gate["id"]))
        cells = [cell.strip() for cell in row.strip("|").split(" | ")]
        assert cells[2] == gate["status"] and cells[3] == gate["measured"]["text"]
    for key, phase in record["phases"].items():
        assert any(line.startswith("| %s | %s |" % (key, phase["status"])) for line in lines)
    separator = next(line for line in lines if line.startswith("|---"))
    assert separator == "|" + "---|" * 10


def test_junit_promote_read_back_with_junitparser():
    record = sample()
    junit = junitparser.JUnitXml.fromstring(rr.render_junit(record).encode("utf-8"))
    suites = list(junit)
    assert [suite.name for suite in suites] == ["dra_gate.operator_upgrade", "dra_gate.dra_promotion"]
    for suite in suites:
        key = suite.name.split(".", 1)[1]
        cases = list(suite)
        assert [case.name for case in cases] == record["decisions"][key]["gates"]
        assert all(case.classname == "dra_gate.%s" % key for case in cases)
        assert all(case.is_passed for case in cases)
        outcome = [prop.value for prop in suite.properties() if prop.name == "outcome"]
        assert outcome == [record["decisions"][key]["outcome"]]
    excepted = next(case for case in suites[1] if case.name == "allocation_latency_p95")
    assert "excepted" in excepted.system_out and "Head of platform" in excepted.system_out
    assert suites[0].tests == 4 and suites[1].tests == 11 and suites[1].failures == 0


def test_junit_do_not_promote_fails_and_skips():
    record = do_not_promote()
    junit = junitparser.JUnitXml.fromstring(rr.render_junit(record).encode("utf-8"))
    suite = [s for s in junit if s.name == "dra_gate.dra_promotion"][0]
    cases = dict((case.name, case) for case in suite)
    failure = [r for r in cases["claim_success"].result if isinstance(r, junitparser.Failure)]
    assert len(failure) == 1
    assert failure[0].message == "; ".join(gate_of(record, "claim_success")["reasons"])
    assert "380 successful of 400" in failure[0].text
    skipped = [r for r in cases["rollback_time"].result if isinstance(r, junitparser.Skipped)]
    assert len(skipped) == 1 and "phase rollback: missing" in skipped[0].message
    assert suite.failures == 1 and suite.skipped == 1 and suite.tests == 11
    passed = [name for name, case in cases.items() if case.is_passed]
    assert len(passed) == 9


def test_html_do_not_promote():
    page = Page(rr.render_html(do_not_promote()))
    assert page.decisions["dra_promotion"] == "do-not-promote"
    assert page.rows["claim_success"]["attrs"]["data-status"] == "fail"
    assert page.rows["claim_success"]["cells"]["numerator"] == "380"
    assert "claim success 95.0 % below the threshold 99.0 %" in page.rows["claim_success"]["cells"]["status"]
    assert page.rows["rollback_time"]["cells"]["numerator"] == "not recorded"


def test_stats_and_worksheet_lines():
    record = do_not_promote()
    stats = rr.stats(record)
    assert stats["operator_upgrade"] == "accept" and stats["dra_promotion"] == "do-not-promote"
    assert stats["gates"] == dict((gate["id"], gate["status"]) for gate in record["gates"])
    assert stats["decided_at"] == record["decided_at"] and stats["inputs_sha256"] == record["inputs"]["sha256"]
    lines = rr.worksheet_lines(record)
    assert len(lines) == len(record["gates"])
    claims = next(line for line in lines if line.startswith("claim_success "))
    assert re.match(r"^claim_success +fail +380 successful of 400 attempted \(95\.0 %\) +>= 99\.0 "
                    r"\(claim_success_rate_min_percent\) +GPU platform team", claims)
    json.dumps(stats)
