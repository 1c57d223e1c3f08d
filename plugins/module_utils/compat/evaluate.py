# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evaluate node and cluster facts against the compatibility matrix: pure logic, no I/O.

:func:`evaluate` takes the ``gpu_node`` facts of many hosts, optional cluster facts, the target
(operator release, Kubernetes version, allocation mode, passthrough), a matrix set from
:func:`compat_matrix.load_matrix` and optionally the coverage of the play (hosts asked for vs
answered, :func:`gate.coverage_findings`), and returns findings, counts, the not-assessed checks,
a verdict and the operator upgrade path. Missing facts never pass silently: they give a finding
whose id ends in ``.not_assessed``, with the severity the row's ``when_not_assessed`` gives (by
default the row's own severity), so a required check that could not run never yields ``pass``.
Bad options raise :class:`CompatError` naming the option and the expected form.

The verdict and the gate rule are :mod:`gate`'s (:func:`should_fail` calls it). The rule kinds
(validate, compile, check of each ``rule:``) are registered in :mod:`compat_rules`; this file
compiles the selected rows once per call and runs the kinds in the table's order.

Speed: matrix bounds are parsed once per call, version strings are parsed once per distinct
string, and the per-node checks are memoised on the handful of facts they read, so a fleet of
identical nodes costs one evaluation plus one small dict per finding.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import verdict as gate
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.cluster_facts import (
    gpu_node_names,
    link_hosts,
    normalize_cluster,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import (
    MatrixError,
    default_target_operator_version,
    select_release,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.node_kinds import FACTS_MISSING, check_nodes
# Re-exported: the options, the argument spec and CompatError live in compat_options.
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import (  # pylint: disable=unused-import
    ARGUMENT_SPEC,
    CLUSTER,
    FACTS_SOURCE,
    FAIL_ON,
    NOT_ASSESSED,
    OPTIONS_SOURCE,
    UPSTREAM_DISTRIBUTIONS,
    VERDICTS,
    CompatError,
    _fact_version,
    _fmt,
    normalize_coverage,
    normalize_nodes,
    normalize_releases,
    normalize_target,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rules import NODE_KINDS, ORDERED_KINDS, RULE_KINDS
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import parse_version

#: Severity of a not-assessed check whose row the matrix lacks altogether (no row and no ``no_data``
#: row with its id): the matrix is incomplete for this target; a ``no_data`` row says so explicitly.
MISSING_ROW = "warn"
_ORDER = {"info": 0, "warn": 1, "block": 2}
#: How many subjects the summary names per not-assessed check.
_SUBJECTS_SHOWN = 3


#: The compat_check options that form ``evaluate``'s ``coverage``.
COVERAGE_OPTIONS = ("expected_hosts", "answered_hosts", "failed_hosts", "inventory_hosts", "host_node_names")


def coverage_of(params):
    """The ``coverage`` argument of :func:`evaluate` from compat_check's options (None when none is set)."""
    coverage = dict((key, params.get(key)) for key in COVERAGE_OPTIONS if params.get(key) is not None)
    return coverage or None


def should_fail(verdict, fail_on):
    """True when ``verdict`` reaches the ``fail_on`` level (block|warn|never): :func:`gate.decide`'s rule."""
    try:
        return gate.decide(verdict, fail_on)["failed"]
    except gate.GateError as exc:
        raise CompatError(str(exc))


def gate_decision(result, fail_on):
    """:func:`gate.decide` for an :func:`evaluate` result: ``{verdict, fail_on, failed, reason}``."""
    try:
        return gate.decide(result["verdict"], fail_on, result["findings"])
    except gate.GateError as exc:
        raise CompatError(str(exc))


def summarize(result, fail_on=None):
    """A one-line message: verdict and counts, the first blocking findings, every not-assessed check."""
    counts = result["counts"]
    text = "compat_check verdict %s for GPU Operator %s: %d block, %d warn, %d info, %d not assessed" % (
        result["verdict"], result["target"]["operator_version"], counts["block"], counts["warn"], counts["info"],
        counts["not_assessed"])
    if fail_on:
        text += " (fail_on=%s)" % fail_on
    level = "block" if result["verdict"] == "block" else "warn"
    first = []
    seen = set()
    for finding in result["findings"]:
        if finding["severity"] == level and finding["id"] not in seen:
            seen.add(finding["id"])
            first.append("%s [%s]: %s" % (finding["id"], finding["subject"], finding["message"]))
            if len(first) == 3:
                break
    if first and result["verdict"] != "pass":
        text += "; " + "; ".join(first)
    unassessed = _not_assessed_text(result.get("not_assessed") or [])
    if unassessed:
        text += "; not assessed: " + unassessed
    return text


def _not_assessed_text(entries):
    """Every not-assessed check once, with its severity and the first subjects: ``id (block: a, b and 3 more)``."""
    by_id = {}
    order = []
    for entry in entries:
        if entry["id"] not in by_id:
            order.append(entry["id"])
            by_id[entry["id"]] = (entry["severity"], [])
        by_id[entry["id"]][1].append(entry["subject"])
    parts = []
    for fid in order:
        severity, subjects = by_id[fid]
        shown = ", ".join(str(s) for s in subjects[:_SUBJECTS_SHOWN])
        if len(subjects) > _SUBJECTS_SHOWN:
            shown += " and %d more" % (len(subjects) - _SUBJECTS_SHOWN)
        parts.append("%s (%s: %s)" % (fid, severity, shown))
    return ", ".join(parts)


# ---- evaluation ---------------------------------------------------------------------------------

class _Evaluator(object):
    """One evaluation: the selected matrix compiled per kind, the normalised options, the findings.

    The rule kinds read these attributes and report through :meth:`add`, :meth:`add_once`,
    :meth:`missing_row`; :meth:`unassessed` gives the severity of a row's not-assessed finding.
    """

    missing_severity = MISSING_ROW

    def __init__(self, selected, target, cluster, releases):
        self.selected = selected
        self.target = target
        self.cluster = cluster
        self.releases_override = releases
        self.findings = []
        self.memo = {}
        self._once = set()
        self._versions = {}
        # Set by the kinds' prepare/check.
        self.no_data = {}
        self.dra_row = None
        self.dra_active = False
        self.passthrough_row = None
        self.components = None
        self.upgrade_path = None
        self._prepare_cluster()
        by_rule = {}
        for row in selected["rows"]:
            by_rule.setdefault(row["rule"], []).append(RULE_KINDS[row["rule"]].compile(row, self))
        self._rows = by_rule
        for kind in ORDERED_KINDS:
            kind.prepare(self, self.rows(kind.name))

    # -- what the kinds use
    def rows(self, rule):
        """The compiled rows of ``rule`` (a list, maybe empty)."""
        return self._rows.get(rule, [])

    def parse(self, text):
        try:
            return self._versions[text]
        except KeyError:
            parsed = parse_version(text) if isinstance(text, str) else None
            self._versions[text] = parsed
            return parsed
        except TypeError:  # unhashable
            return None

    @staticmethod
    def unassessed(row):
        """The severity of ``row``'s finding when its check cannot be assessed (``when_not_assessed``)."""
        return row.get("when_not_assessed") or row["severity"]

    def strictest(self, rows):
        """The strictest ``when_not_assessed`` of ``rows`` (``info`` for none): a missing fact is as
        severe as the strictest row it leaves unassessed."""
        severity = "info"
        for row in rows:
            candidate = self.unassessed(row)
            if _ORDER[candidate] > _ORDER[severity]:
                severity = candidate
        return severity

    def add(self, fid, severity, subject, observed, expected, message, source):
        self.findings.append({
            "id": fid, "severity": severity, "subject": subject,
            "observed": None if observed is None else str(observed),
            "expected": None if expected is None else str(expected),
            "message": message, "source": source,
        })

    def add_once(self, fid, severity, observed, expected, message, source):
        if fid not in self._once:
            self._once.add(fid)
            self.add(fid, severity, CLUSTER, observed, expected, message, source)

    def missing_row(self, default_id, what, subject=CLUSTER):
        """The matrix has nothing to judge ``what`` by: a no_data row says so, or a generic finding."""
        row = self.no_data.get(default_id)
        if row is not None:
            message = "not assessed: the sources say nothing on %s (matrix %s)" % (row["values"]["about"], self.selected["file"])
            if row.get("note"):
                message += ": " + row["note"]
            self.add_once(default_id + NOT_ASSESSED, self.unassessed(row), None, None, message, _sources(row))
        else:
            self.add_once(default_id + NOT_ASSESSED, MISSING_ROW, None, None,
                          "not assessed: matrix %s has no row for %s" % (self.selected["file"], what),
                          "matrix files: %s" % ", ".join(self.selected["files"]))

    def _prepare_cluster(self):
        cluster = self.cluster
        self.current_k8s = None
        self.current_k8s_problem = "no cluster facts given" if cluster is None else None
        if cluster is not None:
            self.current_k8s, self.current_k8s_problem = _fact_version(cluster["kubernetes_version"], "cluster.kubernetes_version")
        self.api_versions = []
        if self.current_k8s is not None:
            self.api_versions.append(("current", self.current_k8s))
        target_k8s = self.target["kubernetes_version"]
        if target_k8s is not None and (self.current_k8s is None or target_k8s != self.current_k8s):
            self.api_versions.append(("target", target_k8s))
        self.effective_k8s = target_k8s or self.current_k8s
        self.dra = self.target["allocation_mode"] == "dra"

    # -- the run
    def run(self, nodes):
        cluster = self.cluster
        if cluster is not None and self.current_k8s is None and self.current_k8s_problem and \
                "not a version" in self.current_k8s_problem:
            needs = [r for r in self.rows("version_range") if r["constrains"] == "kubernetes_version"]
            self.add(CLUSTER + ".kubernetes_version" + NOT_ASSESSED, self.strictest(needs + self.rows("kubelet_skew")),
                     CLUSTER, cluster["kubernetes_version"], "a Kubernetes version such as 1.37.2",
                     "not assessed: %s; checks that need the API server version are skipped" % self.current_k8s_problem,
                     OPTIONS_SOURCE)
        for kind in ORDERED_KINDS:
            kind.check(self, self.rows(kind.name))
        if not nodes:
            self.add("nodes" + NOT_ASSESSED, FACTS_MISSING, CLUSTER, None, "gpu_node facts of at least one host",
                     "not assessed: no node facts given (driver, containerd, kubelet, IOMMU checks skipped)",
                     OPTIONS_SOURCE)
        check_nodes(self, nodes, NODE_KINDS)


def _sources(row):
    return "; ".join(row["source"])


def evaluate(nodes, cluster=None, target=None, matrix=None, releases=None, coverage=None):
    """Evaluate facts against the matrix.

    :param nodes: dict host -> ``gpu_node`` facts (any key may be missing or None).
    :param cluster: optional dict: ``kubernetes_version`` (API server), ``kubelet_versions``
        (host -> version), ``cluster_policy``/``gpu_cluster`` (bool, object, list or k8s_info result),
        ``operator_version`` (current), ``distribution``; or the facts of ``gpu_cluster_facts``
        (``schema_version``, ``api_server``, ``nodes``, ``operator``, ...), with any of the simple
        keys set next to them winning.
    :param target: dict: ``operator_version`` (default: the matrix's
        ``defaults.target_operator_version``, see :func:`compat_matrix.default_target_operator_version`),
        ``kubernetes_version``, ``allocation_mode``
        (device_plugin|dra), ``passthrough``, ``accept_alpha_passthrough``.
    :param matrix: a matrix set from :func:`compat_matrix.load_matrix` or ``build_matrix_set``.
    :param releases: optional explicit list of operator releases for hop planning.
    :param coverage: optional dict ``expected_hosts``, ``answered_hosts`` (default: the hosts of
        ``nodes``), ``failed_hosts``, ``inventory_hosts``, ``host_node_names``: see
        :func:`gate.coverage_findings`. Without ``expected_hosts`` the play's coverage is reported as
        ``coverage.not_assessed`` (info).
    :returns: dict with ``findings``, ``counts``, ``not_assessed``, ``verdict``, ``upgrade_path``,
        ``target``, ``matrix``.
    :raises CompatError: a bad option. :raises MatrixError: no matrix file covers the target.
    """
    if matrix is None:
        raise CompatError("matrix: required (a matrix set from compat_matrix.load_matrix)")
    norm_target = normalize_target(target, default_target_operator_version(matrix))
    norm_cluster = normalize_cluster(cluster)
    norm_nodes = normalize_nodes(nodes)
    norm_releases = normalize_releases(releases)
    norm_coverage = normalize_coverage(coverage) or {}
    link_hosts(norm_cluster, norm_nodes)
    selected = select_release(matrix, norm_target["operator_version"])
    evaluator = _Evaluator(selected, norm_target, norm_cluster, norm_releases)
    evaluator.findings.extend(_coverage(norm_coverage, norm_nodes, norm_cluster))
    evaluator.run(norm_nodes)
    findings = evaluator.findings
    assessed = gate.assess(findings)
    return {
        "findings": findings,
        "counts": assessed["counts"],
        "not_assessed": assessed["not_assessed"],
        "verdict": assessed["verdict"],
        "upgrade_path": evaluator.upgrade_path,
        "target": {
            "operator_version": norm_target["operator_version"].raw,
            "kubernetes_version": _fmt(norm_target["kubernetes_version"]),
            "allocation_mode": norm_target["allocation_mode"],
            "passthrough": norm_target["passthrough"],
            "accept_alpha_passthrough": norm_target["accept_alpha_passthrough"],
            "components": evaluator.components,
        },
        "matrix": {
            "files": selected["files"],
            "release": selected["release"],
            "release_file": selected["file"],
            "published": selected["published"],
        },
    }


def _coverage(coverage, nodes, cluster):
    """gate.coverage_findings for the play; ``coverage.not_assessed`` (info) without ``expected_hosts``."""
    expected = coverage.get("expected_hosts")
    answered = coverage.get("answered_hosts")
    if answered is None:
        answered = list(nodes)
    inventory = coverage.get("inventory_hosts")
    gpu_nodes = gpu_node_names(cluster) if (expected is not None or inventory is not None) else None
    try:
        findings = gate.coverage_findings(expected, answered, failed_hosts=coverage.get("failed_hosts"),
                                          cluster_gpu_nodes=gpu_nodes, host_node_names=coverage.get("host_node_names"),
                                          inventory_hosts=inventory)
    except gate.GateError as exc:
        raise CompatError(str(exc))
    if expected is None:
        findings.append(gate.finding(
            "coverage" + NOT_ASSESSED, "info", CLUSTER, None, "expected_hosts",
            "not assessed: expected_hosts not given, so hosts that did not answer cannot be told apart from hosts "
            "that were never asked (the phase roles pass ansible_play_hosts_all)", gate.COVERAGE_SOURCE))
    return findings


__all__ = ["ARGUMENT_SPEC", "COVERAGE_OPTIONS", "CompatError", "MatrixError", "coverage_of", "evaluate", "gate_decision",
           "normalize_cluster", "normalize_nodes",
           "normalize_releases", "normalize_target", "should_fail", "summarize"]
