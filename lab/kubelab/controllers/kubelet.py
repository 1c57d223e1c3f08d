# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated kubelets (one loop for every Node) plus the bits of the node lifecycle controller they need.

Nodes:

* a Node without ``spec.podCIDR`` gets the first free ``10.244.N.0/24`` (node IPAM);
* the Ready condition is kept True (reason KubeletReady) unless the node is "down": listed in
  ``lab.scenario["nodes_not_ready"]`` (a fault-injection knob, read on every pass, so changing the
  list at run time takes a node down or brings it back) or given ``ready: false`` in the scenario.
  Heartbeats are not simulated: condition timestamps move only on a transition.
* a ``reboot`` fault (kubelab.faults) takes the node down for its ``seconds`` (message "node is
  rebooting"); when it comes back its ``status.nodeInfo.bootID`` is new.
* device-plugin GPU nodes (``kubelab.gpufleet.io/gpu-backend`` device-plugin or both, with capacity
  ``nvidia.com/gpu``): allocatable ``nvidia.com/gpu`` is the GPUs the plugin reports healthy, capacity
  less the node's GPUs (``gpu-<index>``, or a MIG device of it) not Healthy in ``lab.device_health``
  (the ``device_unhealthy`` fault); it is 0 while a ``reboot`` keeps the node down and for
  ``device_plugin_register_seconds`` (1.0) after it comes back (until the device plugin registers
  with the new kubelet again), as a real kubelet's extended resources are. Capacity stays.

Pods bound to a node (``spec.nodeName``), each phase after a configurable latency (scenario keys,
in seconds):

* Pending: at once ``hostIP``, ``startTime``, containers waiting in ContainerCreating; after
  ``pod_start_seconds`` (0.2) Running, with PodScheduled, PodReadyToStartContainers, Initialized,
  ContainersReady and Ready True, ``podIP`` (from the node's podCIDR; the host's for hostNetwork)
  and ``containerStatuses`` (running, started, restartCount 0, an imageID
  ``<repository>@sha256:<sha256 of the image reference>`` and a containerd containerID); the
  containers and the pod are Ready at once, or ``pod_ready_seconds`` (0) after Running (a readiness
  probe's delay); a pod with DRA claims (``spec.resourceClaims`` or an extended-resource claim) waits
  on top of that for NodePrepareResources: the ``claim_latency`` fault's ``prepare`` delay, drawn once
  per pod and counted from when the kubelet first sees the pod bound (claims are allocated before
  binding), with a wake-up at the due time; ``claim_truth``'s ``prepared`` is stamped then;
* Running pods that run to completion - a Job's, and bare pods (no controller) with restartPolicy
  Never or OnFailure: Succeeded (containers terminated, exit 0, reason Completed) after
  ``job_pod_seconds`` (0.5);
* terminating pods (``deletionTimestamp``): removed with ``Api.finalize_pod`` after
  ``pod_stop_seconds`` (0.2), whatever their grace period (the containers "exit" at once); pods
  bound to a node that no longer exists are finalized too (what the pod GC does);
* on a node that is down nothing progresses and nothing is finalized (a dead kubelet cannot report),
  and Running pods are marked Ready=False, reason NodeNotReady (the node lifecycle controller's
  MarkPodsNotReady); they become Ready again when the node returns.
"""

from __future__ import annotations

import hashlib
import json
import re
import time
import uuid

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (condition, controller_ref, meta, node_ready, set_condition, spec, status,
                                        terminating, write_status)
from kubelab.controllers.dra import DRIVER, backend, inject, mark, stamp
from kubelab.gpunodes import DEVICE_PLUGIN_BACKENDS, GPU_RESOURCE, GPUS_ANNOTATION
from kubelab.store import now

MANAGER = "kubelet"
POD_CONDITIONS = ("PodReadyToStartContainers", "Initialized", "ContainersReady", "Ready", "PodScheduled")
_GPU_DEVICE = re.compile(r"gpu-(\d+)(?:-mig-.+)?$")  # a GPU's device name (kubelab.controllers.dra), or one of its MIG devices


def unhealthy_gpus(health_items) -> dict:
    """{node: {GPU index, ...}} of the GPUs with a device not Healthy, from ``lab.device_health`` items
    ``((driver, pool, device), health)`` (the pool is the node)."""
    out: dict = {}
    for (driver, pool, device), health in health_items:
        match = _GPU_DEVICE.match(str(device)) if health != "Healthy" and driver == DRIVER else None
        if match:
            out.setdefault(pool, set()).add(int(match.group(1)))
    return out


def gpu_indices(node: dict) -> set:
    """The indices of the GPUs of the node's ``kubelab.gpufleet.io/gpus`` annotation (what the device plugin serves)."""
    try:
        gpus = json.loads((meta(node).get("annotations") or {}).get(GPUS_ANNOTATION) or "[]")
        return {int(g.get("index", i)) for i, g in enumerate(gpus)}
    except (ValueError, TypeError, AttributeError):
        return set()


def image_id(image: str) -> str:
    """``nginx:1.25`` -> ``docker.io/library/nginx@sha256:<sha256 of "nginx:1.25">``."""
    name = image.split("@", 1)[0]
    if ":" in name.rsplit("/", 1)[-1]:
        name = name.rsplit(":", 1)[0]
    first = name.split("/", 1)[0]
    if "/" not in name:
        name = "docker.io/library/" + name
    elif not ("." in first or ":" in first or first == "localhost"):
        name = "docker.io/" + name
    return "%s@sha256:%s" % (name, hashlib.sha256(image.encode("utf-8")).hexdigest())


def container_id(pod: dict, name: str) -> str:
    return "containerd://" + hashlib.sha256(("%s/%s" % (meta(pod).get("uid"), name)).encode("utf-8")).hexdigest()


def runs_to_completion(pod: dict) -> bool:
    """A Job's pod, or a bare pod whose restartPolicy lets it end (Never, OnFailure): its containers
    exit 0 after ``job_pod_seconds``. Pods of other controllers and restartPolicy Always run on."""
    owner = (controller_ref(pod) or {}).get("kind")
    if owner == "Job":
        return True
    return owner is None and spec(pod).get("restartPolicy") in ("Never", "OnFailure")


def _address(node: dict) -> str:
    for addr in status(node).get("addresses") or []:
        if addr.get("type") == "InternalIP":
            return addr.get("address", "")
    return ""


class KubeletController(Controller):
    watches = ("Pod", "Node")
    resync_seconds = 0.5
    workers = 8  # pod workers (the kubelet runs one per pod)

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.nodes = self.rtype("", "v1", "nodes")
        self.since: dict = {}  # pod uid -> (what, monotonic time it was first seen so)
        # pod uid -> (resourceVersion, device health) of a Running, Ready pod whose status this kubelet found
        # current: until the pod or the devices' health change, a pass does not recompute its status
        # (the real kubelet's status manager syncs a pod when something changed, not on every loop)
        self.steady: dict = {}
        self._health_token = None
        self.boots: dict = {}  # node -> reboots whose new bootID is written
        self.registering: dict = {}  # node -> monotonic time its device plugin has registered again after a reboot
        self._unhealthy: dict = {}  # node -> indices of its GPUs not Healthy (from lab.device_health)
        self._unhealthy_for = None  # the health token _unhealthy was computed from
        self._cidrs: set = set()
        self.prepare_woken: set = set()  # pod uids whose prepare delay has a wake-up timer

    def _knob(self, key: str, default: float) -> float:
        try:
            return float(self.lab.scenario.get(key, default))
        except (TypeError, ValueError):
            return default

    def nodes_down(self) -> set:
        down = set(self.lab.scenario.get("nodes_not_ready", None) or [])
        engine = getattr(self.lab, "fault_engine", None)
        if engine is not None:
            down |= engine.nodes_down()
        for node in self.lab.scenario.get("nodes", None) or []:
            cond = condition(node, "Ready")
            if cond and cond.get("status") != "True":
                down.add(meta(node).get("name"))
        return down

    def _elapsed(self, uid: str, what: str) -> float:
        seen = self.since.get(uid)
        if seen is None or seen[0] != what:
            seen = self.since[uid] = (what, time.monotonic())
        return time.monotonic() - seen[1]

    def _claim_keys(self, pod: dict) -> list:
        return list((getattr(self.lab, "claim_truth_pods", None) or {}).get(meta(pod).get("uid")) or ())

    def _prepare_delay(self, pod: dict) -> float:
        """``claim_latency`` prepare: NodePrepareResources of the pod's claims takes d seconds (drawn once per
        pod), counted from when the kubelet first sees the pod bound (its claims are allocated before binding)."""
        engine = getattr(self.lab, "fault_engine", None)
        uses_claims = spec(pod).get("resourceClaims") or status(pod).get("extendedResourceClaimStatus")
        if engine is None or not uses_claims:
            return 0.0
        uid = meta(pod).get("uid")
        delay = engine.delay("prepare", ("pod", uid))
        if delay and uid not in self.prepare_woken:
            self.prepare_woken.add(uid)
            engine.wake_at(self.since[uid][1] + self._knob("pod_start_seconds", 0.2) + delay)
            for key in self._claim_keys(pod):
                inject(self.lab, key, "prepare_delay", delay)
        return delay

    def reconcile(self) -> None:
        down = self.nodes_down()
        nodes = {}
        listed = self.api.list(self.nodes, None, shared=True)["items"]
        self._cidrs = {spec(n).get("podCIDR") for n in listed}
        health = getattr(self.lab, "device_health", None)
        self._health_token = tuple(sorted(dict(health).items())) if health else None
        if self._health_token != self._unhealthy_for:
            self._unhealthy, self._unhealthy_for = unhealthy_gpus(self._health_token or ()), self._health_token
        for node in listed:
            node = self._node(node, meta(node)["name"] not in down)
            nodes[meta(node)["name"]] = node
        pods = self.api.list(self.pods, None, shared=True)["items"]
        # a worker per pod, as the kubelet's pod workers; a pod whose write conflicted (None) is looked at soon again
        waiting = any(result is None or result for result in self.each(pods, lambda pod: self._pod(pod, nodes, pods)))
        alive = {meta(p).get("uid") for p in pods}
        for uid in [u for u in self.since if u not in alive]:
            del self.since[uid]
        for uid in [u for u in self.steady if u not in alive]:
            del self.steady[uid]
        self.resync_seconds = 0.05 if waiting else 0.5

    # -- nodes ----------------------------------------------------------------------------------

    def _node(self, node: dict, ready: bool) -> dict:
        if not spec(node).get("podCIDR"):
            used = getattr(self, "_cidrs", None) or {spec(n).get("podCIDR") for n in self.api.list(self.nodes, None, shared=True)["items"]}
            cidr = next("10.244.%d.0/24" % i for i in range(256) if "10.244.%d.0/24" % i not in used)
            used.add(cidr)
            body = clone(node)
            body.setdefault("spec", {}).update(podCIDR=cidr, podCIDRs=[cidr])
            node, _code = self.api.update(self.nodes, None, meta(node)["name"], body, field_manager="kube-controller-manager")
        new_status = clone(status(node))
        engine = getattr(self.lab, "fault_engine", None)
        name = meta(node)["name"]
        rebooting = engine is not None and engine.fault_active("reboot", name)
        if ready:
            conditions = set_condition(new_status.get("conditions"), "Ready", "True", "KubeletReady",
                                       "kubelet is posting ready status")
            boots = engine.boot_generation(name) if engine is not None else 0
            if boots and self.boots.get(name, 0) < boots:
                info = new_status.setdefault("nodeInfo", {})
                info["bootID"] = str(uuid.uuid5(uuid.NAMESPACE_URL, "kubelab/%s/boot/%d" % (name, boots)))
                self.boots[name] = boots
                register = self._knob("device_plugin_register_seconds", 1.0)
                if register > 0:
                    self.registering[name] = time.monotonic() + register
                    engine.wake_at(self.registering[name])
        else:
            conditions = set_condition(new_status.get("conditions"), "Ready", "False", "KubeletNotReady",
                                       "kubelab fault: node is rebooting" if rebooting else
                                       "kubelab fault: node is not ready")
        for cond in conditions:
            if cond.get("type") == "Ready" and cond.get("lastTransitionTime") != (condition(node, "Ready") or {}).get(
                    "lastTransitionTime"):
                cond["lastHeartbeatTime"] = cond["lastTransitionTime"]
        new_status["conditions"] = conditions
        gpus = self._gpu_allocatable(node, ready, rebooting)
        if gpus is not None:
            new_status.setdefault("allocatable", {})[GPU_RESOURCE] = gpus
        return write_status(self.api, self.nodes, node, new_status, MANAGER)

    def _gpu_allocatable(self, node: dict, ready: bool, rebooting: bool) -> str | None:
        """Allocatable ``nvidia.com/gpu`` of a device-plugin node: its healthy GPUs; "0" while a reboot keeps it
        down and until its device plugin has registered again; None: not a device-plugin node (or a down
        kubelet that cannot report), left as it is."""
        capacity = (status(node).get("capacity") or {}).get(GPU_RESOURCE)
        if capacity is None or backend(node) not in DEVICE_PLUGIN_BACKENDS:
            return None
        name = meta(node)["name"]
        if rebooting:
            return "0"
        if not ready:
            return None
        due = self.registering.get(name)
        if due is not None:
            if time.monotonic() < due:
                return "0"
            del self.registering[name]
        try:
            total = int(capacity)
        except (TypeError, ValueError):
            return None
        bad = self._unhealthy.get(name)
        if bad:
            total -= len(bad & gpu_indices(node))
        return str(max(0, total))

    # -- pods -----------------------------------------------------------------------------------

    def _pod(self, pod: dict, nodes: dict, pods: list) -> bool:
        """Move ``pod`` along; True when a timer is running (the loop then polls faster)."""
        node = nodes.get(spec(pod).get("nodeName") or "")
        uid = meta(pod).get("uid")
        if terminating(pod):
            if not spec(pod).get("nodeName") or (node is not None and not node_ready(node)):
                return False
            if self._elapsed(uid, "stopping") >= self._knob("pod_stop_seconds", 0.2):
                self.api.finalize_pod(meta(pod)["namespace"], meta(pod)["name"], uid)
                return False
            return True
        if node is None:
            return False
        phase = status(pod).get("phase") or "Pending"
        if not node_ready(node):
            if phase == "Running" and (condition(pod, "Ready") or {}).get("status") == "True":
                new_status = clone(status(pod))
                for kind in ("Ready", "ContainersReady"):
                    new_status["conditions"] = set_condition(new_status.get("conditions"), kind, "False", "NodeNotReady",
                                                             "Node is not ready" if kind == "Ready" else "")
                write_status(self.api, self.pods, pod, new_status, MANAGER)
            return False
        if phase == "Pending":
            if not status(pod).get("startTime"):
                write_status(self.api, self.pods, pod, self._creating(pod, node), MANAGER)
                self._elapsed(uid, "creating")
                for key in self._claim_keys(pod):  # NodePrepareResources starts (the DRA histogram's t0)
                    mark(self.lab, key[0], key[1], "prepare_started")
                return True
            if self._elapsed(uid, "creating") >= self._knob("pod_start_seconds", 0.2) + self._prepare_delay(pod):
                for key in self._claim_keys(pod):  # ... and returns: the claims are prepared, the containers start
                    stamp(self.lab, key, "prepared")
                    mark(self.lab, key[0], key[1], "prepared")
                ready = self._knob("pod_ready_seconds", 0.0) <= 0
                write_status(self.api, self.pods, pod, self._running(pod, node, pods, ready), MANAGER)
                return runs_to_completion(pod) or not ready
            return True
        if phase == "Running":
            ready = self._elapsed(uid, "running") >= self._knob("pod_ready_seconds", 0.0)
            completes = runs_to_completion(pod)
            if ready and not completes and self.steady.get(uid) == (meta(pod).get("resourceVersion"), self._health_token):
                return False
            written = write_status(self.api, self.pods, pod, self._running(pod, node, pods, ready), MANAGER)
            if not ready:
                return True
            if completes:
                if self._elapsed(uid, "running") >= self._knob("job_pod_seconds", 0.5):
                    write_status(self.api, self.pods, pod, self._succeeded(pod), MANAGER)
                    return False
                return True
            self.steady[uid] = (meta(written).get("resourceVersion"), self._health_token)
        return False

    @staticmethod
    def _conditions(pod_status: dict, ready: bool, reason: str = "ContainersNotReady") -> list:
        conditions = pod_status.get("conditions")
        names = ""
        if not ready:
            names = "containers with unready status: [%s]" % " ".join(
                c.get("name", "") for c in pod_status.get("containerStatuses") or [])
        for kind in POD_CONDITIONS:
            if kind in ("ContainersReady", "Ready") and not ready:
                conditions = set_condition(conditions, kind, "False", reason, names if reason == "ContainersNotReady" else "")
            elif kind == "PodReadyToStartContainers" and reason == "PodCompleted":
                conditions = set_condition(conditions, kind, "False")
            else:
                conditions = set_condition(conditions, kind, "True", "PodCompleted" if reason == "PodCompleted"
                                           and kind == "Initialized" else "")
        order = {kind: i for i, kind in enumerate(POD_CONDITIONS)}
        return sorted(conditions, key=lambda c: order.get(c.get("type"), len(order)))

    def _creating(self, pod: dict, node: dict) -> dict:
        new_status = clone(status(pod))
        host = _address(node)
        new_status.update(phase="Pending", hostIP=host, hostIPs=[{"ip": host}], startTime=now())
        new_status["containerStatuses"] = [
            {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": "", "ready": False, "started": False,
             "restartCount": 0, "state": {"waiting": {"reason": "ContainerCreating"}}, "lastState": {}}
            for c in spec(pod).get("containers") or []]
        new_status["conditions"] = self._conditions(new_status, False)
        return new_status

    def _pod_ip(self, pod: dict, node: dict, pods: list) -> str:
        if spec(pod).get("hostNetwork"):
            return _address(node)
        base = (spec(node).get("podCIDR") or "10.244.0.0/24").split("/")[0].rsplit(".", 1)[0]
        used = {status(p).get("podIP") for p in pods if spec(p).get("nodeName") == meta(node)["name"]}
        return next(("%s.%d" % (base, i) for i in range(2, 255) if "%s.%d" % (base, i) not in used), base + ".254")

    def _running(self, pod: dict, node: dict, pods: list, ready: bool = True) -> dict:
        old = status(pod)
        new_status = clone(old)
        stamp = now()
        ip = old.get("podIP") or self._pod_ip(pod, node, pods)
        new_status.update(phase="Running", podIP=ip, podIPs=[{"ip": ip}])
        previous = {c.get("name"): c for c in old.get("containerStatuses") or []}
        statuses = []
        for container in spec(pod).get("containers") or []:
            name = container.get("name", "")
            started = ((previous.get(name) or {}).get("state") or {}).get("running", {}).get("startedAt") or stamp
            image = container.get("image", "")
            statuses.append({"name": name, "image": image, "imageID": image_id(image),
                             "containerID": container_id(pod, name), "ready": ready, "started": True,
                             "restartCount": 0, "state": {"running": {"startedAt": started}}, "lastState": {}})
        health = getattr(self.lab, "device_health", None)
        if health:
            self._resource_health(pod, statuses, dict(health))
        new_status["containerStatuses"] = statuses
        inits = spec(pod).get("initContainers") or []
        if inits:
            new_status["initContainerStatuses"] = [
                {"name": c.get("name", ""), "image": c.get("image", ""), "imageID": image_id(c.get("image", "")),
                 "containerID": container_id(pod, c.get("name", "")), "ready": True, "started": False, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": old.get("startTime", stamp),
                                          "finishedAt": old.get("startTime", stamp)}}, "lastState": {}}
                for c in inits]
        new_status["conditions"] = self._conditions(new_status, ready)
        return new_status

    def _resource_health(self, pod: dict, statuses: list, health: dict) -> None:
        """KEP-4680 (ResourceHealthStatus): each container's ``allocatedResourcesStatus`` for its DRA claims,
        ``claim:<pod claim>[/<request>]`` with ``resources: [{resourceID: <driver>/<pool>/<device>, health}]``,
        for the devices whose health the driver has reported (``lab.device_health``; Unknown: no report
        within the health timeout)."""
        ns = meta(pod)["namespace"]
        names = {s.get("name"): s.get("resourceClaimName") for s in status(pod).get("resourceClaimStatuses") or []}
        extended = status(pod).get("extendedResourceClaimStatus") or {}
        claims_type = self.rtype("resource.k8s.io", "v1", "resourceclaims")
        by_container = {c.get("name", ""): c for c in spec(pod).get("containers") or []}
        for item in statuses:
            container = by_container.get(item.get("name")) or {}
            wanted = [(ref.get("name"), names.get(ref.get("name")), ref.get("request"))
                      for ref in (container.get("resources") or {}).get("claims") or []]
            wanted += [(m.get("resourceName"), extended.get("resourceClaimName"), m.get("requestName"))
                       for m in extended.get("requestMappings") or [] if m.get("containerName") == item.get("name")]
            entries = []
            for label, claim_name, request in wanted:
                claim = self.api.store.get_or_none(claims_type, ns, claim_name, shared=True) if claim_name and claims_type else None
                results = ((status(claim or {}).get("allocation") or {}).get("devices") or {}).get("results") or []
                resources = [{"resourceID": "%s/%s/%s" % (r.get("driver"), r.get("pool"), r.get("device")),
                              "health": health[(r.get("driver"), r.get("pool"), r.get("device"))]}
                             for r in results if (not request or r.get("request") == request)
                             and (r.get("driver"), r.get("pool"), r.get("device")) in health]
                if resources:
                    entries.append({"name": "claim:%s%s" % (label, "/" + request if request else ""),
                                    "resources": resources})
            if entries:
                item["allocatedResourcesStatus"] = entries

    def _succeeded(self, pod: dict) -> dict:
        new_status = clone(status(pod))
        stamp = now()
        statuses = []
        for item in new_status.get("containerStatuses") or []:
            started = ((item.get("state") or {}).get("running") or {}).get("startedAt", stamp)
            item = dict(item, ready=False, started=False)
            item["state"] = {"terminated": {"exitCode": 0, "reason": "Completed", "startedAt": started,
                                            "finishedAt": stamp, "containerID": item.get("containerID", "")}}
            statuses.append(item)
        new_status.update(phase="Succeeded", containerStatuses=statuses)
        new_status["conditions"] = self._conditions(new_status, False, "PodCompleted")
        return new_status
