# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helpers shared by the simulated controllers: pod state, ownership, conditions and node predicates."""

from __future__ import annotations

import hashlib
import json
import math
import random

from kubelab.clone import clone
from kubelab.errors import ApiError
from kubelab.selectors import label_selector_from_object
from kubelab.store import now

CONTROLLER_MANAGER = "kube-controller-manager"
# kube-controller-manager's rand.SafeEncodeString alphabet (no vowels, no look-alikes).
SAFE_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
_SUFFIXES = {"n": 1e-9, "u": 1e-6, "m": 1e-3, "": 1, "k": 1e3, "M": 1e6, "G": 1e9, "T": 1e12, "P": 1e15, "E": 1e18,
             "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40, "Pi": 2 ** 50, "Ei": 2 ** 60}


# -- objects ---------------------------------------------------------------------------------------

def meta(obj: dict) -> dict:
    return obj.get("metadata") or {}


def spec(obj: dict) -> dict:
    return obj.get("spec") or {}


def status(obj: dict) -> dict:
    return obj.get("status") or {}


def terminating(obj: dict) -> bool:
    return bool(meta(obj).get("deletionTimestamp"))


def pod_active(pod: dict) -> bool:
    """Counts toward a controller's replicas: not terminating and not finished (FilterActivePods)."""
    return not terminating(pod) and status(pod).get("phase") not in ("Succeeded", "Failed")


def condition(obj: dict, kind: str) -> dict | None:
    for cond in status(obj).get("conditions") or []:
        if cond.get("type") == kind:
            return cond
    return None


def pod_ready(pod: dict) -> bool:
    cond = condition(pod, "Ready")
    return bool(cond) and cond.get("status") == "True"


def node_ready(node: dict) -> bool:
    cond = condition(node, "Ready")
    return bool(cond) and cond.get("status") == "True"


def controller_ref(obj: dict) -> dict | None:
    for ref in meta(obj).get("ownerReferences") or []:
        if ref.get("controller"):
            return ref
    return None


def owned_by(obj: dict, owner: dict) -> bool:
    ref = controller_ref(obj)
    return bool(ref) and ref.get("uid") == meta(owner).get("uid")


def owner_reference(owner: dict) -> dict:
    return {"apiVersion": owner["apiVersion"], "kind": owner["kind"], "name": meta(owner)["name"],
            "uid": meta(owner)["uid"], "controller": True, "blockOwnerDeletion": True}


def selector_matches(selector, labels: dict | None) -> bool:
    """``metav1.LabelSelector`` semantics: None selects nothing, ``{}`` everything; a bad one nothing."""
    try:
        return label_selector_from_object(selector).matches(labels or {})
    except ApiError:
        return False


def stable_hash(data, length: int = 10) -> str:
    """A stable hash of JSON data, in the safe alphabet (stands in for the pod-template-hash's fnv32a)."""
    digest = hashlib.sha256(json.dumps(data, sort_keys=True, separators=(",", ":")).encode("utf-8")).digest()
    number = int.from_bytes(digest, "big")
    out = []
    for _index in range(length):
        number, index = divmod(number, len(SAFE_ALPHABET))
        out.append(SAFE_ALPHABET[index])
    return "".join(out)


def random_suffix(length: int = 5) -> str:
    return "".join(random.choice(SAFE_ALPHABET) for _index in range(length))


def pod_from_template(template: dict, name: str, namespace: str, owner: dict, labels: dict | None = None,
                      annotations: dict | None = None) -> dict:
    template = clone(template or {})
    tmeta = template.get("metadata") or {}
    pod_labels = dict(tmeta.get("labels") or {})
    pod_labels.update(labels or {})
    pod_meta = {"name": name, "namespace": namespace, "labels": pod_labels, "ownerReferences": [owner_reference(owner)]}
    pod_annotations = dict(tmeta.get("annotations") or {})
    pod_annotations.update(annotations or {})
    if pod_annotations:
        pod_meta["annotations"] = pod_annotations
    if tmeta.get("finalizers"):
        pod_meta["finalizers"] = list(tmeta["finalizers"])
    return {"apiVersion": "v1", "kind": "Pod", "metadata": pod_meta, "spec": template.get("spec") or {}}


def int_or_percent(value, total: int, round_up: bool, default) -> int:
    if value is None:
        value = default
    if isinstance(value, str) and value.endswith("%"):
        try:
            fraction = float(value[:-1]) * total / 100.0
        except ValueError:
            return 0
        return int(math.ceil(fraction)) if round_up else int(math.floor(fraction))
    try:
        return int(value)
    except (TypeError, ValueError):
        return 0


def quantity(value) -> float:
    """A resource quantity ("2", 4, "500m", "16Gi") as a number; unparsable counts as 0."""
    if value is None:
        return 0.0
    text = str(value).strip()
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if suffix and text.endswith(suffix):
            try:
                return float(text[:-len(suffix)]) * _SUFFIXES[suffix]
            except ValueError:
                return 0.0
    try:
        return float(text)
    except ValueError:
        return 0.0


# -- conditions and status writes -----------------------------------------------------------------

def set_condition(conditions: list, kind: str, state: str, reason: str = "", message: str = "",
                  update_time: bool = False) -> list:
    """A copy of ``conditions`` with ``kind`` set; its timestamps move only when status/reason/message change."""
    result = [dict(c) for c in conditions or []]
    stamp = now()
    for cond in result:
        if cond.get("type") == kind:
            if cond.get("status") == state and cond.get("reason", "") == reason and cond.get("message", "") == message:
                return result
            if cond.get("status") != state:
                cond["lastTransitionTime"] = stamp
            if update_time:
                cond["lastUpdateTime"] = stamp
            cond.update(status=state, reason=reason, message=message)
            _drop_empty(cond)
            return result
    new = {"type": kind, "status": state, "reason": reason, "message": message, "lastTransitionTime": stamp}
    if update_time:
        new["lastUpdateTime"] = stamp
    result.append(_drop_empty(new))
    return result


def _drop_empty(cond: dict) -> dict:
    for key in ("reason", "message"):
        if not cond.get(key):
            cond.pop(key, None)
    return cond


def write_status(api, rtype, obj: dict, new_status: dict, manager: str = CONTROLLER_MANAGER) -> dict:
    """PUT .../status with ``obj``'s resourceVersion as precondition, only when the status changes."""
    if obj.get("status") == new_status:
        return obj
    body = clone(obj)
    body["status"] = new_status
    written, _code = api.update(rtype, meta(obj).get("namespace"), meta(obj)["name"], body, subresource="status",
                                field_manager=manager)
    return written


# -- scheduling predicates (scheduler and DaemonSet controller) ------------------------------------

def node_taints(node: dict) -> list:
    """The node's taints, plus ``node.kubernetes.io/unschedulable:NoSchedule`` when cordoned (NodeUnschedulable)."""
    taints = [t for t in spec(node).get("taints") or [] if isinstance(t, dict)]
    if spec(node).get("unschedulable") and not any(t.get("key") == UNSCHEDULABLE_TAINT for t in taints):
        taints.append({"key": UNSCHEDULABLE_TAINT, "effect": "NoSchedule"})
    return taints


def toleration_matches(tol: dict, taint: dict) -> bool:
    """``v1.Toleration.ToleratesTaint``: an empty effect matches every effect, an empty key with Exists
    every taint; Exists ignores the value, Equal (the default operator) compares it."""
    if not isinstance(tol, dict):
        return False
    if tol.get("effect") and tol.get("effect") != taint.get("effect"):
        return False
    operator = tol.get("operator") or "Equal"
    if not tol.get("key"):
        return operator == "Exists"  # validation allows an empty key only with Exists
    if tol.get("key") != taint.get("key"):
        return False
    return operator == "Exists" or (operator == "Equal" and (tol.get("value") or "") == (taint.get("value") or ""))


def tolerates(tolerations: list, taint: dict) -> bool:
    return any(toleration_matches(tol, taint) for tol in tolerations or [])


def matching_tolerations(taints: list, tolerations: list) -> tuple[bool, list]:
    """``v1helper.GetMatchingTolerations``: (all taints tolerated, the first toleration matching each taint)."""
    used = []
    for taint in taints or []:
        match = next((tol for tol in tolerations or [] if toleration_matches(tol, taint)), None)
        if match is None:
            return False, []
        used.append(match)
    return True, used


def untolerated_taint(tolerations: list, node: dict) -> dict | None:
    """The first NoSchedule/NoExecute taint of ``node`` that ``tolerations`` do not tolerate."""
    for taint in node_taints(node):
        if taint.get("effect") in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
            return taint
    return None


def _requirement_matches(req: dict, value: str | None) -> bool:
    operator = req.get("operator")
    values = [str(v) for v in req.get("values") or []]
    if operator == "In":
        return value is not None and value in values
    if operator == "NotIn":
        return value is None or value not in values
    if operator == "Exists":
        return value is not None
    if operator == "DoesNotExist":
        return value is None
    if operator in ("Gt", "Lt") and value is not None and len(values) == 1:
        try:
            return int(value) > int(values[0]) if operator == "Gt" else int(value) < int(values[0])
        except ValueError:
            return False
    return False


def _term_matches(term: dict, node: dict) -> bool:
    expressions = term.get("matchExpressions") or []
    fields = term.get("matchFields") or []
    if not expressions and not fields:
        return False  # an empty term matches no objects
    labels = meta(node).get("labels") or {}
    for req in expressions:
        if not _requirement_matches(req, labels.get(req.get("key"))):
            return False
    for req in fields:
        value = meta(node).get("name") if req.get("key") == "metadata.name" else None
        if not _requirement_matches(req, value):
            return False
    return True


def node_affinity_matches(pod_spec: dict, node: dict) -> bool:
    """``spec.nodeSelector`` and the required node affinity (terms ORed, expressions ANDed)."""
    labels = meta(node).get("labels") or {}
    for key, value in (pod_spec.get("nodeSelector") or {}).items():
        if labels.get(key) != value:
            return False
    required = (((pod_spec.get("affinity") or {}).get("nodeAffinity") or {})
                .get("requiredDuringSchedulingIgnoredDuringExecution") or {})
    terms = required.get("nodeSelectorTerms")
    if required and terms is not None:
        return any(_term_matches(term or {}, node) for term in terms)
    return True


def pod_resource(pod_spec: dict, resource: str) -> float:
    """Effective request of ``resource``: max(sum over containers, largest init container); limits imply requests."""
    def one(container: dict) -> float:
        res = container.get("resources") or {}
        value = (res.get("requests") or {}).get(resource)
        if value is None:
            value = (res.get("limits") or {}).get(resource)
        return quantity(value)
    total = sum(one(c) for c in pod_spec.get("containers") or [])
    init = max([one(c) for c in pod_spec.get("initContainers") or []] or [0.0])
    return max(total, init)
