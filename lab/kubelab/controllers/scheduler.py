# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The simulated kube-scheduler.

Each pass binds every pending pod (``spec.nodeName`` empty, not terminating, ``schedulerName``
default-scheduler) to the least-loaded node (fewest active pods, then name) that passes:

* Ready (the Ready condition is True) and schedulable: ``spec.unschedulable`` acts as the taint
  ``node.kubernetes.io/unschedulable:NoSchedule``, as the NodeUnschedulable plugin does, so pods
  tolerating it (DaemonSet pods) still land on cordoned nodes;
* ``spec.nodeSelector`` and required node affinity (In, NotIn, Exists, DoesNotExist, Gt, Lt;
  ``matchFields`` on ``metadata.name``, which DaemonSet pods use);
* every NoSchedule/NoExecute taint tolerated (PreferNoSchedule is ignored);
* the node's ``pods`` allocatable and, when the pod asks for it, enough ``nvidia.com/gpu``
  (allocatable minus the requests of active pods already bound there).

cpu and memory are not accounted. A pod that fits nowhere gets ``PodScheduled=False``, reason
Unschedulable, with a kube-scheduler style message ("0/3 nodes are available: ...").

Binding differs from Kubernetes: kube-scheduler POSTs ``pods/{name}/binding`` (which the API
server turns into a nodeName write and a PodScheduled=True condition); this controller updates
``spec.nodeName`` through ``Api.update`` with the pod's resourceVersion as precondition, then
writes the PodScheduled condition through the status subresource.

Dynamic Resource Allocation (``DraScheduling``, the DynamicResources plugin; devices, taints and the
allocator are in ``kubelab.controllers.dra``):

* ``spec.resourceClaims[]``: a ``resourceClaimTemplateName`` gets a claim ``<pod>-<claim>-<5
  random>`` (owned by the pod, annotation ``resource.kubernetes.io/pod-claim-name``) recorded in the
  pod's ``status.resourceClaimStatuses``, even while the pod cannot be scheduled (the
  resourceclaim controller does this in Kubernetes); a missing claim or template, or a claim being
  deleted, leaves the pod Unschedulable everywhere;
* per node, the pod's unallocated claims are allocated together from that node's ResourceSlice
  devices (plus ``allNodes`` slices): DeviceClass selectors and request selectors (CEL,
  ``kubelab.cel``), ``exactly`` or ``firstAvailable``, ``ExactCount``/``All``, ``adminAccess``,
  device taints (slice and DeviceTaintRule; NoSchedule/NoExecute need a request toleration),
  constraints ``matchAttribute``/``distinctAttribute``, devices of other claims excluded; an
  already allocated claim restricts the pod to its ``nodeSelector``. Failing that, the node counts
  as "cannot allocate all claims" (with the CEL error when a selector fails to evaluate);
* on binding, the claim gets the ``resource.kubernetes.io/delete-protection`` finalizer and
  ``status.allocation`` + ``status.reservedFor`` (pods) in one status write, before the pod is bound;
* extended resources backed by DRA: on a node labelled ``kubelab.gpufleet.io/gpu-backend=dra`` (or
  ``both`` without the resource in allocatable) a request of a resource that some DeviceClass names
  in ``spec.extendedResourceName`` (the newest such class), or of
  ``deviceclass.resource.kubernetes.io/<class>``, is allocated from that class through a claim
  ``<pod>-extended-resources-<5 random>`` (annotation
  ``resource.kubernetes.io/extended-resource-claim: "true"``, one request ``container-<i>-request-<j>``
  per container and resource; init containers are not counted) recorded in the pod's
  ``status.extendedResourceClaimStatus``; node allocatable is not consulted there.

Fault injection (kubelab.faults): ``claim_allocation_failure`` (per attempt in ``plan``, or with ``per: pod``
once per pod, sticky, before any node is tried), ``claim_latency`` ``allocation`` (a pod whose unallocated
claim is younger than its delay is skipped, and the engine wakes the loop at the due time: t0 = the claim's
creation, or the pod's for the extended-resource claim) and ``numa_violation`` (``Allocator(violate=...)``);
each recorded in ``lab.claim_truth[...]["injected"]``.
"""

from __future__ import annotations

import random
import threading
import time
from concurrent.futures import ThreadPoolExecutor

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab import cel
from kubelab.controllers.common import (meta, node_affinity_matches, node_ready, pod_active, pod_resource, quantity,
                                        random_suffix, set_condition, spec, status, terminating, untolerated_taint,
                                        write_status)
from kubelab.controllers.dra import (EXTENDED_ANNOTATION, FINALIZER, IMPLICIT_PREFIX, NO_FIT, POD_CLAIM_ANNOTATION,
                                     AllocationError, Allocator, DeviceView, Unresolvable, allocation_status, backend,
                                     claim_devices, inject, mark, numa_eligible, numa_nodes, pod_owner_ref, truth)
from kubelab.errors import ApiError

GPU = "nvidia.com/gpu"
MANAGER = "kube-scheduler"
INJECTED_FAILURE = "injected claim allocation failure (kubelab fault)"


def _extended_names(pod_spec: dict) -> set:
    names = set()
    for container in pod_spec.get("containers") or []:
        res = container.get("resources") or {}
        for key in list((res.get("requests") or {})) + list((res.get("limits") or {})):
            if "/" in key and not key.startswith(("kubernetes.io/", "requests.")):
                names.add(key)
    return names


def _unschedulable_status(pod: dict, message: str) -> dict:
    new_status = clone(status(pod))
    new_status["conditions"] = set_condition(new_status.get("conditions"), "PodScheduled", "False", "Unschedulable",
                                             message)
    new_status.setdefault("phase", "Pending")
    return new_status


class SchedulerController(Controller):
    """kube-scheduler: a scheduling cycle per pending pod (one at a time), then its binding cycle (PreBind's
    claim allocation, the binding, the PodScheduled condition) on a pool of binder threads, as kube-scheduler
    binds asynchronously. While a pod's binding runs, the pod is *assumed*: its node, GPUs, devices and
    claims count as taken, and it is not scheduled again; a binding that fails leaves it pending for the next
    pass (woken when the binding ends)."""

    watches = ("Pod", "Node", "ResourceClaim", "ResourceSlice", "DeviceClass", "DeviceTaintRule")
    resync_seconds = 1.0
    binders = 4

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.nodes = self.rtype("", "v1", "nodes")
        self.assumed: dict = {}  # pod uid -> {"node", "gpus", "devices", "claims"} while its binding runs
        self.assumed_lock = threading.Lock()
        self.binder = ThreadPoolExecutor(max_workers=self.binders, thread_name_prefix="scheduler-bind")

    def stop(self) -> None:
        super().stop()
        self.binder.shutdown(wait=True)

    def reconcile(self) -> None:
        pods = self.api.list(self.pods, None, shared=True)["items"]
        with self.assumed_lock:
            assumed = dict(self.assumed)
        pending = [p for p in pods if not spec(p).get("nodeName") and not terminating(p)
                   and spec(p).get("schedulerName", "default-scheduler") == "default-scheduler"
                   and status(p).get("phase", "Pending") == "Pending" and meta(p).get("uid") not in assumed]
        if not pending:
            return
        nodes = self.api.list(self.nodes, None, shared=True)["items"]
        load = {meta(n)["name"]: {"pods": 0, GPU: 0.0} for n in nodes}
        listed = set()  # uids of bound pods
        for pod in pods:
            bound = spec(pod).get("nodeName")
            if bound:
                listed.add(meta(pod).get("uid"))
            if bound in load and (pod_active(pod) or terminating(pod)):
                load[bound]["pods"] += 1
                load[bound][GPU] += pod_resource(spec(pod), GPU)
        for uid, entry in assumed.items():
            if uid not in listed and entry["node"] in load:  # bound already: counted above
                load[entry["node"]]["pods"] += 1
                load[entry["node"]][GPU] += entry["gpus"]
        pending.sort(key=lambda p: (meta(p).get("creationTimestamp", ""), meta(p).get("namespace", ""), meta(p)["name"]))
        dra = None
        if any(spec(p).get("resourceClaims") or _extended_names(spec(p)) for p in pending):
            dra = DraScheduling(self)
            for entry in assumed.values():
                dra.view.in_use |= entry["devices"]
            dra.busy_claims = set().union(*(entry["claims"] for entry in assumed.values())) if assumed else set()
        for pod in pending:
            try:
                self._schedule(pod, nodes, load, dra)
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _fit(self, pod: dict, node: dict, load: dict, dra=None) -> str | None:
        """None when ``pod`` fits ``node``, else the kube-scheduler style reason it does not."""
        pod_spec = spec(pod)
        if not node_ready(node):
            return "node(s) were not ready"
        if not node_affinity_matches(pod_spec, node):
            return "node(s) didn't match Pod's node affinity/selector"
        taint = untolerated_taint(pod_spec.get("tolerations") or [], node)
        if taint is not None:
            if taint.get("key") == "node.kubernetes.io/unschedulable":
                return "node(s) were unschedulable"
            return "node(s) had untolerated taint {%s: %s}" % (taint.get("key"), taint.get("value", ""))
        used = load[meta(node)["name"]]
        allocatable = status(node).get("allocatable") or {}
        if "pods" in allocatable and used["pods"] + 1 > quantity(allocatable["pods"]):
            return "Too many pods"
        wanted = pod_resource(pod_spec, GPU)
        if wanted > 0 and not (dra is not None and dra.via_dra(node, GPU) is not None) \
                and used[GPU] + wanted > quantity(allocatable.get(GPU)):
            return "Insufficient %s" % GPU
        return None

    def _schedule(self, pod: dict, nodes: list, load: dict, dra=None) -> None:
        claims, extended = [], None
        if dra is not None:
            try:
                pod, claims, extended = dra.pod_claims(pod)
            except ClaimsNotReady:
                return  # woken again by the claim's creation
            except Unresolvable as exc:
                message = "0/%d nodes are available: %s." % (len(nodes), exc)
                write_status(self.api, self.pods, pod, _unschedulable_status(pod, message), MANAGER)
                return
        if dra is not None and any((meta(c)["namespace"], meta(c)["name"]) in dra.busy_claims for c in claims):
            return  # a claim of another pod's binding in flight: scheduled once that binding is done
        if dra is not None and (claims or extended is not None or dra.wants_devices(pod, nodes)):
            if dra.injected_failure(pod, claims, extended):
                message = "0/%d nodes are available: %s: %s." % (len(nodes), NO_FIT, INJECTED_FAILURE)
                write_status(self.api, self.pods, pod, _unschedulable_status(pod, message), MANAGER)
                return
            if not dra.allocation_due(pod, claims, extended):
                return  # claim_latency: woken again when the allocation delay is over
        reasons: dict[str, int] = {}
        fitting, plans = [], {}
        for node in nodes:
            why = self._fit(pod, node, load, dra)
            if why is None and dra is not None:
                plans[meta(node)["name"]], why = dra.plan(pod, claims, extended, node)
            if why is None:
                fitting.append(node)
            else:
                reasons[why] = reasons.get(why, 0) + 1
        if not fitting:
            detail = ", ".join("%d %s" % (count, why) for why, count in sorted(reasons.items()))
            message = "0/%d nodes are available%s." % (len(nodes), ": " + detail if detail else "")
            write_status(self.api, self.pods, pod, _unschedulable_status(pod, message), MANAGER)
            return
        fitting.sort(key=lambda n: (load[meta(n)["name"]]["pods"], meta(n)["name"]))
        node = fitting[0]
        name = meta(node)["name"]
        plan = plans.get(name)
        gpus = pod_resource(spec(pod), GPU)
        load[name]["pods"] += 1
        load[name][GPU] += gpus
        devices, claim_keys = plan_devices(plan), {(meta(c)["namespace"], meta(c)["name"]) for c in claims}
        if dra is not None:
            dra.view.in_use |= devices
            dra.busy_claims |= claim_keys
        with self.assumed_lock:
            self.assumed[meta(pod)["uid"]] = {"node": name, "gpus": gpus, "devices": devices, "claims": claim_keys}
        try:
            self.binder.submit(self._binding, pod, dra, plan, name)
        except RuntimeError:  # the binder is shut down: the lab is stopping
            with self.assumed_lock:
                self.assumed.pop(meta(pod)["uid"], None)

    def _binding(self, pod: dict, dra, plan: dict | None, name: str) -> None:
        """The binding cycle (a binder thread): PreBind (the claims' allocation), Bind, the PodScheduled condition."""
        try:
            self._bind(pod, dra, plan, name)
        except ApiError as exc:
            if exc.code not in (404, 409, 410, 422, 429):
                self.lab.controller_errors.append("%s: %s" % (type(self).__name__, exc.message))
        except Exception as exc:  # pylint: disable=broad-except
            self.lab.controller_errors.append("%s: binding: %r" % (type(self).__name__, exc))
        finally:
            with self.assumed_lock:
                self.assumed.pop(meta(pod)["uid"], None)
            with self.store.changed:  # the scheduling loop looks again (a failed binding's pod is pending)
                self.store.changed.notify_all()

    def _bind(self, pod: dict, dra, plan: dict | None, name: str) -> None:
        extended_status = dra.commit(pod, plan, remember=False) if dra is not None else None
        if extended_status:
            # PreBind (DynamicResources): the pod's extendedResourceClaimStatus is written before the binding,
            # so a kubelet status write after the binding cannot race it away.
            early = clone(status(pod))
            early["extendedResourceClaimStatus"] = extended_status
            pod = write_status(self.api, self.pods, pod, early, MANAGER)
        # POST pods/{name}/binding: nodeName and the PodScheduled condition in one write, as kube-scheduler binds
        self.api.bind(meta(pod)["namespace"], meta(pod)["name"], {
            "apiVersion": "v1", "kind": "Binding", "metadata": {"name": meta(pod)["name"], "uid": meta(pod)["uid"]},
            "target": {"apiVersion": "v1", "kind": "Node", "name": name}})


class ClaimsNotReady(Exception):
    """A pod's claim from a template is not made yet (the resource claim controller makes it)."""


def plan_devices(plan: dict | None) -> set:
    """(driver, pool, device) of every allocation a scheduling plan makes (its claims and the extended one)."""
    if not plan:
        return set()
    allocations = [allocation for _claim, allocation in plan.get("allocate") or []]
    if plan.get("extended"):
        allocations.append(plan["extended"][1])
    found = set()
    for allocation in allocations:
        for result in ((allocation or {}).get("devices") or {}).get("results") or []:
            if not result.get("adminAccess"):
                found.add((result.get("driver"), result.get("pool"), result.get("device")))
    return found


class DraScheduling:
    """One scheduling pass's view of DRA: claims of pods, extended resources, allocation and its writes."""

    def __init__(self, scheduler: SchedulerController):
        self.api, self.lab, self.pods = scheduler.api, scheduler.lab, scheduler.pods
        self.claims = scheduler.rtype("resource.k8s.io", "v1", "resourceclaims")
        self.templates = scheduler.rtype("resource.k8s.io", "v1", "resourceclaimtemplates")
        self.view = DeviceView(self.api, scheduler.registry)
        self.engine = getattr(self.lab, "fault_engine", None)
        self.busy_claims: set = set()  # claims of bindings in flight: their pods wait for the next pass
        self.delays: dict = {}  # claim key (or ("pod", ns, name) for the extended claim) -> allocation delay
        self.extended: dict = {}  # extended resource name -> DeviceClass (the newest naming it)
        classes = sorted(self.view.classes.values(), key=lambda c: meta(c)["name"])
        for cls in sorted(classes, key=lambda c: meta(c).get("creationTimestamp", ""), reverse=True):
            if spec(cls).get("extendedResourceName"):
                self.extended.setdefault(spec(cls)["extendedResourceName"], meta(cls)["name"])

    def via_dra(self, node: dict, resource: str) -> str | None:
        """The DeviceClass serving ``resource`` on ``node`` through DRA, or None (device plugin)."""
        if resource.startswith(IMPLICIT_PREFIX):
            return resource[len(IMPLICIT_PREFIX):]
        kind = backend(node)
        if kind == "dra" or (kind == "both" and resource in self.extended
                             and quantity((status(node).get("allocatable") or {}).get(resource)) <= 0):
            return self.extended.get(resource, "")  # "" on a DRA node: no class, so it cannot fit
        return None

    # -- claims of a pod ------------------------------------------------------------------------

    def pod_claims(self, pod: dict) -> tuple[dict, list, dict | None]:
        """(pod, its claims, its extended-resource claim). A claim from a template is made by the resource
        claim controller (kube-controller-manager), which names it in the pod's status: until then the pod
        waits (ClaimsNotReady), as kube-scheduler's DynamicResources PreFilter waits for it."""
        ns, uid = meta(pod)["namespace"], meta(pod)["uid"]
        owned = {}
        extended = None
        for claim in self.view.claims.values():
            if meta(claim)["namespace"] == ns and any(r.get("uid") == uid for r in meta(claim).get("ownerReferences") or []):
                annotations = meta(claim).get("annotations") or {}
                if annotations.get(EXTENDED_ANNOTATION) == "true":
                    extended = claim
                elif annotations.get(POD_CLAIM_ANNOTATION):
                    owned[annotations[POD_CLAIM_ANNOTATION]] = claim
        recorded = {s.get("name"): s.get("resourceClaimName") for s in status(pod).get("resourceClaimStatuses") or []}
        claims = []
        for entry in spec(pod).get("resourceClaims") or []:
            if entry.get("resourceClaimName"):
                claim = self.view.claims.get((ns, entry["resourceClaimName"]))
                if claim is None:
                    raise Unresolvable('resourceclaim "%s" not found' % entry["resourceClaimName"])
            elif entry.get("resourceClaimTemplateName"):
                claim = self.view.claims.get((ns, recorded.get(entry.get("name")) or "")) or owned.get(entry.get("name"))
                if claim is None:
                    if self.api.store.get_or_none(self.templates, ns, entry["resourceClaimTemplateName"]) is None:
                        raise Unresolvable('resourceclaimtemplate "%s" not found' % entry["resourceClaimTemplateName"])
                    raise ClaimsNotReady(meta(pod)["name"])
            else:
                raise Unresolvable("pod claim %s names neither a claim nor a template" % entry.get("name"))
            if terminating(claim):
                raise Unresolvable('resourceclaim "%s" is being deleted' % meta(claim)["name"])
            claims.append(claim)
        return pod, claims, extended

    # -- per node -------------------------------------------------------------------------------

    def _extended_spec(self, pod: dict, node: dict) -> tuple[dict | None, list]:
        requests, mappings = [], []
        for ci, container in enumerate(spec(pod).get("containers") or []):
            res = container.get("resources") or {}
            amounts = dict(res.get("limits") or {}, **(res.get("requests") or {}))
            for resource in sorted(amounts):
                count = int(quantity(amounts[resource]))
                if count <= 0 or "/" not in resource:
                    continue
                cls = self.via_dra(node, resource)
                if cls is None:
                    continue
                if not cls or cls not in self.view.classes:
                    raise AllocationError("Insufficient %s" % resource)
                name = "container-%d-request-%d" % (ci, len(requests))
                requests.append({"name": name, "exactly": {"deviceClassName": cls, "allocationMode": "ExactCount",
                                                           "count": count}})
                mappings.append({"containerName": container.get("name", ""), "resourceName": resource,
                                 "requestName": name})
        return ({"devices": {"requests": requests}} if requests else None), mappings

    def plan(self, pod: dict, claims: list, extended: dict | None, node: dict) -> tuple[dict | None, str | None]:
        name = meta(node)["name"]
        rate = self.lab.fault_rate("claim_allocation") if hasattr(self.lab, "fault_rate") else 0.0
        if rate and random.random() < rate:  # fault injection: claim_allocation_failure
            return None, "%s: %s" % (NO_FIT, INJECTED_FAILURE)
        todo, keep = [], []
        for claim in claims + ([extended] if extended is not None else []):
            allocation = status(claim).get("allocation")
            if not allocation:
                todo.append(claim)
                continue
            selector = allocation.get("nodeSelector")
            affinity = {"affinity": {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": selector}}}
            if selector and not node_affinity_matches(affinity, node):
                return None, "resourceclaim not available on the node"
            keep.append(claim)
        try:
            ext_spec, mappings = self._extended_spec(pod, node) if extended is None else (None, [])
            specs = [spec(c) for c in todo] + ([ext_spec] if ext_spec else [])
            violate = [i for i, c in enumerate(todo) if self._violates(c)]
            picks = Allocator(self.view, name, violate).allocate(specs) if specs else []
        except AllocationError as exc:
            return None, str(exc) if str(exc).startswith("Insufficient") else "%s: %s" % (NO_FIT, exc)
        except cel.CelError as exc:
            return None, "%s: %s" % (NO_FIT, exc)
        if picks is None:
            return None, NO_FIT
        plan = {"keep": keep, "allocate": [(c, allocation_status(self.view, spec(c), p, name))
                                           for c, p in zip(todo, picks)], "extended": None,
                "picks": {(meta(c)["namespace"], meta(c)["name"]): p for c, p in zip(todo, picks)}}
        if ext_spec:
            plan["extended"] = (ext_spec, allocation_status(self.view, ext_spec, picks[-1], name), mappings)
        if extended is not None:  # made by an earlier pass whose binding did not happen
            try:
                mappings = self._extended_spec(pod, node)[1]
            except AllocationError:
                mappings = []
            plan["extended_status"] = {"resourceClaimName": meta(extended)["name"], "requestMappings": mappings}
        return plan, None

    # -- writes ---------------------------------------------------------------------------------

    def commit(self, pod: dict, plan: dict, remember: bool = True) -> dict | None:
        """Reserve and allocate the planned claims for ``pod``; the extendedResourceClaimStatus, if any.

        ``remember``: put the written claims into this pass's view (False from a binder thread: the
        scheduling cycle took the plan's devices and claims into the view before it handed the pod over)."""
        ref = {"resource": "pods", "name": meta(pod)["name"], "uid": meta(pod)["uid"]}
        for claim in plan["keep"]:
            if not any(r.get("uid") == ref["uid"] for r in status(claim).get("reservedFor") or []):
                new_status = clone(status(claim))
                new_status["reservedFor"] = (new_status.get("reservedFor") or []) + [ref]
                written = write_status(self.api, self.claims, claim, new_status, MANAGER)
                if remember:
                    self._remember(written)
        for claim, allocation in plan["allocate"]:
            self._allocate(claim, allocation, ref, remember)
            self._injected((meta(claim)["namespace"], meta(claim)["name"]), plan, claim)
        if plan["extended"] is None:
            return plan.get("extended_status")
        ext_spec, allocation, mappings = plan["extended"]
        ns = meta(pod)["namespace"]
        body = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
                "metadata": {"name": "%s-extended-resources-%s" % (meta(pod)["name"], random_suffix()), "namespace": ns,
                             "annotations": {EXTENDED_ANNOTATION: "true"}, "ownerReferences": [pod_owner_ref(pod)],
                             "finalizers": [FINALIZER]},
                "spec": ext_spec}
        claim = self.api.create(self.claims, ns, body, field_manager=MANAGER)
        mark(self.lab, ns, meta(claim)["name"], "created")
        self._allocate(claim, allocation, ref, remember)
        key = (ns, meta(claim)["name"])
        inject(self.lab, key, "allocation_delay", self.delays.get(("pod", ns, meta(pod)["name"]), 0.0))
        return {"resourceClaimName": meta(claim)["name"], "requestMappings": mappings}

    def _allocate(self, claim: dict, allocation: dict, ref: dict, remember: bool = True) -> None:
        if FINALIZER not in (meta(claim).get("finalizers") or []):
            body = clone(claim)
            body["metadata"]["finalizers"] = (meta(claim).get("finalizers") or []) + [FINALIZER]
            claim, _code = self.api.update(self.claims, meta(claim)["namespace"], meta(claim)["name"], body,
                                           field_manager=MANAGER)
        new_status = clone(status(claim))
        new_status.update(allocation=allocation, reservedFor=[ref])
        claim = write_status(self.api, self.claims, claim, new_status, MANAGER)
        mark(self.lab, meta(claim)["namespace"], meta(claim)["name"], "allocated", once=False)
        if remember:
            self._remember(claim)

    # -- fault injection (kubelab.faults): claim_allocation_failure per: pod, claim_latency, numa_violation

    def wants_devices(self, pod: dict, nodes: list) -> bool:
        """Whether ``pod`` asks for an extended resource that some node serves through DRA."""
        names = _extended_names(spec(pod))
        return bool(names) and any(self.via_dra(node, resource) for node in nodes for resource in names)

    def injected_failure(self, pod: dict, claims: list, extended: dict | None) -> bool:
        """``claim_allocation_failure`` with ``per: pod``: drawn once per pod and sticky; marks the truth of the
        pod's claims (or its ("pod", namespace, name) entry when no claim exists yet)."""
        engine = self.engine
        if engine is None:
            return False
        ns, name = meta(pod)["namespace"], meta(pod)["name"]
        if not engine.pod_allocation_fails((ns, name, meta(pod)["uid"])):
            return False
        keys = [(meta(c)["namespace"], meta(c)["name"]) for c in claims + ([extended] if extended else [])]
        for key in keys or [("pod", ns, name)]:
            entry = truth(self.lab, key)
            entry["injected"]["allocation_failure"] = True
            if entry["pod"] is None or len(key) == 3:
                entry["pod"], entry["pod_uid"] = name, meta(pod)["uid"]
        return True

    def allocation_due(self, pod: dict, claims: list, extended: dict | None) -> bool:
        """``claim_latency`` allocation: False (and a wake-up at the due time) while some unallocated claim of
        ``pod`` is younger than its delay d, drawn once per claim: t0 = the claim's creation as the lab saw it;
        for the extended-resource claim, made at commit time, t0 = the pod's creation."""
        engine = self.engine
        if engine is None:
            return True
        ns = meta(pod)["namespace"]
        waits = []
        for claim in claims:
            if status(claim).get("allocation"):
                continue
            key = (ns, meta(claim)["name"])
            delay = self.delays[key] = engine.delay("allocation", key)
            created = (getattr(self.lab, "claim_created", None) or {}).get(key)
            if delay and created is not None:
                waits.append(created + delay)
        if extended is None and _extended_names(spec(pod)):
            key = ("pod", ns, meta(pod)["name"])
            delay = self.delays[key] = engine.delay("allocation", key)
            created = (getattr(self.lab, "pod_created", None) or {}).get(meta(pod)["uid"])
            if delay and created is not None:
                waits.append(created + delay)
        due = max(waits, default=0.0)
        left = due - time.time()
        if left <= 0:
            return True
        engine.wake_at(time.monotonic() + left)
        return False

    def _violates(self, claim: dict) -> bool:
        engine = self.engine
        try:
            eligible = engine is not None and numa_eligible(spec(claim))
        except AllocationError:
            eligible = False
        return eligible and engine.numa_violation((meta(claim)["namespace"], meta(claim)["name"]))

    def _injected(self, key: tuple, plan: dict, claim: dict) -> None:
        inject(self.lab, key, "allocation_delay", self.delays.get(key, 0.0))
        picks = plan.get("picks", {}).get(key)
        if picks is not None and self._violates(claim) and len(numa_nodes(picks)) > 1:
            inject(self.lab, key, "numa_violation", True)

    def _remember(self, claim: dict) -> None:
        self.view.claims[(meta(claim)["namespace"], meta(claim)["name"])] = claim
        self.view.in_use |= claim_devices(claim)
