# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""apps/v1, batch/v1, policy/v1, resource.k8s.io/v1 and apiextensions.k8s.io/v1 defaulting.

Each function mirrors the generated ``SetObjectDefaults_<Kind>`` of its group-version
(``pkg/apis/<group>/<version>/zz_generated.defaults.go``): the kind's own ``SetDefaults_<Kind>``
from ``defaults.go``, then the defaulters of every nested type (the pod template through
``core.pod_template``). Feature gates are taken at their Kubernetes 1.37 defaults
(``MaxUnavailableStatefulSet`` beta and on since 1.35, ``JobPodReplacementPolicy`` GA,
``StatefulSetAutoDeletePVC`` GA).

A few steps that are not defaulting in kube-apiserver but that it always performs on these kinds
are done here too, because the lab has no other hook for them: the Job strategy's
``generateSelectorIfNeeded`` (``pkg/registry/batch/job/strategy.go`` PrepareForCreate) and the apps/v1
conversion that stamps ``apiVersion``/``kind`` on a StatefulSet's ``volumeClaimTemplates``
(``Convert_apps_StatefulSetSpec_To_v1_StatefulSetSpec``), and the status fields that Go's encoding writes
even when zero (no ``omitempty``) on StatefulSet, DaemonSet and ReplicaSet.

Kinds with no defaulting in 1.37 and therefore not registered: ``apps/v1`` ControllerRevision
(``data`` is a raw object), ``policy/v1`` PodDisruptionBudget (``pkg/apis/policy/v1`` has no
``defaults.go``) and ``resource.k8s.io/v1`` DeviceClass (none of its nested types has a defaulter).

All functions change the object in place and are idempotent: a defaulted object comes out unchanged.
A ``null`` is treated as absent, as a nil pointer is in Go. Values of the wrong type are left alone
for validation to reject.
"""

from __future__ import annotations

import datetime

from kubelab.defaults import core

MAX_INT32 = 2147483647
JOB_NAME_LABELS = ("job-name", "batch.kubernetes.io/job-name")  # batch.LegacyJobNameLabel, batch.JobNameLabel
CONTROLLER_UID_LABELS = ("controller-uid", "batch.kubernetes.io/controller-uid")
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"


# -- helpers --------------------------------------------------------------------------------------

def _child(parent: dict, key: str):
    """``parent[key]`` as a dict, created when absent or null (a non-pointer struct in Go); None when it is
    something else (invalid, left for validation)."""
    value = parent.get(key)
    if value is None:
        value = parent[key] = {}
    return value if isinstance(value, dict) else None


def _default(obj: dict, key: str, value) -> None:
    """Set ``obj[key]`` when absent or null (``if obj.X == nil``)."""
    if obj.get(key) is None:
        obj[key] = value


def _default_empty(obj: dict, key: str, value) -> None:
    """Set ``obj[key]`` when absent, null or empty (``if obj.X == ""`` for a string, ``== 0`` for a count)."""
    if not obj.get(key) and obj.get(key) is not False:
        obj[key] = value


def _dicts(value) -> list:
    """The dict items of a list (anything else yields nothing)."""
    return [item for item in value if isinstance(item, dict)] if isinstance(value, list) else []


def _spec(obj: dict):
    return _child(obj, "spec") if isinstance(obj, dict) else None


def _pod_template(spec: dict) -> None:
    """``corev1.SetDefaults_PodSpec`` and friends on ``spec.template`` (the core helper, looked up at call time)."""
    template = spec.get("template")
    if isinstance(template, dict):
        core.pod_template(template)


def _status_zeros(obj: dict, fields: tuple) -> None:
    """The status struct's fields without ``omitempty``, which Go's encoding always writes (0 when unset): a
    just-created StatefulSet reads back with ``status: {replicas: 0, availableReplicas: 0}`` (the strategy's
    PrepareForCreate resets status to the empty struct), which clients' waiters rely on."""
    status = _child(obj, "status")
    if status is not None:
        for field in fields:
            _default(status, field, 0)


def _now() -> str:
    """``metav1.Now()`` truncated to seconds, as it is serialized (RFC 3339, UTC)."""
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


# -- apps/v1 ----------------------------------------------------------------------------------------

def deployment(obj: dict) -> None:
    """``SetObjectDefaults_Deployment``: ``SetDefaults_Deployment`` (replicas 1, RollingUpdate with maxUnavailable
    and maxSurge 25%, revisionHistoryLimit 10, progressDeadlineSeconds 600) and the pod template."""
    spec = _spec(obj)
    if spec is None:
        return
    _default(spec, "replicas", 1)
    strategy = _child(spec, "strategy")
    if strategy is not None:
        _default_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _child(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", "25%")
                _default(rolling, "maxSurge", "25%")
    _default(spec, "revisionHistoryLimit", 10)
    _default(spec, "progressDeadlineSeconds", 600)
    _pod_template(spec)


def daemon_set(obj: dict) -> None:
    """``SetObjectDefaults_DaemonSet``: ``SetDefaults_DaemonSet`` (RollingUpdate with maxUnavailable 1 and
    maxSurge 0, revisionHistoryLimit 10) and the pod template; the status's always-encoded counts."""
    spec = _spec(obj)
    if spec is None:
        return
    strategy = _child(spec, "updateStrategy")
    if strategy is not None:
        _default_empty(strategy, "type", "RollingUpdate")
        if strategy["type"] == "RollingUpdate":
            rolling = _child(strategy, "rollingUpdate")
            if rolling is not None:
                _default(rolling, "maxUnavailable", 1)
                _default(rolling, "maxSurge", 0)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)
    _status_zeros(obj, ("currentNumberScheduled", "numberMisscheduled", "desiredNumberScheduled", "numberReady"))


def _claim_template(claim: dict) -> None:
    """A StatefulSet volumeClaimTemplate: the apps/v1 conversion's ``apiVersion``/``kind``, then
    ``SetDefaults_PersistentVolumeClaim`` (status.phase Pending) and ``SetDefaults_PersistentVolumeClaimSpec``
    (volumeMode Filesystem)."""
    claim["apiVersion"] = "v1"
    claim["kind"] = "PersistentVolumeClaim"
    spec = _child(claim, "spec")
    if spec is not None:
        _default(spec, "volumeMode", "Filesystem")
    status = _child(claim, "status")
    if status is not None:
        _default_empty(status, "phase", "Pending")


def stateful_set(obj: dict) -> None:
    """``SetObjectDefaults_StatefulSet``: ``SetDefaults_StatefulSet`` (podManagementPolicy OrderedReady,
    updateStrategy RollingUpdate with partition 0 and, MaxUnavailableStatefulSet being on, maxUnavailable 1,
    persistentVolumeClaimRetentionPolicy Retain/Retain, replicas 1, revisionHistoryLimit 10), the pod template
    and the volumeClaimTemplates; the status's always-encoded ``replicas`` and ``availableReplicas``.

    As in Go, ``rollingUpdate`` is created only when the type was empty: an explicit ``type: RollingUpdate``
    without ``rollingUpdate`` stays without it."""
    spec = _spec(obj)
    if spec is None:
        return
    _default_empty(spec, "podManagementPolicy", "OrderedReady")
    strategy = _child(spec, "updateStrategy")
    if strategy is not None:
        if not strategy.get("type"):
            strategy["type"] = "RollingUpdate"
            _default(strategy, "rollingUpdate", {})
        rolling = strategy.get("rollingUpdate")
        if strategy["type"] == "RollingUpdate" and isinstance(rolling, dict):
            _default(rolling, "partition", 0)
            _default(rolling, "maxUnavailable", 1)
    retention = _child(spec, "persistentVolumeClaimRetentionPolicy")
    if retention is not None:
        _default_empty(retention, "whenDeleted", "Retain")
        _default_empty(retention, "whenScaled", "Retain")
    _default(spec, "replicas", 1)
    _default(spec, "revisionHistoryLimit", 10)
    _pod_template(spec)
    for claim in _dicts(spec.get("volumeClaimTemplates")):
        _claim_template(claim)
    _status_zeros(obj, ("replicas", "availableReplicas"))


def replica_set(obj: dict) -> None:
    """``SetObjectDefaults_ReplicaSet``: ``SetDefaults_ReplicaSet`` (replicas 1) and the pod template; the
    status's always-encoded ``replicas``."""
    spec = _spec(obj)
    if spec is None:
        return
    _default(spec, "replicas", 1)
    _pod_template(spec)
    _status_zeros(obj, ("replicas",))


# -- batch/v1 ---------------------------------------------------------------------------------------

def _pod_failure_policy(spec: dict) -> None:
    """``SetDefaults_PodFailurePolicyOnPodConditionsPattern``: onPodConditions[].status True."""
    policy = spec.get("podFailurePolicy")
    if not isinstance(policy, dict):
        return
    for rule in _dicts(policy.get("rules")):
        for pattern in _dicts(rule.get("onPodConditions")):
            _default_empty(pattern, "status", "True")


def _generate_selector(obj: dict, spec: dict) -> None:
    """``generateSelector`` (Job strategy): the template gets ``job-name`` and ``batch.kubernetes.io/job-name``
    (the Job's name) and ``controller-uid`` and ``batch.kubernetes.io/controller-uid`` (its uid) unless set, and
    the selector matches ``batch.kubernetes.io/controller-uid``. Labels the user set are kept (validation
    refuses a conflict)."""
    meta = obj.get("metadata") or {}
    uid, name = meta.get("uid"), meta.get("name")
    template = _child(spec, "template")
    tmeta = _child(template, "metadata") if template is not None else None
    labels = _child(tmeta, "labels") if tmeta is not None else None
    selector = _child(spec, "selector")
    if labels is None or selector is None or not uid or not name:
        return      # a generateName Job: Api.create defaults it again once it is named
    for key in JOB_NAME_LABELS:
        labels.setdefault(key, name or "")
    for key in CONTROLLER_UID_LABELS:
        labels.setdefault(key, uid)
    match = _child(selector, "matchLabels")
    if match is not None:
        match.setdefault(CONTROLLER_UID_LABEL, uid)


def _template_labels(spec: dict):
    """``spec.template.metadata.labels`` (None when any level is missing or not an object)."""
    template = spec.get("template")
    tmeta = template.get("metadata") if isinstance(template, dict) else None
    return tmeta.get("labels") if isinstance(tmeta, dict) else None


def job(obj: dict) -> None:
    """``SetObjectDefaults_Job``, then the strategy's selector generation.

    ``SetDefaults_Job``: completions and parallelism 1 when both are unset (parallelism 1 otherwise),
    backoffLimit 6 (MaxInt32 with backoffLimitPerIndex), completionMode NonIndexed, suspend false,
    podReplacementPolicy Failed with a podFailurePolicy and TerminatingOrFailed without, manualSelector
    false; a Job without labels takes its template's labels. In Go that assignment shares the map, so the
    labels ``generateSelectorIfNeeded`` then adds to the template (PrepareForCreate, manualSelector false)
    show on the Job too; and since kube-apiserver defaults again what it reads back from etcd, a Job whose
    template had no labels at all gets the generated ones as its labels as well."""
    spec = _spec(obj)
    if spec is None:
        return
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec["completions"] = 1
        spec["parallelism"] = 1
    _default(spec, "parallelism", 1)
    _default(spec, "backoffLimit", MAX_INT32 if spec.get("backoffLimitPerIndex") is not None else 6)
    meta = obj.get("metadata")
    if not isinstance(meta, dict):
        meta = obj["metadata"] = {}
    shared = isinstance(_template_labels(spec), dict) and not meta.get("labels")
    _default(spec, "completionMode", "NonIndexed")
    _default(spec, "suspend", False)
    replacement = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    _default(spec, "podReplacementPolicy", replacement)
    _default(spec, "manualSelector", False)
    _pod_failure_policy(spec)
    _pod_template(spec)
    if spec["manualSelector"] is False:
        _generate_selector(obj, spec)
    labels = _template_labels(spec)
    if isinstance(labels, dict) and labels and (shared or not meta.get("labels")):
        meta["labels"] = dict(labels)


def cron_job(obj: dict) -> None:
    """``SetObjectDefaults_CronJob``: ``SetDefaults_CronJob`` (concurrencyPolicy Allow, suspend false,
    successfulJobsHistoryLimit 3, failedJobsHistoryLimit 1) and the nested defaulters of the jobTemplate.

    ``SetDefaults_Job`` takes a Job, not a JobSpec, so the jobTemplate's spec gets no parallelism,
    completions or backoffLimit: only the pod failure policy patterns and the pod template are defaulted."""
    spec = _spec(obj)
    if spec is None:
        return
    _default_empty(spec, "concurrencyPolicy", "Allow")
    _default(spec, "suspend", False)
    _default(spec, "successfulJobsHistoryLimit", 3)
    _default(spec, "failedJobsHistoryLimit", 1)
    job_template = _child(spec, "jobTemplate")
    job_spec = job_template.get("spec") if job_template is not None else None
    if isinstance(job_spec, dict):
        _pod_failure_policy(job_spec)
        _pod_template(job_spec)


# -- resource.k8s.io/v1 ----------------------------------------------------------------------------

def _tolerations(holder: dict) -> None:
    """DeviceToleration ``+default="Equal"`` on ``operator``."""
    for toleration in _dicts(holder.get("tolerations")):
        _default_empty(toleration, "operator", "Equal")


def _allocation_mode(request: dict) -> None:
    """``SetDefaults_ExactDeviceRequest`` / ``SetDefaults_DeviceSubRequest``: allocationMode ExactCount and,
    for ExactCount, count 1 when 0."""
    _default_empty(request, "allocationMode", "ExactCount")
    if request["allocationMode"] == "ExactCount" and not request.get("count"):
        request["count"] = 1
    _tolerations(request)


def _claim_spec(spec) -> None:
    """A ResourceClaimSpec: every request's ``exactly`` and ``firstAvailable[]``."""
    if not isinstance(spec, dict) or not isinstance(spec.get("devices"), dict):
        return
    for request in _dicts(spec["devices"].get("requests")):
        if isinstance(request.get("exactly"), dict):
            _allocation_mode(request["exactly"])
        for sub in _dicts(request.get("firstAvailable")):
            _allocation_mode(sub)


def resource_claim(obj: dict) -> None:
    """``SetObjectDefaults_ResourceClaim``: the requests (allocation mode, count, toleration operator) and the
    tolerations recorded in ``status.allocation.devices.results[]``."""
    if not isinstance(obj, dict):
        return
    _claim_spec(obj.get("spec"))
    allocation = (obj.get("status") or {}).get("allocation") if isinstance(obj.get("status"), dict) else None
    if isinstance(allocation, dict) and isinstance(allocation.get("devices"), dict):
        for result in _dicts(allocation["devices"].get("results")):
            _tolerations(result)


def resource_claim_template(obj: dict) -> None:
    """``SetObjectDefaults_ResourceClaimTemplate``: the claim spec under ``spec.spec``."""
    if isinstance(obj, dict) and isinstance(obj.get("spec"), dict):
        _claim_spec(obj["spec"].get("spec"))


def _device_taint(taint) -> None:
    """``SetDefaults_DeviceTaint``: timeAdded now (seconds) when unset."""
    if isinstance(taint, dict):
        _default(taint, "timeAdded", _now())


def resource_slice(obj: dict) -> None:
    """``SetObjectDefaults_ResourceSlice``: ``SetDefaults_Device`` (a nodeAllocatableResourceMappings entry's
    allocationMultiplier 1) and ``SetDefaults_DeviceTaint`` on the devices' taints and the slice's
    ``spec.taints[].taint``."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if not isinstance(spec, dict):
        return
    for device in _dicts(spec.get("devices")):
        mappings = device.get("nodeAllocatableResourceMappings")
        if isinstance(mappings, dict):
            for mapping in mappings.values():
                if isinstance(mapping, dict):
                    _default(mapping, "allocationMultiplier", "1")
        for taint in _dicts(device.get("taints")):
            _device_taint(taint)
    for entry in _dicts(spec.get("taints")):
        _device_taint(entry.get("taint"))


def device_taint_rule(obj: dict) -> None:
    """``SetObjectDefaults_DeviceTaintRule``: ``SetDefaults_DeviceTaint`` on ``spec.taint``."""
    spec = obj.get("spec") if isinstance(obj, dict) else None
    if isinstance(spec, dict):
        _device_taint(spec.get("taint"))


# -- apiextensions.k8s.io/v1 -------------------------------------------------------------------------

def custom_resource_definition(obj: dict) -> None:
    """``SetObjectDefaults_CustomResourceDefinition``: ``SetDefaults_ServiceReference`` (a conversion webhook
    service's port 443), ``SetDefaults_CustomResourceDefinitionSpec`` (names.singular the lower-cased kind,
    names.listKind ``<kind>List``, conversion strategy None, a Webhook conversion's
    conversionReviewVersions ``[v1]``) and ``SetDefaults_CustomResourceDefinition`` (status.storedVersions the
    first storage version)."""
    spec = _spec(obj)
    if spec is None:
        return
    names = _child(spec, "names")
    if names is not None:
        kind = names.get("kind") if isinstance(names.get("kind"), str) else ""
        _default_empty(names, "singular", kind.lower())
        if kind:
            _default_empty(names, "listKind", kind + "List")
    conversion = _child(spec, "conversion")
    if conversion is not None:
        _default_empty(conversion, "strategy", "None")
        if conversion["strategy"] == "Webhook":
            _default_empty(conversion, "conversionReviewVersions", ["v1"])
        webhook = conversion.get("webhook")
        client = webhook.get("clientConfig") if isinstance(webhook, dict) else None
        service = client.get("service") if isinstance(client, dict) else None
        if isinstance(service, dict):
            _default(service, "port", 443)
    status = obj.get("status")
    if isinstance(status, dict) and not status.get("storedVersions"):
        stored = [v.get("name") for v in _dicts(spec.get("versions")) if v.get("storage")]
        if stored:
            status["storedVersions"] = stored[:1]


# (group, kind) -> function(obj) defaulting in place
DEFAULTERS: dict = {
    ("apps", "Deployment"): deployment,
    ("apps", "DaemonSet"): daemon_set,
    ("apps", "StatefulSet"): stateful_set,
    ("apps", "ReplicaSet"): replica_set,
    ("batch", "Job"): job,
    ("batch", "CronJob"): cron_job,
    ("resource.k8s.io", "ResourceClaim"): resource_claim,
    ("resource.k8s.io", "ResourceClaimTemplate"): resource_claim_template,
    ("resource.k8s.io", "ResourceSlice"): resource_slice,
    ("resource.k8s.io", "DeviceTaintRule"): device_taint_rule,
    ("apiextensions.k8s.io", "CustomResourceDefinition"): custom_resource_definition,
}
