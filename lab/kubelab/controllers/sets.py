# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The StatefulSet and Job controllers.

StatefulSet: pods ``<sts>-0 .. <sts>-(n-1)`` with ``spec.hostname`` and ``spec.subdomain``
(serviceName) and the labels ``statefulset.kubernetes.io/pod-name``, ``apps.kubernetes.io/pod-index``
and ``controller-revision-hash`` (``<sts>-<template hash>``; no ControllerRevision objects). With
OrderedReady (default) pod i is created only when pods 0..i-1 are Running and Ready, and scale-down
removes the highest ordinal first, one at a time; Parallel does both at once. RollingUpdate
(default) deletes outdated pods from the highest ordinal down (ordinals >= ``partition`` only), one at
a time while all others are Ready; they come back with the new template. OnDelete leaves them.
volumeClaimTemplates are not turned into PVCs. Status: replicas, readyReplicas, currentReplicas,
updatedReplicas, availableReplicas, currentRevision, updateRevision, collisionCount, observedGeneration.

Job: runs ``spec.completions`` (default 1) pods, ``spec.parallelism`` (default 1) at a time; the
kubelet simulation makes each Succeeded after ``job_pod_seconds``. ``spec.suspend`` deletes the
active pods. Pods carry ``batch.kubernetes.io/job-name``, ``job-name``,
``batch.kubernetes.io/controller-uid`` and ``controller-uid``. Status: startTime, active, ready,
succeeded, failed, and once enough pods succeeded, completionTime and the conditions
SuccessCriteriaMet and Complete (True). Failure policies and Indexed completion are not simulated.
"""

from __future__ import annotations


from kubelab.clone import clone
from kubelab.controllers import Controller
from kubelab.controllers.common import (CONTROLLER_MANAGER, meta, owned_by, pod_active, pod_from_template, pod_ready,
                                        set_condition, spec, stable_hash, status, terminating,
                                        write_status)
from kubelab.controllers.workloads import (available, create_allowed, create_refused, create_succeeded,
                                           template_pod)
from kubelab.errors import ApiError
from kubelab.store import now

REVISION_LABEL = "controller-revision-hash"


class _OwnerLoop(Controller):
    """Lists ``self.owners`` and all pods, then calls ``_sync(owner, owned_pods)`` for each live owner."""

    owners = None

    def __init__(self, lab):
        super().__init__(lab)
        self.pods = self.rtype("", "v1", "pods")

    def reconcile(self) -> None:
        owners = self.api.list(self.owners, None, shared=True)["items"]
        if not owners:
            return
        pods = self.api.list(self.pods, None, shared=True)["items"]
        for owner in owners:
            if terminating(owner):
                continue
            try:
                self._sync(owner, [p for p in pods if owned_by(p, owner)])
            except ApiError as exc:
                if exc.code not in (404, 409):
                    raise

    def _sync(self, owner: dict, pods: list) -> None:
        raise NotImplementedError

    def _delete(self, pod: dict) -> None:
        try:
            self.api.delete(self.pods, meta(pod)["namespace"], meta(pod)["name"], {"preconditions": {"uid": meta(pod)["uid"]}})
        except ApiError as exc:
            if exc.code != 404:
                raise


class StatefulSetController(_OwnerLoop):
    watches = ("StatefulSet", "Pod")

    def __init__(self, lab):
        super().__init__(lab)
        self.owners = self.rtype("apps", "v1", "statefulsets")

    def _sync(self, owner: dict, pods: list) -> None:
        sts = owner
        name, namespace = meta(sts)["name"], meta(sts)["namespace"]
        sts_spec = spec(sts)
        replicas = int(sts_spec.get("replicas", 1))
        ordered = sts_spec.get("podManagementPolicy", "OrderedReady") != "Parallel"
        revision = "%s-%s" % (name, stable_hash(sts_spec.get("template") or {}))
        by_ordinal = {}
        for pod in pods:
            suffix = meta(pod)["name"][len(name) + 1:]
            if meta(pod)["name"].startswith(name + "-") and suffix.isdigit():
                by_ordinal[int(suffix)] = pod
        for ordinal in range(replicas):
            pod = by_ordinal.get(ordinal)
            if pod is not None and status(pod).get("phase") in ("Succeeded", "Failed") and not terminating(pod):
                self._delete(pod)
                pod = None
            if pod is None:
                self._create(sts, ordinal, revision)
                if ordered:
                    break
            elif ordered and not (pod_ready(pod) and status(pod).get("phase") == "Running" and not terminating(pod)):
                break
        healthy = all(pod_ready(p) and not terminating(p) for o, p in by_ordinal.items() if o < replicas) and \
            len([o for o in by_ordinal if o < replicas]) == replicas
        extra = sorted((o for o in by_ordinal if o >= replicas), reverse=True)
        for ordinal in extra:
            if terminating(by_ordinal[ordinal]):
                if ordered:
                    break
                continue
            if ordered and not healthy:
                break
            self._delete(by_ordinal[ordinal])
            if ordered:
                break
        strategy = sts_spec.get("updateStrategy") or {}
        partition = int((strategy.get("rollingUpdate") or {}).get("partition") or 0)
        if strategy.get("type", "RollingUpdate") == "RollingUpdate" and healthy and not extra:
            for ordinal in range(replicas - 1, partition - 1, -1):
                pod = by_ordinal.get(ordinal)
                if pod is not None and (meta(pod).get("labels") or {}).get(REVISION_LABEL) != revision:
                    self._delete(pod)
                    break
        self._status(sts, [p for p in by_ordinal.values() if pod_active(p)], revision, replicas)

    def _create(self, sts: dict, ordinal: int, revision: str) -> None:
        name = "%s-%d" % (meta(sts)["name"], ordinal)
        labels = {REVISION_LABEL: revision, "statefulset.kubernetes.io/pod-name": name,
                  "apps.kubernetes.io/pod-index": str(ordinal)}
        pod = pod_from_template(spec(sts).get("template") or {}, name, meta(sts)["namespace"], sts, labels)
        pod["spec"]["hostname"] = name
        if spec(sts).get("serviceName"):
            pod["spec"]["subdomain"] = spec(sts)["serviceName"]
        if not create_allowed(self, sts):
            return
        try:
            self.api.create(self.pods, meta(sts)["namespace"], pod, field_manager=CONTROLLER_MANAGER)
            create_succeeded(self, sts)
        except ApiError as exc:
            # 409: the previous pod of that name is still terminating; 403/422: refused, as
            # StatefulPodControl.recordPodEvent reports it, retried after a backoff.
            if exc.code != 409 and not create_refused(self, sts, exc, "create Pod %s in StatefulSet %s failed error: %s"
                                                      % (name, meta(sts)["name"], exc.message)):
                raise

    def _status(self, sts: dict, active: list, revision: str, replicas: int) -> None:
        min_ready = int(spec(sts).get("minReadySeconds") or 0)
        new_status = clone(status(sts))
        current = new_status.get("currentRevision") or revision
        updated = sum(1 for p in active if (meta(p).get("labels") or {}).get(REVISION_LABEL) == revision)
        ready = sum(1 for p in active if pod_ready(p))
        if updated == replicas and ready == replicas and len(active) == replicas:
            current = revision
        new_status.update(
            observedGeneration=meta(sts).get("generation", 1), replicas=len(active), readyReplicas=ready,
            availableReplicas=sum(1 for p in active if available(p, min_ready)),
            currentReplicas=sum(1 for p in active if (meta(p).get("labels") or {}).get(REVISION_LABEL) == current),
            updatedReplicas=updated, currentRevision=current, updateRevision=revision, collisionCount=0)
        write_status(self.api, self.owners, sts, new_status)


class JobController(_OwnerLoop):
    watches = ("Job", "Pod")

    def __init__(self, lab):
        super().__init__(lab)
        self.owners = self.rtype("batch", "v1", "jobs")

    def _sync(self, owner: dict, pods: list) -> None:
        job = owner
        job_spec = spec(job)
        completions = int(job_spec.get("completions") if job_spec.get("completions") is not None else 1)
        parallelism = int(job_spec.get("parallelism") if job_spec.get("parallelism") is not None else 1)
        succeeded = sum(1 for p in pods if status(p).get("phase") == "Succeeded")
        failed = sum(1 for p in pods if status(p).get("phase") == "Failed")
        active = [p for p in pods if pod_active(p)]
        complete = succeeded >= completions
        wanted = 0 if complete or job_spec.get("suspend") else min(parallelism, completions - succeeded)
        if len(active) < wanted and create_allowed(self, job):
            uid = meta(job)["uid"]
            labels = {"batch.kubernetes.io/controller-uid": uid, "batch.kubernetes.io/job-name": meta(job)["name"],
                      "controller-uid": uid, "job-name": meta(job)["name"]}
            for _count in range(wanted - len(active)):
                try:
                    active.append(self.api.create(self.pods, meta(job)["namespace"],
                                                  template_pod(job_spec.get("template") or {}, job, labels),
                                                  field_manager=CONTROLLER_MANAGER))
                except ApiError as exc:
                    if not create_refused(self, job, exc):  # FailedCreate "Error creating: ...", retried later
                        raise
                    break
            else:
                create_succeeded(self, job)
        elif len(active) > wanted:
            for pod in active[wanted:]:
                self._delete(pod)
            active = active[:wanted]
        new_status = clone(status(job))
        new_status.setdefault("startTime", now())
        new_status.update(active=len(active), ready=sum(1 for p in active if pod_ready(p)), succeeded=succeeded,
                          terminating=sum(1 for p in pods if terminating(p)))
        if failed:
            new_status["failed"] = failed
        if complete:
            new_status.setdefault("completionTime", now())
            conditions = set_condition(new_status.get("conditions"), "SuccessCriteriaMet", "True", "CompletionsReached",
                                       "Reached expected number of succeeded pods")
            new_status["conditions"] = set_condition(conditions, "Complete", "True", "CompletionsReached",
                                                     "Reached expected number of succeeded pods")
            for cond in new_status["conditions"]:
                cond.setdefault("lastProbeTime", cond.get("lastTransitionTime"))
        write_status(self.api, self.owners, job, new_status)
