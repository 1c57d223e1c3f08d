# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The reports of a gate decision, from the decision record only (docs/decision.md "Reports").

Pure functions, record in, text or bytes out, no I/O: :func:`render_html` (``report.html``, one
self-contained page: Jinja2 with autoescape, the pictures drawn by matplotlib's Agg renderer and
embedded as ``data:image/png;base64``), :func:`render_markdown` (``summary.md``), :func:`render_junit`
(``junit.xml``, through ``xml.etree``), :func:`stats` (for ``set_stats``) and :func:`worksheet_lines`.

Nothing here judges or recomputes: every outcome, status, quantile and threshold is the record's.
A partial record never raises: a missing value reads ``not recorded``, a picture without its data
reads ``not measured`` (never an empty or made-up chart). The same record gives the same bytes
(the PNGs carry no software or date metadata, the figures use matplotlib's default style, not the
user's ``matplotlibrc``).

jinja2 and matplotlib are controller requirements (requirements/runtime.txt); without them
:data:`HAS_JINJA2` / :data:`HAS_MATPLOTLIB` are false and the module says what to install.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import io
import json
import traceback
import xml.etree.ElementTree as ET

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import report_templates

try:
    import jinja2
    HAS_JINJA2 = True
    JINJA2_IMPORT_ERROR = None
except ImportError:
    jinja2 = None
    HAS_JINJA2 = False
    JINJA2_IMPORT_ERROR = traceback.format_exc()

try:
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.style
    from matplotlib.figure import Figure
    from matplotlib.patches import Patch
    HAS_MATPLOTLIB = True
    MATPLOTLIB_IMPORT_ERROR = None
except ImportError:
    matplotlib = None
    Figure = Patch = None
    HAS_MATPLOTLIB = False
    MATPLOTLIB_IMPORT_ERROR = traceback.format_exc()

SCHEMA = "gpufleet.dra_gate/decision-record"
NOT_RECORDED = "not recorded"
NOT_MEASURED = "not measured"

#: The decisions in the order they are taken, with their titles.
DECISIONS = (("operator_upgrade", "Decision 1: operator upgrade"), ("dra_promotion", "Decision 2: DRA promotion"))

SECTIONS = (
    ("decisions", "Decisions"), ("worksheet", "Acceptance worksheet"), ("latency", "Claim allocation latency"),
    ("drain", "Drain waves"), ("rollback", "Rollback rehearsal"), ("compatibility", "Compatibility findings"),
    ("evidence", "Evidence phases"), ("inputs", "Inputs"),
)

#: Bar colours of the drain waves (one per wave, cycling) and of the rollback steps.
WAVE_COLOURS = ("#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#17becf", "#7f7f7f", "#bcbd22")
STEP_COLOURS = {True: "#2ca02c", False: "#d62728", None: "#7f7f7f"}
#: Drain statuses that are a node done as planned (anything else is drawn hatched, outlined red).
DRAIN_DONE = ("done", "ok", "pass", "completed", "drained", "uncordoned")


class ReportError(Exception):
    """The decision record cannot be reported (the message names the field)."""


# --- values -----------------------------------------------------------------------------------------


def _dict(value):
    return value if isinstance(value, dict) else {}


def _list(value):
    return value if isinstance(value, list) else []


def _is_number(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def text(value, none=NOT_RECORDED):
    """``value`` as one line of text: ``none`` for None or an empty string; numbers exact (``str``:
    the shortest text that reads back as the same float); a list joined by ``, ``; a dict as sorted
    JSON."""
    if value is None or value == "" or value == [] or value == {}:
        return none
    if isinstance(value, bool):
        return "yes" if value else "no"
    if _is_number(value):
        return str(value)
    if isinstance(value, list):
        return ", ".join(text(item) for item in value)
    if isinstance(value, dict):
        return json.dumps(value, sort_keys=True, separators=(",", ": "), default=str)
    return str(value)


def check_record(record):
    """Raise :class:`ReportError` unless ``record`` is a decision record (``schema``), naming the field."""
    if not isinstance(record, dict):
        raise ReportError("the decision record must be a JSON object, got %s" % type(record).__name__)
    if record.get("schema") != SCHEMA:
        raise ReportError("schema: found %r, expected %r (not a decision record of gate_decision)"
                          % (record.get("schema"), SCHEMA))


def _threshold_text(gate):
    threshold = gate.get("threshold")
    if isinstance(threshold, dict) and threshold.get("value") is not None:
        return "%s %s (%s)" % (text(threshold.get("comparison"), "?"), text(threshold.get("value")),
                               text(threshold.get("name")))
    if gate.get("kind") == "universal":
        return "none (universal criterion)"
    return NOT_RECORDED


def _exception_text(exception):
    exception = _dict(exception)
    if not exception:
        return "none"
    return "%s (accepted by %s, expires %s, %s)" % (
        text(exception.get("reason")), text(exception.get("accepted_by")), text(exception.get("expires")),
        text(exception.get("status")))


def _gate_view(gate):
    gate = _dict(gate)
    measured = _dict(gate.get("measured"))
    return {
        "id": text(gate.get("id")), "title": text(gate.get("title"), ""), "decision": text(gate.get("decision")),
        "kind": text(gate.get("kind")), "test": text(gate.get("test")), "criterion": text(gate.get("criterion")),
        "measured": text(measured.get("text")), "value": text(measured.get("value")),
        "unit": text(measured.get("unit"), ""), "numerator": text(measured.get("numerator")),
        "denominator": text(measured.get("denominator")), "percent": text(measured.get("percent")),
        "threshold": _threshold_text(gate), "status": text(gate.get("status")),
        "reasons": [text(reason) for reason in _list(gate.get("reasons"))],
        "owner": text(gate.get("owner")), "exception": _exception_text(gate.get("exception")),
    }


def _finding_view(finding):
    finding = _dict(finding)
    return dict((key, text(finding.get(key))) for key in
                ("id", "severity", "subject", "observed", "expected", "message", "source"))


def _decision_views(record):
    decisions = _dict(record.get("decisions"))
    keys = [key for key, _title in DECISIONS] + sorted(key for key in decisions if key not in dict(DECISIONS))
    views = []
    for key in keys:
        decision = _dict(decisions.get(key))
        views.append({"key": key, "title": dict(DECISIONS).get(key, key),
                      "outcome": text(decision.get("outcome")),
                      "reasons": [text(reason) for reason in _list(decision.get("reasons"))],
                      "gates": [text(gate) for gate in _list(decision.get("gates"))]})
    return views


def _phase_views(record):
    phases = _dict(record.get("phases"))
    views = []
    for key in sorted(phases):
        phase = _dict(phases[key])
        view = dict((name, text(phase.get(name))) for name in
                    ("status", "run_id", "file", "sha256", "verdict", "finished_at", "attempt"))
        view["reason"] = text(phase.get("reason"), "")
        view["key"] = key
        views.append(view)
    return views


def _run_views(record):
    views = []
    for run in _list(_dict(record.get("inputs")).get("runs")):
        run = _dict(run)
        views.append({"run_id": text(run.get("run_id")), "evidence_root": text(run.get("evidence_root")),
                      "index_sha256": text(run.get("index_sha256")), "verified": text(run.get("verified")),
                      "records": len(_list(run.get("records"))),
                      "problems": [text(problem) for problem in _list(run.get("problems"))]})
    return views


# --- pictures ---------------------------------------------------------------------------------------


def _png(figure):
    """The figure as PNG bytes, without metadata (the same figure, the same bytes)."""
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", dpi=100, metadata={"Software": None})
    return buffer.getvalue()


def _figure(width, height):
    figure = Figure(figsize=(width, height), dpi=100)
    figure.set_layout_engine("constrained")
    return figure


def _default_style():
    """matplotlib's default style (not the user's matplotlibrc), so the pictures do not depend on it."""
    return matplotlib.style.context("default")


def latency_samples(record):
    """The record's allocation latency samples (seconds; numbers only, sorted), or []."""
    samples = _list(_dict(record.get("outcomes")).get("allocation_latency_samples"))
    return sorted(float(sample) for sample in samples if _is_number(sample))


def latency_threshold(record):
    """The p95 threshold (seconds) of the allocation_latency_p95 gate, or None."""
    for gate in _list(record.get("gates")):
        gate = _dict(gate)
        if gate.get("id") == "allocation_latency_p95":
            value = _dict(gate.get("threshold")).get("value")
            return value if _is_number(value) else None
    return None


def latency_png(record):
    """PNG of the samples' empirical CDF with p50/p95/p99 (the record's) and the threshold, or None
    without samples."""
    samples = latency_samples(record)
    if not samples:
        return None
    summary = _dict(_dict(record.get("outcomes")).get("allocation_latency_seconds"))
    threshold = latency_threshold(record)
    count = len(samples)
    with _default_style():
        figure = _figure(8, 4)
        axes = figure.add_subplot()
        xs = [samples[0]] + samples
        ys = [0.0] + [(index + 1) / count for index in range(count)]
        axes.step(xs, ys, where="post", color="#1f77b4", linewidth=1.5, label="empirical CDF (n=%d)" % count)
        styles = (("p50", ":", "#2ca02c"), ("p95", "--", "#ff7f0e"), ("p99", "-.", "#9467bd"))
        for name, style, colour in styles:
            value = summary.get(name)
            if _is_number(value):
                axes.axvline(value, linestyle=style, color=colour, linewidth=1.2, label="%s %s s" % (name, value))
        if threshold is not None:
            axes.axvline(threshold, linestyle="-", color="#d62728", linewidth=2,
                         label="threshold (p95 max) %s s" % threshold)
        axes.set_xlabel("allocation latency (seconds)")
        axes.set_ylabel("fraction of claims")
        axes.set_ylim(0, 1.05)
        axes.set_title("Claim allocation latency: empirical CDF")
        axes.grid(True, alpha=0.3)
        axes.legend(loc="lower right", fontsize=8)
        return _png(figure)


def drain_rows(record):
    """The drain timeline rows (record order), each with ``start``/``end`` seconds from the first start
    (None where a stamp is missing)."""
    nodes = [_dict(node) for node in _list(_dict(record.get("timelines")).get("drain"))]
    starts = [clock.parse_or_none(node.get("started_at")) for node in nodes]
    known = [start for start in starts if start is not None]
    origin = min(known) if known else None
    rows = []
    for node, start in zip(nodes, starts):
        end = clock.parse_or_none(node.get("finished_at"))
        seconds = clock.seconds_between(node.get("started_at"), node.get("finished_at"))
        rows.append({"node": text(node.get("node")), "wave": node.get("wave"), "status": text(node.get("status")),
                     "started_at": text(node.get("started_at")), "finished_at": text(node.get("finished_at")),
                     "seconds": text(seconds),
                     "start": None if start is None or origin is None else round(start - origin, 6),
                     "end": None if end is None or origin is None else round(end - origin, 6)})
    return rows, origin


def drain_png(record):
    """PNG of one horizontal bar per drained node on a time axis, coloured by wave (a node not done
    hatched, outlined red), or None when no node has both stamps."""
    rows, origin = drain_rows(record)
    bars = [row for row in rows if row["start"] is not None and row["end"] is not None]
    if not bars:
        return None
    waves = sorted(set(text(row["wave"]) for row in bars))
    with _default_style():
        figure = _figure(8, 1.2 + 0.45 * len(bars))
        axes = figure.add_subplot()
        for position, row in enumerate(bars):
            colour = WAVE_COLOURS[waves.index(text(row["wave"])) % len(WAVE_COLOURS)]
            done = row["status"] in DRAIN_DONE
            axes.barh(position, max(row["end"] - row["start"], 0.0), left=row["start"], height=0.6, color=colour,
                      edgecolor="#333333" if done else "#d62728", linewidth=0.8 if done else 2,
                      hatch=None if done else "//")
        axes.set_yticks(range(len(bars)))
        axes.set_yticklabels(["%s (wave %s, %s)" % (row["node"], text(row["wave"]), row["status"]) for row in bars],
                             fontsize=8)
        axes.invert_yaxis()
        axes.set_xlabel("seconds from the first drain start (%s)" % clock.rfc3339(origin))
        axes.set_title("Drain waves: one bar per node")
        axes.grid(True, axis="x", alpha=0.3)
        handles = [Patch(facecolor=WAVE_COLOURS[index % len(WAVE_COLOURS)], label="wave %s" % wave)
                   for index, wave in enumerate(waves)]
        if any(row["status"] not in DRAIN_DONE for row in bars):
            handles.append(Patch(facecolor="white", edgecolor="#d62728", hatch="//", label="not done"))
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return _png(figure)


def rollback_rows(record):
    """The rollback steps, each with ``start``/``end`` seconds from ``decision_at`` (None where unknown)."""
    rollback = _dict(_dict(record.get("timelines")).get("rollback"))
    origin = rollback.get("decision_at")
    rows = []
    for step in _list(rollback.get("steps")):
        step = _dict(step)
        ok = step.get("ok") if isinstance(step.get("ok"), bool) else None
        rows.append({"name": text(step.get("name")), "ok": text(ok), "ok_value": ok,
                     "started_at": text(step.get("started_at")), "finished_at": text(step.get("finished_at")),
                     "start": clock.seconds_between(origin, step.get("started_at")),
                     "end": clock.seconds_between(origin, step.get("finished_at"))})
    return rollback, rows


def rollback_png(record):
    """PNG of the rollback steps as bars in seconds from the decision, the objective a vertical line,
    or None when no step has both stamps (or the decision time is missing)."""
    rollback, rows = rollback_rows(record)
    bars = [row for row in rows if row["start"] is not None and row["end"] is not None]
    if not bars:
        return None
    objective = rollback.get("objective_seconds")
    completed = clock.seconds_between(rollback.get("decision_at"), rollback.get("completed_at"))
    with _default_style():
        figure = _figure(8, 1.2 + 0.45 * len(bars))
        axes = figure.add_subplot()
        for position, row in enumerate(bars):
            axes.barh(position, max(row["end"] - row["start"], 0.0), left=row["start"], height=0.6,
                      color=STEP_COLOURS[row["ok_value"]], edgecolor="#333333", linewidth=0.8)
        axes.set_yticks(range(len(bars)))
        axes.set_yticklabels(["%s (%s)" % (row["name"], "ok" if row["ok_value"] else
                                           "failed" if row["ok_value"] is False else "not recorded")
                              for row in bars], fontsize=8)
        axes.invert_yaxis()
        handles = [Patch(facecolor=STEP_COLOURS[True], label="step ok"),
                   Patch(facecolor=STEP_COLOURS[False], label="step failed")]
        if completed is not None:
            handles.append(axes.axvline(completed, color="#333333", linestyle=":", linewidth=1.2,
                                        label="completed %s s" % completed))
        if _is_number(objective):
            handles.append(axes.axvline(objective, color="#d62728", linestyle="--", linewidth=2,
                                        label="objective %s s" % objective))
        axes.set_xlabel("seconds from the rollback decision (%s)" % text(rollback.get("decision_at")))
        axes.set_title("Rollback rehearsal: steps")
        axes.grid(True, axis="x", alpha=0.3)
        axes.legend(handles=handles, loc="upper left", bbox_to_anchor=(1.01, 1.0), fontsize=8)
        return _png(figure)


def _b64(data):
    return base64.b64encode(data).decode("ascii") if data else None


# --- the view ---------------------------------------------------------------------------------------


def view(record, pictures=True):
    """Everything the reports show, as text, from ``record`` (``pictures``: draw the PNGs, base64)."""
    record = _dict(record)
    inputs = _dict(record.get("inputs"))
    policy = _dict(inputs.get("policy"))
    outcomes = _dict(record.get("outcomes"))
    summary = _dict(outcomes.get("allocation_latency_seconds"))
    samples = latency_samples(record)
    decision = _dict(record.get("decision"))
    approval = _dict(decision.get("approval"))
    drain, _origin = drain_rows(record)
    rollback, steps = rollback_rows(record)
    for row in drain:
        row["wave"] = text(row["wave"])
    for row in steps:
        row["start"], row["end"] = text(row["start"]), text(row["end"])
    exceptions = []
    for exception in _list(record.get("exceptions")):
        exception = _dict(exception)
        exceptions.append(dict((key, text(exception.get(key))) for key in
                               ("gate", "reason", "accepted_by", "expires", "status", "days_left")))
    topology = []
    for device in _list(record.get("topology")):
        device = _dict(device)
        topology.append(dict((key, text(device.get(key))) for key in
                             ("node", "numa_node", "pci_bus_id", "iommu_group", "uuid", "mig", "model")))
    versions = [(str(name), text(value)) for name, value in sorted(_dict(record.get("versions")).items())]
    return {
        "schema": text(record.get("schema")), "schema_version": text(record.get("schema_version")),
        "decided_at": text(record.get("decided_at")), "inputs_sha256": text(inputs.get("sha256")),
        "sections": SECTIONS,
        "policy": {"path": text(policy.get("path")), "sha256": text(policy.get("sha256"))},
        "runs": _run_views(record),
        "decisions": _decision_views(record),
        "approval": {"rollback_trigger": text(decision.get("rollback_trigger")),
                     "approver": text(decision.get("approver") or approval.get("approver")),
                     "status": text(approval.get("status")), "approved_by": None},
        "findings": [_finding_view(finding) for finding in _list(record.get("findings"))],
        "gates": [_gate_view(gate) for gate in _list(record.get("gates"))],
        "exceptions": exceptions,
        "latency": {"image": _b64(latency_png(record)) if pictures else None,
                    "count": text(summary.get("count") if summary.get("count") is not None else
                                  (len(samples) if samples else None)),
                    "p50": text(summary.get("p50")), "p95": text(summary.get("p95")),
                    "p99": text(summary.get("p99")), "max": text(summary.get("max")),
                    "threshold": text(latency_threshold(record))},
        "drain": {"image": _b64(drain_png(record)) if pictures else None, "rows": drain},
        "rollback": {"image": _b64(rollback_png(record)) if pictures else None, "rows": steps,
                     "decision_at": text(rollback.get("decision_at")),
                     "completed_at": text(rollback.get("completed_at")),
                     "duration_seconds": text(rollback.get("duration_seconds")),
                     "objective_seconds": text(rollback.get("objective_seconds"))},
        "compatibility": [_finding_view(finding) for finding in _list(record.get("compatibility"))],
        "phases": _phase_views(record),
        "versions": versions, "topology": topology,
    }


# --- the renderers ----------------------------------------------------------------------------------


def render_html(record):
    """``report.html``: the self-contained page (needs jinja2 and matplotlib)."""
    if not HAS_JINJA2:
        raise ReportError("rendering report.html needs the Python library jinja2")
    if not HAS_MATPLOTLIB:
        raise ReportError("rendering report.html needs the Python library matplotlib")
    environment = jinja2.Environment(autoescape=True, undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    template = environment.from_string(report_templates.HTML)
    return template.render(v=view(record), css=report_templates.CSS)


def _md(value):
    """A Markdown table cell: pipes escaped, one line."""
    return str(value).replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def _md_table(header, rows):
    lines = ["| %s |" % " | ".join(header), "|" + "---|" * len(header)]
    lines.extend("| %s |" % " | ".join(_md(cell) for cell in row) for row in rows)
    return lines


def render_markdown(record):
    """``summary.md``: both decisions with every reason, the worksheet, the phases."""
    v = view(record, pictures=False)
    lines = ["# DRA gate decision", "", "Decided at `%s`; inputs sha256 `%s`; policy `%s` (sha256 `%s`)."
             % (v["decided_at"], v["inputs_sha256"], v["policy"]["path"], v["policy"]["sha256"]), ""]
    for decision in v["decisions"]:
        lines.append("## %s: **%s**" % (decision["title"], decision["outcome"]))
        lines.append("")
        lines.extend("- %s" % _md(reason) for reason in decision["reasons"])
        if not decision["reasons"]:
            lines.append("- no reason recorded")
        lines.append("")
    lines.extend(["Rollback trigger: %s; approver: %s; approval: %s." % (
        _md(v["approval"]["rollback_trigger"]), _md(v["approval"]["approver"]), _md(v["approval"]["status"])), ""])
    lines.extend(["## Acceptance worksheet", ""])
    lines.extend(_md_table(
        ("gate", "decision", "status", "measured", "numerator", "denominator", "threshold", "owner", "exception",
         "reasons"),
        [(gate["id"], gate["decision"], gate["status"], gate["measured"], gate["numerator"], gate["denominator"],
          gate["threshold"], gate["owner"], gate["exception"], "; ".join(gate["reasons"]) or "—")
         for gate in v["gates"]]))
    lines.extend(["", "## Evidence phases", ""])
    lines.extend(_md_table(("phase", "status", "run", "file", "sha256", "reason"),
                           [(phase["key"], phase["status"], phase["run_id"], phase["file"], phase["sha256"],
                             phase["reason"] or "—") for phase in v["phases"]]))
    lines.append("")
    return "\n".join(lines)


def _suite_gates(record, key, decision):
    gates = [_dict(gate) for gate in _list(record.get("gates"))]
    ids = [gate_id for gate_id in _list(decision.get("gates")) if isinstance(gate_id, str)]
    if not ids:
        return [gate for gate in gates if gate.get("decision") == key]
    by_id = dict((gate.get("id"), gate) for gate in gates)
    return [by_id.get(gate_id, {"id": gate_id, "status": None}) for gate_id in ids]


def render_junit(record):
    """``junit.xml``: one ``testsuite`` per decision, one ``testcase`` per gate (``fail``: a failure,
    ``not_measured``: skipped, ``excepted``: passes with a ``system-out`` naming the exception; a
    status not recorded is an error)."""
    record = _dict(record)
    decisions = _dict(record.get("decisions"))
    root = ET.Element("testsuites", {"name": "dra_gate"})
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for view_ in _decision_views(record):
        key = view_["key"]
        suite = ET.SubElement(root, "testsuite", {"name": "dra_gate.%s" % key})
        properties = ET.SubElement(suite, "properties")
        ET.SubElement(properties, "property", {"name": "outcome", "value": view_["outcome"]})
        ET.SubElement(properties, "property", {"name": "decided_at", "value": text(record.get("decided_at"))})
        counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
        for gate in _suite_gates(record, key, _dict(decisions.get(key))):
            counts["tests"] += 1
            gate_view = _gate_view(gate)
            case = ET.SubElement(suite, "testcase", {"classname": "dra_gate.%s" % key, "name": gate_view["id"]})
            reasons = "; ".join(gate_view["reasons"])
            status = gate.get("status")
            if status == "fail":
                counts["failures"] += 1
                failure = ET.SubElement(case, "failure", {"message": reasons or "the gate failed", "type": "fail"})
                failure.text = "\n".join(["measured: %s" % gate_view["measured"],
                                          "threshold: %s" % gate_view["threshold"]] + gate_view["reasons"])
            elif status == "not_measured":
                counts["skipped"] += 1
                ET.SubElement(case, "skipped", {"message": "not measured: %s" % (reasons or NOT_RECORDED)})
            elif status == "excepted":
                out = ET.SubElement(case, "system-out")
                out.text = "excepted: %s; measured: %s" % (gate_view["exception"], gate_view["measured"])
            elif status != "pass":
                counts["errors"] += 1
                ET.SubElement(case, "error", {"message": "gate status %s (expected pass, fail, not_measured or "
                                                         "excepted)" % text(status)})
        suite_out = ET.SubElement(suite, "system-out")
        suite_out.text = "\n".join(["outcome: %s" % view_["outcome"]] + view_["reasons"])
        for name in ("tests", "failures", "errors", "skipped"):
            suite.set(name, str(counts[name]))
            totals[name] += counts[name]
    for name in ("tests", "failures", "errors", "skipped"):
        root.set(name, str(totals[name]))
    if hasattr(ET, "indent"):
        ET.indent(root)
    return '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(root, encoding="unicode") + "\n"


def stats(record):
    """The compact data for ``set_stats``: both outcomes and each gate's status by id."""
    record = _dict(record)
    decisions = _dict(record.get("decisions"))
    return {
        "decided_at": record.get("decided_at"),
        "inputs_sha256": _dict(record.get("inputs")).get("sha256"),
        "operator_upgrade": _dict(decisions.get("operator_upgrade")).get("outcome"),
        "dra_promotion": _dict(decisions.get("dra_promotion")).get("outcome"),
        "gates": dict((gate.get("id"), gate.get("status")) for gate in (_dict(g) for g in _list(record.get("gates")))
                      if isinstance(gate.get("id"), str)),
    }


def worksheet_lines(record):
    """One printable line per gate: ``gate  status  measured  threshold  owner`` (aligned columns)."""
    rows = [(gate["id"], gate["status"], gate["measured"], gate["threshold"], gate["owner"])
            for gate in view(record, pictures=False)["gates"]]
    widths = [max([len(row[column]) for row in rows] + [0]) for column in range(4)]
    return ["  ".join([cell.ljust(widths[column]) for column, cell in enumerate(row[:4])] + [row[4]]).rstrip()
            for row in rows]
