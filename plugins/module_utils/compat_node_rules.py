# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Per-node rules of ``compat_check`` (driver, containerd, IOMMU, kubelet skew): pure logic, no I/O.

:class:`_NodeChecksMixin` is mixed into ``compat._Evaluator``. The checks are memoised on
:func:`_signature`, the handful of facts they read, so a fleet of identical nodes costs one
evaluation plus one small dict per finding.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_options import (
    FACTS_SOURCE,
    NOT_ASSESSED,
    _fmt,
    _minor_key,
    _source_text,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import parse_version, version_in_range


class _NodeChecksMixin(object):
    """Per-node checks of one evaluation (see ``compat._Evaluator``)."""

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
