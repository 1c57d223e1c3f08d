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

DRA is not simulated yet: ``spec.resourceClaims`` are ignored here (no ResourceClaim allocation,
no ResourceSlice accounting); that is the next issue's work.
"""

from __future__ import annotations

import copy

from kubelab.controllers import Controller
from kubelab.controllers.common import (meta, node_affinity_matches, node_ready, pod_active, pod_resource, quantity,
                                        set_condition, spec, status, terminating, untolerated_taint, write_status)
from kubelab.errors import ApiError

GPU = "nvidia.com/gpu"
MANAGER = "kube-scheduler"


class SchedulerController(Controller):
    watches = ("Pod", "Node")
    resync_seconds = 1.0

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.nodes = self.rtype("", "v1", "nodes")

    def reconcile(self) -> None:
        pods = self.api.list(self.pods, None)["items"]
        pending = [p for p in pods if not spec(p).get("nodeName") and not terminating(p)
                   and spec(p).get("schedulerName", "default-scheduler") == "default-scheduler"
                   and status(p).get("phase", "Pending") == "Pending"]
        if not pending:
            return
        nodes = self.api.list(self.nodes, None)["items"]
        load = {meta(n)["name"]: {"pods": 0, GPU: 0.0} for n in nodes}
        for pod in pods:
            bound = spec(pod).get("nodeName")
            if bound in load and (pod_active(pod) or terminating(pod)):
                load[bound]["pods"] += 1
                load[bound][GPU] += pod_resource(spec(pod), GPU)
        pending.sort(key=lambda p: (meta(p).get("creationTimestamp", ""), meta(p).get("namespace", ""), meta(p)["name"]))
        for pod in pending:
            try:
                self._schedule(pod, nodes, load)
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _fit(self, pod: dict, node: dict, load: dict) -> str | None:
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
        if wanted > 0 and used[GPU] + wanted > quantity(allocatable.get(GPU)):
            return "Insufficient %s" % GPU
        return None

    def _schedule(self, pod: dict, nodes: list, load: dict) -> None:
        reasons: dict[str, int] = {}
        fitting = []
        for node in nodes:
            why = self._fit(pod, node, load)
            if why is None:
                fitting.append(node)
            else:
                reasons[why] = reasons.get(why, 0) + 1
        if not fitting:
            detail = ", ".join("%d %s" % (count, why) for why, count in sorted(reasons.items()))
            message = "0/%d nodes are available%s." % (len(nodes), ": " + detail if detail else "")
            new_status = copy.deepcopy(status(pod))
            new_status["conditions"] = set_condition(new_status.get("conditions"), "PodScheduled", "False",
                                                     "Unschedulable", message)
            new_status.setdefault("phase", "Pending")
            write_status(self.api, self.pods, pod, new_status, MANAGER)
            return
        fitting.sort(key=lambda n: (load[meta(n)["name"]]["pods"], meta(n)["name"]))
        node = fitting[0]
        name = meta(node)["name"]
        body = copy.deepcopy(pod)
        body.setdefault("spec", {})["nodeName"] = name
        bound, _code = self.api.update(self.pods, meta(pod)["namespace"], meta(pod)["name"], body, field_manager=MANAGER)
        load[name]["pods"] += 1
        load[name][GPU] += pod_resource(spec(pod), GPU)
        new_status = copy.deepcopy(status(bound))
        new_status["conditions"] = set_condition(new_status.get("conditions"), "PodScheduled", "True")
        write_status(self.api, self.pods, bound, new_status, MANAGER)
