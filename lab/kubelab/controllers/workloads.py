# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Deployment and ReplicaSet controllers (DaemonSet: daemonset.py; StatefulSet and Job: sets.py).

Deployment -> ReplicaSet ``<deploy>-<pod-template-hash>`` (a stable 10-character hash of the pod
template; the RS carries the Deployment's labels, selector and template plus the
``pod-template-hash`` label, an ownerReference with ``controller: true`` and the Deployment's uid,
and the ``deployment.kubernetes.io/revision`` annotation) -> Pods ``<rs>-<5 random>``.

Rollouts (simplified; no ControllerRevision, no pause, no progressDeadlineSeconds):

* Recreate: the old ReplicaSets go to 0 first; the new one is scaled up once their pods are gone.
* RollingUpdate (default): the new RS grows while the total stays within replicas + maxSurge
  (default 25%, rounded up); old ReplicaSets shrink, unavailable pods first, while the available
  pods stay at least replicas - maxUnavailable (default 25%, rounded down; 1 when both are 0).
* Old ReplicaSets at 0 beyond ``revisionHistoryLimit`` (10) are deleted.

Deployment status: observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas,
unavailableReplicas and the conditions Available (MinimumReplicasAvailable) and Progressing
(NewReplicaSetCreated / ReplicaSetUpdated / NewReplicaSetAvailable): what Helm's kstatus
``watcher`` and ``legacy`` waits check. ReplicaSet status: replicas, fullyLabeledReplicas,
readyReplicas, availableReplicas (``minReadySeconds`` honoured), observedGeneration.
"""

from __future__ import annotations

import copy
import datetime

from kubelab.controllers import Controller
from kubelab.controllers.common import (CONTROLLER_MANAGER, condition, int_or_percent, meta, owned_by, owner_reference,
                                        pod_active, pod_from_template, pod_ready, random_suffix, set_condition, spec,
                                        stable_hash, status, terminating, write_status)
from kubelab.errors import ApiError

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"


def available(pod: dict, min_ready_seconds: int) -> bool:
    if not pod_ready(pod):
        return False
    if not min_ready_seconds:
        return True
    since = (condition(pod, "Ready") or {}).get("lastTransitionTime", "")
    try:
        moment = datetime.datetime.strptime(since, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.timezone.utc)
    except ValueError:
        return True
    return (datetime.datetime.now(datetime.timezone.utc) - moment).total_seconds() >= min_ready_seconds


def _without_hash(template: dict) -> dict:
    template = copy.deepcopy(template or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
    return template


def _revision(rs: dict) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def sync_pods(ctl: Controller, owner: dict, wanted: int, template: dict, pods: list, labels: dict | None = None) -> list:
    """Create or delete ``owner``'s pods so that ``wanted`` are active; returns the active ones."""
    namespace = meta(owner)["namespace"]
    active = [p for p in pods if owned_by(p, owner) and pod_active(p)]
    if len(active) < wanted:
        for _count in range(wanted - len(active)):
            pod = pod_from_template(template, "%s-%s" % (meta(owner)["name"], random_suffix()), namespace, owner, labels)
            active.append(ctl.api.create(ctl.pods, namespace, pod, field_manager=CONTROLLER_MANAGER))
    elif len(active) > wanted:
        # Unscheduled, then not running, then not ready, then the newest go first (ActivePods ordering).
        def rank(pod):
            return (bool(spec(pod).get("nodeName")), status(pod).get("phase") == "Running", pod_ready(pod),
                    "~" if not meta(pod).get("creationTimestamp") else _invert(meta(pod)["creationTimestamp"]))
        active.sort(key=rank)
        for pod in active[:len(active) - wanted]:
            try:
                ctl.api.delete(ctl.pods, namespace, meta(pod)["name"], {"preconditions": {"uid": meta(pod)["uid"]}})
            except ApiError as exc:
                if exc.code != 404:
                    raise
        active = active[len(active) - wanted:]
    return active


def _invert(stamp: str) -> str:
    """Sorts newest first."""
    return "".join(chr(255 - ord(ch)) for ch in stamp)


class ReplicaSetController(Controller):
    watches = ("ReplicaSet", "Pod")

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")
        self.replicasets = self.rtype("apps", "v1", "replicasets")

    def reconcile(self) -> None:
        pods = self.api.list(self.pods, None)["items"]
        for rs in self.api.list(self.replicasets, None)["items"]:
            if terminating(rs):
                continue
            try:
                self._sync(rs, pods)
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _sync(self, rs: dict, pods: list) -> None:
        rs_spec = spec(rs)
        wanted = int(rs_spec.get("replicas", 1))
        active = sync_pods(self, rs, wanted, rs_spec.get("template") or {}, pods)
        template_labels = ((rs_spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
        min_ready = int(rs_spec.get("minReadySeconds") or 0)
        new_status = dict(status(rs))
        new_status.update(
            replicas=len(active),
            fullyLabeledReplicas=sum(1 for p in active if all((meta(p).get("labels") or {}).get(k) == v
                                                              for k, v in template_labels.items())),
            readyReplicas=sum(1 for p in active if pod_ready(p)),
            availableReplicas=sum(1 for p in active if available(p, min_ready)),
            observedGeneration=meta(rs).get("generation", 1))
        write_status(self.api, self.replicasets, rs, new_status)


class DeploymentController(Controller):
    watches = ("Deployment", "ReplicaSet", "Pod")

    def __init__(self, lab):
        super().__init__(lab)
        self.deployments = self.rtype("apps", "v1", "deployments")
        self.replicasets = self.rtype("apps", "v1", "replicasets")

    def reconcile(self) -> None:
        all_rs = self.api.list(self.replicasets, None)["items"]
        for deploy in self.api.list(self.deployments, None)["items"]:
            if terminating(deploy):
                continue
            try:
                self._sync(deploy, [rs for rs in all_rs if owned_by(rs, deploy) and not terminating(rs)])
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _new_rs(self, deploy: dict, owned: list, template_hash: str) -> tuple[dict, bool]:
        template = (spec(deploy).get("template") or {})
        for rs in owned:
            if _without_hash(spec(rs).get("template")) == _without_hash(template):
                return rs, False
        namespace = meta(deploy)["namespace"]
        rs_template = copy.deepcopy(template)
        rs_template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = template_hash
        selector = copy.deepcopy(spec(deploy).get("selector") or {})
        selector.setdefault("matchLabels", {})[HASH_LABEL] = template_hash
        labels = dict((template.get("metadata") or {}).get("labels") or {})
        labels[HASH_LABEL] = template_hash
        body = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                "metadata": {"name": "%s-%s" % (meta(deploy)["name"], template_hash), "namespace": namespace,
                             "labels": labels, "ownerReferences": [owner_reference(deploy)],
                             "annotations": {REVISION: str(max([_revision(r) for r in owned] or [0]) + 1)}},
                "spec": {"replicas": 0, "minReadySeconds": int(spec(deploy).get("minReadySeconds") or 0),
                         "selector": selector, "template": rs_template}}
        created = self.api.create(self.replicasets, namespace, body, field_manager=CONTROLLER_MANAGER)
        if self.api.store.get_or_none(self.deployments, namespace, meta(deploy)["name"]) is None:
            self.api.delete(self.replicasets, namespace, meta(created)["name"])  # the Deployment went meanwhile
            raise ApiError(404, "NotFound", "deployment went away")
        return created, True

    def _scale(self, rs: dict, replicas: int) -> dict:
        if int(spec(rs).get("replicas", 1)) == replicas:
            return rs
        body = copy.deepcopy(rs)
        body["spec"]["replicas"] = replicas
        written, _code = self.api.update(self.replicasets, meta(rs)["namespace"], meta(rs)["name"], body,
                                         field_manager=CONTROLLER_MANAGER)
        return written

    def _sync(self, deploy: dict, owned: list) -> None:
        d_spec = spec(deploy)
        desired = int(d_spec.get("replicas", 1))
        template_hash = stable_hash(d_spec.get("template") or {})
        new, created = self._new_rs(deploy, owned, template_hash)
        olds = sorted([rs for rs in owned if meta(rs)["uid"] != meta(new)["uid"]], key=_revision)
        top = max([_revision(r) for r in olds] or [0])
        if _revision(new) <= top:  # a rollback to an old template: it becomes the newest revision
            body = copy.deepcopy(new)
            body["metadata"].setdefault("annotations", {})[REVISION] = str(top + 1)
            new, _code = self.api.update(self.replicasets, meta(new)["namespace"], meta(new)["name"], body,
                                         field_manager=CONTROLLER_MANAGER)
        strategy = d_spec.get("strategy") or {}
        unavailable = 0
        old_total = sum(int(spec(rs).get("replicas", 1)) for rs in olds)
        if strategy.get("type") == "Recreate":
            for rs in olds:
                self._scale(rs, 0)
            old_pods = sum(int(status(rs).get("replicas", 0)) for rs in olds)
            new = self._scale(new, desired if old_total == 0 and old_pods == 0 else 0)
        else:
            rolling = strategy.get("rollingUpdate") or {}
            surge = int_or_percent(rolling.get("maxSurge"), desired, True, "25%")
            unavailable = int_or_percent(rolling.get("maxUnavailable"), desired, False, "25%")
            if surge == 0 and unavailable == 0:
                unavailable = 1
            new_spec = int(spec(new).get("replicas", 1))
            new = self._scale(new, min(desired, max(new_spec, desired + surge - old_total)) if olds else desired)
            can_remove = sum(int(status(rs).get("availableReplicas", 0)) for rs in owned) - (desired - unavailable)
            for rs in olds:
                current = int(spec(rs).get("replicas", 1))
                unhealthy = max(0, current - int(status(rs).get("availableReplicas", 0)))
                cut = min(current, unhealthy + max(0, can_remove))
                can_remove -= max(0, cut - unhealthy)
                self._scale(rs, current - cut)
        limit = int(d_spec.get("revisionHistoryLimit", 10))
        idle = [rs for rs in olds if int(spec(rs).get("replicas", 1)) == 0 and int(status(rs).get("replicas", 0)) == 0]
        for rs in idle[:max(0, len(idle) - limit)]:
            self.api.delete(self.replicasets, meta(rs)["namespace"], meta(rs)["name"])
        if (meta(deploy).get("annotations") or {}).get(REVISION) != str(_revision(new)):
            body = copy.deepcopy(deploy)
            body["metadata"].setdefault("annotations", {})[REVISION] = str(_revision(new))
            deploy, _code = self.api.update(self.deployments, meta(deploy)["namespace"], meta(deploy)["name"], body,
                                            field_manager=CONTROLLER_MANAGER)
        self._status(deploy, new, olds, created, desired, unavailable)

    def _status(self, deploy: dict, new: dict, olds: list, created: bool, desired: int, max_unavailable: int) -> None:
        every = [new] + olds
        total = sum(int(status(rs).get("replicas", 0)) for rs in every)
        ready = sum(int(status(rs).get("readyReplicas", 0)) for rs in every)
        avail = sum(int(status(rs).get("availableReplicas", 0)) for rs in every)
        updated = int(status(new).get("replicas", 0))
        new_status = copy.deepcopy(status(deploy))
        new_status.update(observedGeneration=meta(deploy).get("generation", 1), replicas=total, updatedReplicas=updated,
                          readyReplicas=ready, availableReplicas=avail)
        if desired - avail > 0:
            new_status["unavailableReplicas"] = desired - avail
        else:
            new_status.pop("unavailableReplicas", None)
        conditions = new_status.get("conditions") or []
        if avail >= desired - max_unavailable:
            conditions = set_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                       "Deployment has minimum availability.", update_time=True)
        else:
            conditions = set_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                                       "Deployment does not have minimum availability.", update_time=True)
        rs_name = meta(new)["name"]
        new_ok = int(status(new).get("availableReplicas", 0)) >= desired and \
            int(status(new).get("observedGeneration", 0)) >= meta(new).get("generation", 1)
        if updated == desired and total == desired and new_ok and int(spec(new).get("replicas", 1)) == desired:
            conditions = set_condition(conditions, "Progressing", "True", "NewReplicaSetAvailable",
                                       'ReplicaSet "%s" has successfully progressed.' % rs_name, update_time=True)
        elif created:
            conditions = set_condition(conditions, "Progressing", "True", "NewReplicaSetCreated",
                                       'Created new replica set "%s"' % rs_name, update_time=True)
        else:
            conditions = set_condition(conditions, "Progressing", "True", "ReplicaSetUpdated",
                                       'ReplicaSet "%s" is progressing.' % rs_name, update_time=True)
        order = {"Available": 0, "Progressing": 1}
        new_status["conditions"] = sorted(conditions, key=lambda c: order.get(c.get("type"), 2))
        write_status(self.api, self.deployments, deploy, new_status)
