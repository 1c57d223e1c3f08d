# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rules of ``compat_check`` on the observed cluster state: pure logic, no I/O.

:class:`_StateChecksMixin` is mixed into ``compat._Evaluator``. Except for the DRA API check
(which says "not assessed" without facts), these rules read what only the gpu_cluster_facts form
of ``cluster`` carries (``cluster["state"]``, see :mod:`compat_cluster_facts`) and are silent for
the simple form: one GPU backend per node, the DRA play's nodes and the Device Plugin, operator
CR readiness, DeviceClasses bridging the Device Plugin's resource name, and stuck ResourceClaims.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_cluster_facts import api_served
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat_options import (
    CLUSTER,
    NOT_ASSESSED,
    _source_text,
)

#: How many names a message lists before "and N more".
_NAMES_SHOWN = 5
_DEVICE_PLUGIN_BACKENDS = ("device_plugin", "both")


class _StateChecksMixin(object):
    """Checks of the observed cluster state of one evaluation (see ``compat._Evaluator``)."""

    def check_state(self):
        state = self.cluster["state"] if self.cluster else None
        self._check_dra_api(state)
        if state is None:
            return
        self._check_backends(state)
        self._check_dra_pool(state)
        self._check_bridge(state)
        self._check_cr_state(state)
        self._check_claims(state)

    def _row(self, rule, default_id, what):
        rows = self.by_rule.get(rule, [])
        if not rows:
            self.missing_row(default_id, what)
            return None
        return rows[0]

    def _subject(self, state, node):
        return state.get("subjects", {}).get(node, node)

    def _check_dra_api(self, state):
        rows = self.by_rule.get("api_served", [])
        for row in rows:
            values = row["values"]
            mode = values.get("requires_allocation_mode")
            if mode and self.target["allocation_mode"] != mode:
                continue
            group_version = values["group_version"]
            served = api_served(state["apis"], group_version) if state else None
            if served is True:
                continue
            if served is False:
                self.add(row["id"], row["severity"], CLUSTER, "%s not served" % group_version, group_version + " served",
                         "the API server does not serve %s (the GA DRA API, Kubernetes 1.34+): allocation_mode %s has "
                         "no API to allocate through; enable the resource.k8s.io API group (DynamicResourceAllocation) "
                         "or move to Kubernetes 1.34 or later" % (group_version, self.target["allocation_mode"]),
                         _source_text(row))
                continue
            why = ("no cluster facts given" if self.cluster is None else
                   "the simple form of cluster says nothing about served APIs (give gpu_cluster_facts)" if state is None
                   else "the cluster facts have no apis section")
            self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, group_version + " served",
                     "not assessed: whether the API server serves %s is unknown: %s" % (group_version, why),
                     _source_text(row))

    def _check_backends(self, state):
        row = self._row("single_backend", "backend.single_per_node", "one GPU backend per node")
        if row is None:
            return
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
                self.add(row["id"], row["severity"], self._subject(state, node), observed,
                         "one of device_plugin, dra",
                         "node %s serves %s through both the Device Plugin and DRA: each node has only one backend for "
                         "a resource name; stop the Device Plugin (or the DRA kubelet plugin) on it" % (node, name),
                         _source_text(row))
        if unknown and state["nodes"]:
            self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, "%d node(s) with gpu_backend null" % unknown,
                     "gpu_backend of every node",
                     "not assessed: the GPU backend of %d of %d node(s) is unknown (DRA ResourceSlices not gathered)"
                     % (unknown, len(state["nodes"])), _source_text(row))

    def _check_dra_pool(self, state):
        if not self.dra:
            return
        row = self._row("dra_pool_backend", "backend.dra_canary_pool", "the DRA pool's backends")
        if row is None:
            return
        name = row["values"]["resource_name"]
        play_nodes = state.get("play_nodes") or []
        if not play_nodes:
            if state["nodes"]:
                self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, "the play's hosts among the cluster's nodes",
                         "not assessed: none of the play's hosts is a node of the cluster facts (matched by name or "
                         "short name), so the DRA pool's current backends are unknown", _source_text(row))
            return
        for node in play_nodes:
            if state["nodes"][node]["gpu_backend"] != "device_plugin":
                continue
            self.add(row["id"], row["severity"], self._subject(state, node), "gpu_backend device_plugin",
                     "a node outside the Device Plugin pool (gpu_backend none or dra)",
                     "node %s of this allocation_mode dra play serves %s through the Device Plugin now: qualify DRA on "
                     "a separate canary pool or cluster; take the node out of the Device Plugin pool (drain it, keep "
                     "the Device Plugin off it) before DRA serves it, since a node has only one backend for a resource "
                     "name" % (node, name), _source_text(row))

    def _check_bridge(self, state):
        row = self._row("extended_resource_bridge", "backend.extended_resource_bridge", "DeviceClass bridges")
        if row is None:
            return
        name = row["values"]["resource_name"]
        classes = state["device_classes"]
        if classes is None:
            self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, None,
                     "not assessed: the cluster facts have no device_classes", _source_text(row))
            return
        bridges = [c for c in classes if c.get("extended_resource_name") == name]
        if not bridges:
            return
        plugin_nodes = sorted(n for n, f in state["nodes"].items() if f["gpu_backend"] in _DEVICE_PLUGIN_BACKENDS)
        if not plugin_nodes:
            return
        for item in bridges:
            self.add(row["id"], row["severity"], "DeviceClass/%s" % item.get("name"),
                     "extendedResourceName %s; Device Plugin on %d node(s)" % (name, len(plugin_nodes)),
                     "no node with both backends",
                     "DeviceClass %s maps %s to DRA while %d node(s) serve it through the Device Plugin (%s): upstream "
                     "permits the same resource name from the Device Plugin on one node pool and DRA on another, as long "
                     "as each node has only one backend; keep this class in the rollback artifacts"
                     % (item.get("name"), name, len(plugin_nodes), _names(plugin_nodes)), _source_text(row))

    def _check_cr_state(self, state):
        row = self._row("cr_state", "operator.cr_state", "the operator CRs' state")
        if row is None:
            return
        if state["crs"] is None:
            self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, None,
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
            self.add(row["id"], row["severity"], "%s/%s" % (item["kind"], item["name"]), observed, ready,
                     message + "; resolve it before the upgrade or the canary", _source_text(row))

    def _check_claims(self, state):
        row = self._row("stuck_claims", "dra.stuck_claims", "stuck ResourceClaims")
        if row is None:
            return
        claims = state["resource_claims"]
        count = claims.get("deleting_allocated") if claims else None
        if isinstance(count, bool) or not isinstance(count, int):
            self.add(row["id"] + NOT_ASSESSED, "info", CLUSTER, None, None,
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
        self.add(row["id"], row["severity"], CLUSTER, "deleting_allocated %d" % count, "<= %d" % limit, message,
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
