# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Node drains and rollouts: the logic behind ``drain_node`` and ``node_rollout`` (docs/drain.md).

Pure parts (unit-tested on recorded objects): :func:`validate_drain` / :func:`validate_rollout` check the
options naming the field; :func:`classify` sorts a node's pods the way ``kubectl drain`` does
(DaemonSet pods ignored, mirror pods left, unmanaged and emptyDir pods only with their options, finished
pods deleted); :func:`claims_reserved_on` names the ResourceClaims allocated on a node that are still
reserved; :func:`node_snapshot` / :func:`health_gaps` record and compare a node's device health;
:func:`reschedules` decides which evicted workloads run again.

The side effects go through one :class:`~k8s_client.K8sReader`: :class:`Drain` cordons, evicts through
``policy/v1`` Evictions (a 429 is a PodDisruptionBudget refusal: retried every ``retry_interval`` up to
the deadline and counted per pod; 5xx answers and transport failures are retried and counted apart),
waits until each evicted pod is gone by UID, and then until the node's claims are released. Every time
in a record is the wall-clock time the answer came (RFC 3339 UTC with microseconds, common/clock.py); waits poll every
``poll_interval`` against a deadline, never sleep for an outcome.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import client as k8s_client
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError

MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
GPU_RESOURCE = "nvidia.com/gpu"
NODE_NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$")
FALLBACKS = ("none", "delete")
#: Controllers that recreate an evicted pod: a reschedule attempt per evicted pod they own.
RESCHEDULING_OWNERS = ("ReplicaSet", "StatefulSet", "ReplicationController", "Job")


class DrainError(ValueError):
    """Bad options: the message starts with the option's name."""


class DrainFailed(Exception):
    """A drain or rollout step that did not finish: ``message`` names what is left; ``result`` is the
    partial record (returned with the failure)."""

    def __init__(self, message, result=None):
        super(DrainFailed, self).__init__(message)
        self.result = result or {}


# One clock (common/clock.py): the recorded stamp and its parser (None for a missing or bad stamp).
utc_now = clock.utc_now
parse_stamp = clock.parse_or_none


def _number(params, name, allow_zero=False):
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        raise DrainError("%s: must be a %s number of seconds, got %r" % (
            name, "non-negative" if allow_zero else "positive", value))
    return float(value)


def validate_node(name):
    if not isinstance(name, str) or not NODE_NAME_RE.match(name) or len(name) > 253:
        raise DrainError("node: must be a Kubernetes node name (lower-case DNS subdomain), got %r" % (name,))
    return name


def validate_drain(params):
    """The drain options as a plan; DrainError naming the first bad field."""
    plan = {"node": validate_node(params.get("node"))}
    for name in ("timeout", "retry_interval", "poll_interval"):
        plan[name] = _number(params, name)
    plan["fallback_after"] = _number(params, "fallback_after", allow_zero=True)
    grace = params.get("grace_period")
    if grace is not None and (isinstance(grace, bool) or not isinstance(grace, int) or grace < 0):
        raise DrainError("grace_period: must be a whole number of seconds >= 0 or absent (the pods' own), got %r" % (grace,))
    plan["grace_period"] = grace
    if params.get("eviction_fallback") not in FALLBACKS:
        raise DrainError("eviction_fallback: must be one of %s, got %r" % (", ".join(FALLBACKS), params.get("eviction_fallback")))
    plan["eviction_fallback"] = params["eviction_fallback"]
    for name in ("delete_emptydir_data", "delete_unmanaged", "wait_for_claims"):
        plan[name] = bool(params.get(name))
    return plan


# -- pods -----------------------------------------------------------------------------------------

def pod_ref(pod):
    meta = kube.meta(pod)
    owner = kube.controller_of(pod)
    out = {"namespace": meta.get("namespace"), "name": meta.get("name"), "uid": meta.get("uid")}
    out["owner"] = {"kind": owner.get("kind"), "name": owner.get("name"), "uid": owner.get("uid")} if owner else None
    return out


def finished(pod):
    return ((pod or {}).get("status") or {}).get("phase") in ("Succeeded", "Failed")


def classify(pods, plan):
    """(evict, skipped, blocked) for the pods on the node, as ``kubectl drain`` filters them: DaemonSet pods
    are ignored (the DaemonSet controller would put them back), mirror pods are left (the kubelet owns them),
    pods already terminating are only waited for; a pod with no controller is deleted for good and one with
    an emptyDir loses its data, so each needs its option, else it blocks the drain (named with the option)."""
    evict, skipped, blocked = [], [], []
    for pod in sorted(pods, key=lambda p: (kube.meta(p).get("namespace") or "", kube.meta(p).get("name") or "")):
        ref = pod_ref(pod)
        owner = kube.controller_of(pod)
        annotations = kube.meta(pod).get("annotations") or {}
        if MIRROR_ANNOTATION in annotations:
            skipped.append(dict(ref, reason="mirror pod (the kubelet's static pod): left in place"))
            continue
        if owner is not None and owner.get("kind") == "DaemonSet" and not finished(pod):
            skipped.append(dict(ref, reason="DaemonSet-managed: ignored"))
            continue
        if finished(pod):
            evict.append(dict(ref, finished=True))
            continue
        reasons = []
        if owner is None and not plan["delete_unmanaged"]:
            reasons.append("not managed by a controller (nothing recreates it): set delete_unmanaged to delete it")
        volumes = [v.get("name") for v in ((pod.get("spec") or {}).get("volumes") or [])
                   if isinstance(v, dict) and "emptyDir" in v]
        if volumes and not plan["delete_emptydir_data"]:
            reasons.append("uses emptyDir volume(s) %s (their data is lost): set delete_emptydir_data" % ", ".join(volumes))
        if reasons:
            blocked.append(dict(ref, reason="; ".join(reasons)))
            continue
        evict.append(dict(ref, finished=False, terminating=bool(kube.meta(pod).get("deletionTimestamp"))))
    return evict, skipped, blocked


def _refusal(exc):
    """The PodDisruptionBudget's own words from a 429 Status (its cause), else the message."""
    doc = getattr(exc, "status_doc", None) or {}
    for cause in ((doc.get("details") or {}).get("causes") or []):
        if isinstance(cause, dict) and cause.get("reason") == "DisruptionBudget" and cause.get("message"):
            return cause["message"]
    return doc.get("message") or str(exc)


# -- claims ---------------------------------------------------------------------------------------

def _allocated_on(claim, node):
    allocation = ((claim or {}).get("status") or {}).get("allocation") or {}
    for term in ((allocation.get("nodeSelector") or {}).get("nodeSelectorTerms") or []):
        for field in (term or {}).get("matchFields") or []:
            if field.get("key") == "metadata.name" and field.get("operator") == "In" and node in (field.get("values") or []):
                return True
    results = ((allocation.get("devices") or {}).get("results") or [])
    return any(isinstance(r, dict) and r.get("pool") == node for r in results)


def claims_reserved_on(claims, node, ignore_uids=()):
    """The claims allocated on ``node`` whose ``reservedFor`` still names a consumer (other than the pods
    left on purpose, ``ignore_uids``: DaemonSet and mirror pods stay and keep theirs)."""
    held = []
    for claim in claims:
        if not _allocated_on(claim, node):
            continue
        consumers = [r for r in ((claim.get("status") or {}).get("reservedFor") or [])
                     if isinstance(r, dict) and r.get("uid") not in ignore_uids]
        if consumers:
            held.append({"namespace": kube.meta(claim).get("namespace"), "name": kube.meta(claim).get("name"),
                         "reserved_for": ["%s/%s" % (r.get("resource", "pods"), r.get("name")) for r in consumers]})
    return held


# -- node state -----------------------------------------------------------------------------------

def node_ready(node):
    return kube.condition_true(node, "Ready")


def _gpu_count_or_none(value):
    """The allocatable GPU count; None where it is absent or not an integer quantity (the record keeps None)."""
    try:
        return kube.quantity_int(value)
    except ValueError:
        return None


def node_snapshot(node, slices):
    """What device health means for this node, to compare after the maintenance: its allocatable
    ``nvidia.com/gpu`` (device-plugin nodes) and the devices of its ResourceSlices (DRA nodes)."""
    name = kube.meta(node).get("name")
    allocatable = ((node.get("status") or {}).get("allocatable") or {}).get(GPU_RESOURCE)
    devices = sorted("%s/%s/%s" % ((s.get("spec") or {}).get("driver"), ((s.get("spec") or {}).get("pool") or {}).get("name"),
                                   d.get("name"))
                     for s in slices if (s.get("spec") or {}).get("nodeName") == name
                     for d in ((s.get("spec") or {}).get("devices") or []) if isinstance(d, dict))
    return {"node": name, "ready": node_ready(node), "unschedulable": bool((node.get("spec") or {}).get("unschedulable")),
            "boot_id": ((node.get("status") or {}).get("nodeInfo") or {}).get("bootID"),
            "allocatable_gpu": _gpu_count_or_none(allocatable), "slice_devices": devices}


def read_snapshot(reader, node):
    """:func:`node_snapshot` of ``node`` (an object just read) with its ResourceSlices read through ``reader``
    (none on a cluster without the DRA API; a 403 stays an error)."""
    try:
        slices = reader.list("/apis/resource.k8s.io/v1/resourceslices",
                             field_selector="spec.nodeName=%s" % kube.meta(node).get("name"))
    except K8sApiError as exc:
        if not kube.not_found(exc):
            raise
        slices = []
    return node_snapshot(node, slices)


def health_gaps(expected, now, new_boot=False):
    """What keeps device health from being restored (empty: restored): NotReady, fewer allocatable GPUs than
    recorded, recorded ResourceSlice devices missing; with ``new_boot`` (the maintenance reboots) also the
    recorded ``bootID`` still there - a node that has not gone down yet still reads Ready with its devices."""
    gaps = []
    if new_boot and now.get("boot_id") == expected.get("boot_id"):
        gaps.append("node %s has not rebooted yet (bootID %s unchanged)" % (now["node"], now.get("boot_id")))
    if not now["ready"]:
        gaps.append("node %s is not Ready" % now["node"])
    want = expected.get("allocatable_gpu")
    if want:
        have = now.get("allocatable_gpu") or 0
        if have < want:
            gaps.append("allocatable %s is %d, recorded %d" % (GPU_RESOURCE, have, want))
    missing = sorted(set(expected.get("slice_devices") or []) - set(now.get("slice_devices") or []))
    if missing:
        gaps.append("ResourceSlice devices not republished: %s" % ", ".join(missing[:8]) + (
            " and %d more" % (len(missing) - 8) if len(missing) > 8 else ""))
    return gaps


# -- reschedules ----------------------------------------------------------------------------------

def _running(pod):
    return ((pod.get("status") or {}).get("phase")) == "Running"


def _why_not_running(pods):
    """The reason the replacements do not run, from their own status (the scheduler's words when unschedulable)."""
    for pod in pods:
        cond = kube.condition(pod, "PodScheduled") or {}
        if cond.get("status") == "False":
            return "%s: %s" % (cond.get("reason") or "Unschedulable", cond.get("message") or "not scheduled")
    for pod in pods:
        phase = (pod.get("status") or {}).get("phase") or "Pending"
        return "replacement %s is %s" % (kube.meta(pod).get("name"), phase)
    return None


def reschedules(evictions, pods):
    """Which drain-triggered reschedule attempts succeeded: per evicted pod whose controller recreates pods
    (:data:`RESCHEDULING_OWNERS`), one attempt, satisfied by a distinct pod of the same controller that did
    not exist at the eviction (another UID, created no earlier than the second of the eviction: Kubernetes
    stamps creation to the second) and is Running, on any node. Returns (attempts, failed, not_counted)."""
    evicted_uids = set(e.get("uid") for e in evictions)
    groups = {}
    not_counted = []
    for ev in evictions:
        owner = ev.get("owner") or {}
        if ev.get("finished"):
            not_counted.append(dict(_short(ev), reason="finished before the drain (Succeeded/Failed): not rescheduled"))
            continue
        if owner.get("kind") not in RESCHEDULING_OWNERS:
            not_counted.append(dict(_short(ev), reason="no controller that recreates it (%s): not rescheduled" % (
                owner.get("kind") or "unmanaged")))
            continue
        groups.setdefault((ev.get("namespace"), owner.get("uid")), []).append(ev)
    attempts, failed = 0, []
    by_owner = {}
    for pod in pods:
        owner = kube.controller_of(pod)
        if owner is not None:
            by_owner.setdefault((kube.meta(pod).get("namespace"), owner.get("uid")), []).append(pod)
    for key, evs in sorted(groups.items(), key=lambda kv: (kv[0][0] or "", kv[1][0].get("name") or "")):
        attempts += len(evs)
        since = min(int(parse_stamp(e.get("evicted_at")) or 0) for e in evs)
        fresh = [p for p in by_owner.get(key, []) if kube.meta(p).get("uid") not in evicted_uids
                 and int(parse_stamp(kube.meta(p).get("creationTimestamp")) or 0) >= since]
        running = [p for p in fresh if _running(p)]
        missing = len(evs) - len(running)
        if missing <= 0:
            continue
        reason = _why_not_running([p for p in fresh if not _running(p)]) or "no replacement pod was created by %s %s" % (
            evs[0]["owner"].get("kind"), evs[0]["owner"].get("name"))
        for ev in sorted(evs, key=lambda e: e.get("name") or "")[-missing:]:
            failed.append(dict(_short(ev), reason=reason))
    return attempts, failed, not_counted


def _short(ev):
    return {"namespace": ev.get("namespace"), "name": ev.get("name"), "uid": ev.get("uid"), "owner": ev.get("owner")}


# -- the drain ------------------------------------------------------------------------------------

class _Once(k8s_client.RetryPolicy):
    """No retry inside a request: the drain retries evictions itself and counts each kind of retry."""

    @staticmethod
    def retryable(method, status, failure):
        return False


class Drain(object):
    """Cordon, evict and wait, against ``reader``; ``clock``/``sleep`` are injectable."""

    def __init__(self, reader, plan, clock=None, sleep=None, progress=None):
        self.reader = reader
        self.plan = plan
        self.clock = clock or time.monotonic
        self.sleep = sleep or time.sleep
        self.progress = progress or (lambda line: None)
        self.once = k8s_client.K8sReader(reader.api_client, timeout=reader.timeout, policy=_Once(deadline=reader.policy.deadline))
        self.node_path = "/api/v1/nodes/%s" % plan["node"]
        self.cordoned_by_us = False
        self.evictions = []
        #: The drain's record, also when :meth:`run` ends in an exception: ``timings`` holds every step's
        #: seconds (``cordon_seconds`` set by the caller), null for a step that did not run.
        self.record = {"evictions": self.evictions, "claims_waited": [],
                       "timings": {"cordon_seconds": None, "evict_seconds": None, "claims_seconds": None}}

    # node ------------------------------------------------------------------------------------------
    def node(self):
        return self.reader.get(self.node_path)

    def set_unschedulable(self, value):
        body = {"spec": {"unschedulable": True if value else None}}  # null removes it, as kubectl uncordon does
        return self.reader.request("PATCH", self.node_path, None, body, content_type="application/merge-patch+json")

    def pods_on_node(self):
        return self.reader.list("/api/v1/pods", field_selector="spec.nodeName=%s" % self.plan["node"])

    def claims(self):
        try:
            return self.reader.list("/apis/resource.k8s.io/v1/resourceclaims")
        except K8sApiError as exc:
            if kube.not_found(exc):
                return []  # no DRA API on this cluster: no claims to wait for
            raise

    # the run -----------------------------------------------------------------------------------------
    def run(self, evict, skipped):
        """Evict ``evict`` (from :func:`classify`), wait until they are gone by UID and the node's claims are
        released. Returns the record; raises DrainFailed (with the record) at the deadline.

        The record's ``timings`` always say how long each step was tried, whether the drain succeeded or not
        (a failure included, so the deadline is provable from the record): ``evict_seconds`` from the first
        eviction request until every evicted pod was gone or the drain gave up, ``claims_seconds`` for the
        claims wait (null when it did not run). ``timeout`` covers both: a drain that failed at its deadline
        has ``evict_seconds`` (+ ``claims_seconds``) >= ``timeout``. :attr:`record` holds the same record when
        something else (an API error) ends the run."""
        plan = self.plan
        record = self.record
        timings = record["timings"]
        timings.setdefault("evict_seconds", None)
        timings.setdefault("claims_seconds", None)
        started = self.clock()
        deadline = started + plan["timeout"]
        try:
            self._evict_all(evict, started, deadline)
        finally:
            timings["evict_seconds"] = round(self.clock() - started, 6)
        if plan["wait_for_claims"]:
            claims_started = self.clock()
            try:
                self._wait_claims(skipped, deadline)
            finally:
                timings["claims_seconds"] = round(self.clock() - claims_started, 6)
        return record

    def _evict_all(self, evict, started, deadline):
        plan, record = self.plan, self.record
        states = []
        for ref in evict:
            entry = dict(ref, method=None, pdb_retries=0, api_retries=0, requested_at=None, evicted_at=None,
                         gone_at=None, seconds=None, last_refusal=None)
            self.evictions.append(entry)
            if ref.get("terminating"):  # deleted before this drain: only waited for
                entry.update(method="already terminating", requested_at=utc_now(), evicted_at=utc_now())
            states.append({"entry": entry, "phase": "wait_gone" if ref.get("terminating") else "evict", "next": started,
                           "first": None, "backoff": 0})
        while True:
            now = self.clock()
            for state in states:
                if state["phase"] == "evict" and state["next"] <= now:
                    self._evict(state, now)
            for state in states:
                if state["phase"] == "wait_gone":
                    self._check_gone(state)
            left = [s for s in states if s["phase"] in ("evict", "wait_gone")]
            failed = [s for s in states if s["phase"] == "failed"]
            if failed:
                raise DrainFailed("node %s: %s" % (plan["node"], "; ".join(
                    "pod %s/%s: %s" % (s["entry"]["namespace"], s["entry"]["name"], s["why"]) for s in failed)), record)
            if not left:
                return
            if self.clock() >= deadline:
                raise DrainFailed("node %s: %d pod(s) still present after %.0f s: %s" % (
                    plan["node"], len(left), plan["timeout"], "; ".join(self._still(s) for s in left)), record)
            self.sleep(max(min(plan["poll_interval"], deadline - self.clock()), 0.0))

    def _wait_claims(self, skipped, deadline):
        plan, record = self.plan, self.record
        ignore = set(s.get("uid") for s in skipped)
        while True:
            held = claims_reserved_on(self.claims(), plan["node"], ignore)
            if not held:
                return
            for claim in held:
                if not any(c["name"] == claim["name"] and c["namespace"] == claim["namespace"]
                           for c in record["claims_waited"]):
                    record["claims_waited"].append(claim)
            if self.clock() >= deadline:
                raise DrainFailed("node %s is not drained: %d ResourceClaim(s) allocated on it are still reserved "
                                  "after %.0f s: %s" % (plan["node"], len(held), plan["timeout"], "; ".join(
                                      "%s/%s (reserved for %s)" % (c["namespace"], c["name"], ", ".join(c["reserved_for"]))
                                      for c in held)), record)
            self.sleep(max(min(plan["poll_interval"], deadline - self.clock()), 0.0))

    def _still(self, state):
        entry = state["entry"]
        where = "%s/%s" % (entry["namespace"], entry["name"])
        if state["phase"] == "evict":
            if entry["pdb_retries"]:
                return "%s: eviction refused %d time(s) (PodDisruptionBudget: %s)" % (
                    where, entry["pdb_retries"], entry["last_refusal"])
            return "%s: not evicted (%s)" % (where, entry["last_refusal"] or "no answer")
        return "%s: evicted at %s, still terminating" % (where, entry["evicted_at"])

    def _evict(self, state, now):
        entry, plan = state["entry"], self.plan
        ns, name = entry["namespace"], entry["name"]
        if state["first"] is None:
            state["first"] = now
            entry["requested_at"] = utc_now()
        options = {"preconditions": {"uid": entry["uid"]}}
        if plan["grace_period"] is not None:
            options["gracePeriodSeconds"] = plan["grace_period"]
        fallback = (plan["eviction_fallback"] == "delete" and entry["pdb_retries"]
                    and now - state["first"] >= plan["fallback_after"])
        try:
            if entry["finished"] or fallback:
                self.once.request("DELETE", "/api/v1/namespaces/%s/pods/%s" % (ns, name), None, options)
                entry["method"] = "delete-fallback" if fallback and not entry["finished"] else "delete"
            else:
                body = {"apiVersion": "policy/v1", "kind": "Eviction", "metadata": {"name": name, "namespace": ns},
                        "deleteOptions": options}
                self.once.request("POST", "/api/v1/namespaces/%s/pods/%s/eviction" % (ns, name), None, body)
                entry["method"] = "eviction"
        except K8sApiError as exc:
            # gone (404), or gone and replaced by a pod of the same name (409 on the UID precondition)
            if kube.not_found(exc) or (exc.status == 409 and "UID" in str(exc)):
                entry["method"] = entry["method"] or "already gone"
                entry["evicted_at"] = utc_now()
                state["phase"] = "wait_gone"
                return
            if exc.status == 429:
                entry["pdb_retries"] += 1
                entry["last_refusal"] = _refusal(exc)
                state["next"] = now + plan["retry_interval"]
                if entry["pdb_retries"] == 1:
                    self.progress("%s/%s: eviction refused (429): %s; retrying every %g s" % (
                        ns, name, entry["last_refusal"], plan["retry_interval"]))
                return
            if exc.status == 500 and "more than one PodDisruptionBudget" in str(exc):
                state["phase"], state["why"] = "failed", "covered by more than one PodDisruptionBudget: eviction is refused (500)"
                return
            if exc.status is None or exc.status >= 500:
                entry["api_retries"] += 1
                entry["last_refusal"] = "HTTP %s: %s" % (exc.status or "transport failure", exc)
                state["backoff"] = min(max(state["backoff"] * 2, 0.25), plan["retry_interval"])
                state["next"] = now + state["backoff"]
                return
            state["phase"], state["why"] = "failed", str(exc)
            return
        entry["evicted_at"] = utc_now()
        state["phase"] = "wait_gone"
        self.progress("%s/%s: %s (%d PodDisruptionBudget retries)" % (ns, name, entry["method"], entry["pdb_retries"]))

    def _check_gone(self, state):
        entry = state["entry"]
        try:
            pod = self.reader.get_or_none("/api/v1/namespaces/%s/pods/%s" % (entry["namespace"], entry["name"]))
        except K8sApiError as exc:
            if exc.forbidden:
                raise
            return  # retried inside get; at its deadline the next pass asks again (the drain's deadline rules)
        if pod is None or kube.meta(pod).get("uid") != entry["uid"]:  # a StatefulSet's pod comes back with the same name
            entry["gone_at"] = utc_now()
            start = parse_stamp(entry["requested_at"]) or parse_stamp(entry["evicted_at"])
            end = parse_stamp(entry["gone_at"])
            entry["seconds"] = round(end - start, 6) if start and end else None
            state["phase"] = "done"
