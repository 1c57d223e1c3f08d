# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Cluster-level and operator rules of ``compat_check``: pure logic, no I/O.

:class:`_ClusterChecksMixin` is mixed into ``compat._Evaluator``: the lifecycle, Kubernetes range,
cluster prerequisites, exclusive CRs, managed DRA, passthrough and distribution checks, and the
operator upgrade-hop plan. It reads the evaluator's compiled matrix and normalised options and
reports through its ``add``/``missing_row`` methods.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_options import (
    CLUSTER,
    NOT_ASSESSED,
    OPTIONS_SOURCE,
    UPSTREAM_DISTRIBUTIONS,
    _fmt,
    _minor_key,
    _release_key,
    _source_text,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.versions import parse_version, version_in_range


class _ClusterChecksMixin(object):
    """Cluster-level checks and upgrade planning of one evaluation (see ``compat._Evaluator``)."""

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
                policies = _named("ClusterPolicy", self.cluster.get("cluster_policy_names"))
                gpuclusters = _named("GPUCluster", self.cluster.get("gpu_cluster_names"))
                if policies and gpuclusters:
                    observed = "%s, %s" % (policies, gpuclusters)
                    both = "%s and %s both exist" % (policies, gpuclusters)
                else:
                    observed = "ClusterPolicy present, GPUCluster present"
                    both = "both a ClusterPolicy and a GPUCluster exist"
                self.add(row["id"], row["severity"], CLUSTER, observed, "at most one of ClusterPolicy, GPUCluster",
                         "%s: the GPU Operator treats both CRs together as an invalid configuration; remove one "
                         "(the Device Plugin pool keeps the ClusterPolicy, a DRA cluster the GPUCluster)" % both,
                         _source_text(row))
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
                named = _named("ClusterPolicy", self.cluster.get("cluster_policy_names")) or "ClusterPolicy"
                self.add(row["id"] + ".cluster_policy", row["severity"], CLUSTER, named + " present",
                         "no ClusterPolicy",
                         "allocation_mode dra (GPUCluster) needs the %s removed: the two CRs are mutually "
                         "exclusive and there is no in-place migration; use a separate DRA cluster or pool" % named,
                         source)
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
                     % ("no cluster facts given" if self.cluster is None else
                        self.cluster.get("operator_version_problem") or "cluster.operator_version not given"), source)
            return None
        raw = self.cluster["operator_version"]
        origin = self.cluster.get("operator_version_origin")
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
        if origin:
            path += " (current version from the %s)" % origin
        if len(hops) > 1:
            message = ("a direct upgrade from %s to %s is not supported (only within a major release or to the next "
                       "major); the path is %s (%d hops)" % (raw, target.raw, path, len(hops)))
        else:
            message = "a direct upgrade %s is supported (%s)" % (
                path, "same major release" if hops[0]["kind"] == "same_major" else "next major release")
        self.add(fid, row["severity"], CLUSTER, raw, target.raw, message, "%s; %s" % (source, release_source))
        return hops


def _named(kind, names):
    """``ClusterPolicy cluster-policy`` (or ``ClusterPolicy a, b``); None when the names are unknown."""
    if not names:
        return None
    return "%s %s" % (kind, ", ".join(names))


def _path_text(current, hops):
    return " -> ".join([current] + [hop["to"] for hop in hops])
