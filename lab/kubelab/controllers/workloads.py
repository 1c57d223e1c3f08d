# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The Deployment and ReplicaSet controllers (DaemonSet: daemonset.py; StatefulSet and Job: sets.py).

Deployment -> ReplicaSet ``<deploy>-<pod-template-hash>`` (a stable 10-character hash of the pod
template; the RS carries the Deployment's labels, selector and template plus the
``pod-template-hash`` label, an ownerReference with ``controller: true`` and the Deployment's uid,
and the ``deployment.kubernetes.io/revision`` annotation) -> Pods ``<rs>-<5 random>``.

Rollouts (simplified; no ControllerRevision):

* Recreate: the old ReplicaSets go to 0 first; the new one is scaled up once their pods are gone.
* RollingUpdate (default): the new RS grows while the total stays within replicas + maxSurge
  (default 25%, rounded up); old ReplicaSets shrink, unavailable pods first, while the available
  pods stay at least replicas - maxUnavailable (default 25%, rounded down; 1 when both are 0).
* Old ReplicaSets at 0 beyond ``revisionHistoryLimit`` (10) are deleted.
* ``spec.paused`` (``kubectl rollout pause``), as syncDeployment/checkPausedConditions/sync: no
  ReplicaSet for a changed template; replicas changes only scale the existing ReplicaSets
  (``scale_plan``: the one active one, else proportionally); Progressing=Unknown
  ``DeploymentPaused`` "Deployment is paused", and once resumed ``DeploymentResumed`` "Deployment is
  resumed" until the rollout's next pass sets its own reason (not with progressDeadlineSeconds
  2147483647, nor after ProgressDeadlineExceeded).

Deployment status: observedGeneration, replicas, updatedReplicas, readyReplicas, availableReplicas,
unavailableReplicas and the conditions Available (MinimumReplicasAvailable) and Progressing, as
syncRolloutStatus sets it (NewReplicaSetCreated / FoundNewReplicaSet / ReplicaSetUpdated on progress /
NewReplicaSetAvailable; False ``ProgressDeadlineExceeded`` once nothing progressed for
``progressDeadlineSeconds`` since its lastUpdateTime, which ``kubectl rollout status`` fails on; none
with progressDeadlineSeconds 2147483647), plus the ReplicaSets' ``ReplicaFailure`` copied
(getReplicaFailures: the new ReplicaSet's first): what Helm's kstatus ``watcher`` and ``legacy`` waits
check. ReplicaSet status: replicas, fullyLabeledReplicas, readyReplicas, availableReplicas
(``minReadySeconds`` honoured), observedGeneration, and ReplicaFailure (FailedCreate) while pod creates
are refused (``sync_pods``: e.g. ServiceAccount admission's 403 for a missing ServiceAccount), retried
with a backoff until they succeed.
"""

from __future__ import annotations

import datetime
import math
import time

from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (CONTROLLER_MANAGER, condition, int_or_percent, meta, owned_by, owner_reference,
                                        pod_active, pod_from_template, pod_ready, set_condition, spec,
                                        stable_hash, status, terminating, write_status)
from kubelab.errors import ApiError
from kubelab.store import now

HASH_LABEL = "pod-template-hash"
REVISION = "deployment.kubernetes.io/revision"
MAX_REPLICAS = "deployment.kubernetes.io/max-replicas"
PAUSED_REASON = "DeploymentPaused"
RESUMED_REASON = "DeploymentResumed"
NO_PROGRESS_DEADLINE = 2147483647  # math.MaxInt32: progressDeadlineSeconds "unset"


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
    template = clone(template or {})
    labels = (template.get("metadata") or {}).get("labels")
    if labels is not None:
        labels.pop(HASH_LABEL, None)
    return template


def _revision(rs: dict) -> int:
    try:
        return int((meta(rs).get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _fenceposts(deploy: dict, desired: int) -> tuple[int, int]:
    """deploymentutil.ResolveFenceposts: (maxSurge rounded up, maxUnavailable rounded down; 1 when both are 0);
    Recreate: (0, 0)."""
    strategy = spec(deploy).get("strategy") or {}
    if strategy.get("type") == "Recreate":
        return 0, 0
    rolling = strategy.get("rollingUpdate") or {}
    surge = int_or_percent(rolling.get("maxSurge"), desired, True, "25%")
    unavailable = int_or_percent(rolling.get("maxUnavailable"), desired, False, "25%")
    return surge, (1 if surge == 0 and unavailable == 0 else unavailable)


def _replicas(rs: dict | None) -> int:
    return int(spec(rs).get("replicas", 1)) if rs is not None else 0


def _created(rs: dict) -> str:
    return meta(rs).get("creationTimestamp") or ""


def scale_plan(new: dict | None, olds: list, desired: int, surge: int, status_replicas: int,
               rolling: bool) -> list:
    """The deployment controller's ``scale`` (a scaling event or a paused Deployment): [(rs, replicas)].

    One active (or else the newest) ReplicaSet takes ``desired`` (FindActiveOrLatest); a saturated new
    one leaves the old ones at 0; otherwise, for RollingUpdate, the change up to ``desired + maxSurge``
    is spread in proportion to the sizes (getReplicaSetFraction against the ``max-replicas``
    annotation, else ``status.replicas``), the largest first (newer first when growing, older first
    when shrinking) taking the leftover.
    """
    every = olds + ([new] if new is not None else [])
    if not every:
        return []
    active = [rs for rs in every if _replicas(rs) > 0]
    if len(active) <= 1:
        if active:
            target = active[0]
        else:
            target = new if new is not None else sorted(olds, key=_created)[-1]
        return [] if _replicas(target) == desired else [(target, desired)]
    if new is not None and _replicas(new) == desired and int(status(new).get("availableReplicas", 0)) == desired:
        return [(rs, 0) for rs in olds if _replicas(rs) > 0]
    if not rolling:
        return []
    total = sum(_replicas(rs) for rs in active)
    allowed = desired + surge if desired > 0 else 0
    to_add = allowed - total
    if to_add == 0:
        return []
    if to_add > 0:  # ReplicaSetsBySizeNewer
        active.sort(key=lambda rs: (_replicas(rs), _created(rs)), reverse=True)
    else:  # ReplicaSetsBySizeOlder
        active.sort(key=lambda rs: (-_replicas(rs), _created(rs)))
    sizes, added = [], 0
    for rs in active:
        proportion = 0
        if to_add != added:
            if desired == 0:
                fraction = -_replicas(rs)
            else:
                try:
                    annotated = int((meta(rs).get("annotations") or {}).get(MAX_REPLICAS, status_replicas))
                except ValueError:
                    annotated = status_replicas
                annotated = annotated or total
                fraction = int(math.floor(_replicas(rs) * (desired + surge) / float(annotated) + 0.5)) - _replicas(rs)
            allowed_left = to_add - added
            proportion = min(fraction, allowed_left) if to_add > 0 else max(fraction, allowed_left)
        sizes.append(_replicas(rs) + proportion)
        added += proportion
    sizes[0] = max(0, sizes[0] + to_add - added)
    return [(rs, size) for rs, size in zip(active, sizes) if size != _replicas(rs)]


FAILED_CREATE = "FailedCreate"
REPLICA_FAILURE = "ReplicaFailure"
EVENT_SOURCES = {"ReplicaSet": "replicaset-controller", "Job": "job-controller", "DaemonSet": "daemonset-controller",
                 "StatefulSet": "statefulset-controller"}
CREATE_BACKOFF_FIRST, CREATE_BACKOFF_MAX = 0.5, 4.0


def record_event(ctl: Controller, obj: dict, reason: str, message: str, event_type: str = "Warning") -> None:
    """An Event on ``obj`` as client-go's EventRecorder writes it for kube-controller-manager.

    ``<name>.<hex nanoseconds>``, source/reportingComponent ``<kind>-controller``; a repeat of the
    same reason and message on the same object increments ``count`` and ``lastTimestamp`` (the
    EventCorrelator's aggregation) instead of adding another Event. Failures to record are dropped,
    as the recorder drops them.
    """
    events = ctl.registry.get("", "v1", "events")
    source = EVENT_SOURCES.get(obj.get("kind"), "kube-controller-manager")
    key = (meta(obj).get("uid"), event_type, reason, message)
    seen = ctl.__dict__.setdefault("_recorded_events", {})
    stamp = now()
    try:
        current = ctl.store.get_or_none(events, meta(obj)["namespace"], seen[key]) if key in seen else None
        if current is not None:
            body = clone(current)
            body["count"] = int(body.get("count") or 1) + 1
            body["lastTimestamp"] = stamp
            ctl.api.update(events, meta(obj)["namespace"], meta(body)["name"], body, field_manager=CONTROLLER_MANAGER)
            return
        body = {"apiVersion": "v1", "kind": "Event",
                "metadata": {"name": "%s.%x" % (meta(obj)["name"], time.time_ns()),
                             "namespace": meta(obj)["namespace"]},
                "involvedObject": {"kind": obj.get("kind"), "namespace": meta(obj)["namespace"],
                                   "name": meta(obj)["name"], "uid": meta(obj).get("uid"),
                                   "apiVersion": obj.get("apiVersion"),
                                   "resourceVersion": meta(obj).get("resourceVersion")},
                "reason": reason, "message": message, "source": {"component": source},
                "firstTimestamp": stamp, "lastTimestamp": stamp, "count": 1, "type": event_type,
                "eventTime": None, "reportingComponent": source, "reportingInstance": ""}
        created = ctl.api.create(events, meta(obj)["namespace"], body, field_manager=CONTROLLER_MANAGER)
        seen[key] = meta(created)["name"]
    except ApiError:
        return


def create_allowed(ctl: Controller, owner: dict) -> bool:
    """Whether ``owner``'s pod creation is out of its backoff (the workqueue's per-key rate limit after errors)."""
    entry = ctl.__dict__.setdefault("_create_backoff", {}).get(meta(owner).get("uid"))
    return entry is None or time.monotonic() >= entry[0]


def create_refused(ctl: Controller, owner: dict, exc: ApiError, message: str | None = None) -> bool:
    """After a pod create failed: True for a refusal kube-controller-manager survives (403/422), with a FailedCreate
    Event on ``owner`` ("Error creating: <message>", or ``message``) and the owner backed off (0.5 s doubling
    to 4 s); False for anything else (the caller re-raises)."""
    if exc.code not in (403, 422):
        return False
    record_event(ctl, owner, FAILED_CREATE, message or "Error creating: %s" % exc.message)
    backoff = ctl.__dict__.setdefault("_create_backoff", {})
    delay = min(CREATE_BACKOFF_MAX, backoff[meta(owner).get("uid")][1] * 2) if meta(owner).get("uid") in backoff \
        else CREATE_BACKOFF_FIRST
    backoff[meta(owner).get("uid")] = (time.monotonic() + delay, delay)
    return True


def create_succeeded(ctl: Controller, owner: dict) -> None:
    ctl.__dict__.setdefault("_create_backoff", {}).pop(meta(owner).get("uid"), None)


def template_pod(template: dict, owner: dict, labels: dict | None = None) -> dict:
    """A pod from ``owner``'s template named by ``generateName: <owner>-`` (controller.GetPodFromTemplate)."""
    pod = pod_from_template(template, "", meta(owner)["namespace"], owner, labels)
    del pod["metadata"]["name"]
    pod["metadata"]["generateName"] = "%s-" % meta(owner)["name"]
    return pod


def _replica_failure(ctl: Controller, owner: dict, error: str | None) -> None:
    """ReplicaSet ``calculateStatus``: ReplicaFailure=True (FailedCreate, the error) while pods cannot be created,
    removed once a sync succeeds. Written at once; ``owner`` becomes the written object."""
    conditions = status(owner).get("conditions") or []
    present = any(c.get("type") == REPLICA_FAILURE for c in conditions)
    if error is not None and not present:
        new_conditions = set_condition(conditions, REPLICA_FAILURE, "True", FAILED_CREATE, error)
    elif error is None and present:
        new_conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
    else:
        return
    new_status = clone(status(owner))
    if new_conditions:
        new_status["conditions"] = new_conditions
    else:
        new_status.pop("conditions", None)
    rtype = ctl.registry.by_kind(owner.get("apiVersion", ""), owner.get("kind", ""))
    written = write_status(ctl.api, rtype, owner, new_status)
    owner.clear()
    owner.update(written)


def sync_pods(ctl: Controller, owner: dict, wanted: int, template: dict, pods: list, labels: dict | None = None) -> list:
    """Create or delete ``owner``'s pods so that ``wanted`` are active; returns the active ones.

    As the ReplicaSet controller's manageReplicas: pods are ``generateName: <owner>-``; a refused
    create (403 from admission, 422) stops this pass with a FailedCreate Event and, for a
    ReplicaSet, the ReplicaFailure condition; the owner is retried after a backoff.
    """
    namespace = meta(owner)["namespace"]
    active = [p for p in pods if owned_by(p, owner) and pod_active(p)]
    error = None
    if len(active) < wanted:
        if not create_allowed(ctl, owner):
            return active
        for _count in range(wanted - len(active)):
            try:
                active.append(ctl.api.create(ctl.pods, namespace, template_pod(template, owner, labels),
                                             field_manager=CONTROLLER_MANAGER))
            except ApiError as exc:
                if not create_refused(ctl, owner, exc):
                    raise
                error = exc.message
                break
        if error is None:
            create_succeeded(ctl, owner)
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
    if owner.get("kind") == "ReplicaSet":
        _replica_failure(ctl, owner, error)
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
        pods = self.api.list(self.pods, None, shared=True)["items"]
        for rs in self.api.list(self.replicasets, None, shared=True)["items"]:
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
        all_rs = self.api.list(self.replicasets, None, shared=True)["items"]
        for deploy in self.api.list(self.deployments, None, shared=True)["items"]:
            if terminating(deploy):
                continue
            try:
                self._sync(deploy, [rs for rs in all_rs if owned_by(rs, deploy) and not terminating(rs)])
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _new_rs(self, deploy: dict, owned: list, template_hash: str) -> tuple[dict, bool, dict]:
        """getNewReplicaSet: the ReplicaSet of the current template, created when there is none; returns it,
        whether it was created, and the Deployment (after its status write).

        A created one is recorded at once, as kube's getNewReplicaSet does (UpdateStatus with Progressing
        ``NewReplicaSetCreated`` right after the create): were it left to the end of the pass, a conflict in
        between (the ReplicaSet controller writing the new ReplicaSet's status before it is scaled) would
        lose it, the next pass would find the ReplicaSet existing and the previous rollout's
        ``NewReplicaSetAvailable`` would stay, which never times out."""
        template = (spec(deploy).get("template") or {})
        for rs in owned:
            if _without_hash(spec(rs).get("template")) == _without_hash(template):
                return rs, False, deploy
        namespace = meta(deploy)["namespace"]
        rs_template = clone(template)
        rs_template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = template_hash
        selector = clone(spec(deploy).get("selector") or {})
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
        deadline = spec(deploy).get("progressDeadlineSeconds")
        if deadline is None or int(deadline) != NO_PROGRESS_DEADLINE:
            new_status = clone(status(deploy))
            new_status["conditions"] = set_deployment_condition(
                new_status.get("conditions") or [], "Progressing", "True", NEW_RS_REASON,
                'Created new replica set "%s"' % meta(created)["name"])
            deploy = write_status(self.api, self.deployments, deploy, new_status)
        return created, True, deploy

    def _scale(self, rs: dict, replicas: int) -> dict:
        if int(spec(rs).get("replicas", 1)) == replicas:
            return rs
        body = clone(rs)
        body["spec"]["replicas"] = replicas
        written, _code = self.api.update(self.replicasets, meta(rs)["namespace"], meta(rs)["name"], body,
                                         field_manager=CONTROLLER_MANAGER)
        return written

    def _sync(self, deploy: dict, owned: list) -> None:
        """syncDeployment: checkPausedConditions, then ``sync`` (paused: scale only) or a rollout."""
        if self._check_paused(deploy):
            return  # the status write changed the Deployment: the next pass goes on from the stored one
        d_spec = spec(deploy)
        desired = int(d_spec.get("replicas", 1))
        if d_spec.get("paused"):
            self._sync_paused(deploy, owned, desired)
            return
        template_hash = stable_hash(d_spec.get("template") or {})
        new, created, deploy = self._new_rs(deploy, owned, template_hash)
        olds = sorted([rs for rs in owned if meta(rs)["uid"] != meta(new)["uid"]], key=_revision)
        top = max([_revision(r) for r in olds] or [0])
        if _revision(new) <= top:  # a rollback to an old template: it becomes the newest revision
            body = clone(new)
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
        self._finish(deploy, new, olds, created, desired, unavailable)

    def _finish(self, deploy: dict, new: dict | None, olds: list, created: bool, desired: int, unavailable: int,
                progressing: bool = True) -> None:
        """cleanupDeployment (revisionHistoryLimit), the revision annotation, then the status."""
        limit = int(spec(deploy).get("revisionHistoryLimit", 10))
        idle = [rs for rs in olds if int(spec(rs).get("replicas", 1)) == 0 and int(status(rs).get("replicas", 0)) == 0]
        for rs in idle[:max(0, len(idle) - limit)]:
            self.api.delete(self.replicasets, meta(rs)["namespace"], meta(rs)["name"])
        if new is not None and (meta(deploy).get("annotations") or {}).get(REVISION) != str(_revision(new)):
            body = clone(deploy)
            body["metadata"].setdefault("annotations", {})[REVISION] = str(_revision(new))
            deploy, _code = self.api.update(self.deployments, meta(deploy)["namespace"], meta(deploy)["name"], body,
                                            field_manager=CONTROLLER_MANAGER)
        self._status(deploy, new, olds, created, desired, unavailable, progressing)

    def _check_paused(self, deploy: dict) -> bool:
        """checkPausedConditions: Progressing=Unknown DeploymentPaused while paused, DeploymentResumed once
        resumed (until syncRolloutStatus sets a progress reason); not with progressDeadlineSeconds
        unset (MaxInt32) nor after ProgressDeadlineExceeded. True when it wrote the status."""
        deadline = spec(deploy).get("progressDeadlineSeconds")
        if deadline is not None and int(deadline) == NO_PROGRESS_DEADLINE:
            return False
        cond = condition(deploy, "Progressing")
        if cond is not None and cond.get("reason") == "ProgressDeadlineExceeded":
            return False
        paused_shown = cond is not None and cond.get("reason") == PAUSED_REASON
        if spec(deploy).get("paused") and not paused_shown:
            args = ("Unknown", PAUSED_REASON, "Deployment is paused")
        elif not spec(deploy).get("paused") and paused_shown:
            args = ("Unknown", RESUMED_REASON, "Deployment is resumed")
        else:
            return False
        new_status = clone(status(deploy))
        new_status["conditions"] = set_condition(new_status.get("conditions"), "Progressing", *args, update_time=True)
        write_status(self.api, self.deployments, deploy, new_status)
        return True

    def _sync_paused(self, deploy: dict, owned: list, desired: int) -> None:
        """``sync`` of a paused Deployment: no new ReplicaSet for a changed template (getAllReplicaSetsAndSyncRevision
        with createIfNotExisted=false); the existing ones are only scaled (``scale``), and the status
        leaves Progressing alone (syncDeploymentStatus)."""
        template = spec(deploy).get("template") or {}
        new = next((rs for rs in owned if _without_hash(spec(rs).get("template")) == _without_hash(template)), None)
        olds = sorted([rs for rs in owned if new is None or meta(rs)["uid"] != meta(new)["uid"]], key=_revision)
        top = max([_revision(r) for r in olds] or [0])
        if new is not None and _revision(new) <= top:
            body = clone(new)
            body["metadata"].setdefault("annotations", {})[REVISION] = str(top + 1)
            new, _code = self.api.update(self.replicasets, meta(new)["namespace"], meta(new)["name"], body,
                                         field_manager=CONTROLLER_MANAGER)
        surge, unavailable = _fenceposts(deploy, desired)
        for rs, replicas in scale_plan(new, olds, desired, surge, int(status(deploy).get("replicas", 0)),
                                       (spec(deploy).get("strategy") or {}).get("type") != "Recreate"):
            self._scale(rs, replicas)
        self._finish(deploy, new, olds, False, desired, unavailable, progressing=False)

    def _status(self, deploy: dict, new: dict | None, olds: list, created: bool, desired: int, max_unavailable: int,
                progressing: bool = True) -> None:
        """calculateStatus, then (outside a pause) syncRolloutStatus's Progressing and ReplicaFailure."""
        every = ([new] if new is not None else []) + olds
        total = sum(int(status(rs).get("replicas", 0)) for rs in every)
        ready = sum(int(status(rs).get("readyReplicas", 0)) for rs in every)
        avail = sum(int(status(rs).get("availableReplicas", 0)) for rs in every)
        updated = int(status(new).get("replicas", 0)) if new is not None else 0
        new_status = clone(status(deploy))
        new_status.update(observedGeneration=meta(deploy).get("generation", 1), replicas=total, updatedReplicas=updated,
                          readyReplicas=ready, availableReplicas=avail)
        if desired - avail > 0:
            new_status["unavailableReplicas"] = desired - avail
        else:
            new_status.pop("unavailableReplicas", None)
        conditions = new_status.get("conditions") or []
        if avail >= desired - max_unavailable:
            conditions = set_deployment_condition(conditions, "Available", "True", "MinimumReplicasAvailable",
                                                  "Deployment has minimum availability.")
        else:
            conditions = set_deployment_condition(conditions, "Available", "False", "MinimumReplicasUnavailable",
                                                  "Deployment does not have minimum availability.")
        if progressing and new is not None:
            conditions = self._progress(deploy, new, created, desired, new_status, conditions)
            failures = replica_failures(new, olds)  # getReplicaFailures: the new ReplicaSet's first
            if failures:
                conditions = set_deployment_condition(conditions, REPLICA_FAILURE, failures["status"],
                                                      failures.get("reason", ""), failures.get("message", ""),
                                                      stamp=failures.get("lastTransitionTime"))
            else:
                conditions = [c for c in conditions if c.get("type") != REPLICA_FAILURE]
        order = {"Available": 0, "Progressing": 1}
        new_status["conditions"] = sorted(conditions, key=lambda c: order.get(c.get("type"), 2))
        if not new_status["conditions"]:
            new_status.pop("conditions")
        write_status(self.api, self.deployments, deploy, new_status)

    def _progress(self, deploy: dict, new: dict, created: bool, desired: int, new_status: dict,
                  conditions: list) -> list:
        """syncRolloutStatus's Progressing condition (only with a progress deadline; none: no condition).

        A new ReplicaSet: ``NewReplicaSetCreated`` (getNewReplicaSet). Then, unless the rollout had already
        completed: complete -> ``NewReplicaSetAvailable``; progress since the last status (more updated,
        ready or available replicas, fewer old ones) -> ``ReplicaSetUpdated`` with a new lastUpdateTime;
        no progress for ``progressDeadlineSeconds`` since lastUpdateTime -> False ``ProgressDeadlineExceeded``
        (what ``kubectl rollout status`` fails on). Checked on every pass (the resync stands in for
        requeueStuckDeployment)."""
        deadline = spec(deploy).get("progressDeadlineSeconds")
        if deadline is not None and int(deadline) == NO_PROGRESS_DEADLINE:
            return [c for c in conditions if c.get("type") != "Progressing"]
        rs_name = meta(new)["name"]
        if created:
            conditions = set_deployment_condition(conditions, "Progressing", "True", NEW_RS_REASON,
                                                  'Created new replica set "%s"' % rs_name)
        elif not any(c.get("type") == "Progressing" for c in conditions):
            conditions = set_deployment_condition(conditions, "Progressing", "True", FOUND_NEW_RS_REASON,
                                                  'Found new replica set "%s"' % rs_name)
        current = next((c for c in conditions if c.get("type") == "Progressing"), None)
        if new_status["replicas"] == new_status["updatedReplicas"] and current is not None \
                and current.get("reason") == NEW_RS_AVAILABLE_REASON:
            return conditions  # the last rollout completed: a resync estimates no progress
        if new_status["updatedReplicas"] == desired and new_status["replicas"] == desired \
                and new_status["availableReplicas"] == desired \
                and new_status["observedGeneration"] >= meta(deploy).get("generation", 1):
            return set_deployment_condition(conditions, "Progressing", "True", NEW_RS_AVAILABLE_REASON,
                                            'ReplicaSet "%s" has successfully progressed.' % rs_name)
        old = status(deploy)
        if (new_status["updatedReplicas"] > int(old.get("updatedReplicas", 0))
                or new_status["replicas"] - new_status["updatedReplicas"]
                < int(old.get("replicas", 0)) - int(old.get("updatedReplicas", 0))
                or new_status["readyReplicas"] > int(old.get("readyReplicas", 0))
                or new_status["availableReplicas"] > int(old.get("availableReplicas", 0))):
            # the Progressing condition is rewritten with a new lastUpdateTime on any progress
            stamp = now()
            kept = current.get("lastTransitionTime") if current is not None and current.get("status") == "True" \
                else stamp
            return [c for c in conditions if c.get("type") != "Progressing"] + [
                {"type": "Progressing", "status": "True", "lastUpdateTime": stamp, "lastTransitionTime": kept,
                 "reason": REPLICA_SET_UPDATED_REASON, "message": 'ReplicaSet "%s" is progressing.' % rs_name}]
        if timed_out(current, int(deadline if deadline is not None else 600)):
            return set_deployment_condition(conditions, "Progressing", "False", TIMED_OUT_REASON,
                                            'ReplicaSet "%s" has timed out progressing.' % rs_name)
        return conditions


NEW_RS_REASON = "NewReplicaSetCreated"
FOUND_NEW_RS_REASON = "FoundNewReplicaSet"
NEW_RS_AVAILABLE_REASON = "NewReplicaSetAvailable"
REPLICA_SET_UPDATED_REASON = "ReplicaSetUpdated"
TIMED_OUT_REASON = "ProgressDeadlineExceeded"


def set_deployment_condition(conditions: list, kind: str, state: str, reason: str, message: str,
                             stamp: str | None = None) -> list:
    """deploymentutil.SetDeploymentCondition: nothing changes when ``kind`` already has this status and
    reason (the message and times stay); else the condition is replaced, lastUpdateTime now (or ``stamp``),
    lastTransitionTime kept when the status is the same. The replaced one goes to the end, as kube appends it."""
    current = next((c for c in conditions or [] if c.get("type") == kind), None)
    if current is not None and current.get("status") == state and current.get("reason", "") == reason:
        return [dict(c) for c in conditions]
    stamp = stamp or now()
    cond = {"type": kind, "status": state, "lastUpdateTime": stamp,
            "lastTransitionTime": current.get("lastTransitionTime", stamp)
            if current is not None and current.get("status") == state else stamp,
            "reason": reason, "message": message}
    if not message:
        del cond["message"]
    return [dict(c) for c in conditions or [] if c.get("type") != kind] + [cond]


def replica_failures(new: dict | None, olds: list) -> dict | None:
    """getReplicaFailures: the new ReplicaSet's ReplicaFailure condition, else an old one's; None without."""
    for rs in ([new] if new is not None else []) + list(olds):
        found = condition(rs, REPLICA_FAILURE)
        if found is not None:
            return found
    return None


def timed_out(progressing: dict | None, deadline: int) -> bool:
    """deploymentutil.DeploymentTimedOut for the current Progressing condition."""
    if progressing is None or progressing.get("reason") == NEW_RS_AVAILABLE_REASON:
        return False
    if progressing.get("reason") == TIMED_OUT_REASON:
        return True
    try:
        since = datetime.datetime.strptime(progressing.get("lastUpdateTime") or "", "%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return False
    since = since.replace(tzinfo=datetime.timezone.utc)
    return since + datetime.timedelta(seconds=deadline) < datetime.datetime.now(datetime.timezone.utc)
