# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule kinds on the target release and the cluster as a whole: lifecycle, components, managed DRA
floor, ClusterPolicy/GPUCluster exclusion, passthrough (and its accepted-alpha warning), distribution
status, operator upgrade hops and ``no_data``. Pure logic, no I/O; each kind validates, compiles and checks its rows in one class
(:mod:`compat_rule_kind`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import (
    ALLOCATION_MODES,
    EXCLUSIVE_RESOURCES,
    HOP_KINDS,
    LIFECYCLE_STATUSES,
    _bool,
    _choice,
    _int,
    _list,
    _str,
    _version,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import (
    CLUSTER,
    NOT_ASSESSED,
    OPTIONS_SOURCE,
    UPSTREAM_DISTRIBUTIONS,
    _minor_key,
    _source_text,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rule_kind import RuleKind, first, node_finding as _t
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.versions import parse_version, release_key


class Lifecycle(RuleKind):
    """``lifecycle``: a finding unless the target release is ``supported``."""

    name = "lifecycle"
    value_keys = ("status",)

    def validate(self, row, values, where):
        _choice(values, "status", where, LIFECYCLE_STATUSES)

    def check(self, ev, rows):
        for row in rows:
            status = row["values"]["status"]
            if status == "supported":
                continue
            message = "GPU Operator %s is %s in NVIDIA's lifecycle table" % (
                ev.selected["release"], "not listed" if status == "not_listed" else status)
            if row.get("note"):
                message += ": " + row["note"]
            ev.add(row["id"], row["severity"], CLUSTER, status, "supported", message, _source_text(row))


class Components(RuleKind):
    """``components``: the target release's component versions, copied into ``target.components``."""

    name = "components"

    def validate(self, row, values, where):
        if not values:
            where.fail("expected at least one component")
        for key in values:
            _str(values, key, where)

    def check(self, ev, rows):
        for row in rows:
            ev.components = dict(row["values"])
        if not rows:
            ev.missing_row("operator.components", "component versions")


class DraFloor(RuleKind):
    """``dra_floor``: managed DRA (GPUCluster) prerequisites, only with ``allocation_mode: dra``:
    the cluster's Kubernetes and ClusterPolicy, each node's driver branch and CDI."""

    name = "dra_floor"
    value_keys = ("available", "kubernetes_min", "driver_min_branch", "cdi_required", "cluster_policy_allowed")

    def validate(self, row, values, where):
        if _bool(values, "available", where):
            _version(values, "kubernetes_min", where)
            _int(values, "driver_min_branch", where, minimum=1)
            _bool(values, "cdi_required", where)
            _bool(values, "cluster_policy_allowed", where)

    def prepare(self, ev, rows):
        ev.dra_row = first(rows)
        ev.dra_active = bool(ev.dra and ev.dra_row and ev.dra_row["values"]["available"])

    def check(self, ev, rows):
        if not ev.dra:
            return
        row = ev.dra_row
        if row is None:
            ev.missing_row("dra.managed", "managed DRA prerequisites")
            return
        source = _source_text(row)
        values = row["values"]
        if not values["available"]:
            message = "GPU Operator %s has no managed DRA (GPUCluster)" % ev.selected["release"]
            if row.get("note"):
                message += ": " + row["note"]
            ev.add(row["id"] + ".available", row["severity"], CLUSTER, "allocation_mode dra",
                   "a GPU Operator release with GPUCluster (26.7.0 or later)", message, source)
            return
        floor = parse_version(values["kubernetes_min"])
        if ev.effective_k8s is None:
            ev.add(row["id"] + ".kubernetes" + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, ">= " + floor.raw,
                   "not assessed: no Kubernetes version to compare with the managed DRA floor", source)
        elif ev.effective_k8s < floor:
            ev.add(row["id"] + ".kubernetes", row["severity"], CLUSTER, ev.effective_k8s.raw, ">= " + floor.raw,
                   "managed DRA (GPUCluster) needs Kubernetes %s or later, got %s" % (floor.raw, ev.effective_k8s.raw),
                   source)
        if not values["cluster_policy_allowed"]:
            policy = None if ev.cluster is None else ev.cluster["cluster_policy"]
            if policy:
                named = _named("ClusterPolicy", ev.cluster.get("cluster_policy_names")) or "ClusterPolicy"
                ev.add(row["id"] + ".cluster_policy", row["severity"], CLUSTER, named + " present", "no ClusterPolicy",
                       "allocation_mode dra (GPUCluster) needs the %s removed: the two CRs are mutually exclusive and "
                       "there is no in-place migration; use a separate DRA cluster or pool" % named, source)
            elif policy is None:
                ev.add(row["id"] + ".cluster_policy" + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None,
                       "no ClusterPolicy", "not assessed: cluster.cluster_policy not given", source)

    def check_node(self, ev, rows, node, out):
        if not ev.dra_active or node.kind != "facts":
            return
        row = ev.dra_row
        source = _source_text(row)
        floor = row["values"]["driver_min_branch"]
        version = node.driver_version
        if version is not None and version.major < floor:
            out.append(_t(row["id"] + ".driver", row["severity"], version.raw, ">= %d" % floor,
                          "managed DRA needs driver %d or later, got %s" % (floor, version.raw), source))
        if not row["values"]["cdi_required"]:
            return
        if node.containerd_why is not None:
            # Unassessed because containerd is: as severe as containerd.not_assessed.
            out.append(_t(row["id"] + ".cdi" + NOT_ASSESSED, node.containerd_na, None, "a CDI-enabled runtime",
                          "not assessed: CDI support of the runtime unknown (%s)" % node.containerd_why, source))
        elif node.containerd_cdi is False:
            out.append(_t(row["id"] + ".cdi", row["severity"], "containerd.cdi_enabled=false", "enable_cdi = true",
                          "containerd has CDI disabled; CDI is needed for DRA (enable_cdi in the CRI runtime plugin "
                          "config, then restart containerd)", source))
        elif node.containerd_cdi is not True:
            out.append(_t(row["id"] + ".cdi" + NOT_ASSESSED, ev.unassessed(row), None, "enable_cdi = true",
                          "not assessed: containerd.cdi_enabled unknown", source))


class ExclusiveResources(RuleKind):
    """``exclusive_resources``: a ClusterPolicy and a GPUCluster together are invalid."""

    name = "exclusive_resources"
    value_keys = ("resources",)

    def validate(self, row, values, where):
        resources = _list(values, "resources", where)
        if sorted(resources) != sorted(EXCLUSIVE_RESOURCES):
            where.child("resources").fail("expected [%s], got %r" % (", ".join(EXCLUSIVE_RESOURCES), resources))

    def check(self, ev, rows):
        for row in rows:
            if ev.cluster is None:
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, "at most one of ClusterPolicy, GPUCluster",
                       "not assessed: no cluster facts given (cluster.cluster_policy, cluster.gpu_cluster)", _source_text(row))
                continue
            policy, gpucluster = ev.cluster["cluster_policy"], ev.cluster["gpu_cluster"]
            if policy and gpucluster:
                policies = _named("ClusterPolicy", ev.cluster.get("cluster_policy_names"))
                gpuclusters = _named("GPUCluster", ev.cluster.get("gpu_cluster_names"))
                if policies and gpuclusters:
                    observed = "%s, %s" % (policies, gpuclusters)
                    both = "%s and %s both exist" % (policies, gpuclusters)
                else:
                    observed = "ClusterPolicy present, GPUCluster present"
                    both = "both a ClusterPolicy and a GPUCluster exist"
                ev.add(row["id"], row["severity"], CLUSTER, observed, "at most one of ClusterPolicy, GPUCluster",
                       "%s: the GPU Operator treats both CRs together as an invalid configuration; remove one "
                       "(the Device Plugin pool keeps the ClusterPolicy, a DRA cluster the GPUCluster)" % both,
                       _source_text(row))
            elif (policy is None and gpucluster is not False) or (gpucluster is None and policy is not False):
                unknown = [name for name, value in (("cluster.cluster_policy", policy), ("cluster.gpu_cluster", gpucluster))
                           if value is None]
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, "at most one of ClusterPolicy, GPUCluster",
                       "not assessed: %s not given" % " and ".join(unknown), _source_text(row))


class Passthrough(RuleKind):
    """``passthrough``: VFIO passthrough (only with ``target.passthrough``): acceptance, allocation mode,
    and each node's IOMMU."""

    name = "passthrough"
    value_keys = ("stage", "feature_gate", "default_enabled", "requires_acceptance", "requires_iommu",
                  "requires_allocation_mode")

    def validate(self, row, values, where):
        _str(values, "stage", where)
        _str(values, "feature_gate", where)
        _bool(values, "default_enabled", where)
        _bool(values, "requires_acceptance", where)
        _bool(values, "requires_iommu", where)
        _choice(values, "requires_allocation_mode", where, ALLOCATION_MODES, required=False)

    def prepare(self, ev, rows):
        ev.passthrough_row = first(rows)

    def check(self, ev, rows):
        if not ev.target["passthrough"]:
            return
        row = ev.passthrough_row
        if row is None:
            ev.missing_row("dra.passthrough", "VFIO passthrough")
            return
        values = row["values"]
        source = _source_text(row)
        if values["requires_acceptance"] and not ev.target["accept_alpha_passthrough"]:
            default = "enabled" if values["default_enabled"] else "disabled"
            ev.add(row["id"] + ".acceptance", row["severity"], CLUSTER, "accept_alpha_passthrough false",
                   "accept_alpha_passthrough true",
                   "VFIO passthrough is %s (feature gate %s, %s by default) and needs explicit acceptance: set "
                   "target.accept_alpha_passthrough" % (values["stage"], values["feature_gate"], default), source)
        mode = values.get("requires_allocation_mode")
        if mode and ev.target["allocation_mode"] != mode:
            ev.add(row["id"] + ".allocation_mode", row["severity"], CLUSTER, ev.target["allocation_mode"], mode,
                   "VFIO passthrough comes from the DRA driver (%s): it needs allocation_mode %s"
                   % (values["feature_gate"], mode), source)

    def check_node(self, ev, rows, node, out):
        row = ev.passthrough_row
        if node.kind != "facts" or not ev.target["passthrough"] or row is None or not row["values"]["requires_iommu"]:
            return
        if node.iommu is False:
            out.append(_t(row["id"] + ".iommu", row["severity"], "iommu.enabled=false", "iommu.enabled=true",
                          "VFIO passthrough needs the IOMMU enabled (the kubelet plugin fails to start without it)",
                          _source_text(row)))
        elif node.iommu is not True:
            out.append(_t(row["id"] + ".iommu" + NOT_ASSESSED, ev.unassessed(row), None, "iommu.enabled=true",
                          "not assessed: iommu.enabled unknown", _source_text(row)))


class PassthroughAccepted(RuleKind):
    """``passthrough_accepted``: VFIO passthrough requested *and* accepted as alpha still gives a
    finding (the row's severity, ``warn`` in 26.7.0): an accepted alpha stays visible and is never a
    standard production path (the same shape as ``dra_feature.alpha_accepted`` in dra_features).

    Without ``target.passthrough`` or without ``target.accept_alpha_passthrough`` it says nothing
    (the ``passthrough`` row blocks a missing acceptance). With a release whose ``dra.passthrough``
    row is missing or ``no_data`` it says nothing either (that row's finding already reports it); a
    release that has a ``passthrough`` row but no row of this kind reports the gap (``MISSING_ROW``).
    """

    name = "passthrough_accepted"
    value_keys = ("stage", "feature_gate", "default_enabled", "standard_production_path")

    def validate(self, row, values, where):
        _str(values, "stage", where)
        _str(values, "feature_gate", where)
        _bool(values, "default_enabled", where)
        _bool(values, "standard_production_path", where)

    def check(self, ev, rows):
        if not (ev.target["passthrough"] and ev.target["accept_alpha_passthrough"]) or ev.passthrough_row is None:
            return
        row = first(rows)
        if row is None:
            ev.missing_row("dra.passthrough.alpha_accepted", "accepted alpha VFIO passthrough")
            return
        values = row["values"]
        default = "enabled" if values["default_enabled"] else "disabled"
        path = "a standard production path" if values["standard_production_path"] else "not a standard production path"
        message = ("VFIO passthrough is %s (feature gate %s, %s by default), accepted through "
                   "target.accept_alpha_passthrough; still reported, never silently accepted: it is %s"
                   % (values["stage"], values["feature_gate"], default, path))
        ev.add(row["id"], row["severity"], CLUSTER, "%s, accepted (accept_alpha_passthrough true)" % values["stage"],
               "stable, or not requested", message, _source_text(row))


class DistributionStatus(RuleKind):
    """``distribution_status``: a dated ``info`` row for ``cluster.distribution``."""

    name = "distribution_status"
    value_keys = ("distribution", "as_of", "newest_kubernetes", "status", "dra")

    def validate(self, row, values, where):
        _str(values, "distribution", where)
        _str(values, "as_of", where)
        _version(values, "newest_kubernetes", where, required=False)
        _str(values, "status", where)
        _str(values, "dra", where, required=False)

    def check(self, ev, rows):
        if ev.cluster is None:
            return
        distributions = dict((row["values"]["distribution"], row) for row in rows)
        name = ev.cluster["distribution"]
        # Not assessed: as severe as the distribution rows are (info in the bundled matrix).
        severity = ev.strictest(rows)
        if name is None:
            ev.add("distribution" + NOT_ASSESSED, severity, CLUSTER, None, ", ".join(sorted(distributions)) or None,
                   "not assessed: cluster.distribution not given (managed distributions lag upstream)", OPTIONS_SOURCE)
            return
        if name in UPSTREAM_DISTRIBUTIONS:
            return
        row = distributions.get(name)
        if row is None:
            ev.add("distribution" + NOT_ASSESSED, severity, CLUSTER, name, ", ".join(sorted(distributions)),
                   "not assessed: the matrix has no status row for distribution %r" % name, OPTIONS_SOURCE)
            return
        values = row["values"]
        message = "%s as of %s: %s" % (name, values["as_of"], values["status"])
        newest = values.get("newest_kubernetes")
        k8s = ev.effective_k8s
        if newest and k8s is not None and k8s > parse_version(newest) and _minor_key(k8s) > _minor_key(parse_version(newest)):
            message += " Kubernetes %s is newer than the newest version %s offered then (%s)." % (k8s.raw, name, newest)
        ev.add(row["id"], row["severity"], CLUSTER, k8s.raw if k8s else None, newest, message, _source_text(row))


class UpgradeHops(RuleKind):
    """``upgrade_hops``: the operator upgrade path from the current to the target release."""

    name = "upgrade_hops"
    value_keys = ("allowed", "major_parts")

    def validate(self, row, values, where):
        allowed = _list(values, "allowed", where)
        for index, item in enumerate(allowed):
            if item not in HOP_KINDS:
                where.child("allowed").child(index).fail("expected one of %s, got %r" % (", ".join(HOP_KINDS), item))
        parts = _int(values, "major_parts", where, minimum=1)
        if parts != 2:
            where.child("major_parts").fail("only 2 (YY.MM) is implemented, got %d" % parts)

    def check(self, ev, rows):
        ev.upgrade_path = self._plan(ev, rows)

    def _plan(self, ev, rows):
        if not rows:
            ev.missing_row("operator.upgrade_hops", "operator upgrade hops")
            return None
        row = rows[0]
        source = _source_text(row)
        fid = row["id"]
        target = ev.target["operator_version"]
        if ev.cluster is None or ev.cluster["operator_version"] is None:
            ev.add(fid + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, "cluster.operator_version",
                   "not assessed: the current GPU Operator version is unknown (%s), so no upgrade path is planned"
                   % ("no cluster facts given" if ev.cluster is None else
                      ev.cluster.get("operator_version_problem") or "cluster.operator_version not given"), source)
            return None
        raw = ev.cluster["operator_version"]
        origin = ev.cluster.get("operator_version_origin")
        current = release_key(raw)
        if current is None:
            ev.add(fid + NOT_ASSESSED, ev.unassessed(row), CLUSTER, raw, "YY.MM.PP such as 26.3.1",
                   "not assessed: cluster.operator_version %r is not an operator version" % raw, source)
            return None
        if ev.releases_override is not None:
            release_names = list(ev.releases_override)
            release_source = OPTIONS_SOURCE + " (releases)"
        else:
            release_names = [entry["version"] for entry in ev.selected["releases"]]
            release_source = "; ".join(sorted(set(s for e in ev.selected["releases"] for s in e["source"])))
        known = {}
        for name in release_names:
            known[_minor_key(release_key(name))] = name  # the last listed name of a major wins
        cur_major, tgt_major = _minor_key(current), _minor_key(target)
        if current == target:
            ev.add(fid, "info", CLUSTER, raw, target.raw, "the current GPU Operator %s is the target: no hop" % raw, source)
            return []
        if current > target:
            ev.add(fid + ".downgrade", "warn", CLUSTER, raw, ">= " + raw,
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
            ev.add(fid + ".unverified", "warn", CLUSTER, raw, "releases: %s" % ", ".join(release_names),
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
        ev.add(fid, row["severity"], CLUSTER, raw, target.raw, message, "%s; %s" % (source, release_source))
        return hops


class NoData(RuleKind):
    """``no_data``: the sources say nothing here; the check that would use a row with this id reports
    "not assessed" with this row's source and its ``when_not_assessed`` severity (``ev.missing_row``)."""

    name = "no_data"
    value_keys = ("about",)

    def validate(self, row, values, where):
        _str(values, "about", where)

    def prepare(self, ev, rows):
        ev.no_data = dict((row["id"], row) for row in rows)


def _named(kind, names):
    """``ClusterPolicy cluster-policy`` (or ``ClusterPolicy a, b``); None when the names are unknown."""
    if not names:
        return None
    return "%s %s" % (kind, ", ".join(names))


def _path_text(current, hops):
    return " -> ".join([current] + [hop["to"] for hop in hops])
