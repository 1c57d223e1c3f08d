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
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_matrix import (
    ALLOCATION_MODES,
    MatrixError,
    select_release,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import parse_version, version_in_range

DEFAULT_OPERATOR_VERSION = "26.7.0"
FAIL_ON = ("block", "warn", "never")
VERDICTS = ("pass", "warn", "block")
CLUSTER = "cluster"
NOT_ASSESSED = ".not_assessed"
#: Distributions that have no status row on purpose (plain upstream Kubernetes).
UPSTREAM_DISTRIBUTIONS = ("upstream", "kubeadm", "vanilla")
FACTS_SOURCE = "gpu_node facts (plugins/modules/gpu_node_facts.py)"
OPTIONS_SOURCE = "compat_check options"

_CLUSTER_KEYS = ("kubernetes_version", "kubelet_versions", "cluster_policy", "gpu_cluster",
                 "operator_version", "distribution")
_TARGET_KEYS = ("operator_version", "kubernetes_version", "allocation_mode", "passthrough",
                "accept_alpha_passthrough")

#: The argument spec shared by the action plugin and the module.
ARGUMENT_SPEC = dict(
    nodes=dict(type="dict"),
    cluster=dict(type="dict", options=dict(
        kubernetes_version=dict(type="raw"),
        kubelet_versions=dict(type="dict"),
        cluster_policy=dict(type="raw"),
        gpu_cluster=dict(type="raw"),
        operator_version=dict(type="raw"),
        distribution=dict(type="str"),
    )),
    target=dict(type="dict", apply_defaults=True, options=dict(
        operator_version=dict(type="raw", default=DEFAULT_OPERATOR_VERSION),
        kubernetes_version=dict(type="raw"),
        allocation_mode=dict(type="str", choices=list(ALLOCATION_MODES), default="device_plugin"),
        passthrough=dict(type="bool", default=False),
        accept_alpha_passthrough=dict(type="bool", default=False),
    )),
    releases=dict(type="list", elements="raw"),
    matrix=dict(type="path"),
    fail_on=dict(type="str", choices=list(FAIL_ON), default="block"),
)


class CompatError(ValueError):
    """A bad option: the message names the option and the expected form."""


# ---- option normalisation -----------------------------------------------------------------------

def _type_name(value):
    return type(value).__name__ if value is not None else "null"


def _version_option(value, field, required=False):
    """A version given as an option: a string that parses, else CompatError. None stays None."""
    if value is None or value == "":
        if required:
            raise CompatError("%s: required (a version string such as \"1.37.0\")" % field)
        return None
    if isinstance(value, bool) or not isinstance(value, str):
        raise CompatError(
            "%s: expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
            % (field, _type_name(value), value))
    parsed = parse_version(value)
    if parsed is None:
        raise CompatError("%s: %r is not a version string (expected digits and dots such as \"1.37.0\")" % (field, value))
    return parsed


def _fact_version(value, field):
    """A version given as a fact: (Version, None) or (None, why-not text)."""
    if value is None or value == "":
        return None, "%s not given" % field
    if isinstance(value, bool) or not isinstance(value, str):
        raise CompatError(
            "%s: expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
            % (field, _type_name(value), value))
    parsed = parse_version(value)
    if parsed is None:
        return None, "%s %r is not a version string" % (field, value)
    return parsed, None


def _bool_option(value, field, default=False):
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CompatError("%s: expected true or false, got %s %r" % (field, _type_name(value), value))
    return value


def _check_keys(mapping, allowed, field):
    for key in mapping:
        if key not in allowed:
            raise CompatError("%s: unknown key %r (expected one of %s)" % (field, key, ", ".join(allowed)))


def _presence(value, field):
    """ClusterPolicy/GPUCluster presence: True, False or None (unknown).

    Accepts a bool, the object itself (a dict), a list of objects, or a ``k8s_info`` result
    (a dict with ``resources``).
    """
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, dict):
        if isinstance(value.get("resources"), list):
            return bool(value["resources"])
        return bool(value)
    if isinstance(value, (list, tuple)):
        return bool(value)
    raise CompatError(
        "%s: expected true/false, the object (a dict), a list of objects or a k8s_info result; got %s %r"
        % (field, _type_name(value), value))


def normalize_target(target):
    """The target with defaults applied and versions parsed. Raises CompatError."""
    if target is None:
        target = {}
    if not isinstance(target, dict):
        raise CompatError("target: expected a dict with keys %s, got %s" % (", ".join(_TARGET_KEYS), _type_name(target)))
    _check_keys(target, _TARGET_KEYS, "target")
    operator = target.get("operator_version")
    if operator is None:
        operator = DEFAULT_OPERATOR_VERSION
    operator_v = _version_option(operator, "target.operator_version")
    if len(operator_v.parts) < 2:
        raise CompatError("target.operator_version: %r: expected YY.MM.PP such as \"26.7.0\"" % (operator,))
    mode = target.get("allocation_mode")
    if mode is None:
        mode = "device_plugin"
    if mode not in ALLOCATION_MODES:
        raise CompatError("target.allocation_mode: expected one of %s, got %r" % (", ".join(ALLOCATION_MODES), mode))
    return {
        "operator_version": operator_v,
        "kubernetes_version": _version_option(target.get("kubernetes_version"), "target.kubernetes_version"),
        "allocation_mode": mode,
        "passthrough": _bool_option(target.get("passthrough"), "target.passthrough"),
        "accept_alpha_passthrough": _bool_option(target.get("accept_alpha_passthrough"), "target.accept_alpha_passthrough"),
    }


def normalize_cluster(cluster):
    """Cluster facts with presence flags decided; None when no cluster was given. Raises CompatError."""
    if cluster is None:
        return None
    if not isinstance(cluster, dict):
        raise CompatError("cluster: expected a dict with keys %s, got %s" % (", ".join(_CLUSTER_KEYS), _type_name(cluster)))
    _check_keys(cluster, _CLUSTER_KEYS, "cluster")
    kubelets = cluster.get("kubelet_versions")
    if kubelets is None:
        kubelets = {}
    if not isinstance(kubelets, dict):
        raise CompatError("cluster.kubelet_versions: expected a dict host -> version string, got %s" % _type_name(kubelets))
    for host, version in kubelets.items():
        if version is not None and (isinstance(version, bool) or not isinstance(version, str)):
            raise CompatError(
                "cluster.kubelet_versions[%r]: expected a version as a quoted string, got %s %r"
                % (host, _type_name(version), version))
    distribution = cluster.get("distribution")
    if distribution is not None and not isinstance(distribution, str):
        raise CompatError("cluster.distribution: expected a string such as eks or upstream, got %s" % _type_name(distribution))
    for key in ("kubernetes_version", "operator_version"):
        value = cluster.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, str)):
            raise CompatError(
                "cluster.%s: expected a version as a quoted string (YAML reads 1.30 as the number 1.3), got %s %r"
                % (key, _type_name(value), value))
    return {
        "kubernetes_version": cluster.get("kubernetes_version"),
        "kubelet_versions": kubelets,
        "cluster_policy": _presence(cluster.get("cluster_policy"), "cluster.cluster_policy"),
        "gpu_cluster": _presence(cluster.get("gpu_cluster"), "cluster.gpu_cluster"),
        "operator_version": cluster.get("operator_version"),
        "distribution": distribution.strip().lower() if distribution else None,
    }


def normalize_nodes(nodes):
    """host -> facts dict (or None for a host without facts). Unwraps ``{"gpu_node": {...}}``."""
    if nodes is None:
        return {}
    if not isinstance(nodes, dict):
        raise CompatError("nodes: expected a dict host -> gpu_node facts, got %s" % _type_name(nodes))
    out = {}
    for host, facts in nodes.items():
        if not isinstance(host, str):
            raise CompatError("nodes: host names must be strings, got %s %r" % (_type_name(host), host))
        if isinstance(facts, dict) and "driver" not in facts and isinstance(facts.get("gpu_node"), dict):
            facts = facts["gpu_node"]
        if facts is not None and not isinstance(facts, dict):
            raise CompatError("nodes[%r]: expected the gpu_node facts dict (or null), got %s" % (host, _type_name(facts)))
        out[host] = facts
    return out


def normalize_releases(releases):
    """An explicit operator release list for hop planning, or None. Raises CompatError."""
    if releases is None:
        return None
    if not isinstance(releases, (list, tuple)):
        raise CompatError("releases: expected a list of operator versions such as [\"26.3.x\", \"26.6.x\", \"26.7.0\"]")
    out = []
    for index, item in enumerate(releases):
        if not isinstance(item, str) or _release_key(item) is None:
            raise CompatError(
                "releases[%d]: expected a quoted operator version such as \"26.6.x\" or \"26.7.0\", got %s %r"
                % (index, _type_name(item), item))
        out.append(item)
    return out


def _release_key(text):
    text = text.strip()
    if text.endswith((".x", ".X", ".*")):
        text = text[:-2]
    parsed = parse_version(text)
    if parsed is None or len(parsed.parts) < 2:
        return None
    return parsed


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

def _source_text(row):
    return "; ".join(row["source"]) if row else OPTIONS_SOURCE


def _fmt(version):
    return version.raw if version is not None else None


def _minor_key(version):
    return (version.major, version.minor)


class _Evaluator(object):
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

    # -- cluster-level checks
    def check_cluster(self):
        if self.cluster is not None and self.current_k8s is None and self.current_k8s_problem and \
                "not a version" in self.current_k8s_problem:
            self.add(CLUSTER + ".kubernetes_version" + NOT_ASSESSED, "info", CLUSTER, self.cluster["kubernetes_version"],
                     "a Kubernetes version such as 1.37.2",
                     "not assessed: %s; checks that need the API server version are skipped" % self.current_k8s_problem,
                     OPTIONS_SOURCE)
        self._check_lifecycle()
        self._check_k8s_range()
        self._check_cluster_prereqs()
        self._check_exclusive()
        self._check_dra_cluster()
        self._check_passthrough_cluster()
        self._check_distribution()

    def _check_lifecycle(self):
        for row in self.by_rule.get("lifecycle", []):
            status = row["values"]["status"]
            if status == "supported":
                continue
            message = "GPU Operator %s is %s in NVIDIA's lifecycle table" % (
                self.selected["release"], "not listed" if status == "not_listed" else status)
            if row.get("note"):
                message += ": " + row["note"]
            self.add(row["id"], row["severity"], CLUSTER, status, "supported", message, _source_text(row))

    def _check_k8s_range(self):
        if not self.k8s_ranges:
            self.missing_row("kubernetes.validated_range", "the Kubernetes version range")
            return
        for row, low, high in self.k8s_ranges:
            expected = "%s to %s" % (_fmt(low) or "any", _fmt(high) or "any")
            if not self.api_versions:
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, expected,
                         "not assessed: no Kubernetes version (%s; target.kubernetes_version not given)"
                         % (self.current_k8s_problem or "cluster.kubernetes_version not given"), _source_text(row))
                continue
            for label, version in self.api_versions:
                if not version_in_range(version, low, high):
                    self.add(row["id"], row["severity"], CLUSTER, version.raw, expected,
                             "%s Kubernetes %s is outside GPU Operator %s's validated range %s"
                             % (label, version.raw, self.selected["release"], expected), _source_text(row))

    def _check_cluster_prereqs(self):
        for row in self.skew_rows:
            if not self.api_versions:
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, "a kube-apiserver version",
                         "not assessed: kubelet skew needs the API server version (%s)"
                         % (self.current_k8s_problem or "cluster.kubernetes_version not given"), _source_text(row))
        if not self.skew_rows:
            self.missing_row("kubelet.skew", "kubelet version skew")
        for row, table, problem in self.cri:
            if table is None:
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, None,
                         "not assessed: containerd's tested combinations: %s" % problem, _source_text(row))
        if not self.cri_rows:
            self.missing_row("containerd.kubernetes_tested", "containerd's CRI compatibility table")
        if not self.branch_rows:
            self.missing_row("driver.branch", "supported driver branches")
        components = self.by_rule.get("components", [])
        if not components:
            self.missing_row("operator.components", "component versions")

    def _check_exclusive(self):
        rows = self.by_rule.get("exclusive_resources", [])
        for row in rows:
            if self.cluster is None:
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, "at most one of ClusterPolicy, GPUCluster",
                         "not assessed: no cluster facts given (cluster.cluster_policy, cluster.gpu_cluster)", _source_text(row))
                continue
            policy, gpucluster = self.cluster["cluster_policy"], self.cluster["gpu_cluster"]
            if policy and gpucluster:
                self.add(row["id"], row["severity"], CLUSTER, "ClusterPolicy present, GPUCluster present",
                         "at most one of ClusterPolicy, GPUCluster",
                         "both a ClusterPolicy and a GPUCluster exist: the GPU Operator treats both CRs together as an "
                         "invalid configuration", _source_text(row))
            elif (policy is None and gpucluster is not False) or (gpucluster is None and policy is not False):
                unknown = [name for name, value in (("cluster.cluster_policy", policy), ("cluster.gpu_cluster", gpucluster))
                           if value is None]
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, "at most one of ClusterPolicy, GPUCluster",
                         "not assessed: %s not given" % " and ".join(unknown), _source_text(row))

    def _check_dra_cluster(self):
        if not self.dra:
            return
        row = self.dra_row
        if row is None:
            self.missing_row("dra.managed", "managed DRA prerequisites")
            return
        source = _source_text(row)
        values = row["values"]
        if not values["available"]:
            message = "GPU Operator %s has no managed DRA (GPUCluster)" % self.selected["release"]
            if row.get("note"):
                message += ": " + row["note"]
            self.add(row["id"] + ".available", row["severity"], CLUSTER, "allocation_mode dra",
                     "a GPU Operator release with GPUCluster (26.7.0 or later)", message, source)
            return
        floor = parse_version(values["kubernetes_min"])
        if self.effective_k8s is None:
            self.add(row["id"] + ".kubernetes" + NOT_ASSESSED, "info", CLUSTER, None, ">= " + floor.raw,
                     "not assessed: no Kubernetes version to compare with the managed DRA floor", source)
        elif self.effective_k8s < floor:
            self.add(row["id"] + ".kubernetes", row["severity"], CLUSTER, self.effective_k8s.raw, ">= " + floor.raw,
                     "managed DRA (GPUCluster) needs Kubernetes %s or later, got %s" % (floor.raw, self.effective_k8s.raw),
                     source)
        if not values["cluster_policy_allowed"]:
            policy = None if self.cluster is None else self.cluster["cluster_policy"]
            if policy:
                self.add(row["id"] + ".cluster_policy", row["severity"], CLUSTER, "ClusterPolicy present",
                         "no ClusterPolicy",
                         "allocation_mode dra (GPUCluster) needs the ClusterPolicy removed: the two CRs are mutually "
                         "exclusive and there is no in-place migration; use a separate DRA cluster or pool", source)
            elif policy is None:
                self.add(row["id"] + ".cluster_policy" + NOT_ASSESSED, "info", CLUSTER, None, "no ClusterPolicy",
                         "not assessed: cluster.cluster_policy not given", source)

    def _check_passthrough_cluster(self):
        if not self.target["passthrough"]:
            return
        row = self.passthrough_row
        if row is None:
            self.missing_row("dra.passthrough", "VFIO passthrough")
            return
        values = row["values"]
        source = _source_text(row)
        if values["requires_acceptance"] and not self.target["accept_alpha_passthrough"]:
            default = "enabled" if values["default_enabled"] else "disabled"
            self.add(row["id"] + ".acceptance", row["severity"], CLUSTER, "accept_alpha_passthrough false",
                     "accept_alpha_passthrough true",
                     "VFIO passthrough is %s (feature gate %s, %s by default) and needs explicit acceptance: set "
                     "target.accept_alpha_passthrough" % (values["stage"], values["feature_gate"], default),
                     source)
        mode = values.get("requires_allocation_mode")
        if mode and self.target["allocation_mode"] != mode:
            self.add(row["id"] + ".allocation_mode", row["severity"], CLUSTER, self.target["allocation_mode"], mode,
                     "VFIO passthrough comes from the DRA driver (%s): it needs allocation_mode %s"
                     % (values["feature_gate"], mode), source)

    def _check_distribution(self):
        if self.cluster is None:
            return
        name = self.cluster["distribution"]
        if name is None:
            self.add("distribution" + NOT_ASSESSED, "info", CLUSTER, None, ", ".join(sorted(self.distributions)) or None,
                     "not assessed: cluster.distribution not given (managed distributions lag upstream)", OPTIONS_SOURCE)
            return
        if name in UPSTREAM_DISTRIBUTIONS:
            return
        row = self.distributions.get(name)
        if row is None:
            self.add("distribution" + NOT_ASSESSED, "info", CLUSTER, name, ", ".join(sorted(self.distributions)),
                     "not assessed: the matrix has no status row for distribution %r" % name, OPTIONS_SOURCE)
            return
        values = row["values"]
        message = "%s as of %s: %s" % (name, values["as_of"], values["status"])
        newest = values.get("newest_kubernetes")
        if newest and self.effective_k8s is not None and self.effective_k8s > parse_version(newest) and \
                _minor_key(self.effective_k8s) > _minor_key(parse_version(newest)):
            message += " Kubernetes %s is newer than the newest version %s offered then (%s)." % (
                self.effective_k8s.raw, name, newest)
        self.add(row["id"], row["severity"], CLUSTER, self.effective_k8s.raw if self.effective_k8s else None,
                 newest, message, _source_text(row))

    # -- upgrade hops
    def plan_upgrade(self):
        rows = self.by_rule.get("upgrade_hops", [])
        if not rows:
            self.missing_row("operator.upgrade_hops", "operator upgrade hops")
            return None
        row = rows[0]
        source = _source_text(row)
        fid = row["id"]
        target = self.target["operator_version"]
        if self.cluster is None or self.cluster["operator_version"] is None:
            self.add(fid + NOT_ASSESSED, "info", CLUSTER, None, "cluster.operator_version",
                     "not assessed: the current GPU Operator version is unknown (%s), so no upgrade path is planned"
                     % ("no cluster facts given" if self.cluster is None else "cluster.operator_version not given"), source)
            return None
        raw = self.cluster["operator_version"]
        current = _release_key(raw)
        if current is None:
            self.add(fid + NOT_ASSESSED, "info", CLUSTER, raw, "YY.MM.PP such as 26.3.1",
                     "not assessed: cluster.operator_version %r is not an operator version" % raw, source)
            return None
        if self.releases_override is not None:
            release_names = list(self.releases_override)
            release_source = OPTIONS_SOURCE + " (releases)"
        else:
            release_names = [entry["version"] for entry in self.selected["releases"]]
            release_source = "; ".join(sorted(set(s for e in self.selected["releases"] for s in e["source"])))
        known = {}
        for name in release_names:
            key = _release_key(name)
            known[_minor_key(key)] = name  # the last listed name of a major wins
        cur_major, tgt_major = _minor_key(current), _minor_key(target)
        if current == target:
            self.add(fid, "info", CLUSTER, raw, target.raw, "the current GPU Operator %s is the target: no hop" % raw, source)
            return []
        if current > target:
            self.add(fid + ".downgrade", "warn", CLUSTER, raw, ">= " + raw,
                     "target %s is older than the current %s: the lifecycle policy describes upgrades only; the sources "
                     "say nothing about operator downgrades" % (target.raw, raw), source)
            return []
        majors = sorted(set(known) | set([cur_major, tgt_major]))
        chain = [m for m in majors if cur_major <= m <= tgt_major]
        hops = []
        if len(chain) == 1:
            hops.append({"from": raw, "to": target.raw, "kind": "same_major"})
        else:
            previous = raw
            for major in chain[1:]:
                to = target.raw if major == tgt_major else known[major]
                hops.append({"from": previous, "to": to, "kind": "next_major"})
                previous = to
        unknown = [("%d.%d" % m) for m in (cur_major, tgt_major) if m not in known]
        if unknown:
            self.add(fid + ".unverified", "warn", CLUSTER, raw, "releases: %s" % ", ".join(release_names),
                     "the known operator releases (%s) do not include the %s major: releases in between may be "
                     "missing, so the path %s is not verified"
                     % (", ".join(release_names) or "none", " and ".join(unknown), _path_text(raw, hops)),
                     "%s; %s" % (source, release_source))
        path = _path_text(raw, hops)
        if len(hops) > 1:
            message = ("a direct upgrade from %s to %s is not supported (only within a major release or to the next "
                       "major); the path is %s (%d hops)" % (raw, target.raw, path, len(hops)))
        else:
            message = "a direct upgrade %s is supported (%s)" % (
                path, "same major release" if hops[0]["kind"] == "same_major" else "next major release")
        self.add(fid, row["severity"], CLUSTER, raw, target.raw, message, "%s; %s" % (source, release_source))
        return hops

    # -- node checks
    def check_nodes(self, nodes):
        kubelets = self.cluster["kubelet_versions"] if self.cluster else {}
        hosts = list(nodes)
        hosts.extend(h for h in kubelets if h not in nodes)
        for host in hosts:
            facts = nodes.get(host, _NO_NODE)
            signature = _signature(facts, kubelets.get(host) if host in kubelets else _ABSENT)
            try:
                results = self._memo[signature]
            except KeyError:
                results = self._memo[signature] = self._assess(signature)
            for fid, severity, observed, expected, message, source in results:
                self.findings.append({"id": fid, "severity": severity, "subject": host, "observed": observed,
                                      "expected": expected, "message": message, "source": source})

    def _assess(self, signature):
        out = []
        kind, driver, containerd, iommu, kubelet = signature
        if kind == "none":
            out.append(_t("node" + NOT_ASSESSED, "info", None, "gpu_node facts",
                          "not assessed: no gpu_node facts for this host (driver, containerd, IOMMU checks skipped)",
                          FACTS_SOURCE))
        elif kind == "facts":
            self._assess_driver(driver, out)
            self._assess_containerd(containerd, out)
            self._assess_iommu(iommu, out)
        # kind "kubelet_only": the host is only in cluster.kubelet_versions
        self._assess_kubelet(kubelet, out)
        return out

    def _assess_driver(self, driver, out):
        source = _source_text(self.branch_rows[0][1]) if self.branch_rows else FACTS_SOURCE
        if driver is _ABSENT:
            out.append(_t("driver" + NOT_ASSESSED, "info", None, "driver facts",
                          "not assessed: the gpu_node facts have no driver section", FACTS_SOURCE))
            return
        loaded, text = driver
        if loaded is False or (loaded is not True and text in (None, "")):
            out.append(_t("driver.not_found", "block", "driver.loaded=%s, driver.version=%s" % (
                _yaml(loaded), _yaml(text)), "an NVIDIA driver in a supported branch",
                "no NVIDIA driver found on this node (no loaded NVIDIA kernel module); driver rows cannot pass",
                source + "; [CND dra-intro-install.rst] GPUCluster does not manage the driver"))
            return
        if text in (None, ""):
            out.append(_t("driver.version" + NOT_ASSESSED, "info", None, "driver.version",
                          "not assessed: a driver is loaded but driver.version was not reported", FACTS_SOURCE))
            return
        version = self.parse(text)
        if version is None:
            out.append(_t("driver.version" + NOT_ASSESSED, "info", str(text), "a driver version such as 580.173.02",
                          "not assessed: driver.version %r is not a version string" % (text,), FACTS_SOURCE))
            return
        for rule, row, branches in self.branch_rows:
            validated = branches.get(version.major)
            names = ", ".join(v.raw for v in branches.values())
            if rule == "driver_branch" and validated is None:
                out.append(_t(row["id"], row["severity"], version.raw, "a branch of: %s" % names,
                              "driver %s is in branch %d, outside the supported branches of GPU Operator %s (%s)"
                              % (version.raw, version.major, self.selected["release"], names), _source_text(row)))
            elif rule == "driver_point_release" and validated is not None and version != validated:
                out.append(_t(row["id"], row["severity"], version.raw, validated.raw,
                              "driver %s is not the validated point release %s of branch %d (%s)"
                              % (version.raw, validated.raw, version.major,
                                 "older" if version < validated else "newer"), _source_text(row)))
        if self.dra_active:
            floor = self.dra_row["values"]["driver_min_branch"]
            if version.major < floor:
                out.append(_t(self.dra_row["id"] + ".driver", self.dra_row["severity"], version.raw, ">= %d" % floor,
                              "managed DRA needs driver %d or later, got %s" % (floor, version.raw),
                              _source_text(self.dra_row)))

    def _assess_containerd(self, containerd, out):
        needs_cdi = self.dra_active and self.dra_row["values"]["cdi_required"]
        dra_source = _source_text(self.dra_row) if self.dra_row else None
        if containerd is _ABSENT or containerd[0] is False:
            why = ("the gpu_node facts have no containerd section" if containerd is _ABSENT else
                   "containerd not found on this node (another runtime, or none)")
            out.append(_t("containerd" + NOT_ASSESSED, "info", None, "containerd",
                          "not assessed: %s; containerd rows are not evaluated" % why, FACTS_SOURCE))
            if needs_cdi:
                out.append(_t(self.dra_row["id"] + ".cdi" + NOT_ASSESSED, "info", None, "a CDI-enabled runtime",
                              "not assessed: CDI support of the runtime unknown (%s)" % why, dra_source))
            return
        present, text, cdi = containerd
        if needs_cdi:
            if cdi is False:
                out.append(_t(self.dra_row["id"] + ".cdi", self.dra_row["severity"], "containerd.cdi_enabled=false",
                              "enable_cdi = true",
                              "containerd has CDI disabled; CDI is needed for DRA (enable_cdi in the CRI runtime plugin "
                              "config, then restart containerd)", dra_source))
            elif cdi is not True:
                out.append(_t(self.dra_row["id"] + ".cdi" + NOT_ASSESSED, "info", None, "enable_cdi = true",
                              "not assessed: containerd.cdi_enabled unknown", dra_source))
        if text in (None, ""):
            out.append(_t("containerd" + NOT_ASSESSED, "info", None, "containerd.version",
                          "not assessed: containerd.version unknown; containerd version rows are not evaluated",
                          FACTS_SOURCE))
            return
        version = self.parse(text)
        if version is None:
            out.append(_t("containerd" + NOT_ASSESSED, "info", str(text), "a version such as 2.3.1",
                          "not assessed: containerd.version %r is not a version string" % (text,), FACTS_SOURCE))
            return
        for row, low, high in self.containerd_ranges:
            if not version_in_range(version, low, high):
                expected = "%s to %s" % (_fmt(low) or "any", _fmt(high) or "any")
                out.append(_t(row["id"], row["severity"], version.raw, expected,
                              "containerd %s is outside GPU Operator %s's validated range %s"
                              % (version.raw, self.selected["release"], expected), _source_text(row)))
        for row, table, _problem in self.cri:
            if table is None:
                continue
            minimums, expected = table
            minimum = minimums.get(_minor_key(version))
            if minimum is None or version < minimum:
                out.append(_t(row["id"], row["severity"], version.raw, expected,
                              "containerd %s is not among containerd's most thoroughly tested combinations for "
                              "Kubernetes %d.%d (%s)" % ((version.raw,) + _minor_key(self.effective_k8s) + (expected,)),
                              _source_text(row)))
        if not self.containerd_ranges:
            out.append(_t("containerd.validated_range" + NOT_ASSESSED, "info", version.raw, None,
                          "not assessed: matrix %s has no containerd range" % self.selected["file"], FACTS_SOURCE))

    def _assess_iommu(self, iommu, out):
        if not self.passthrough or not self.passthrough_row["values"]["requires_iommu"]:
            return
        row = self.passthrough_row
        if iommu is False:
            out.append(_t(row["id"] + ".iommu", row["severity"], "iommu.enabled=false", "iommu.enabled=true",
                          "VFIO passthrough needs the IOMMU enabled (the kubelet plugin fails to start without it)",
                          _source_text(row)))
        elif iommu is not True:
            out.append(_t(row["id"] + ".iommu" + NOT_ASSESSED, "info", None, "iommu.enabled=true",
                          "not assessed: iommu.enabled unknown", _source_text(row)))

    def _assess_kubelet(self, kubelet, out):
        if not self.skew_rows or not self.api_versions:
            return
        origin, text = kubelet
        for row in self.skew_rows:
            values = row["values"]
            source = _source_text(row)
            if text in (None, ""):
                why = {"node": "kubelet.version not reported", "absent": "kubelet not found on this node",
                       "cluster": "cluster.kubelet_versions has no version for this host",
                       "missing": "no kubelet facts and no cluster.kubelet_versions entry"}[origin]
                out.append(_t(row["id"] + NOT_ASSESSED, "info", None, "a kubelet version",
                              "not assessed: %s" % why, source))
                continue
            field = "cluster.kubelet_versions" if origin == "cluster" else "kubelet.version"
            version = self.parse(text)
            if version is None:
                out.append(_t(row["id"] + NOT_ASSESSED, "info", str(text), "a kubelet version such as 1.37.0",
                              "not assessed: %s %r is not a version string" % (field, text), source))
                continue
            max_older = values["max_older_minors"]
            old = values.get("old_kubelet")
            if old and version < parse_version(old["below"]):
                max_older = old["max_older_minors"]
            for label, api in self.api_versions:
                if api.major != version.major:
                    out.append(_t(row["id"], row["severity"], version.raw, "major %d" % api.major,
                                  "kubelet %s and the %s API server %s differ in major version" % (version.raw, label, api.raw),
                                  source))
                    continue
                diff = api.minor - version.minor
                if diff < -values["max_newer_minors"]:
                    out.append(_t(row["id"], row["severity"], version.raw, "<= %d.%d" % _minor_key(api),
                                  "kubelet %s is newer than the %s API server %s (a kubelet must not be newer)"
                                  % (version.raw, label, api.raw), source))
                elif diff > max_older:
                    out.append(_t(row["id"], row["severity"], version.raw, ">= %d.%d" % (api.major, api.minor - max_older),
                                  "kubelet %s is %d minors older than the %s API server %s (at most %d)"
                                  % (version.raw, diff, label, api.raw, max_older), source))


_ABSENT = object()
_NO_NODE = object()


def _t(fid, severity, observed, expected, message, source):
    return (fid, severity, None if observed is None else str(observed), None if expected is None else str(expected),
            message, source)


def _yaml(value):
    if value is None:
        return "null"
    if value is True:
        return "true"
    if value is False:
        return "false"
    return str(value)


def _hashable(value):
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return repr(value)


def _signature(facts, kubelet_override):
    """The facts the node checks read, as a hashable tuple (the memo key)."""
    if kubelet_override is not _ABSENT:
        kubelet = ("cluster", _hashable(kubelet_override))
    if facts is _NO_NODE:
        return ("kubelet_only", None, None, None, kubelet)
    if facts is None:
        if kubelet_override is _ABSENT:
            kubelet = ("missing", None)
        return ("none", None, None, None, kubelet)
    driver = facts.get("driver")
    driver = (_hashable(driver.get("loaded")), _hashable(driver.get("version"))) if isinstance(driver, dict) else _ABSENT
    containerd = facts.get("containerd")
    if isinstance(containerd, dict):
        containerd = (_hashable(containerd.get("present")), _hashable(containerd.get("version")),
                      _hashable(containerd.get("cdi_enabled")))
    else:
        containerd = _ABSENT
    iommu = facts.get("iommu")
    iommu = _hashable(iommu.get("enabled")) if isinstance(iommu, dict) else None
    if kubelet_override is _ABSENT:
        node_kubelet = facts.get("kubelet")
        if not isinstance(node_kubelet, dict):
            kubelet = ("missing", None)
        elif node_kubelet.get("present") is False:
            kubelet = ("absent", None)
        else:
            kubelet = ("node", _hashable(node_kubelet.get("version")))
    return ("facts", driver, containerd, iommu, kubelet)


def _path_text(current, hops):
    return " -> ".join([current] + [hop["to"] for hop in hops])


def evaluate(nodes, cluster=None, target=None, matrix=None, releases=None):
    """Evaluate facts against the matrix.

    :param nodes: dict host -> ``gpu_node`` facts (any key may be missing or None).
    :param cluster: optional dict: ``kubernetes_version`` (API server), ``kubelet_versions``
        (host -> version), ``cluster_policy``/``gpu_cluster`` (bool, object, list or k8s_info result),
        ``operator_version`` (current), ``distribution``.
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
    selected = select_release(matrix, norm_target["operator_version"])
    evaluator = _Evaluator(selected, norm_target, norm_cluster, norm_releases)
    evaluator.check_cluster()
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
