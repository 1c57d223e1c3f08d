# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""report.html of the sample decision record, and of the decision over the recorded rehearsal's evidence, opened in
a real headless browser.

The browser is Debian's ``chromium-headless-shell`` (``APT_PACKAGES`` in tests/tools/devtool/environment.py),
driven by playwright's Python API with ``executable_path`` (playwright's own browser download is never
used). Asserted: every section is there with its heading, every picture decoded (``naturalWidth > 0``),
the worksheet's cells are the record's numbers, the page asked for nothing but itself (it opens
offline), the print stylesheet applies; a full-page screenshot is saved in the test's tmp directory
(its path printed). Without the browser or playwright the test fails under CI (``CI=true``) and is
skipped elsewhere.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files as pf
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import report_render as rr

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURE = os.path.join(REPO, "tests", "unit", "fixtures", "decision", "decision-sample.json")
EVIDENCE = os.path.join(REPO, "tests", "unit", "fixtures", "decision", "evidence")
POLICY = os.path.join(REPO, "inventories", "gate_policy.example.yml")
BROWSER = os.environ.get("DRA_GATE_CHROMIUM", "/usr/lib/chromium/chromium-headless-shell")
SECTIONS = ("decisions", "worksheet", "latency", "drain", "rollback", "compatibility", "evidence", "inputs")


def _unavailable(why):
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("%s: CI must have it (./dra-gate setup installs the Debian package chromium-headless-shell "
                    "and requirements/dev.txt)" % why)
    pytest.skip(why)


@pytest.fixture
def browser():
    if not os.access(BROWSER, os.X_OK):
        _unavailable("no headless browser at %s (Debian package chromium-headless-shell)" % BROWSER)
    try:
        from playwright.sync_api import sync_playwright  # pylint: disable=import-outside-toplevel
    except ImportError:
        _unavailable("the Python package playwright is not installed (requirements/dev.txt)")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=BROWSER, args=["--no-sandbox"])
        try:
            yield launched
        finally:
            launched.close()


def rehearsed_record(tmp_path):
    """The decision over the recorded rehearsal's evidence (tests/unit/fixtures/decision/evidence: three real runs
    of the lab gate), decided now by gate_decision as the rehearsal did."""
    from ansible_collections.gpufleet.dra_gate.plugins.modules import gate_decision  # pylint: disable=import-outside-toplevel
    root = tmp_path / "evidence"
    shutil.copytree(EVIDENCE, str(root))
    for base, _dirs, files in os.walk(str(root)):
        os.chmod(base, 0o700)
        for name in files:
            os.chmod(os.path.join(base, name), 0o600)
    runs = [{"evidence_root": str(root), "run_id": run} for run in sorted(os.listdir(str(root)))]
    with open(os.path.join(str(root), runs[-1]["run_id"], "index.json")) as handle:
        last = json.load(handle)["records"][-1]["written_at"]
    return gate_decision.compute(POLICY, runs, last)


@pytest.mark.parametrize("which", ["sample", "rehearsal"])
def test_report_in_a_real_browser(browser, tmp_path, which):
    if which == "sample":
        with open(FIXTURE) as handle:
            record = json.load(handle)
    else:
        record = rehearsed_record(tmp_path)
    report = str(tmp_path / "report.html")
    pf.write_private(report, rr.render_html(record))
    url = "file://" + report
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    page.set_default_timeout(10000)
    requests = []
    page.on("request", lambda request: requests.append(request.url))
    page.goto(url, wait_until="load")

    for section in SECTIONS:
        heading = page.locator("section#%s > h2" % section)
        assert heading.count() == 1, section
        assert heading.inner_text().strip(), section

    images = page.eval_on_selector_all(
        "img", "els => els.map(e => ({section: e.closest('section').id, complete: e.complete, width: e.naturalWidth,"
               " height: e.naturalHeight, src: e.src.slice(0, 22)}))")
    assert sorted(image["section"] for image in images) == ["drain", "latency", "rollback"]
    for image in images:
        assert image["complete"] and image["width"] > 0 and image["height"] > 0, image
        assert image["src"] == "data:image/png;base64,"

    assert page.locator("section#worksheet tr[data-gate]").count() == len(record["gates"])
    for gate in record["gates"]:
        row = page.locator('section#worksheet tr[data-gate="%s"]' % gate["id"])
        measured = gate["measured"]
        assert row.get_attribute("data-measured") == measured["text"]
        assert row.locator("td.measured").inner_text() == measured["text"]
        for field in ("numerator", "denominator"):
            cell = row.locator("td.%s" % field).inner_text()
            if measured[field] is None:
                assert cell == "not recorded", (gate["id"], field)
            else:
                assert int(cell) == measured[field], (gate["id"], field)
        assert row.locator("td.status").inner_text().split()[0] == gate["status"]
        if gate["threshold"]:
            assert float(row.locator("td.threshold").inner_text().split()[1]) == gate["threshold"]["value"]
    for key, decision in record["decisions"].items():
        assert page.locator('div[data-decision="%s"]' % key).get_attribute("data-outcome") == decision["outcome"]
    latency = page.locator("table.latency tr").nth(1).locator("td").all_inner_texts()
    summary = record["outcomes"]["allocation_latency_seconds"]
    assert [float(cell) for cell in latency[1:5]] == [summary[name] for name in ("p50", "p95", "p99", "max")]

    assert requests == [url], requests  # nothing fetched but the page: it opens offline

    screenshot = str(tmp_path / "report.png")
    page.screenshot(path=screenshot, full_page=True)
    assert os.path.getsize(screenshot) > 0
    print("report screenshot: %s" % screenshot)

    page.emulate_media(media="print")
    assert page.locator("nav").evaluate("e => getComputedStyle(e).display") == "none"
    page.close()
