# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rule kinds on the observed cluster state: pure logic, no I/O; one class per kind
(:mod:`compat_rule_kind`).

Except for ``api_served`` (which says "not assessed" without facts), these kinds read what only the
gpu_cluster_facts form of ``cluster`` carries (``cluster["state"]``, see
:mod:`compat_cluster_facts`) and are silent for the simple form: one GPU backend per node, the DRA
play's nodes and the Device Plugin, operator CR readiness, DeviceClasses bridging the Device
Plugin's resource name, and stuck ResourceClaims.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.cluster_facts import api_served
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.fields import ALLOCATION_MODES, _choice, _int, _str
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.options import (
    CLUSTER,
    NOT_ASSESSED,
    _source_text,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rule_kind import RuleKind

#: How many names a message lists before "and N more".
_NAMES_SHOWN = 5
_DEVICE_PLUGIN_BACKENDS = ("device_plugin", "both")


def _state(ev):
    return ev.cluster["state"] if ev.cluster else None


class _StateKind(RuleKind):
    """A kind that needs the facts form: silent for the simple form, ``missing_row`` without a row."""

    default_id = None
    what = None

    def check(self, ev, rows):
        state = _state(ev)
        if state is None:
            return
        if not rows:
            ev.missing_row(self.default_id, self.what)
            return
        self.check_state(ev, rows[0], state)

    def check_state(self, ev, row, state):
        raise NotImplementedError


class _ResourceName(_StateKind):
    value_keys = ("resource_name",)

    def validate(self, row, values, where):
        _str(values, "resource_name", where)


def _subject(state, node):
    return state.get("subjects", {}).get(node, node)


class ApiServed(RuleKind):
    """``api_served``: the API server serves ``group_version`` (only for ``requires_allocation_mode``)."""

    name = "api_served"
    value_keys = ("group_version", "requires_allocation_mode")

    def validate(self, row, values, where):
        group_version = _str(values, "group_version", where)
        if "/" not in group_version:
            where.child("group_version").fail("expected group/version such as resource.k8s.io/v1, got %r" % group_version)
        _choice(values, "requires_allocation_mode", where, ALLOCATION_MODES, required=False)

    def check(self, ev, rows):
        state = _state(ev)
        for row in rows:
            values = row["values"]
            mode = values.get("requires_allocation_mode")
            if mode and ev.target["allocation_mode"] != mode:
                continue
            group_version = values["group_version"]
            served = api_served(state["apis"], group_version) if state else None
            if served is True:
                continue
            if served is False:
                ev.add(row["id"], row["severity"], CLUSTER, "%s not served" % group_version, group_version + " served",
                       "the API server does not serve %s (the GA DRA API, Kubernetes 1.34+): allocation_mode %s has "
                       "no API to allocate through; enable the resource.k8s.io API group (DynamicResourceAllocation) "
                       "or move to Kubernetes 1.34 or later" % (group_version, ev.target["allocation_mode"]),
                       _source_text(row))
                continue
            why = ("no cluster facts given" if ev.cluster is None else
                   "the simple form of cluster says nothing about served APIs (give gpu_cluster_facts)" if state is None
                   else "the cluster facts have no apis section")
            ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, group_version + " served",
                   "not assessed: whether the API server serves %s is unknown: %s" % (group_version, why),
                   _source_text(row))


class SingleBackend(_ResourceName):
    """``single_backend``: a node whose ``gpu_backend`` is ``both`` serves the name from two backends."""

    name = "single_backend"
    default_id, what = "backend.single_per_node", "one GPU backend per node"

    def check_state(self, ev, row, state):
        name = row["values"]["resource_name"]
        unknown = 0
        for node, facts in state["nodes"].items():
            backend = facts["gpu_backend"]
            if backend is None:
                unknown += 1
            elif backend == "both":
                observed = "gpu_backend both (allocatable %s %s, %s DRA devices)" % (
                    name, facts["allocatable_gpu"], "unknown" if facts["dra_device_count"] is None else
                    facts["dra_device_count"])
                ev.add(row["id"], row["severity"], _subject(state, node), observed, "one of device_plugin, dra",
                       "node %s serves %s through both the Device Plugin and DRA: each node has only one backend for "
                       "a resource name; stop the Device Plugin (or the DRA kubelet plugin) on it" % (node, name),
                       _source_text(row))
        if unknown and state["nodes"]:
            ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, "%d node(s) with gpu_backend null" % unknown,
                   "gpu_backend of every node",
                   "not assessed: the GPU backend of %d of %d node(s) is unknown (DRA ResourceSlices not gathered)"
                   % (unknown, len(state["nodes"])), _source_text(row))


class DraPoolBackend(_ResourceName):
    """``dra_pool_backend``: with ``allocation_mode: dra``, a node of the play that serves the Device Plugin."""

    name = "dra_pool_backend"
    default_id, what = "backend.dra_canary_pool", "the DRA pool's backends"

    def check(self, ev, rows):
        if ev.dra:
            _ResourceName.check(self, ev, rows)

    def check_state(self, ev, row, state):
        name = row["values"]["resource_name"]
        play_nodes = state.get("play_nodes") or []
        if not play_nodes:
            if state["nodes"]:
                ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None,
                       "the play's hosts among the cluster's nodes",
                       "not assessed: none of the play's hosts is a node of the cluster facts (matched by name or "
                       "short name), so the DRA pool's current backends are unknown", _source_text(row))
            return
        for node in play_nodes:
            if state["nodes"][node]["gpu_backend"] != "device_plugin":
                continue
            ev.add(row["id"], row["severity"], _subject(state, node), "gpu_backend device_plugin",
                   "a node outside the Device Plugin pool (gpu_backend none or dra)",
                   "node %s of this allocation_mode dra play serves %s through the Device Plugin now: qualify DRA on "
                   "a separate canary pool or cluster; take the node out of the Device Plugin pool (drain it, keep "
                   "the Device Plugin off it) before DRA serves it, since a node has only one backend for a resource "
                   "name" % (node, name), _source_text(row))


class ExtendedResourceBridge(_ResourceName):
    """``extended_resource_bridge``: a DeviceClass mapping the name while some node serves it through the
    Device Plugin."""

    name = "extended_resource_bridge"
    default_id, what = "backend.extended_resource_bridge", "DeviceClass bridges"

    def check_state(self, ev, row, state):
        name = row["values"]["resource_name"]
        classes = state["device_classes"]
        if classes is None:
            ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, None,
                   "not assessed: the cluster facts have no device_classes", _source_text(row))
            return
        bridges = [c for c in classes if c.get("extended_resource_name") == name]
        if not bridges:
            return
        plugin_nodes = sorted(n for n, f in state["nodes"].items() if f["gpu_backend"] in _DEVICE_PLUGIN_BACKENDS)
        if not plugin_nodes:
            return
        for item in bridges:
            ev.add(row["id"], row["severity"], "DeviceClass/%s" % item.get("name"),
                   "extendedResourceName %s; Device Plugin on %d node(s)" % (name, len(plugin_nodes)),
                   "no node with both backends",
                   "DeviceClass %s maps %s to DRA while %d node(s) serve it through the Device Plugin (%s): upstream "
                   "permits the same resource name from the Device Plugin on one node pool and DRA on another, as long "
                   "as each node has only one backend; keep this class in the rollback artifacts"
                   % (item.get("name"), name, len(plugin_nodes), _names(plugin_nodes)), _source_text(row))


class CrState(_StateKind):
    """``cr_state``: an operator CR whose ``state`` is not ``ready_state``, with its conditions."""

    name = "cr_state"
    value_keys = ("ready_state",)
    default_id, what = "operator.cr_state", "the operator CRs' state"

    def validate(self, row, values, where):
        _str(values, "ready_state", where)

    def check_state(self, ev, row, state):
        if state["crs"] is None:
            ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, None,
                   "not assessed: the cluster facts have no operator section", _source_text(row))
            return
        ready = row["values"]["ready_state"]
        for item in state["crs"]:
            if item["state"] == ready:
                continue
            reasons = _reasons(item["conditions"])
            observed = item["state"] or "no status.state"
            message = "%s %s is %s" % (item["kind"], item["name"], observed if item["state"] else "not reconciled yet "
                                       "(no status.state)")
            message += (": " + "; ".join(reasons)) if reasons else " (no conditions explain it)"
            ev.add(row["id"], row["severity"], "%s/%s" % (item["kind"], item["name"]), observed, ready,
                   message + "; resolve it before the upgrade or the canary", _source_text(row))


class StuckClaims(_StateKind):
    """``stuck_claims``: more ResourceClaims deleted but still allocated than allowed."""

    name = "stuck_claims"
    value_keys = ("max_deleting_allocated",)
    default_id, what = "dra.stuck_claims", "stuck ResourceClaims"

    def validate(self, row, values, where):
        _int(values, "max_deleting_allocated", where)

    def check_state(self, ev, row, state):
        claims = state["resource_claims"]
        count = claims.get("deleting_allocated") if claims else None
        if isinstance(count, bool) or not isinstance(count, int):
            ev.add(row["id"] + NOT_ASSESSED, ev.unassessed(row), CLUSTER, None, None,
                   "not assessed: the cluster facts have no resource_claims.deleting_allocated", _source_text(row))
            return
        limit = row["values"]["max_deleting_allocated"]
        if count <= limit:
            return
        stuck = []
        for item in claims.get("stuck") or []:
            if isinstance(item, dict):
                stuck.append("%s/%s" % (item.get("namespace"), item.get("name")))
            else:
                stuck.append(str(item))
        message = ("%d ResourceClaim(s) are deleted but still allocated (deleted,allocated,reserved): the kubelet plugin "
                   "has not unprepared them" % count)
        if stuck:
            message += " (%s)" % _names(stuck)
        message += "; %s of %s claim(s) allocated" % (claims.get("allocated"), claims.get("total"))
        ev.add(row["id"], row["severity"], CLUSTER, "deleting_allocated %d" % count, "<= %d" % limit, message,
               _source_text(row))


def _names(names):
    shown = ", ".join(names[:_NAMES_SHOWN])
    if len(names) > _NAMES_SHOWN:
        shown += " and %d more" % (len(names) - _NAMES_SHOWN)
    return shown


def _reasons(conditions):
    """The conditions that explain a CR that is not ready: Ready not True, Error True; else any with a reason."""
    bad = [c for c in conditions if isinstance(c, dict) and (
        (c.get("type") == "Ready" and c.get("status") != "True") or (c.get("type") == "Error" and c.get("status") == "True"))]
    if not bad:
        bad = [c for c in conditions if isinstance(c, dict) and c.get("reason")]
    out = []
    for cond in bad:
        text = "%s=%s" % (cond.get("type"), cond.get("status"))
        if cond.get("reason"):
            text += " reason %s" % cond["reason"]
        if cond.get("message"):
            text += " (%s)" % cond["message"]
        out.append(text)
    return out
