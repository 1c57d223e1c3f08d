# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Evaluate node and cluster facts against the compatibility matrix: pure logic, no I/O.

:func:`evaluate` takes the ``gpu_node`` facts of many hosts, optional cluster facts, the target
(operator release, Kubernetes version, allocation mode, passthrough) and a matrix set from
:func:`compat_matrix.load_matrix`, and returns findings, counts, a verdict and the operator
upgrade path. Missing facts never pass silently: they give an ``info`` finding whose id ends in
``.not_assessed``. Bad options raise :class:`CompatError` naming the option and the expected form.

Speed: matrix bounds are parsed once per call, version strings are parsed once per distinct
string, and the per-node checks are memoised on the handful of facts they read, so a fleet of
identical nodes costs one evaluation plus one small dict per finding.

Layout: the options and :class:`CompatError` are in :mod:`compat_options` (re-exported here), the
two forms of ``cluster`` (simple, or gpu_cluster_facts) in :mod:`compat_cluster_facts`, the
cluster and operator rules in :mod:`compat_cluster_rules`, the rules on the observed cluster state
(backends, DRA API, operator CR states, DeviceClasses, ResourceClaims) in :mod:`compat_state_rules`,
the per-node rules in :mod:`compat_node_rules`; this file compiles the matrix and runs them.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_cluster_facts import link_hosts, normalize_cluster
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_cluster_rules import _ClusterChecksMixin
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_matrix import (
    MatrixError,
    select_release,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_node_rules import _NodeChecksMixin
# Re-exported: the options, the argument spec and CompatError live in compat_options.
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_options import (  # pylint: disable=unused-import
    ARGUMENT_SPEC,
    CLUSTER,
    DEFAULT_OPERATOR_VERSION,
    FACTS_SOURCE,
    FAIL_ON,
    NOT_ASSESSED,
    OPTIONS_SOURCE,
    UPSTREAM_DISTRIBUTIONS,
    VERDICTS,
    CompatError,
    _fact_version,
    _fmt,
    _minor_key,
    _source_text,
    normalize_nodes,
    normalize_releases,
    normalize_target,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_state_rules import _StateChecksMixin
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import parse_version


def should_fail(verdict, fail_on):
    """True when ``verdict`` reaches the ``fail_on`` level (block|warn|never)."""
    if fail_on not in FAIL_ON:
        raise CompatError("fail_on: expected one of %s, got %r" % (", ".join(FAIL_ON), fail_on))
    if fail_on == "never":
        return False
    return VERDICTS.index(verdict) >= VERDICTS.index(fail_on)


def summarize(result, fail_on=None):
    """A one-line message: verdict and counts, plus the first blocking findings."""
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
    return text


# ---- evaluation ---------------------------------------------------------------------------------

class _Evaluator(_ClusterChecksMixin, _StateChecksMixin, _NodeChecksMixin):
    """One evaluation: the selected matrix compiled, the normalised options, the findings."""

    def __init__(self, selected, target, cluster, releases):
        self.selected = selected
        self.target = target
        self.cluster = cluster
        self.releases_override = releases
        self.findings = []
        self._once = set()
        self._versions = {}
        self._memo = {}
        self._compile(selected["rows"])
        self._prepare_cluster()

    # -- helpers
    def parse(self, text):
        try:
            return self._versions[text]
        except KeyError:
            parsed = parse_version(text) if isinstance(text, str) else None
            self._versions[text] = parsed
            return parsed
        except TypeError:  # unhashable
            return None

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
            self.add_once(default_id + NOT_ASSESSED, "info", None, None, message, _source_text(row))
        else:
            self.add_once(default_id + NOT_ASSESSED, "info", None, None,
                          "not assessed: matrix %s has no row for %s" % (self.selected["file"], what),
                          "matrix files: %s" % ", ".join(self.selected["files"]))

    # -- compile the matrix once per call
    def _compile(self, rows):
        by_rule = {}
        for row in rows:
            by_rule.setdefault(row["rule"], []).append(row)
        self.by_rule = by_rule
        self.no_data = dict((row["id"], row) for row in by_rule.get("no_data", []))
        self.k8s_ranges = []
        self.containerd_ranges = []
        for row in by_rule.get("version_range", []):
            low = row["values"].get("min")
            high = row["values"].get("max")
            bounds = (row, parse_version(low) if low else None, parse_version(high) if high else None)
            if row["constrains"] == "kubernetes_version":
                self.k8s_ranges.append(bounds)
            else:
                self.containerd_ranges.append(bounds)
        self.branch_rows = []
        for rule in ("driver_branch", "driver_point_release"):
            for row in by_rule.get(rule, []):
                branches = dict((b["branch"], parse_version(b["validated"])) for b in row["values"]["branches"])
                self.branch_rows.append((rule, row, branches))
        self.cri_rows = []
        for row in by_rule.get("containerd_cri", []):
            table = {}
            for minor, minimums in row["values"]["table"].items():
                parsed = [parse_version(m) for m in minimums]
                table[_minor_key(parse_version(minor))] = dict((_minor_key(p), p) for p in parsed)
            self.cri_rows.append((row, table))
        self.skew_rows = by_rule.get("kubelet_skew", [])
        dra_rows = by_rule.get("dra_floor", [])
        self.dra_row = dra_rows[0] if dra_rows else None
        pass_rows = by_rule.get("passthrough", [])
        self.passthrough_row = pass_rows[0] if pass_rows else None
        self.distributions = dict((row["values"]["distribution"], row) for row in by_rule.get("distribution_status", []))

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
        self.dra_active = bool(self.dra and self.dra_row and self.dra_row["values"]["available"])
        self.passthrough = bool(self.target["passthrough"] and self.passthrough_row)
        # The containerd CRI row for the Kubernetes minor the nodes will run.
        self.cri = []
        for row, table in self.cri_rows:
            if self.effective_k8s is None:
                self.cri.append((row, None, "no Kubernetes version given (cluster.kubernetes_version or target.kubernetes_version)"))
                continue
            key = _minor_key(self.effective_k8s)
            if key not in table:
                self.cri.append((row, None, "the table has no row for Kubernetes %d.%d" % key))
                continue
            minimums = table[key]
            expected = " or ".join(m.raw + "+" for m in sorted(minimums.values(), reverse=True))
            self.cri.append((row, (minimums, expected), None))


def evaluate(nodes, cluster=None, target=None, matrix=None, releases=None):
    """Evaluate facts against the matrix.

    :param nodes: dict host -> ``gpu_node`` facts (any key may be missing or None).
    :param cluster: optional dict: ``kubernetes_version`` (API server), ``kubelet_versions``
        (host -> version), ``cluster_policy``/``gpu_cluster`` (bool, object, list or k8s_info result),
        ``operator_version`` (current), ``distribution``; or the facts of ``gpu_cluster_facts``
        (``schema_version``, ``api_server``, ``nodes``, ``operator``, ...), with any of the simple
        keys set next to them winning.
    :param target: dict: ``operator_version`` (default 26.7.0), ``kubernetes_version``,
        ``allocation_mode`` (device_plugin|dra), ``passthrough``, ``accept_alpha_passthrough``.
    :param matrix: a matrix set from :func:`compat_matrix.load_matrix` or ``build_matrix_set``.
    :param releases: optional explicit list of operator releases for hop planning.
    :returns: dict with ``findings``, ``counts``, ``verdict``, ``upgrade_path``, ``target``, ``matrix``.
    :raises CompatError: a bad option. :raises MatrixError: no matrix file covers the target.
    """
    if matrix is None:
        raise CompatError("matrix: required (a matrix set from compat_matrix.load_matrix)")
    norm_target = normalize_target(target)
    norm_cluster = normalize_cluster(cluster)
    norm_nodes = normalize_nodes(nodes)
    norm_releases = normalize_releases(releases)
    link_hosts(norm_cluster, norm_nodes)
    selected = select_release(matrix, norm_target["operator_version"])
    evaluator = _Evaluator(selected, norm_target, norm_cluster, norm_releases)
    evaluator.check_cluster()
    evaluator.check_state()
    upgrade_path = evaluator.plan_upgrade()
    if not norm_nodes:
        evaluator.add("nodes" + NOT_ASSESSED, "info", CLUSTER, None, "gpu_node facts of at least one host",
                      "not assessed: no node facts given (driver, containerd, kubelet, IOMMU checks skipped)",
                      OPTIONS_SOURCE)
    evaluator.check_nodes(norm_nodes)
    findings = evaluator.findings
    counts = {"block": 0, "warn": 0, "info": 0, "not_assessed": 0}
    for finding in findings:
        if finding["id"].endswith(NOT_ASSESSED):
            counts["not_assessed"] += 1
        else:
            counts[finding["severity"]] += 1
    verdict = "block" if counts["block"] else ("warn" if counts["warn"] else "pass")
    components = None
    for row in evaluator.by_rule.get("components", []):
        components = dict(row["values"])
    return {
        "findings": findings,
        "counts": counts,
        "verdict": verdict,
        "upgrade_path": upgrade_path,
        "target": {
            "operator_version": norm_target["operator_version"].raw,
            "kubernetes_version": _fmt(norm_target["kubernetes_version"]),
            "allocation_mode": norm_target["allocation_mode"],
            "passthrough": norm_target["passthrough"],
            "accept_alpha_passthrough": norm_target["accept_alpha_passthrough"],
            "components": components,
        },
        "matrix": {
            "files": selected["files"],
            "release": selected["release"],
            "release_file": selected["file"],
            "published": selected["published"],
        },
    }


__all__ = ["ARGUMENT_SPEC", "CompatError", "MatrixError", "evaluate", "normalize_cluster", "normalize_nodes",
           "normalize_releases", "normalize_target", "should_fail", "summarize"]
