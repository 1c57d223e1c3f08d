# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DaemonSet controller: one pod per node that should run it.

A node should run the DaemonSet's pod when it matches the template's nodeSelector and required
node affinity and its NoSchedule/NoExecute taints are tolerated by the template's tolerations plus
the ones the real controller adds to every DaemonSet pod (not-ready, unreachable, disk-pressure,
memory-pressure, pid-pressure, network-unavailable and ``node.kubernetes.io/unschedulable:NoSchedule``,
so cordoning does not evict or block them). A node that is not Ready gets no new pod, but an
existing one stays (and counts as desired), as with the real not-ready taints.

Pods are ``<ds>-<5 random>`` and, as in Kubernetes since 1.12, go through the scheduler: their
required node affinity is replaced by ``matchFields metadata.name In [<node>]``. They carry
``controller-revision-hash`` (a hash of the template; no ControllerRevision objects are made) and
``pod-template-generation``. RollingUpdate (default) replaces outdated pods while at most
``maxUnavailable`` (default 1) pods are unavailable; OnDelete leaves them. Pods on nodes that should
not run the DaemonSet any more are deleted.

Status: desiredNumberScheduled, currentNumberScheduled, numberMisscheduled, numberReady,
numberAvailable, numberUnavailable, updatedNumberScheduled, observedGeneration.
"""

from __future__ import annotations


from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (CONTROLLER_MANAGER, int_or_percent, meta, node_affinity_matches, node_ready,
                                        owned_by, pod_active, pod_ready, spec, stable_hash,
                                        status, terminating, untolerated_taint, write_status)
from kubelab.controllers.workloads import (available, create_allowed, create_refused, create_succeeded,
                                           template_pod)
from kubelab.errors import ApiError

DAEMON_TOLERATIONS = [
    {"key": "node.kubernetes.io/not-ready", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/unreachable", "operator": "Exists", "effect": "NoExecute"},
    {"key": "node.kubernetes.io/disk-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/memory-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/pid-pressure", "operator": "Exists", "effect": "NoSchedule"},
    {"key": "node.kubernetes.io/unschedulable", "operator": "Exists", "effect": "NoSchedule"},
]
NETWORK_TOLERATION = {"key": "node.kubernetes.io/network-unavailable", "operator": "Exists", "effect": "NoSchedule"}


def daemon_template(template: dict, node_name: str) -> dict:
    """The DaemonSet's pod template for ``node_name``: default tolerations and a node-name affinity."""
    template = clone(template or {})
    pod_spec = template.setdefault("spec", {})
    tolerations = list(pod_spec.get("tolerations") or [])
    extra = DAEMON_TOLERATIONS + ([NETWORK_TOLERATION] if pod_spec.get("hostNetwork") else [])
    for tol in extra:
        if not any(t.get("key") == tol["key"] and t.get("effect") == tol["effect"] for t in tolerations):
            tolerations.append(dict(tol))
    pod_spec["tolerations"] = tolerations
    if node_name:
        affinity = pod_spec.setdefault("affinity", {}).setdefault("nodeAffinity", {})
        affinity["requiredDuringSchedulingIgnoredDuringExecution"] = {"nodeSelectorTerms": [
            {"matchFields": [{"key": "metadata.name", "operator": "In", "values": [node_name]}]}]}
    return template


def _target_node(pod: dict) -> str:
    if spec(pod).get("nodeName"):
        return spec(pod)["nodeName"]
    terms = (((spec(pod).get("affinity") or {}).get("nodeAffinity") or {})
             .get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get("nodeSelectorTerms") or []
    for term in terms:
        for req in term.get("matchFields") or []:
            if req.get("key") == "metadata.name" and req.get("values"):
                return req["values"][0]
    return ""


class DaemonSetController(Controller):
    watches = ("DaemonSet", "Pod", "Node")

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.nodes = self.rtype("", "v1", "nodes")
        self.daemonsets = self.rtype("apps", "v1", "daemonsets")

    def reconcile(self) -> None:
        daemonsets = self.api.list(self.daemonsets, None, shared=True)["items"]
        if not daemonsets:
            return
        nodes = self.api.list(self.nodes, None, shared=True)["items"]
        pods = self.api.list(self.pods, None, shared=True)["items"]
        for ds in daemonsets:
            if terminating(ds):
                continue
            try:
                self._sync(ds, nodes, [p for p in pods if owned_by(p, ds)])
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _sync(self, ds: dict, nodes: list, owned: list) -> None:
        namespace = meta(ds)["namespace"]
        template = spec(ds).get("template") or {}
        generation = meta(ds).get("generation", 1)
        revision = stable_hash(template)
        generic = daemon_template(template, "")
        by_node: dict = {}
        for pod in owned:
            if pod_active(pod):
                by_node.setdefault(_target_node(pod), []).append(pod)
        desired, misscheduled = [], 0
        for node in nodes:
            name = meta(node)["name"]
            fits = node_affinity_matches(spec(generic), node) and \
                untolerated_taint(spec(generic).get("tolerations") or [], node) is None
            if fits and (node_ready(node) or by_node.get(name)):
                desired.append(name)
        for name, pods in by_node.items():
            if name not in desired:
                misscheduled += 1 if any(spec(p).get("nodeName") for p in pods) else 0
                self._delete(pods)
        refused = False
        for name in desired:
            pods = by_node.get(name) or []
            if not pods:
                if refused or not create_allowed(self, ds):
                    continue
                labels = {"controller-revision-hash": revision, "pod-template-generation": str(generation)}
                try:
                    by_node[name] = [self.api.create(self.pods, namespace,
                                                     template_pod(daemon_template(template, name), ds, labels),
                                                     field_manager=CONTROLLER_MANAGER)]
                    create_succeeded(self, ds)
                except ApiError as exc:
                    if not create_refused(self, ds, exc):  # FailedCreate "Error creating: ...", retried later
                        raise
                    refused = True
            elif len(pods) > 1:
                self._delete(sorted(pods, key=pod_ready)[:-1])
                by_node[name] = [sorted(pods, key=pod_ready)[-1]]
        min_ready = int(spec(ds).get("minReadySeconds") or 0)
        current = [by_node[n][0] for n in desired if by_node.get(n)]
        strategy = spec(ds).get("updateStrategy") or {}
        if strategy.get("type", "RollingUpdate") == "RollingUpdate":
            budget = max(1, int_or_percent((strategy.get("rollingUpdate") or {}).get("maxUnavailable"), len(desired),
                                           False, 1))
            budget -= sum(1 for p in current if not available(p, min_ready))
            for pod in current:
                if budget <= 0:
                    break
                if (meta(pod).get("labels") or {}).get("controller-revision-hash") != revision and available(pod, min_ready):
                    self._delete([pod])
                    budget -= 1
        scheduled = [p for p in current if spec(p).get("nodeName") and not terminating(p)]
        number_available = sum(1 for p in scheduled if available(p, min_ready))
        new_status = dict(status(ds))
        new_status.update(
            desiredNumberScheduled=len(desired), currentNumberScheduled=len(scheduled), numberMisscheduled=misscheduled,
            numberReady=sum(1 for p in scheduled if pod_ready(p)), numberAvailable=number_available,
            updatedNumberScheduled=sum(1 for p in scheduled
                                       if (meta(p).get("labels") or {}).get("controller-revision-hash") == revision),
            observedGeneration=generation)
        if len(desired) - number_available > 0:
            new_status["numberUnavailable"] = len(desired) - number_available
        else:
            new_status.pop("numberUnavailable", None)
        write_status(self.api, self.daemonsets, ds, new_status)

    def _delete(self, pods: list) -> None:
        for pod in pods:
            try:
                self.api.delete(self.pods, meta(pod)["namespace"], meta(pod)["name"],
                                {"preconditions": {"uid": meta(pod)["uid"]}})
            except ApiError as exc:
                if exc.code != 404:
                    raise
