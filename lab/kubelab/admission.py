# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The admission plugins the phases meet, after defaulting and before validation.

``mutate(api, rtype, obj, operation, old)`` runs the mutating plugins and ``validate(...)`` the
validating ones; both raise ``ApiError`` (kube's Status) to refuse the request. ``operation`` is
``CREATE`` or ``UPDATE`` as in ``admission.Attributes``; ``old`` is the stored object on UPDATE.

Plugins, in kube-apiserver's order (``AllOrderedPlugins``), all on pods only:

* ``ServiceAccount`` (plugin/pkg/admission/serviceaccount): on CREATE ``serviceAccountName``
  defaults to ``default``; the ServiceAccount must exist (for ``default`` the lookup is retried
  10 times 100-200 ms apart, as the controller creates it asynchronously), else 403
  ``pods "<name>" is forbidden: error looking up service account <ns>/<sa>: serviceaccount "<sa>"
  not found``; unless ``automountServiceAccountToken`` is false on the pod (or else on the SA) the
  projected ``kube-api-access-<5>`` volume (token, ``kube-root-ca.crt``, namespace) is added and
  mounted read-only at ``/var/run/secrets/kubernetes.io/serviceaccount`` in every container and
  init container that mounts nothing there; the SA's ``imagePullSecrets`` are copied when the pod
  has none. Mirror pods (``kubernetes.io/config.mirror``) are not mutated and may not reference a
  service account, secrets or token projections.
* ``Priority`` (plugin/pkg/admission/priority): ``spec.priority`` and ``preemptionPolicy`` from
  ``priorityClassName`` (0 and ``PreemptLowerPriority`` without one; the two system classes); an
  unknown class or a contradicting ``priority`` is 403. On UPDATE the stored values are kept.
* ``DefaultTolerationSeconds`` (plugin/pkg/admission/defaulttolerationseconds): tolerations for
  ``node.kubernetes.io/not-ready`` and ``unreachable`` (NoExecute, 300 s) unless already tolerated.
"""

from __future__ import annotations

import random
import time

from kubelab.clone import clone
from kubelab.errors import ApiError

MIRROR_POD_ANNOTATION = "kubernetes.io/config.mirror"
DEFAULT_SERVICE_ACCOUNT = "default"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_EXPIRATION_SECONDS = 3607  # serviceaccount.WarnOnlyBoundTokenExpiration
ROOT_CA_CONFIGMAP = "kube-root-ca.crt"
DEFAULT_SA_ATTEMPTS = 10  # getServiceAccount: 10 attempts for "default", 1 for any other name
# utilrand.String's alphabet (names.SimpleNameGenerator): no vowels, no look-alikes.
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
# scheduling.SystemPriorityClasses(): always present in kube-apiserver.
SYSTEM_PRIORITY_CLASSES = {"system-node-critical": 2000001000, "system-cluster-critical": 2000000000}
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
DEFAULT_TOLERATION_SECONDS = 300
NOT_READY_TAINT = "node.kubernetes.io/not-ready"
UNREACHABLE_TAINT = "node.kubernetes.io/unreachable"


def mutate(api, rtype, obj: dict, operation: str, old: dict | None = None) -> None:
    """Mutating admission (ServiceAccount, Priority, DefaultTolerationSeconds), in place."""
    if not _is_pod(rtype) or not isinstance(obj, dict):
        return
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return
    if operation == "CREATE":
        _service_account_admit(api, obj, spec)
    _priority_admit(api, obj, spec, operation, old)
    _default_toleration_seconds(spec)


def validate(api, rtype, obj: dict, operation: str, old: dict | None = None) -> None:
    """Validating admission: raises ApiError when a plugin refuses the object."""
    if not _is_pod(rtype) or operation != "CREATE" or not isinstance(obj, dict):
        return
    spec = obj.get("spec")
    if isinstance(spec, dict):
        _service_account_validate(api, obj, spec)


# -- helpers ------------------------------------------------------------------------------------

def _is_pod(rtype) -> bool:
    return rtype is not None and rtype.group == "" and rtype.kind == "Pod" and not rtype.custom


def _meta(obj: dict) -> dict:
    meta = obj.get("metadata")
    return meta if isinstance(meta, dict) else {}


def request_name(obj: dict) -> str:
    """The name an admission error names (admission.extractResourceName): generateName before naming."""
    meta = _meta(obj)
    return meta.get("name") or meta.get("generateName") or "Unknown"


def forbidden(obj: dict, message: str) -> ApiError:
    """``admission.NewForbidden`` for a pod: 403 ``pods "<name>" is forbidden: <message>``."""
    name = request_name(obj)
    return ApiError(403, "Forbidden", 'pods "%s" is forbidden: %s' % (name, message),
                    {"name": name, "kind": "pods"})


def _is_mirror(obj: dict) -> bool:
    return MIRROR_POD_ANNOTATION in (_meta(obj).get("annotations") or {})


# -- ServiceAccount -----------------------------------------------------------------------------

def _lookup_service_account(api, namespace: str, name: str) -> dict:
    """``getServiceAccount``: the SA, retried for ``default`` (created by a controller); NotFound text otherwise."""
    rtype = api.registry.get("", "v1", "serviceaccounts")
    attempts = DEFAULT_SA_ATTEMPTS if name == DEFAULT_SERVICE_ACCOUNT else 1
    interval = (random.randrange(100) + 100) / 1000.0
    for attempt in range(attempts):
        if attempt:
            time.sleep(interval)
        found = api.store.get_or_none(rtype, namespace, name)
        if found is not None:
            return found
    raise LookupError('serviceaccount "%s" not found' % name)


def _service_account(api, obj: dict, spec: dict) -> dict:
    namespace = _meta(obj).get("namespace") or ""
    name = spec.get("serviceAccountName")
    try:
        return _lookup_service_account(api, namespace, name)
    except LookupError as exc:
        raise forbidden(obj, "error looking up service account %s/%s: %s" % (namespace, name, exc)) from None


def _service_account_admit(api, obj: dict, spec: dict) -> None:
    """``serviceaccount.Plugin.Admit`` (CREATE only; mirror pods go straight to validation)."""
    if _is_mirror(obj):
        return
    if not spec.get("serviceAccountName"):
        # v1 -> internal conversion takes the deprecated serviceAccount when serviceAccountName is empty
        spec["serviceAccountName"] = spec.get("serviceAccount") or DEFAULT_SERVICE_ACCOUNT
    # v1's deprecated serviceAccount mirrors serviceAccountName (Convert_core_PodSpec_To_v1_PodSpec).
    spec["serviceAccount"] = spec["serviceAccountName"]
    account = _service_account(api, obj, spec)
    if _should_automount(account, spec):
        _mount_token(spec)
    if not spec.get("imagePullSecrets") and account.get("imagePullSecrets"):
        spec["imagePullSecrets"] = [{"name": ref.get("name", "")} for ref in account["imagePullSecrets"]
                                    if isinstance(ref, dict)]


def _should_automount(account: dict, spec: dict) -> bool:
    if spec.get("automountServiceAccountToken") is not None:
        return bool(spec["automountServiceAccountToken"])
    if account.get("automountServiceAccountToken") is not None:
        return bool(account["automountServiceAccountToken"])
    return True


def token_volume(name: str) -> dict:
    """``TokenVolumeSource()``: the projected volume of a bound service-account token (defaultMode 420)."""
    return {"name": name, "projected": {"defaultMode": 420, "sources": [
        {"serviceAccountToken": {"expirationSeconds": TOKEN_EXPIRATION_SECONDS, "path": "token"}},
        {"configMap": {"name": ROOT_CA_CONFIGMAP, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
        {"downwardAPI": {"items": [{"path": "namespace",
                                    "fieldRef": {"apiVersion": "v1", "fieldPath": "metadata.namespace"}}]}},
    ]}}


def _mount_token(spec: dict) -> None:
    """``mountServiceAccountToken``: reuse a ``kube-api-access-*`` volume, else add one if a container needs it."""
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    existing = next((v.get("name") for v in volumes if isinstance(v, dict)
                     and str(v.get("name") or "").startswith(TOKEN_VOLUME_PREFIX)), None)
    name = existing or TOKEN_VOLUME_PREFIX + "".join(random.choice(NAME_ALPHABET) for _index in range(5))
    mount = {"name": name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH}
    needed = False
    for field in ("initContainers", "containers"):
        for container in spec.get(field) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") if isinstance(container.get("volumeMounts"), list) else []
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = mounts + [dict(mount)]
            needed = True
    if needed and existing is None:
        spec["volumes"] = volumes + [token_volume(name)]


def _service_account_validate(api, obj: dict, spec: dict) -> None:
    """``serviceaccount.Plugin.Validate`` on CREATE: mirror pods' limits, then the SA must exist."""
    if _is_mirror(obj):
        if spec.get("serviceAccountName"):
            raise forbidden(obj, "a mirror pod may not reference service accounts")
        if _references_secrets(spec):
            raise forbidden(obj, "a mirror pod may not reference secrets")
        for volume in spec.get("volumes") or []:
            for source in ((volume or {}).get("projected") or {}).get("sources") or []:
                if isinstance(source, dict) and source.get("serviceAccountToken") is not None:
                    raise forbidden(obj, "a mirror pod may not use ServiceAccountToken volume projections")
        return
    if not spec.get("serviceAccountName"):
        raise forbidden(obj, "no service account specified for pod %s/%s"
                        % (_meta(obj).get("namespace") or "", _meta(obj).get("name") or ""))
    _service_account(api, obj, spec)


def _references_secrets(spec: dict) -> bool:
    """Whether the pod names a Secret anywhere (podutil.VisitPodSecretNames, the common cases)."""
    if spec.get("imagePullSecrets"):
        return True
    for volume in spec.get("volumes") or []:
        volume = volume or {}
        if volume.get("secret") is not None:
            return True
        for source in (volume.get("projected") or {}).get("sources") or []:
            if isinstance(source, dict) and source.get("secret") is not None:
                return True
    for field in ("initContainers", "containers", "ephemeralContainers"):
        for container in spec.get(field) or []:
            container = container or {}
            if any((e or {}).get("secretRef") for e in container.get("envFrom") or []):
                return True
            if any(((e or {}).get("valueFrom") or {}).get("secretKeyRef") for e in container.get("env") or []):
                return True
    return False


# -- Priority -----------------------------------------------------------------------------------

def _priority_class(api, name: str) -> tuple[int, str] | None:
    """(value, preemptionPolicy) of a PriorityClass: the system ones, or a served scheduling.k8s.io one."""
    if name in SYSTEM_PRIORITY_CLASSES:
        return SYSTEM_PRIORITY_CLASSES[name], PREEMPT_LOWER_PRIORITY
    rtype = api.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    found = api.store.get_or_none(rtype, None, name) if rtype is not None else None
    if found is None:
        return None
    return int(found.get("value") or 0), found.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY


def _default_priority(api) -> tuple[str, int, str]:
    """``getDefaultPriority``: the globalDefault PriorityClass (lowest value wins), else "", 0, PreemptLowerPriority."""
    rtype = api.registry.get("scheduling.k8s.io", "v1", "priorityclasses")
    if rtype is not None:
        classes, _revision = api.store.list(rtype)
        defaults = sorted((c for c in classes if c.get("globalDefault")), key=lambda c: int(c.get("value") or 0))
        if defaults:
            chosen = defaults[0]
            return (_meta(chosen).get("name", ""), int(chosen.get("value") or 0),
                    chosen.get("preemptionPolicy") or PREEMPT_LOWER_PRIORITY)
    return "", 0, PREEMPT_LOWER_PRIORITY


def _priority_admit(api, obj: dict, spec: dict, operation: str, old: dict | None) -> None:
    """``priority.Plugin.admitPod``: resolve priorityClassName on CREATE, keep the stored values on UPDATE."""
    if operation == "UPDATE":
        old_spec = (old or {}).get("spec") or {}
        for field in ("priority", "preemptionPolicy"):
            if spec.get(field) is None and old_spec.get(field) is not None:
                spec[field] = clone(old_spec[field])
        return
    if operation != "CREATE":
        return
    class_name = spec.get("priorityClassName") or ""
    if not class_name:
        class_name, priority, policy = _default_priority(api)
        if class_name:
            spec["priorityClassName"] = class_name
    else:
        resolved = _priority_class(api, class_name)
        if resolved is None:
            raise forbidden(obj, "no PriorityClass with name %s was found" % class_name)
        priority, policy = resolved
    given = spec.get("priority")
    if given is not None and given != priority:
        raise forbidden(obj, "the integer value of priority (%s) must not be provided in pod spec; priority admission "
                             "controller computed %d from the given PriorityClass name" % (given, priority))
    spec["priority"] = priority
    if spec.get("preemptionPolicy") not in (None, policy):
        raise forbidden(obj, "the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority "
                             "admission controller computed %s from the given PriorityClass name"
                        % (spec["preemptionPolicy"], policy))
    spec["preemptionPolicy"] = policy


# -- DefaultTolerationSeconds -------------------------------------------------------------------

def _default_toleration_seconds(spec: dict) -> None:
    """``defaulttolerationseconds.Plugin.Admit``: not-ready and unreachable NoExecute for 300 s unless tolerated."""
    tolerations = spec.get("tolerations") if isinstance(spec.get("tolerations"), list) else []

    def tolerated(key: str) -> bool:
        return any(isinstance(t, dict) and t.get("key") in (key, "", None)
                   and t.get("effect") in ("NoExecute", "", None) for t in tolerations)

    added = [{"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": DEFAULT_TOLERATION_SECONDS}
             for key in (NOT_READY_TAINT, UNREACHABLE_TAINT) if not tolerated(key)]
    if added:
        spec["tolerations"] = tolerations + added
