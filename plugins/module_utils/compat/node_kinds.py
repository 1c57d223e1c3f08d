# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule kinds on node facts (version ranges, driver branches and point releases, containerd's CRI
table, kubelet skew) and the per-node pass that runs every kind's ``check_node``: pure logic, no I/O.

The node pass reads the handful of facts the kinds need into a :class:`NodeView` and reports the
facts that are missing (``node.not_assessed``, ``driver.not_found``, ``driver.not_assessed``,
``containerd.not_assessed``). It is memoised on :func:`signature`, so a fleet of identical nodes
costs one evaluation plus one small dict per finding.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import (
    MINOR_RE,
    VERSION_FIELDS,
    _bool,
    _dict,
    _int,
    _list,
    _no_unknown,
    _type_name,
    _version,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import (
    CLUSTER,
    FACTS_SOURCE,
    NOT_ASSESSED,
    _fmt,
    _minor_key,
    _source_text,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rule_kind import RuleKind, node_finding as _t
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import parse_version, version_in_range

#: Severity of ``node.not_assessed`` and ``nodes.not_assessed``: no facts at all leave every node row
#: (driver, containerd, IOMMU, kubelet) unassessed, the strictest of which blocks.
FACTS_MISSING = "block"

_ABSENT = object()
_NO_NODE = object()


class NodeView(object):
    """The facts of one node the kinds read, with versions parsed (None when missing or unparsed)."""

    __slots__ = ("kind", "driver_version", "containerd_why", "containerd_na", "containerd_cdi",
                 "containerd_version", "iommu", "kubelet")

    def __init__(self, kind, iommu, kubelet):
        self.kind = kind                # facts | none (host without facts) | kubelet_only (only in kubelet_versions)
        self.driver_version = None
        self.containerd_why = None      # why containerd is not there (absent section, not found)
        self.containerd_na = None       # severity of containerd.not_assessed, for the checks that need containerd
        self.containerd_cdi = None
        self.containerd_version = None
        self.iommu = iommu
        self.kubelet = kubelet


def check_nodes(ev, nodes, node_kinds):
    """Every node's findings (memoised per signature) appended to ``ev.findings`` with the host as subject."""
    kubelets = ev.cluster["kubelet_versions"] if ev.cluster else {}
    hosts = list(nodes)
    hosts.extend(h for h in kubelets if h not in nodes)
    memo = ev.memo
    findings = ev.findings
    for host in hosts:
        facts = nodes.get(host, _NO_NODE)
        sig = signature(facts, kubelets.get(host) if host in kubelets else _ABSENT)
        try:
            results = memo[sig]
        except KeyError:
            results = memo[sig] = _assess(ev, sig, node_kinds)
        for fid, severity, observed, expected, message, source in results:
            findings.append({"id": fid, "severity": severity, "subject": host, "observed": observed,
                             "expected": expected, "message": message, "source": source})


def _assess(ev, sig, node_kinds):
    kind, driver, containerd, iommu, kubelet = sig
    node = NodeView(kind, iommu, kubelet)
    out = []
    if kind == "none":
        out.append(_t("node" + NOT_ASSESSED, FACTS_MISSING, None, "gpu_node facts",
                      "not assessed: no gpu_node facts for this host (driver, containerd, IOMMU checks skipped)",
                      FACTS_SOURCE))
    elif kind == "facts":
        _driver_facts(ev, driver, node, out)
        _containerd_facts(ev, containerd, node, out)
    for rule_kind in node_kinds:
        rule_kind.check_node(ev, ev.rows(rule_kind.name), node, out)
    return out


def _driver_facts(ev, driver, node, out):
    branch_rows = ev.rows("driver_branch") + ev.rows("driver_point_release")
    needs = branch_rows + ([ev.dra_row] if ev.dra_active else [])
    if driver is _ABSENT:
        out.append(_t("driver" + NOT_ASSESSED, ev.strictest(needs), None, "driver facts",
                      "not assessed: the gpu_node facts have no driver section", FACTS_SOURCE))
        return
    loaded, text = driver
    if loaded is False or (loaded is not True and text in (None, "")):
        source = _source_text(branch_rows[0]) if branch_rows else FACTS_SOURCE
        out.append(_t("driver.not_found", "block", "driver.loaded=%s, driver.version=%s" % (
            _yaml(loaded), _yaml(text)), "an NVIDIA driver in a supported branch",
            "no NVIDIA driver found on this node (no loaded NVIDIA kernel module); driver rows cannot pass",
            source + "; [CND dra-intro-install.rst] GPUCluster does not manage the driver"))
        return
    if text in (None, ""):
        out.append(_t("driver.version" + NOT_ASSESSED, ev.strictest(needs), None, "driver.version",
                      "not assessed: a driver is loaded but driver.version was not reported", FACTS_SOURCE))
        return
    version = ev.parse(text)
    if version is None:
        out.append(_t("driver.version" + NOT_ASSESSED, ev.strictest(needs), str(text), "a driver version such as 580.173.02",
                      "not assessed: driver.version %r is not a version string" % (text,), FACTS_SOURCE))
        return
    node.driver_version = version


def _containerd_facts(ev, containerd, node, out):
    severity = ev.strictest([r for r in ev.rows("version_range") if r["constrains"] == "containerd_version"] +
                            ev.rows("containerd_cri"))
    node.containerd_na = severity
    if containerd is _ABSENT or containerd[0] is False:
        why = ("the gpu_node facts have no containerd section" if containerd is _ABSENT else
               "containerd not found on this node (another runtime, or none)")
        node.containerd_why = why
        out.append(_t("containerd" + NOT_ASSESSED, severity, None, "containerd",
                      "not assessed: %s; containerd rows are not evaluated" % why, FACTS_SOURCE))
        return
    _present, text, node.containerd_cdi = containerd
    if text in (None, ""):
        out.append(_t("containerd" + NOT_ASSESSED, severity, None, "containerd.version",
                      "not assessed: containerd.version unknown; containerd version rows are not evaluated",
                      FACTS_SOURCE))
        return
    version = ev.parse(text)
    if version is None:
        out.append(_t("containerd" + NOT_ASSESSED, severity, str(text), "a version such as 2.3.1",
                      "not assessed: containerd.version %r is not a version string" % (text,), FACTS_SOURCE))
        return
    node.containerd_version = version


# ---- the kinds ----------------------------------------------------------------------------------

class VersionRange(RuleKind):
    """``version_range``: the Kubernetes version (cluster: current and target) or containerd (per node)."""

    name = "version_range"
    value_keys = ("min", "max")

    def validate(self, row, values, where):
        if row["constrains"] not in VERSION_FIELDS:
            where.parent_row.child("constrains").fail(
                "rule version_range constrains one of %s, got %r" % (", ".join(VERSION_FIELDS), row["constrains"]))
        low = _version(values, "min", where, required=False)
        high = _version(values, "max", where, required=False)
        if low is None and high is None:
            where.fail("version_range needs min, max or both")
        if low is not None and high is not None and parse_version(low) > parse_version(high):
            where.fail("min %s is above max %s" % (low, high))

    def compile(self, row, ev):
        low, high = row["values"].get("min"), row["values"].get("max")
        return dict(row, low=parse_version(low) if low else None, high=parse_version(high) if high else None)

    def check(self, ev, rows):
        k8s = [r for r in rows if r["constrains"] == "kubernetes_version"]
        if not k8s:
            ev.missing_row("kubernetes.validated_range", "the Kubernetes version range")
            return
        for row in k8s:
            expected = _expected(row)
            if not ev.api_versions:
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, expected,
                       "not assessed: no Kubernetes version (%s; target.kubernetes_version not given)"
                       % (ev.current_k8s_problem or "cluster.kubernetes_version not given"), _source_text(row))
                continue
            for label, version in ev.api_versions:
                if not version_in_range(version, row["low"], row["high"]):
                    ev.add(row["id"], row["severity"], CLUSTER, version.raw, expected,
                           "%s Kubernetes %s is outside GPU Operator %s's validated range %s"
                           % (label, version.raw, ev.selected["release"], expected), _source_text(row))

    def check_node(self, ev, rows, node, out):
        version = node.containerd_version
        if version is None:
            return
        ranges = [r for r in rows if r["constrains"] == "containerd_version"]
        for row in ranges:
            if not version_in_range(version, row["low"], row["high"]):
                expected = _expected(row)
                out.append(_t(row["id"], row["severity"], version.raw, expected,
                              "containerd %s is outside GPU Operator %s's validated range %s"
                              % (version.raw, ev.selected["release"], expected), _source_text(row)))
        if not ranges:
            out.append(_t("containerd.validated_range" + NOT_ASSESSED, ev.missing_severity, version.raw, None,
                          "not assessed: matrix %s has no containerd range" % ev.selected["file"], FACTS_SOURCE))


def _expected(row):
    return "%s to %s" % (_fmt(row["low"]) or "any", _fmt(row["high"]) or "any")


class DriverBranch(RuleKind):
    """``driver_branch``: the driver's branch (first number) must be one of the listed branches."""

    name = "driver_branch"
    value_keys = ("branches",)

    def validate(self, row, values, where):
        branches = _list(values, "branches", where)
        seen = set()
        for index, item in enumerate(branches):
            item_where = where.child("branches").child(index)
            if not isinstance(item, dict):
                item_where.fail("expected a mapping, got %s" % _type_name(item))
            branch = _int(item, "branch", item_where, minimum=1)
            validated = _version(item, "validated", item_where)
            if parse_version(validated).major != branch:
                item_where.child("validated").fail("%s is not in branch %d" % (validated, branch))
            if branch in seen:
                item_where.child("branch").fail("duplicate branch %d" % branch)
            seen.add(branch)
            _bool(item, "recommended", item_where, required=False)
            _bool(item, "default", item_where, required=False)
            _no_unknown(item, ("branch", "validated", "recommended", "default"), item_where)

    def compile(self, row, ev):
        branches = dict((b["branch"], parse_version(b["validated"])) for b in row["values"]["branches"])
        return dict(row, branches=branches, names=", ".join(v.raw for v in branches.values()))

    def check(self, ev, rows):
        if not rows and not ev.rows("driver_point_release"):
            ev.missing_row("driver.branch", "supported driver branches")

    def check_node(self, ev, rows, node, out):
        version = node.driver_version
        if version is None:
            return
        for row in rows:
            if version.major not in row["branches"]:
                out.append(_t(row["id"], row["severity"], version.raw, "a branch of: %s" % row["names"],
                              "driver %s is in branch %d, outside the supported branches of GPU Operator %s (%s)"
                              % (version.raw, version.major, ev.selected["release"], row["names"]), _source_text(row)))


class DriverPointRelease(DriverBranch):
    """``driver_point_release``: in a listed branch, any point release other than the validated one."""

    name = "driver_point_release"

    def check(self, ev, rows):
        """The missing-row finding is driver_branch's."""

    def check_node(self, ev, rows, node, out):
        version = node.driver_version
        if version is None:
            return
        for row in rows:
            validated = row["branches"].get(version.major)
            if validated is not None and version != validated:
                out.append(_t(row["id"], row["severity"], version.raw, validated.raw,
                              "driver %s is not the validated point release %s of branch %d (%s)"
                              % (version.raw, validated.raw, version.major,
                                 "older" if version < validated else "newer"), _source_text(row)))


class ContainerdCri(RuleKind):
    """``containerd_cri``: containerd's own tested combinations for the Kubernetes minor the nodes will run."""

    name = "containerd_cri"
    value_keys = ("table",)

    def validate(self, row, values, where):
        table = _dict(values, "table", where)
        if not table:
            where.child("table").fail("expected a non-empty mapping of Kubernetes minor -> containerd versions")
        for minor, minimums in table.items():
            row_where = where.child("table").child(str(minor))
            if not isinstance(minor, str) or not MINOR_RE.match(minor):
                row_where.fail("key must be a quoted Kubernetes minor such as \"1.37\", got %s %r" % (_type_name(minor), minor))
            if not isinstance(minimums, list) or not minimums:
                row_where.fail("expected a non-empty list of containerd versions")
            for index, text in enumerate(minimums):
                if not isinstance(text, str) or parse_version(text) is None:
                    row_where.child(index).fail("not a version string: %r" % (text,))

    def compile(self, row, ev):
        table = {}
        for minor, minimums in row["values"]["table"].items():
            parsed = [parse_version(m) for m in minimums]
            table[_minor_key(parse_version(minor))] = dict((_minor_key(p), p) for p in parsed)
        # The row for the Kubernetes minor the nodes will run (target, else current).
        selected, problem = None, None
        if ev.effective_k8s is None:
            problem = "no Kubernetes version given (cluster.kubernetes_version or target.kubernetes_version)"
        elif _minor_key(ev.effective_k8s) not in table:
            problem = "the table has no row for Kubernetes %d.%d" % _minor_key(ev.effective_k8s)
        else:
            minimums = table[_minor_key(ev.effective_k8s)]
            selected = (minimums, " or ".join(m.raw + "+" for m in sorted(minimums.values(), reverse=True)))
        return dict(row, selected=selected, problem=problem)

    def check(self, ev, rows):
        for row in rows:
            if row["selected"] is None:
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, None,
                       "not assessed: containerd's tested combinations: %s" % row["problem"], _source_text(row))
        if not rows:
            ev.missing_row("containerd.kubernetes_tested", "containerd's CRI compatibility table")

    def check_node(self, ev, rows, node, out):
        version = node.containerd_version
        if version is None:
            return
        for row in rows:
            if row["selected"] is None:
                continue
            minimums, expected = row["selected"]
            minimum = minimums.get(_minor_key(version))
            if minimum is None or version < minimum:
                out.append(_t(row["id"], row["severity"], version.raw, expected,
                              "containerd %s is not among containerd's most thoroughly tested combinations for "
                              "Kubernetes %d.%d (%s)" % ((version.raw,) + _minor_key(ev.effective_k8s) + (expected,)),
                              _source_text(row)))


class KubeletSkew(RuleKind):
    """``kubelet_skew``: each kubelet against the current and the target API server."""

    name = "kubelet_skew"
    value_keys = ("max_newer_minors", "max_older_minors", "old_kubelet")

    def validate(self, row, values, where):
        _int(values, "max_newer_minors", where)
        _int(values, "max_older_minors", where)
        old = _dict(values, "old_kubelet", where, required=False)
        if old is not None:
            old_where = where.child("old_kubelet")
            _version(old, "below", old_where)
            _int(old, "max_older_minors", old_where)
            _no_unknown(old, ("below", "max_older_minors"), old_where)

    def compile(self, row, ev):
        old = row["values"].get("old_kubelet")
        return dict(row, old_below=parse_version(old["below"]) if old else None)

    def check(self, ev, rows):
        for row in rows:
            if not ev.api_versions:
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, "a kube-apiserver version",
                       "not assessed: kubelet skew needs the API server version (%s)"
                       % (ev.current_k8s_problem or "cluster.kubernetes_version not given"), _source_text(row))
        if not rows:
            ev.missing_row("kubelet.skew", "kubelet version skew")

    def check_node(self, ev, rows, node, out):
        if not rows or not ev.api_versions:
            return
        origin, text = node.kubelet
        for row in rows:
            values = row["values"]
            source = _source_text(row)
            if text in (None, ""):
                why = {"node": "kubelet.version not reported", "absent": "kubelet not found on this node",
                       "cluster": "cluster.kubelet_versions has no version for this host",
                       "missing": "no kubelet facts and no cluster.kubelet_versions entry"}[origin]
                out.append(_t(row["id"] + NOT_ASSESSED, ev.unassessed(row), None, "a kubelet version",
                              "not assessed: %s" % why, source))
                continue
            field = "cluster.kubelet_versions" if origin == "cluster" else "kubelet.version"
            version = ev.parse(text)
            if version is None:
                out.append(_t(row["id"] + NOT_ASSESSED, ev.unassessed(row), str(text), "a kubelet version such as 1.37.0",
                              "not assessed: %s %r is not a version string" % (field, text), source))
                continue
            max_older = values["max_older_minors"]
            if row["old_below"] is not None and version < row["old_below"]:
                max_older = values["old_kubelet"]["max_older_minors"]
            for label, api in ev.api_versions:
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


def signature(facts, kubelet_override):
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
