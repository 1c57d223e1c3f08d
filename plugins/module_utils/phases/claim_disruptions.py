# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Disruptions injected into a claim lifecycle run (issue 12 section 2; docs/acceptance.md).

Each disruption starts once ``after`` lifecycles are done and is observed through the run's own
watches and reads; nothing is inferred from sleeps. The kinds:

- ``device_taint``: a DeviceTaintRule (``resource.k8s.io/v1``) taints one device with ``effect``
  NoSchedule or NoExecute for ``lifecycles`` further lifecycles. The target is the device of a Ready
  lifecycle (of ``prefer_kind`` when one is Ready, so an extended-resource pod is among the evicted).
  Evidence: every pod that held the device when the taint came and whether it was evicted (with the
  seconds after the taint), every allocation of the tainted device while the rule stood (goal: none),
  and the allocations of other devices meanwhile (the pool still serves). A pod not evicted within
  ``eviction_timeout`` under NoExecute is a finding, never hidden (kubernetes issue 141290 reports
  this for extended-resource pods).
- ``plugin_restart``: the DRA kubelet plugin pod of ``node`` (label ``app=<plugin_label>`` in
  ``plugin_namespace``) is deleted; recovery is a new plugin pod Ready on the node and the node's
  ResourceSlices published again (seconds recorded). The lifecycles Running on the node at that moment
  are named; their records show whether their claims were cleaned up (a leaked assignment is a
  cleanup defect of the run).
- ``workload_restart``: ``pods`` Ready lifecycle pods are deleted early (a workload restart); per pod
  the time until its claim was deallocated and deleted (the devices free again) is recorded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError

KINDS = ("device_taint", "plugin_restart", "workload_restart")
TAINT_KEY = "gpufleet.io/dra-acceptance"
RULES_PATH = "/apis/resource.k8s.io/v1/devicetaintrules"
ALLOWED = {"device_taint": {"effect", "node", "device", "lifecycles", "prefer_kind", "eviction_timeout"},
           "plugin_restart": {"node", "plugin_namespace", "plugin_label", "recovery_timeout"},
           "workload_restart": {"pods", "recovery_timeout"}}


class DisruptionError(ValueError):
    """Bad disruption options; the message names the field."""


def validate(items, count):
    """The disruptions option, normalised; :class:`DisruptionError` names the bad field."""
    out = []
    for index, item in enumerate(items or []):
        where = "disruptions[%d]" % index
        if not isinstance(item, dict):
            raise DisruptionError("%s: must be a mapping with type, got %r" % (where, item))
        kind = item.get("type")
        if kind not in KINDS:
            raise DisruptionError("%s.type: must be one of %s, got %r" % (where, ", ".join(KINDS), kind))
        allowed = {"type", "after"} | ALLOWED[kind]
        unknown = sorted(set(item) - allowed)
        if unknown:
            raise DisruptionError("%s: unknown key(s) %s for type %s (allowed: %s)" % (
                where, ", ".join(unknown), kind, ", ".join(sorted(allowed))))
        after = item.get("after", count // 3)
        if isinstance(after, bool) or not isinstance(after, int) or not 0 <= after < count:
            raise DisruptionError("%s.after: must be a whole number of lifecycles done, 0 <= after < count (%d), got %r"
                                  % (where, count, after))
        norm = {"type": kind, "after": after, "index": index}
        if kind == "device_taint":
            if item.get("effect") not in ("NoSchedule", "NoExecute"):
                raise DisruptionError("%s.effect: must be NoSchedule or NoExecute, got %r" % (where, item.get("effect")))
            norm.update(effect=item["effect"], node=item.get("node"), device=item.get("device"),
                        lifecycles=_whole(item.get("lifecycles", 10), where + ".lifecycles", 1),
                        prefer_kind=item.get("prefer_kind", "extended"),
                        eviction_timeout=_seconds(item.get("eviction_timeout", 60), where + ".eviction_timeout"))
        elif kind == "plugin_restart":
            if not isinstance(item.get("node"), str) or not item.get("node"):
                raise DisruptionError("%s.node: the node whose DRA kubelet plugin restarts is required" % where)
            norm.update(node=item["node"], plugin_namespace=item.get("plugin_namespace", "gpu-operator"),
                        plugin_label=item.get("plugin_label", "nvidia-dra-driver-kubelet-plugin"),
                        recovery_timeout=_seconds(item.get("recovery_timeout", 120), where + ".recovery_timeout"))
        else:
            norm.update(pods=_whole(item.get("pods", 1), where + ".pods", 1),
                        recovery_timeout=_seconds(item.get("recovery_timeout", 120), where + ".recovery_timeout"))
        out.append(norm)
    return out


def _whole(value, where, minimum):
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise DisruptionError("%s: must be a whole number >= %d, got %r" % (where, minimum, value))
    return value


def _seconds(value, where):
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise DisruptionError("%s: must be a positive number of seconds, got %r" % (where, value))
    return float(value)


def _key(device):
    return "%s/%s/%s" % (device.get("driver"), device.get("pool"), device.get("device"))


class Disruptions:
    """Drives the plan's disruptions from the run's loop (``step`` after each pass, ``finish`` at the end)."""

    def __init__(self, run, items):
        self.run, self.items = run, items
        self.events = []
        self.state = {}  # index -> dict of the disruption in progress
        self.waiting = {}  # index -> monotonic time a disruption first looked for its target

    # called with the tracker's lock NOT held
    def step(self, active):
        done = self.run.done
        for item in self.items:
            state = self.state.get(item["index"])
            if state is None:
                if done >= item["after"]:
                    started = getattr(self, "_start_" + item["type"])(item, active)
                    if started is not None:
                        self.state[item["index"]] = started
            elif not state.get("finished"):
                getattr(self, "_watch_" + item["type"])(item, state, active)

    def pending_recovery(self):
        """Whether a started restart still waits for its recovery (the run does not end before it)."""
        return any(not state.get("finished") for index, state in self.state.items()
                   if self.items[index]["type"] in ("plugin_restart", "workload_restart"))

    def finish(self):
        """End what is still open (remove taint rules) and return the events."""
        for item in self.items:
            state = self.state.get(item["index"])
            if state is None:
                self.events.append({"type": item["type"], "index": item["index"], "started": False,
                                    "why": "the run ended before %d lifecycles were done" % item["after"]})
            elif not state.get("finished"):
                getattr(self, "_end_" + item["type"])(item, state, "the run ended")
        return self.events

    # -- device taints -------------------------------------------------------------------------

    def _holders(self, key):
        with self.run.tracker.lock:
            return [life for life in self.run.tracker.by_pod.values()
                    if life.state == "running" and life.devices and key in [_key(d) for d in life.devices]]

    def _start_device_taint(self, item, active):
        target = None
        first = self.waiting.setdefault(item["index"], time.monotonic())
        with self.run.tracker.lock:
            ready = [life for life in active if life.state == "running" and life.devices and "ready_at" in life.times
                     and (not item["node"] or life.node == item["node"])]
            ready.sort(key=lambda life: (life.kind != item["prefer_kind"], life.index))
            if ready and ready[0].kind != item["prefer_kind"] and time.monotonic() - first < item["eviction_timeout"] / 2:
                ready = []  # wait (bounded) for a Ready lifecycle of the preferred kind
            for life in ready:
                for device in life.devices:
                    if not item["device"] or device.get("device") == item["device"]:
                        target = dict(device)
                        break
                if target:
                    break
        if target is None:
            return None  # no Ready lifecycle holds a device yet: try again on the next pass
        key = _key(target)
        holders = self._holders(key)
        name = "dra-gate-%s-taint-%d" % (self.run.plan["run_id"], item["index"])
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceTaintRule",
                "metadata": {"name": name, "labels": {"gpufleet.io/dra-acceptance-run": self.run.plan["run_id"]}},
                "spec": {"deviceSelector": {"driver": target["driver"], "pool": target["pool"], "device": target["device"]},
                         "taint": {"key": TAINT_KEY, "value": self.run.plan["run_id"], "effect": item["effect"]}}}
        at = self.run.now_stamp()
        if item["effect"] == "NoExecute":  # the holders stay until evicted (or eviction_timeout)
            self.run.hold_back.update(life.pod for life in holders)
        self.run.reader.request("POST", RULES_PATH, [("fieldManager", "gpufleet-dra-gate")], body)
        return {"rule": name, "device": key, "node": target["pool"], "at": at, "mono": time.monotonic(),
                "done_at_start": self.run.done,
                "holders": dict((life.pod, {"pod": life.pod, "kind": life.kind, "claim": life.claim}) for life in holders)}

    def _watch_device_taint(self, item, state, active):
        with self.run.tracker.lock:
            for pod, holder in state["holders"].items():
                life = self.run.tracker.by_pod.get(pod)
                if life is not None and "evicted_at" in life.times and "evicted_at" not in holder:
                    holder["evicted_at"] = life.times["evicted_at"]
                    holder["reason"] = life.evicted_reason
        evicting = item["effect"] == "NoExecute"
        waited = time.monotonic() - state["mono"]
        all_evicted = all("evicted_at" in h for h in state["holders"].values())
        if self.run.done - state["done_at_start"] >= item["lifecycles"] and (
                not evicting or all_evicted or waited >= item["eviction_timeout"]):
            self._end_device_taint(item, state, "%d lifecycles ran under the taint" % item["lifecycles"])

    def _end_device_taint(self, item, state, why):
        removed_at = self.run.now_stamp()
        try:
            self.run.reader.request("DELETE", "%s/%s" % (RULES_PATH, state["rule"]), None,
                                    {"kind": "DeleteOptions", "apiVersion": "v1"})
        except K8sApiError as exc:
            if not kube.not_found(exc):
                raise
        state["finished"] = True
        self.run.hold_back.difference_update(state["holders"])
        tainted, others = [], 0
        for rec in (self.run.records or []) + self.run.live_records():
            allocated = rec.get("allocated_at")
            if not allocated or not (state["at"] < allocated < removed_at):
                continue
            if state["device"] in [_key(d) for d in rec.get("devices") or []]:
                tainted.append(rec["claim"])
            else:
                others += 1
        holders = sorted(state["holders"].values(), key=lambda h: h["pod"])
        for holder in holders:
            holder["evicted"] = "evicted_at" in holder
        self.events.append({
            "type": "device_taint", "index": item["index"], "started": True, "effect": item["effect"],
            "device": state["device"], "rule": state["rule"], "tainted_at": state["at"], "removed_at": removed_at,
            "ended_because": why, "holders": holders,
            "evicted": [h for h in holders if h["evicted"]],
            "not_evicted": [h["pod"] for h in holders if not h["evicted"]] if item["effect"] == "NoExecute" else [],
            "extended_holders": [h["pod"] for h in holders if h["kind"] == "extended"],
            "allocations_on_tainted_device": tainted, "allocations_elsewhere": others})

    # -- plugin restart -------------------------------------------------------------------------

    def _plugin_pods(self, item):
        path = "/api/v1/namespaces/%s/pods" % item["plugin_namespace"]
        return [p for p in self.run.reader.list(path, label_selector="app=%s" % item["plugin_label"])
                if (p.get("spec") or {}).get("nodeName") == item["node"]]

    def _start_plugin_restart(self, item, active):
        pods = self._plugin_pods(item)
        if not pods:
            raise K8sApiError("plugin_restart", None, "no %s pod on node %s in %s" % (
                item["plugin_label"], item["node"], item["plugin_namespace"]))
        with self.run.tracker.lock:
            prepared = sorted(life.claim or life.pod for life in active if life.node == item["node"]
                              and life.state == "running" and "ready_at" in life.times)
        at = self.run.now_stamp()
        old = set()
        for pod in pods:
            old.add((pod.get("metadata") or {}).get("uid"))
            try:
                self.run.reader.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (
                    item["plugin_namespace"], pod["metadata"]["name"]), None, {"kind": "DeleteOptions", "apiVersion": "v1"})
            except K8sApiError as exc:
                if not kube.not_found(exc):
                    raise
        return {"at": at, "mono": time.monotonic(), "old": old, "prepared": prepared, "last_check": 0.0}

    def _watch_plugin_restart(self, item, state, active):
        now = time.monotonic()
        if now - state["last_check"] < 0.2:
            return
        state["last_check"] = now
        new = [p for p in self._plugin_pods(item) if (p.get("metadata") or {}).get("uid") not in state["old"]
               and not (p.get("metadata") or {}).get("deletionTimestamp")
               and any(c.get("type") == "Ready" and c.get("status") == "True"
                       for c in (p.get("status") or {}).get("conditions") or [])]
        slices = [s for s in self.run.reader.list("/apis/resource.k8s.io/v1/resourceslices")
                  if (s.get("spec") or {}).get("nodeName") == item["node"] and (s.get("spec") or {}).get("devices")]
        if new and slices:
            self._end_plugin_restart(item, state, None, recovered=(self.run.now_stamp(), now - state["mono"], new[0]))
        elif now - state["mono"] >= item["recovery_timeout"]:
            self._end_plugin_restart(item, state, "no Ready plugin pod with published slices within %.0f s"
                                     % item["recovery_timeout"])

    def _end_plugin_restart(self, item, state, why, recovered=None):
        state["finished"] = True
        self.events.append({
            "type": "plugin_restart", "index": item["index"], "started": True, "node": item["node"],
            "restarted_at": state["at"], "recovered": recovered is not None,
            "recovered_at": recovered[0] if recovered else None,
            "recovery_seconds": round(recovered[1], 3) if recovered else None,
            "new_pod": recovered[2]["metadata"]["name"] if recovered else None,
            "prepared_claims": state["prepared"], "why": why})

    # -- workload restart -----------------------------------------------------------------------

    def _start_workload_restart(self, item, active):
        with self.run.tracker.lock:
            ready = [life for life in active if life.state == "running" and "ready_at" in life.times and life.claim]
        if len(ready) < item["pods"]:
            return None
        chosen = sorted(ready, key=lambda life: life.index)[:item["pods"]]
        at = self.run.now_stamp()
        for life in chosen:
            self.run.restart(life)
        return {"at": at, "mono": time.monotonic(), "pods": [life.pod for life in chosen]}

    def _watch_workload_restart(self, item, state, active):
        with self.run.tracker.lock:
            lives = [self.run.tracker.by_pod[p] for p in state["pods"]]
            freed = [life for life in lives if life.state == "done" or (life.pod_gone and
                     (self.run.tracker.claim_of(life) is None or self.run.tracker.claim_of(life).gone))]
        if len(freed) == len(lives) or time.monotonic() - state["mono"] >= item["recovery_timeout"]:
            self._end_workload_restart(item, state, None if len(freed) == len(lives) else "not every claim was freed "
                                       "within %.0f s" % item["recovery_timeout"])

    def _end_workload_restart(self, item, state, why):
        state["finished"] = True
        pods = []
        with self.run.tracker.lock:
            for name in state["pods"]:
                life = self.run.tracker.by_pod[name]
                obs = self.run.tracker.claim_of(life)
                times = obs.times if obs is not None else {}
                pods.append({"pod": name, "claim": life.claim, "deleted_at": life.times.get("delete_requested_at"),
                             "deallocated_at": times.get("deallocated_at"), "claim_deleted_at": times.get("deleted_at"),
                             "freed": bool(obs is not None and obs.gone)})
        self.events.append({"type": "workload_restart", "index": item["index"], "started": True,
                            "restarted_at": state["at"], "pods": pods, "why": why,
                            "leaked": [p["claim"] for p in pods if not p["freed"]]})
