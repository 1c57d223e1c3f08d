# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The template text of ``report.html`` (Jinja2, rendered with autoescape by :mod:`.report_render`).

A Python constant because ``module_utils`` ships only ``.py`` files. The page is self-contained: the
style is inline, the pictures are ``data:image/png;base64`` URIs, there is no script and no address
outside the page, so it opens offline and prints (``@media print``). Every value comes from the view
:func:`.report_render.view` builds from the decision record; the template only lays it out.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

CSS = """
body { font-family: "DejaVu Sans", Arial, sans-serif; margin: 1.5em; color: #111; font-size: 14px; }
h1 { font-size: 1.5em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; border-bottom: 1px solid #888; padding-bottom: 0.1em; margin-top: 1.6em; }
h3 { font-size: 1.05em; }
table { border-collapse: collapse; margin: 0.5em 0; width: 100%; }
table.worksheet { font-size: 0.85em; table-layout: fixed; }
table.worksheet td, table.worksheet th { overflow-wrap: anywhere; }
th, td { border: 1px solid #999; padding: 0.2em 0.4em; text-align: left; vertical-align: top; }
th { background: #eee; }
td.num { text-align: right; font-variant-numeric: tabular-nums; }
code, .mono { font-family: "DejaVu Sans Mono", monospace; font-size: 0.9em; }
.mono { word-break: break-all; }
.outcome { font-weight: bold; text-transform: uppercase; padding: 0 0.3em; }
.status-pass, .outcome-accept, .outcome-promote, .status-present { color: #065f06; }
.status-fail, .outcome-reject, .outcome-do-not-promote, .status-missing, .status-unverified { color: #a00000; }
.status-not_measured, .outcome-incomplete, .status-stale, .status-skipped { color: #8a5a00; }
.status-excepted { color: #1d3f8a; }
.not-measured { font-style: italic; color: #555; border: 1px dashed #999; padding: 1em; }
img.chart { max-width: 100%; height: auto; border: 1px solid #ccc; }
nav ul { list-style: none; padding: 0; }
nav li { display: inline; margin-right: 1em; }
footer { margin-top: 2em; font-size: 0.85em; color: #555; }
@media print {
  body { margin: 0; font-size: 10pt; }
  nav { display: none; }
  section { page-break-inside: avoid; break-inside: avoid; }
  #worksheet, #evidence { page-break-inside: auto; break-inside: auto; }
  tr { page-break-inside: avoid; break-inside: avoid; }
  th { background: #eee !important; -webkit-print-color-adjust: exact; print-color-adjust: exact; }
  img.chart { max-width: 100%; border: none; }
  a { color: inherit; text-decoration: none; }
}
"""

HTML = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>DRA gate decision {{ v.decided_at }}</title>
<style>{{ css }}</style>
</head>
<body>
<header>
<h1>DRA gate decision</h1>
<p>Decided at <code>{{ v.decided_at }}</code>; inputs sha256 <code>{{ v.inputs_sha256 }}</code>.
Every value below comes from the decision record; nothing is recomputed.</p>
<nav><ul>{% for id, title in v.sections %}<li><a href="#{{ id }}">{{ title }}</a></li>{% endfor %}</ul></nav>
</header>

<section id="decisions">
<h2>Decisions</h2>
{% for d in v.decisions %}
<div class="decision" data-decision="{{ d.key }}" data-outcome="{{ d.outcome }}">
<h3>{{ d.title }}: <span class="outcome outcome-{{ d.outcome }}">{{ d.outcome }}</span></h3>
{% if d.reasons %}<ul class="reasons">{% for r in d.reasons %}<li>{{ r }}</li>{% endfor %}</ul>
{% else %}<p class="reasons">No reason recorded.</p>{% endif %}
<p>Gates: {% for g in d.gates %}<code>{{ g }}</code>{% if not loop.last %}, {% endif %}{% else %}not recorded{% endfor %}</p>
</div>
{% endfor %}
<table class="approval">
<tr><th>Rollback trigger</th><td>{{ v.approval.rollback_trigger }}</td></tr>
<tr><th>Approver</th><td>{{ v.approval.approver }}</td></tr>
<tr><th>Approval</th><td>{{ v.approval.status }}{% if v.approval.approved_by %} ({{ v.approval.approved_by }}){% endif %}</td></tr>
</table>
{% if v.findings %}
<h3>Findings of the decision</h3>
<table class="findings">
<tr><th>id</th><th>severity</th><th>subject</th><th>observed</th><th>expected</th><th>message</th><th>source</th></tr>
{% for f in v.findings %}<tr data-finding="{{ f.id }}">
<td><code>{{ f.id }}</code></td>
<td class="severity-{{ f.severity }}">{{ f.severity }}</td>
<td>{{ f.subject }}</td>
<td>{{ f.observed }}</td>
<td>{{ f.expected }}</td>
<td>{{ f.message }}</td>
<td>{{ f.source }}</td></tr>
{% endfor %}</table>
{% endif %}
</section>

<section id="worksheet">
<h2>Acceptance worksheet</h2>
<table class="worksheet">
<thead><tr>
<th>Gate</th>
<th>Decision</th>
<th>Test</th>
<th>Criterion</th>
<th>Measured</th>
<th>Numerator</th>
<th>Denominator</th>
<th>Threshold</th>
<th>Status</th>
<th>Owner</th>
<th>Exception</th></tr></thead>
<tbody>
{% for g in v.gates %}<tr data-gate="{{ g.id }}" data-measured="{{ g.measured }}" data-status="{{ g.status }}">
<td><code>{{ g.id }}</code><br>{{ g.title }}</td>
<td>{{ g.decision }}</td>
<td>{{ g.test }}</td>
<td>{{ g.criterion }}</td>
<td class="measured">{{ g.measured }}</td>
<td class="num numerator">{{ g.numerator }}</td>
<td class="num denominator">{{ g.denominator }}</td>
<td class="threshold">{{ g.threshold }}</td>
<td class="status status-{{ g.status }}">{{ g.status }}{% if g.reasons %}
<ul class="reasons">{% for r in g.reasons %}<li>{{ r }}</li>{% endfor %}</ul>{% endif %}</td>
<td class="owner">{{ g.owner }}</td>
<td class="exception">{{ g.exception }}</td>
</tr>
{% else %}<tr><td colspan="11">not recorded</td></tr>
{% endfor %}</tbody>
</table>
{% if v.exceptions %}
<h3>Exceptions</h3>
<table class="exceptions">
<tr><th>Gate</th><th>Reason</th><th>Accepted by</th><th>Expires</th><th>Days left</th><th>Status</th></tr>
{% for e in v.exceptions %}<tr data-exception="{{ e.gate }}">
<td><code>{{ e.gate }}</code></td>
<td>{{ e.reason }}</td>
<td>{{ e.accepted_by }}</td>
<td>{{ e.expires }}</td>
<td class="num">{{ e.days_left }}</td>
<td>{{ e.status }}</td></tr>
{% endfor %}</table>
{% endif %}
</section>

<section id="latency">
<h2>Claim allocation latency</h2>
{% if v.latency.image %}<img class="chart" alt="Empirical CDF of {{ v.latency.count }} allocation latency samples"
 src="data:image/png;base64,{{ v.latency.image }}">
{% else %}<p class="not-measured">not measured</p>{% endif %}
<table class="latency">
<tr><th>samples</th><th>p50 (s)</th><th>p95 (s)</th><th>p99 (s)</th><th>max (s)</th><th>threshold (s)</th></tr>
<tr>
<td class="num">{{ v.latency.count }}</td>
<td class="num">{{ v.latency.p50 }}</td>
<td class="num">{{ v.latency.p95 }}</td>
<td class="num">{{ v.latency.p99 }}</td>
<td class="num">{{ v.latency.max }}</td>
<td class="num">{{ v.latency.threshold }}</td></tr>
</table>
</section>

<section id="drain">
<h2>Drain waves</h2>
{% if v.drain.image %}<img class="chart" alt="Drain timeline of {{ v.drain.rows|length }} nodes" src="data:image/png;base64,{{ v.drain.image }}">
{% else %}<p class="not-measured">not measured</p>{% endif %}
{% if v.drain.rows %}<table class="drain">
<tr><th>Node</th><th>Wave</th><th>Status</th><th>Started</th><th>Finished</th><th>Seconds</th></tr>
{% for n in v.drain.rows %}<tr data-node="{{ n.node }}">
<td>{{ n.node }}</td>
<td class="num">{{ n.wave }}</td>
<td>{{ n.status }}</td>
<td><code>{{ n.started_at }}</code></td>
<td><code>{{ n.finished_at }}</code></td>
<td class="num">{{ n.seconds }}</td></tr>
{% endfor %}</table>{% endif %}
</section>

<section id="rollback">
<h2>Rollback rehearsal</h2>
{% if v.rollback.image %}<img class="chart" alt="Rollback timeline of {{ v.rollback.rows|length }} steps"
 src="data:image/png;base64,{{ v.rollback.image }}">
{% else %}<p class="not-measured">not measured</p>{% endif %}
<table class="rollback-summary">
<tr><th>Decision at</th><td><code>{{ v.rollback.decision_at }}</code></td></tr>
<tr><th>Completed at</th><td><code>{{ v.rollback.completed_at }}</code></td></tr>
<tr><th>Duration (s)</th><td class="num">{{ v.rollback.duration_seconds }}</td></tr>
<tr><th>Objective (s)</th><td class="num">{{ v.rollback.objective_seconds }}</td></tr>
</table>
{% if v.rollback.rows %}<table class="rollback">
<tr><th>Step</th><th>OK</th><th>Start (s from decision)</th><th>End (s from decision)</th><th>Started</th><th>Finished</th></tr>
{% for s in v.rollback.rows %}<tr data-step="{{ s.name }}">
<td>{{ s.name }}</td>
<td>{{ s.ok }}</td>
<td class="num">{{ s.start }}</td>
<td class="num">{{ s.end }}</td>
<td><code>{{ s.started_at }}</code></td>
<td><code>{{ s.finished_at }}</code></td></tr>
{% endfor %}</table>{% endif %}
</section>

<section id="compatibility">
<h2>Compatibility findings</h2>
{% if v.compatibility %}<table class="compatibility">
<tr><th>id</th><th>severity</th><th>subject</th><th>observed</th><th>expected</th><th>message</th><th>source</th></tr>
{% for f in v.compatibility %}<tr data-finding="{{ f.id }}">
<td><code>{{ f.id }}</code></td>
<td class="severity-{{ f.severity }}">{{ f.severity }}</td>
<td>{{ f.subject }}</td>
<td>{{ f.observed }}</td>
<td>{{ f.expected }}</td>
<td>{{ f.message }}</td>
<td>{{ f.source }}</td></tr>
{% endfor %}</table>
{% else %}<p>No compatibility finding recorded.</p>{% endif %}
</section>

<section id="evidence">
<h2>Evidence phases</h2>
<table class="phases">
<tr><th>Key</th><th>Status</th><th>Run</th><th>File</th><th>sha256</th><th>Verdict</th><th>Finished</th><th>Reason</th></tr>
{% for p in v.phases %}<tr data-phase="{{ p.key }}">
<td><code>{{ p.key }}</code></td>
<td class="status-{{ p.status }}">{{ p.status }}</td>
<td>{{ p.run_id }}</td>
<td>{{ p.file }}</td>
<td class="mono">{{ p.sha256 }}</td>
<td>{{ p.verdict }}</td>
<td><code>{{ p.finished_at }}</code></td>
<td>{{ p.reason }}</td></tr>
{% else %}<tr><td colspan="8">not recorded</td></tr>
{% endfor %}</table>
</section>

<section id="inputs">
<h2>Inputs</h2>
<table class="inputs">
<tr><th>Decided at</th><td><code>{{ v.decided_at }}</code></td></tr>
<tr><th>Inputs sha256</th><td class="mono">{{ v.inputs_sha256 }}</td></tr>
<tr><th>Policy</th><td><code>{{ v.policy.path }}</code></td></tr>
<tr><th>Policy sha256</th><td class="mono">{{ v.policy.sha256 }}</td></tr>
<tr><th>Record schema</th><td><code>{{ v.schema }}</code> version {{ v.schema_version }}</td></tr>
</table>
<h3>Runs</h3>
<table class="runs">
<tr><th>Run</th><th>Evidence root</th><th>Index sha256</th><th>Verified</th><th>Records</th><th>Problems</th></tr>
{% for r in v.runs %}<tr data-run="{{ r.run_id }}">
<td>{{ r.run_id }}</td>
<td><code>{{ r.evidence_root }}</code></td>
<td class="mono">{{ r.index_sha256 }}</td>
<td>{{ r.verified }}</td>
<td class="num">{{ r.records }}</td>
<td>{% for p in r.problems %}{{ p }}{% if not loop.last %}<br>{% endif %}{% else %}none{% endfor %}</td></tr>
{% else %}<tr><td colspan="6">not recorded</td></tr>
{% endfor %}</table>
{% if v.versions %}<h3>Versions</h3>
<table class="versions">{% for name, value in v.versions %}<tr><th>{{ name }}</th><td>{{ value }}</td></tr>{% endfor %}</table>{% endif %}
{% if v.topology %}<h3>GPU topology</h3>
<table class="topology">
<tr><th>Node</th><th>Model</th><th>UUID</th><th>PCI bus</th><th>NUMA node</th><th>IOMMU group</th><th>MIG</th></tr>
{% for t in v.topology %}<tr>
<td>{{ t.node }}</td>
<td>{{ t.model }}</td>
<td class="mono">{{ t.uuid }}</td>
<td><code>{{ t.pci_bus_id }}</code></td>
<td class="num">{{ t.numa_node }}</td>
<td class="num">{{ t.iommu_group }}</td>
<td>{{ t.mig }}</td></tr>
{% endfor %}</table>{% endif %}
</section>

<footer>Report of the decision record <code>{{ v.schema }}</code> (gpufleet.dra_gate gate_report).</footer>
</body>
</html>
"""
