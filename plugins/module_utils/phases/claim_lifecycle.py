# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""claim_lifecycle: run DRA claim lifecycles against a cluster and record each one from watch events.

The controller module ``claim_lifecycle`` is a thin shell around :class:`LifecycleRun`. The parts:

- :func:`validate_plan` checks the options (kinds, counts, timeouts) into a plan, naming the field;
- :func:`claim_template` / :func:`pod_body` build the objects of one lifecycle kind: ``template``
  (a ResourceClaimTemplate for one whole GPU + a pod), ``extended`` (a pod asking for
  ``nvidia.com/gpu`` that the extended-resource DeviceClass serves), ``mig`` (a template for one
  device of the MIG DeviceClass), ``numa`` (a template for two GPUs with ``matchAttribute`` on
  ``resource.kubernetes.io/numaNode``). Every object and every generated claim carries the run label
  :data:`RUN_LABEL` = run id;
- :class:`Tracker` is fed by two watches (pods with the run label, claims of the namespace); every
  time in a record is the wall-clock time an event was received, never a sleep;
- :class:`LifecycleRun` starts lifecycles up to the concurrency, deletes each pod once Ready (after
  ``hold_seconds``) or once it failed or timed out, waits for the pod and its claim to be gone, and
  builds the per-claim record (:mod:`claim_stats`). Whatever happens - a failure, a deadline, a
  signal - :meth:`LifecycleRun.cleanup` deletes every object with the run label and waits for them.

What is measured (docs/acceptance.md): ``created_at`` is when the claim was first seen (for the
``extended`` kind, whose claim the scheduler makes together with its allocation, when the pod was
created: the latency then covers the scheduler's work); ``allocated_at`` when ``status.allocation``
was first seen; ``scheduled_at`` when the pod's ``spec.nodeName`` was first seen; ``ready_at`` when
its Ready condition was first seen True; ``delete_requested_at`` just before the delete call;
``deallocated_at`` when an allocated claim was first seen without allocation; ``deleted_at`` the
claim's ``DELETED`` event.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
try:
    import queue
except ImportError:  # Python 2 (the module runs on the controller: Python 3 only)
    import Queue as queue  # noqa: N813
import re
import sys
import threading
import time

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_disruptions
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import claim_stats
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8sApiError, watch_events

RUN_LABEL = "gpufleet.io/dra-acceptance-run"
KIND_LABEL = "gpufleet.io/dra-acceptance-kind"
KINDS = ("template", "extended", "mig", "numa")
NUMA_ATTRIBUTE = "resource.kubernetes.io/numaNode"
STD_ATTR = "resource.kubernetes.io/"
NAME_RE = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
# API calls of the lifecycles (pod creations and deletions) run on this many threads: a call takes tens of
# milliseconds against a busy API server, and one after another they would pace the whole run.
CALL_WORKERS = 8
DEFAULT_COMMAND = ["sh", "-c", "trap 'exit 0' TERM; sleep 3600 & wait"]


class PlanError(ValueError):
    """Bad options: the message starts with the option's name."""


# The recorded stamp (common/clock.py): RFC 3339 UTC with microseconds, taken as each event arrives.
utc_now = clock.utc_now


def _positive(params, name, allow_zero=False):
    value = params.get(name)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or (value == 0 and not allow_zero):
        raise PlanError("%s: must be a %s number, got %r" % (name, "non-negative" if allow_zero else "positive", value))
    return value


def validate_plan(params):
    """The run plan from the module's options; :class:`PlanError` names the bad option."""
    count = params.get("count")
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise PlanError("count: must be a whole number >= 1, got %r" % (count,))
    concurrency = params.get("concurrency")
    if isinstance(concurrency, bool) or not isinstance(concurrency, int) or concurrency < 1:
        raise PlanError("concurrency: must be a whole number >= 1, got %r" % (concurrency,))
    kinds = params.get("kinds") or []
    if not kinds:
        raise PlanError("kinds: must list at least one of %s" % ", ".join(KINDS))
    for index, kind in enumerate(kinds):
        if kind not in KINDS:
            raise PlanError("kinds[%d]: must be one of %s, got %r" % (index, ", ".join(KINDS), kind))
    run_id = params.get("run_id") or ""
    if not NAME_RE.match(run_id) or len(run_id) > 40:
        raise PlanError("run_id: must be lower-case letters, digits and '-' (a DNS label of at most 40 characters), "
                        "got %r" % (run_id,))
    for name in ("lifecycle_timeout", "cleanup_timeout", "timeout"):
        _positive(params, name)
    _positive(params, "hold_seconds", allow_zero=True)
    grace = params.get("delete_grace_seconds")
    if isinstance(grace, bool) or not isinstance(grace, int) or grace < 0:
        raise PlanError("delete_grace_seconds: must be a whole number >= 0, got %r" % (grace,))
    numa_count = params.get("numa_devices")
    if isinstance(numa_count, bool) or not isinstance(numa_count, int) or numa_count < 2:
        raise PlanError("numa_devices: must be a whole number >= 2 (devices asked on one NUMA node), got %r" % (numa_count,))
    for name in ("node_selector",):
        value = params.get(name) or {}
        for key, val in value.items():
            if not isinstance(val, str):
                raise PlanError("%s.%s: must be a string, got %r" % (name, key, val))
    for index, toleration in enumerate(params.get("tolerations") or []):
        if not isinstance(toleration, dict) or (not toleration.get("key") and toleration.get("operator") != "Exists"):
            raise PlanError("tolerations[%d]: must be a mapping with key (or operator: Exists), got %r" % (index, toleration))
    long_lived = params.get("long_lived") or 0
    if isinstance(long_lived, bool) or not isinstance(long_lived, int) or long_lived < 0:
        raise PlanError("long_lived: must be a whole number >= 0 (lifecycles held for the whole run), got %r"
                        % (long_lived,))
    try:
        disruptions = claim_disruptions.validate(params.get("disruptions") or [], count)
    except claim_disruptions.DisruptionError as exc:
        raise PlanError(str(exc))
    return {
        "disruptions": disruptions, "count": count, "long_lived": long_lived, "concurrency": concurrency, "kinds": list(kinds), "run_id": run_id,
        "namespace": params["namespace"], "device_class": params["device_class"],
        "mig_device_class": params["mig_device_class"], "extended_resource_name": params["extended_resource_name"],
        "numa_devices": numa_count, "image": params["image"], "command": list(params.get("command") or DEFAULT_COMMAND),
        "node_selector": dict(params.get("node_selector") or {}), "tolerations": list(params.get("tolerations") or []),
        "lifecycle_timeout": float(params["lifecycle_timeout"]), "cleanup_timeout": float(params["cleanup_timeout"]),
        "timeout": float(params["timeout"]), "hold_seconds": float(params["hold_seconds"]),
        "delete_grace_seconds": grace, "progress_every": int(params.get("progress_every") or 0),
    }


def template_name(plan, kind):
    return "dra-gate-%s-%s" % (plan["run_id"], kind)


def classes_needed(plan):
    """DeviceClass name -> the kinds that need it."""
    need = {}
    for kind in plan["kinds"]:
        cls = {"template": plan["device_class"], "numa": plan["device_class"], "mig": plan["mig_device_class"]}.get(kind)
        if cls:
            need.setdefault(cls, []).append(kind)
    return need


def _labels(plan, kind):
    return {RUN_LABEL: plan["run_id"], KIND_LABEL: kind}


def claim_template(plan, kind):
    """The ResourceClaimTemplate of a claim kind (None for ``extended``)."""
    if kind == "extended":
        return None
    request = {"name": "gpu", "exactly": {"deviceClassName": plan["mig_device_class"] if kind == "mig" else plan["device_class"],
                                          "allocationMode": "ExactCount", "count": plan["numa_devices"] if kind == "numa" else 1}}
    devices = {"requests": [request]}
    if kind == "numa":
        devices["constraints"] = [{"requests": ["gpu"], "matchAttribute": NUMA_ATTRIBUTE}]
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": template_name(plan, kind), "namespace": plan["namespace"], "labels": _labels(plan, kind)},
            "spec": {"metadata": {"labels": _labels(plan, kind)}, "spec": {"devices": devices}}}


def pod_body(plan, kind, index):
    """The pod of lifecycle ``index`` (name ``dra-gate-<run>-<index>``)."""
    container = {"name": "workload", "image": plan["image"], "command": list(plan["command"]), "resources": {}}
    spec = {"restartPolicy": "Always", "terminationGracePeriodSeconds": plan["delete_grace_seconds"],
            "containers": [container]}
    if kind == "extended":
        container["resources"] = {"limits": {plan["extended_resource_name"]: "1"}}
    else:
        spec["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": template_name(plan, kind)}]
        container["resources"] = {"claims": [{"name": "gpu"}]}
    if plan["node_selector"]:
        spec["nodeSelector"] = dict(plan["node_selector"])
    if plan["tolerations"]:
        spec["tolerations"] = [dict(t) for t in plan["tolerations"]]
    return {"apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "dra-gate-%s-%d" % (plan["run_id"], index), "namespace": plan["namespace"],
                         "labels": _labels(plan, kind)},
            "spec": spec}


def pod_claim_name(pod):
    """The name of the claim that serves the lifecycle's pod, once the pod's status names it."""
    status = pod.get("status") or {}
    for entry in status.get("resourceClaimStatuses") or []:
        if entry.get("name") == "gpu" and entry.get("resourceClaimName"):
            return entry["resourceClaimName"]
    ext = status.get("extendedResourceClaimStatus") or {}
    return ext.get("resourceClaimName")


def owner_pod(claim):
    for ref in kube.meta(claim).get("ownerReferences") or []:
        if ref.get("kind") == "Pod" and ref.get("controller"):
            return ref.get("name"), ref.get("uid")
    return None, None


def device_index(slices):
    """(driver, pool, device) -> {uuid, pci_bus_id, numa_node} from ResourceSlices."""
    index = {}
    for item in slices:
        spec = item.get("spec") or {}
        driver, pool = spec.get("driver"), (spec.get("pool") or {}).get("name")
        for device in spec.get("devices") or []:
            attrs = device.get("attributes") or {}

            def value(name, attrs=attrs):
                attr = attrs.get(name) or attrs.get("%s/%s" % (driver, name)) or {}
                for key in ("string", "int", "version", "bool"):
                    if key in attr:
                        return attr[key]
                return None
            numa = value(STD_ATTR + "numaNode")
            index[(driver, pool, device.get("name"))] = {
                "uuid": value("uuid"), "parent_uuid": value("parentUUID"), "pci_bus_id": value(STD_ATTR + "pciBusID"),
                "numa_node": numa if isinstance(numa, int) and not isinstance(numa, bool) else None}
    return index


def allocated_devices(claim, index):
    results = ((((claim.get("status") or {}).get("allocation") or {}).get("devices") or {}).get("results") or [])
    out = []
    for result in results:
        key = (result.get("driver"), result.get("pool"), result.get("device"))
        info = index.get(key) or {}
        out.append({"driver": key[0], "pool": key[1], "device": key[2], "uuid": info.get("uuid"),
                    "pci_bus_id": info.get("pci_bus_id"), "numa_node": info.get("numa_node"),
                    "request": result.get("request")})
    return out


class ClaimObs:
    """What the claim watch saw of one claim: first-seen times and the latest allocation."""

    __slots__ = ("name", "uid", "owner", "times", "allocation", "first_allocation", "gone")

    def __init__(self, name, uid, owner):
        self.name, self.uid, self.owner = name, uid, owner
        self.times = {}
        self.allocation = None  # the claim while it is allocated (None once deallocated)
        self.first_allocation = None  # the claim as first seen allocated (its devices)
        self.gone = False

    def mark(self, name, when):
        if name not in self.times:
            self.times[name] = when


class Lifecycle:
    """One pod and its claim, with the times observed."""

    __slots__ = ("index", "kind", "pod", "pod_uid", "claim", "node", "times", "devices", "started", "error_class",
                 "error", "deadline", "state", "pod_gone", "ready_mono", "unschedulable", "evicted_reason", "named",
                 "long_lived")

    def __init__(self, index, kind, pod):
        self.index, self.kind, self.pod = index, kind, pod
        self.pod_uid = self.claim = self.node = None
        self.times = {}
        self.devices = None
        self.started = time.monotonic()
        self.error_class = self.error = None
        self.deadline = None
        self.state = "starting"  # starting -> running -> deleting -> done
        self.pod_gone = False
        self.ready_mono = None
        self.unschedulable = None
        self.evicted_reason = None
        self.named = {}  # claim name -> when the pod's status first named it
        self.long_lived = False  # held for the whole run (plan long_lived), not churned

    def mark(self, name, when):
        if name not in self.times:
            self.times[name] = when


class Tracker:
    """Watch-fed state of the run's pods and the namespace's claims; ``lock`` is notified on every event.

    A lifecycle's claim is the one its pod's status names (``resourceClaimStatuses`` or
    ``extendedResourceClaimStatus``); before the pod's status names one, the claim the pod owns. A
    claim made twice for one pod (and the spare deleted) therefore never counts as the lifecycle's.
    """

    def __init__(self):
        self.lock = threading.Condition()
        self.by_pod = {}  # pod name -> Lifecycle
        self.claims = {}  # claim name -> ClaimObs (the latest object of that name)
        self.health = []  # device health changes seen (device_health in the results)
        self._last_health = {}  # (source, pod or claim, device) -> the health last seen

    def _health(self, source, pod, claim, device, health, when, detail):
        """Record a device health change: the first report that is not Healthy, and every change after it."""
        key = (source, pod or claim, device)
        last = self._last_health.get(key)
        if health == last or (last is None and health == "Healthy"):
            return
        self._last_health[key] = health
        self.health.append({"at": when, "source": source, "pod": pod, "claim": claim, "device": device,
                            "health": health, "status": detail})

    def add(self, life):
        with self.lock:
            self.by_pod[life.pod] = life

    def on_pod(self, event, pod, when):
        with self.lock:
            life = self.by_pod.get(kube.meta(pod).get("name"))
            if life is None or (life.pod_uid and kube.meta(pod).get("uid") != life.pod_uid):
                return
            life.pod_uid = kube.meta(pod).get("uid")
            if event == "DELETED":
                life.pod_gone = True
                life.mark("pod_deleted_at", when)
                if life.state == "running" and "evicted_at" not in life.times:
                    life.mark("evicted_at", when)  # gone without the run asking (deleted at once: no grace)
                    life.evicted_reason = life.evicted_reason or "deleted by another client"
            else:
                target = kube.condition(pod, "DisruptionTarget")
                if target and target.get("status") == "True":
                    life.evicted_reason = "%s: %s" % (target.get("reason"), target.get("message"))
                if kube.meta(pod).get("deletionTimestamp") and life.state == "running" and "evicted_at" not in life.times:
                    # deleted by someone else before the run asked: an eviction (a NoExecute device taint)
                    life.mark("evicted_at", when)
                    life.evicted_reason = life.evicted_reason or "deleted by another client"
                node = (pod.get("spec") or {}).get("nodeName")
                if node:
                    life.node = node
                    life.mark("scheduled_at", when)
                ready = kube.condition(pod, "Ready")
                if ready and ready.get("status") == "True" and "ready_at" not in life.times:
                    life.mark("ready_at", when)
                    life.ready_mono = time.monotonic()
                scheduled = kube.condition(pod, "PodScheduled")
                if scheduled and scheduled.get("status") == "False":
                    life.unschedulable = scheduled.get("message") or scheduled.get("reason") or "Unschedulable"
                phase = (pod.get("status") or {}).get("phase")
                if phase in ("Failed", "Succeeded") and not life.error_class and life.state != "deleting":
                    # restartPolicy Always: a workload pod that ends before its deletion lost its claim early
                    life.error_class = "PodFailed" if phase == "Failed" else "PodCompleted"
                    life.error = (pod.get("status") or {}).get("message") or "pod %s before its deletion" % phase
                named = pod_claim_name(pod)
                if named:
                    life.claim = named
                    life.named.setdefault(named, when)
                for item in (pod.get("status") or {}).get("containerStatuses") or []:
                    for entry in item.get("allocatedResourcesStatus") or []:  # KEP-4680 ResourceHealthStatus
                        for res in entry.get("resources") or []:
                            self._health("pod", life.pod, life.claim, res.get("resourceID"), res.get("health") or "Unknown",
                                         when, {"container": item.get("name"), "name": entry.get("name"),
                                                "resources": entry.get("resources")})
            self.lock.notify_all()

    def on_claim(self, event, claim, when):
        with self.lock:
            name, uid = kube.meta(claim).get("name"), kube.meta(claim).get("uid")
            obs = self.claims.get(name)
            if obs is None or obs.uid != uid:
                if event == "DELETED" and obs is None:
                    return
                obs = self.claims[name] = ClaimObs(name, uid, owner_pod(claim))
                obs.mark("created_at", when)
                pod = self.by_pod.get(obs.owner[0]) if obs.owner[0] else None
                if pod is not None and pod.claim is None and (not pod.pod_uid or pod.pod_uid == obs.owner[1]):
                    pod.claim = name
            if event == "DELETED":
                obs.gone = True
                obs.mark("deleted_at", when)
            else:
                # the namespace may hold other claims (another run's, interrupted): only this run's pods' claims
                ours = obs.owner[0] in self.by_pod
                for device in (claim.get("status") or {}).get("devices") or [] if ours else []:
                    ready = [c for c in device.get("conditions") or [] if c.get("type") == "Ready"]
                    if ready:
                        health = {"True": "Healthy", "False": "Unhealthy"}.get(ready[0].get("status"), "Unknown")
                        self._health("claim", obs.owner[0], name, "%s/%s/%s" % (
                            device.get("driver"), device.get("pool"), device.get("device")), health, when, device)
                allocation = (claim.get("status") or {}).get("allocation")
                if allocation:
                    obs.mark("allocated_at", when)
                    obs.allocation = claim
                    if obs.first_allocation is None:
                        obs.first_allocation = claim
                elif "allocated_at" in obs.times:
                    obs.mark("deallocated_at", when)
                    obs.allocation = None
            self.lock.notify_all()

    def forget(self, life):
        """An ended lifecycle (its record made) leaves the tracker, with its claim: a long run's memory stays
        that of the lifecycles in progress. The caller holds ``lock``."""
        if self.by_pod.get(life.pod) is life:
            del self.by_pod[life.pod]
        for name in set([life.claim] + list(life.named)):
            obs = self.claims.get(name)
            if obs is not None and obs.owner[0] == life.pod:
                del self.claims[name]

    def claim_of(self, life):
        """The lifecycle's ClaimObs (None while no claim is known)."""
        obs = self.claims.get(life.claim) if life.claim else None
        if obs is not None and life.pod_uid and obs.owner[1] not in (None, life.pod_uid):
            return None
        return obs


class Interrupted(Exception):
    """A signal asked the run to stop; the cleanup still runs."""


class LifecycleRun:
    """Runs the plan's lifecycles through ``reader`` (a K8sReader); see the module docstring."""

    def __init__(self, reader, plan, clock=time.monotonic, progress=None, sink=None):
        self.reader, self.plan, self.clock = reader, plan, clock
        self.ns = plan["namespace"]
        self.tracker = Tracker()
        self.stop = threading.Event()
        self.interrupted = None
        # Each record goes to the sink as its lifecycle ends (claim_stats.RecordSink: streamed to the JSON Lines
        # file, counted); only a run with disruptions keeps them (a device taint reads the allocations made
        # while it lasted) and keeps its ended lifecycles tracked (a disruption looks its pods up by name).
        self.sink = claim_stats.RecordSink() if sink is None else sink
        self.keep = bool(plan.get("disruptions"))
        self.records = [] if self.keep else None
        self.tracked_peak = 0  # the most lifecycles tracked at once (flat memory: long_lived + concurrency)
        self.churn_over = False  # every churn lifecycle started and ended: the long-lived ones may go
        self.devices = {}
        self.progress_lines = []
        self.on_progress = progress
        self.watch_problems = []
        self.started_at = self.finished_at = None
        self.listed = []  # one Event per watch, set once its first list is done
        self.disruptions = claim_disruptions.Disruptions(self, plan.get("disruptions") or [])
        self.disruption_events = []
        self.hold_back = set()  # pods a disruption observes: not deleted by the run while it lasts
        self.calls = CallPool(min(CALL_WORKERS, max(1, int(plan.get("concurrency") or 1))))

    # -- API -------------------------------------------------------------------------------------

    def _pods_path(self):
        return "/api/v1/namespaces/%s/pods" % self.ns

    def _claims_path(self):
        return "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % self.ns

    def _templates_path(self):
        return "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % self.ns

    def refresh_devices(self):
        self.slices = self.reader.list("/apis/resource.k8s.io/v1/resourceslices")
        self.devices = device_index(self.slices)

    def node_gpus(self, nodes):
        """Node -> sorted GPU UUIDs of its devices in the ResourceSlices last read (for the DCGM check)."""
        out = dict((node, set()) for node in nodes)
        for item in getattr(self, "slices", None) or []:
            node = (item.get("spec") or {}).get("nodeName")
            if node in out:
                pool = ((item.get("spec") or {}).get("pool") or {}).get("name")
                for device in (item.get("spec") or {}).get("devices") or []:
                    info = self.devices.get(((item.get("spec") or {}).get("driver"), pool, device.get("name"))) or {}
                    gpu = info.get("parent_uuid") or info.get("uuid")  # a MIG device's GPU is its parent
                    if gpu:
                        out[node].add(gpu)
        return dict((node, sorted(uuids)) for node, uuids in out.items())

    def _watch(self, path, selector, handler, listed):
        """List, then watch from the list's resourceVersion; again when the stream ends or expires."""
        while not self.stop.is_set():
            try:
                query = [("labelSelector", selector)] if selector else []
                listing = self.reader.request("GET", path, query)
                when = utc_now()
                for item in listing.get("items") or []:
                    handler("ADDED", item, when)
                listed.set()
                version = (listing.get("metadata") or {}).get("resourceVersion") or "0"
                for event, obj in watch_events(self.reader, path, version, label_selector=selector, timeout_seconds=120,
                                               stop=self.stop):
                    if event == "BOOKMARK":
                        continue
                    handler(event, obj, utc_now())
            except K8sApiError as exc:
                if exc.status == 410:
                    continue
                self.watch_problems.append(str(exc))
                listed.set()
                with self.tracker.lock:
                    self.tracker.lock.notify_all()
                return

    def start_watches(self):
        # Claims are watched without a selector: the scheduler's extended-resource claims carry no labels
        # (the tracker keeps only the claims its pods own); the namespace is the run's own.
        selector = "%s=%s" % (RUN_LABEL, self.plan["run_id"])
        for path, sel, handler in ((self._pods_path(), selector, self.tracker.on_pod),
                                   (self._claims_path(), None, self.tracker.on_claim)):
            listed = threading.Event()
            thread = threading.Thread(target=self._watch, args=(path, sel, handler, listed), daemon=True)
            thread.start()
            self.listed.append(listed)
        end = self.clock() + self.plan["lifecycle_timeout"]
        for listed in self.listed:  # no lifecycle starts before both watches hold the namespace's state
            listed.wait(max(end - self.clock(), 0.01))
        if not all(listed.is_set() for listed in self.listed):
            raise K8sApiError("watch", None, "the watches did not start within %.0f s" % self.plan["lifecycle_timeout"])

    # -- the run ---------------------------------------------------------------------------------

    def run(self):
        """Every lifecycle of the plan; returns the records (cleanup is the caller's ``finally``)."""
        plan = self.plan
        # the watch threads stamp each event as it arrives: a 1 ms interpreter switch interval (default 5 ms)
        # keeps the stamp within about a millisecond of the receipt while the main loop makes API calls
        sys.setswitchinterval(0.001)
        self.started_at = utc_now()
        deadline = self.clock() + plan["timeout"]
        self.refresh_devices()
        for kind in sorted(set(plan["kinds"])):
            body = claim_template(plan, kind)
            if body is not None:
                self.reader.request("POST", self._templates_path(), [("fieldManager", "gpufleet-dra-gate")], body)
        self.start_watches()
        active = []
        started = 0
        total = plan["count"] + plan.get("long_lived", 0)
        next_progress = plan["progress_every"] or 0
        while True:
            if self.interrupted:
                raise Interrupted(self.interrupted)
            if self.watch_problems:
                raise K8sApiError("watch", None, "; ".join(self.watch_problems))
            if self.calls.problems:
                raise self.calls.problems[0]
            now = self.clock()
            # the long-lived lifecycles first, all of them; the churn once every one is Ready (or ended), at
            # most ``concurrency`` at a time beside them
            while started < plan.get("long_lived", 0) and now < deadline:
                active.append(self._start(started, plan["kinds"][started % len(plan["kinds"])], long_lived=True))
                started += 1
            settled = all(not life.long_lived or "ready_at" in life.times or life.state in ("deleting", "done")
                          for life in active)
            while settled and started < total and self.churn_active(active) < plan["concurrency"] and now < deadline:
                active.append(self._start(started, plan["kinds"][started % len(plan["kinds"])]))
                started += 1
            self.churn_over = started >= total and not self.churn_active(active)
            self.tracked_peak = max(self.tracked_peak, len(active))
            for life in list(active):
                self._advance(life, now >= deadline)
                if life.state == "done":
                    active.remove(life)
                    self._finish(life)
            self.disruptions.step(active)
            done = self.done
            if next_progress and done >= next_progress:
                self._progress(done)
                next_progress += plan["progress_every"]
            if not active and (started >= total or now >= deadline) and (
                    not self.disruptions.pending_recovery() or now >= deadline):
                break
            with self.tracker.lock:
                self.tracker.lock.wait(0.05)
        self.disruption_events = self.disruptions.finish()
        self.finished_at = utc_now()
        if not self.progress_lines or not self.progress_lines[-1].startswith("claims %d/" % self.done):
            self._progress(self.done)
        return self.records

    @property
    def done(self):
        """Lifecycles ended (their records in the sink)."""
        return len(self.sink)

    @staticmethod
    def churn_active(active):
        return sum(1 for life in active if not life.long_lived)

    def _finish(self, life):
        """The ended lifecycle's record to the sink; the lifecycle and its claim no longer tracked."""
        record = self.sink.add(self._record(life))
        if self.keep:
            self.records.append(record)
            return
        with self.tracker.lock:
            self.tracker.forget(life)

    def _progress(self, done):
        line = claim_stats.progress(done, self.plan["count"] + self.plan.get("long_lived", 0), self.sink.failures)
        self.progress_lines.append(line)
        if self.on_progress is not None:
            self.on_progress(line)

    def _start(self, index, kind, long_lived=False):
        """A new lifecycle in state ``starting``; its pod is created on the call pool."""
        body = pod_body(self.plan, kind, index)
        life = Lifecycle(index, kind, body["metadata"]["name"])
        life.long_lived = long_lived
        self.tracker.add(life)
        self.calls.submit(self._create, life, body)
        return life

    def _create(self, life, body):
        """(call pool) POST the pod; the lifecycle runs from here or ends as CreateFailed."""
        when = utc_now()
        try:
            created = self.reader.request("POST", self._pods_path(), [("fieldManager", "gpufleet-dra-gate")], body)
        except K8sApiError as exc:
            with self.tracker.lock:
                life.error_class, life.error, life.state = "CreateFailed", str(exc), "done"
                self.tracker.lock.notify_all()
            if exc.forbidden:
                raise
            return
        with self.tracker.lock:
            life.pod_uid = life.pod_uid or kube.meta(created).get("uid")
            if life.kind == "extended":
                life.mark("created_at", when)
            life.deadline = life.started + self.plan["lifecycle_timeout"]
            life.state = "running"
            self.tracker.lock.notify_all()

    @staticmethod
    def now_stamp():
        return utc_now()

    def live_records(self):
        """The claims of lifecycles still in progress, in the records' shape (claim, allocated_at, devices)."""
        with self.tracker.lock:
            out = []
            for life in self.tracker.by_pod.values():
                if life.state in ("running", "deleting"):
                    obs = self.tracker.claim_of(life)
                    out.append({"claim": life.claim or life.pod, "devices": life.devices or [],
                                "allocated_at": obs.times.get("allocated_at") if obs is not None else None})
            return out

    def restart(self, life):
        """End a Ready lifecycle early (a workload restart): delete its pod now."""
        with self.tracker.lock:
            if life.state == "running":
                life.state = "deleting"
                life.deadline = self.clock() + self.plan["cleanup_timeout"]
                self._delete(life)

    def _advance(self, life, out_of_time):
        now = self.clock()
        with self.tracker.lock:
            obs = self.tracker.claim_of(life)
            if life.state == "running" and "evicted_at" in life.times:
                # evicted: the eviction is the lifecycle's end; its claim must still be cleaned up
                life.error_class = life.error_class or "Evicted"
                life.error = life.error or "evicted (%s)" % life.evicted_reason
                life.mark("delete_requested_at", life.times["evicted_at"])
                life.state = "deleting"
                life.deadline = now + self.plan["cleanup_timeout"]
                if life.devices is None and obs is not None and obs.allocation is not None:
                    life.devices = allocated_devices(obs.allocation, self.devices)
            if life.state == "running":
                if obs is not None and obs.allocation is not None and life.devices is None:
                    allocation = obs.allocation
                    devices = allocated_devices(allocation, self.devices)
                    if any(d["uuid"] is None and d["pci_bus_id"] is None for d in devices):
                        self.tracker.lock.release()
                        try:
                            self.refresh_devices()
                        finally:
                            self.tracker.lock.acquire()
                        devices = allocated_devices(allocation, self.devices)
                    life.devices = devices
                ready = "ready_at" in life.times and obs is not None and "allocated_at" in obs.times
                if life.long_lived:  # held Ready for the whole run: released once the churn is over
                    hold_over = ready and self.churn_over and life.pod not in self.hold_back
                    timed_out = now >= life.deadline and not ready
                else:
                    hold_over = ready and life.pod not in self.hold_back and (
                        self.plan["hold_seconds"] <= 0 or now >= (life.ready_mono or now) + self.plan["hold_seconds"])
                    timed_out = now >= life.deadline
                if life.error_class or out_of_time or timed_out or hold_over:
                    if not ready and not life.error_class:
                        life.error_class, life.error = self._failure(life, obs, out_of_time)
                    life.state = "deleting"
                    life.deadline = now + self.plan["cleanup_timeout"]
                    self._delete(life)
            elif life.state == "deleting":
                claim_done = obs.gone if obs is not None else life.claim is None
                if (life.pod_gone and claim_done) or now >= life.deadline:
                    life.state = "done"

    @staticmethod
    def _failure(life, obs, out_of_time):
        why = "the run's deadline passed" if out_of_time else "not Ready within the lifecycle timeout"
        allocated = obs is not None and "allocated_at" in obs.times
        if not allocated and life.unschedulable:
            cls = "AllocationFailed" if "allocate" in life.unschedulable or "claim" in life.unschedulable else "Unschedulable"
            return cls, "%s: %s" % (why, life.unschedulable)
        if not allocated:
            return "NotAllocated", "%s: no allocation was seen" % why
        return "Timeout", "%s (allocated, node %s)" % (why, life.node)

    def _delete(self, life):
        """Ask for the pod's deletion on the call pool (the caller holds the tracker's lock)."""
        self.calls.submit(self._delete_call, life)

    def _delete_call(self, life):
        """(call pool) DELETE the pod; ``delete_requested_at`` is stamped just before the call."""
        body = {"kind": "DeleteOptions", "apiVersion": "v1", "gracePeriodSeconds": self.plan["delete_grace_seconds"]}
        with self.tracker.lock:
            life.mark("delete_requested_at", utc_now())
            if life.pod_uid:
                body["preconditions"] = {"uid": life.pod_uid}
        try:
            self.reader.request("DELETE", "%s/%s" % (self._pods_path(), life.pod), None, body)
        except K8sApiError as exc:
            with self.tracker.lock:
                if kube.not_found(exc):
                    life.pod_gone = True
                elif not exc.forbidden:
                    life.error_class = life.error_class or "DeleteFailed"
                    life.error = life.error or str(exc)
                self.tracker.lock.notify_all()
            if exc.forbidden:
                raise

    def _record(self, life):
        obs = self.tracker.claim_of(life)
        times = {k: v for k, v in life.times.items() if k in claim_stats.TIME_FIELDS}
        if obs is not None:
            for name, when in obs.times.items():
                if name != "created_at" or life.kind != "extended":
                    times[name] = when
        # the deletion asked for is the lifecycle's expected end: a claim still there after the cleanup
        # timeout is a defect (not deleted); one that still holds an allocation has leaked its devices
        asked = bool(times.get("delete_requested_at"))
        leaked = asked and obs is not None and not obs.gone and obs.allocation is not None
        error_class, error = life.error_class, life.error
        if asked and not life.pod_gone and not error_class:
            error_class, error = "PodNotDeleted", "pod %s still present %.0f s after its deletion was asked" % (
                life.pod, self.plan["cleanup_timeout"])
        devices = life.devices
        if devices is None and obs is not None and obs.first_allocation is not None:
            devices = allocated_devices(obs.first_allocation, self.devices)
        if not times.get("created_at"):  # no claim was ever seen: claim_stats refuses times without created_at
            times = {}
        elif life.kind != "extended":
            _pod_evidence(times, life.named.get(life.claim))
        created = times.get("created_at")
        late = [name for name in ("delete_requested_at", "scheduled_at", "ready_at")
                if created and times.get(name) and claim_stats.parse_time(times[name]) < claim_stats.parse_time(created)]
        if late and life.kind != "extended":
            # the claim appeared only after the lifecycle had ended (or the pod ran without it): the times
            # cannot be ordered around a creation that came last; they go into the error, not the record
            error_class = error_class or "ClaimLate"
            error = (error + "; " if error else "") + "claim %s first seen at %s, after %s" % (
                life.claim, created, ", ".join("%s %s" % (name, times[name]) for name in late))
            times = {}
        asked_at = times.get("delete_requested_at")
        for name in ("deallocated_at", "deleted_at"):
            if asked_at and times.get(name) and claim_stats.parse_time(times[name]) < claim_stats.parse_time(asked_at):
                # released before the run ended the lifecycle: the workload lost its devices while it ran
                error_class = error_class or "ClaimLost"
                error = (error + "; " if error else "") + "claim %s %s at %s, before the deletion was asked at %s" % (
                    life.claim, name[:-3], times.pop(name), asked_at)
        fields = dict(namespace=self.ns, pod=life.pod, uid=obs.uid if obs else None, node=life.node,
                      devices=devices or [], numa_constraint=life.kind == "numa")
        try:
            return claim_stats.record(life.claim or life.pod, life.kind, error_class=error_class, error=error,
                                      leaked=leaked and bool(times), **dict(fields, **times))
        except claim_stats.ClaimStatsError as exc:  # observations that do not make a valid record: kept as an error
            return claim_stats.record(life.claim or life.pod, life.kind, error_class="RecordInvalid",
                                      error="%s (observed %s%s)" % (exc, times, "; " + error if error else ""), **fields)

    def collect_events(self, limit=200):
        """The namespace's Events about the run's pods and claims (before they go): Warning events kept (at
        most ``limit``, the newest), every reason counted. A failure to read them is recorded, never raised."""
        with self.tracker.lock:
            names = set(self.tracker.by_pod) | set(self.tracker.claims)
        try:
            items = self.reader.list("/api/v1/namespaces/%s/events" % self.ns)
        except K8sApiError as exc:
            self.events = {"error": str(exc), "warnings": [], "by_reason": {}}
            return self.events
        prefix = "dra-gate-%s-" % self.plan["run_id"]  # ended lifecycles are no longer tracked: their names
        ours = [e for e in items if ((e.get("involvedObject") or {}).get("name") in names
                                     or str((e.get("involvedObject") or {}).get("name") or "").startswith(prefix))]
        by_reason = {}
        for event in ours:
            key = "%s/%s" % (event.get("type") or "Normal", event.get("reason") or "")
            by_reason[key] = by_reason.get(key, 0) + int(event.get("count") or 1)
        warnings = [{"reason": e.get("reason"), "message": e.get("message"), "object": e.get("involvedObject"),
                     "count": e.get("count"), "first": e.get("firstTimestamp") or e.get("eventTime"),
                     "last": e.get("lastTimestamp") or e.get("eventTime"),
                     "source": (e.get("source") or {}).get("component") or e.get("reportingComponent")}
                    for e in ours if e.get("type") == "Warning"]
        warnings.sort(key=lambda w: str(w["last"] or ""))
        self.events = {"warnings": warnings[-limit:], "warnings_total": len(warnings), "by_reason": by_reason}
        return self.events

    # -- cleanup ---------------------------------------------------------------------------------

    def cleanup(self, timeout):
        """Delete everything with the run label and wait (bounded) until it is gone; returns what is left.

        The call pool is drained first: a creation still in flight lands before the deletion by label."""
        self.stop.set()
        self.calls.close()
        return delete_run_objects(self.reader, self.ns, self.plan["run_id"], timeout, self.clock)[0]


def _pod_evidence(times, named_at):
    """Move a claim's times earlier where the pod's watch proved them first (in place).

    The two watches deliver independently, so the pod's stream can show what the claim's has not shown
    yet: the pod's status naming the claim proves the claim exists (it is written after the claim is
    made); the pod bound to a node proves the claim is allocated (the scheduler writes the allocation
    before it binds). A claim's time is the first evidence of either stream, never a guess."""
    def parse(value):
        return claim_stats.parse_time(value) if value else None

    for name, evidence in (("created_at", named_at), ("allocated_at", times.get("scheduled_at"))):
        if times.get(name) and evidence and parse(evidence) < parse(times[name]):
            times[name] = evidence
    if times.get("allocated_at") and parse(times["allocated_at"]) < parse(times["created_at"]):
        times["created_at"] = times["allocated_at"]


def progress_path(evidence_dir, run_id):
    """Where a run appends its progress lines as they come (read by the action plugin while it runs)."""
    return os.path.join(evidence_dir, "dra-acceptance-%s.progress" % run_id)


class CallPool:
    """A few threads that make the lifecycles' API calls, so that calls overlap instead of queueing.

    ``submit(fn, *args)`` queues a call; an exception it raises (a 403, which ends the run) is kept in
    ``problems`` for the main loop to raise. ``close()`` ends the threads once the calls in flight are done."""

    def __init__(self, workers):
        self.queue = queue.Queue()
        self.problems = []
        self.threads = []
        for index in range(workers):
            thread = threading.Thread(target=self._work, name="claim-lifecycle-call-%d" % index)
            thread.daemon = True
            thread.start()
            self.threads.append(thread)

    def submit(self, fn, *args):
        self.queue.put((fn, args))

    def _work(self):
        while True:
            item = self.queue.get()
            if item is None:
                return
            fn, args = item
            try:
                fn(*args)
            except Exception as exc:  # pylint: disable=broad-except
                self.problems.append(exc)

    def close(self, timeout=120.0):
        """Drop the calls not started yet (the cleanup by run label deletes what any call made), let the
        ones in flight finish (each is bounded by the reader's deadline), then stop the threads."""
        while True:
            try:
                self.queue.get_nowait()
            except queue.Empty:
                break
        for _thread in self.threads:
            self.queue.put(None)
        end = time.monotonic() + timeout
        for thread in self.threads:
            thread.join(max(end - time.monotonic(), 0.01))
        self.threads = []


def _of_run(item, kind, run_id):
    """Whether ``item`` belongs to the run: its label, or (claims) a run pod's ownership."""
    labels = kube.meta(item).get("labels") or {}
    if RUN_LABEL in labels:
        return run_id is None or labels[RUN_LABEL] == run_id
    if kind != "resourceclaim":
        return False
    pod, _uid = owner_pod(item)
    prefix = "dra-gate-%s-" % run_id if run_id else "dra-gate-"
    return bool(pod) and pod.startswith(prefix)


def delete_run_objects(reader, namespace, run_id, timeout, clock=time.monotonic):
    """Delete the pods, claim templates and claims of ``run_id`` (any run when None) - labelled with
    :data:`RUN_LABEL`, or claims owned by a run's pod - and wait until none is left or ``timeout``
    passes. Returns ``(left, deleted)``: the objects still present (``kind/name``) and how many deletions
    were asked for."""
    paths = (("pod", "/api/v1/namespaces/%s/pods" % namespace),
             ("resourceclaimtemplate", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaimtemplates" % namespace),
             ("resourceclaim", "/apis/resource.k8s.io/v1/namespaces/%s/resourceclaims" % namespace))
    end = clock() + timeout
    asked = set()
    while True:
        left = []
        for kind, path in paths:
            for item in reader.list(path, label_selector=None if kind == "resourceclaim" else
                                    ("%s=%s" % (RUN_LABEL, run_id) if run_id else RUN_LABEL)):
                if not _of_run(item, kind, run_id):
                    continue
                name = kube.meta(item).get("name")
                left.append("%s/%s" % (kind, name))
                if (kind, name) in asked or (kind == "resourceclaim" and kube.meta(item).get("deletionTimestamp")):
                    continue
                asked.add((kind, name))
                body = {"kind": "DeleteOptions", "apiVersion": "v1"}
                if kind == "pod":
                    body["gracePeriodSeconds"] = 0
                try:
                    reader.request("DELETE", "%s/%s" % (path, name), None, body)
                except K8sApiError as exc:
                    if not kube.not_found(exc):
                        raise
        if not left or clock() >= end:
            return sorted(left), len(asked)
        time.sleep(0.1)


def summary(run, plan):
    """The results of the record ``dra-acceptance`` for this run (its sink's counts: every record made)."""
    out = run.sink.result()
    out.update(run_id=plan["run_id"], namespace=plan["namespace"], kinds=list(plan["kinds"]),
               concurrency=plan["concurrency"], long_lived=plan.get("long_lived", 0), churn=plan["count"],
               tracked_peak=run.tracked_peak, interval={"start": run.started_at, "end": run.finished_at},
               disruptions=run.disruption_events, device_health=device_health(run.tracker.health),
               events=getattr(run, "events", None) or {"warnings": [], "warnings_total": 0, "by_reason": {}})
    return out


def device_health(observations):
    """``device_health`` of the results: every change seen (the pods' allocatedResourcesStatus, the claims'
    status.devices Ready condition, as received), the devices and claims that were ever not Healthy."""
    bad = [o for o in observations if o["health"] != "Healthy"]
    return {"observations": list(observations), "devices": sorted(set(o["device"] for o in bad if o["device"])),
            "claims": sorted(set(o["claim"] for o in bad if o["claim"]))}


def to_json(obj):
    return json.dumps(obj, sort_keys=True)
