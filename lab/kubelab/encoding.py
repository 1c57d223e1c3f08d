# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""What decoding into the Go types and encoding back does to a built-in object.

kube-apiserver never stores the JSON it was sent: it decodes it into the Go struct and encodes
that. Fields tagged ``omitempty`` that are empty disappear (``spec.taints: []`` is stored and
returned as no ``taints``), and a Secret's write-only ``stringData`` is folded into ``data``
(the Secret strategy). ``normalize(rtype, obj)`` does that in place for built-in kinds.

The lab has no Go types, so the rules below are by field name and place (``k8s.io/api`` types.go
tags), applied to what encoding/json does with them:

- an explicit ``null`` disappears (a nil pointer, slice or map with ``omitempty``; a value struct
  given as null comes back through defaulting where kube shows it, e.g. ``resources: {}``);
- an empty list disappears, except the few slices without ``omitempty`` (``PodSpec.containers``,
  ``PolicyRule.verbs``, Role/ClusterRole ``rules``, Job ``podFailurePolicy.rules`` and
  ``onPodConditions``, ``NodeSelector.nodeSelectorTerms``, ``ContainerImage.names``,
  ``onExitCodes.values``);
- an empty map-typed field disappears (``labels``, ``annotations``, ConfigMap/Secret ``data``,
  ``binaryData``, ``nodeSelector``, ``matchLabels``, resource lists ``requests``/``limits``/
  ``capacity``/``allocatable``/``overhead``/``podFixed``, Service ``spec.selector``, PDB
  ``disruptedPods``), while an empty struct stays (``resources: {}``, ``emptyDir: {}``,
  ``securityContext: {}``, ``podSelector: {}``): Go keeps a non-nil pointer or a value struct;
- opaque JSON is left alone (``managedFields``, CRD ``openAPIV3Schema``, DRA ``parameters``,
  ControllerRevision ``data``).

Approximations: empty strings, ``false`` and zero numbers are kept (Go omits most of them), unknown
fields are kept (Go drops them), the ``omitempty`` rules for empty lists and maps are applied to the
core, apps, batch, policy, rbac, networking, node and coordination groups only; in the other
built-in groups (apiextensions.k8s.io, resource.k8s.io) only nulls and empty metadata maps/lists go.
"""

from __future__ import annotations

import base64

# Groups whose types the list/map rules below were checked against.
CHECKED_GROUPS = {"", "apps", "batch", "policy", "rbac.authorization.k8s.io", "networking.k8s.io", "node.k8s.io",
                  "coordination.k8s.io"}
# map[string]... fields (omitempty) wherever they appear in the checked groups.
MAP_FIELDS = {"labels", "annotations", "matchLabels", "binaryData", "stringData", "nodeSelector", "requests", "limits",
              "capacity", "allocatable", "overhead", "podFixed", "disruptedPods", "hard", "used", "allocatedResources"}
# Slices without omitempty: an empty one is encoded as [].
KEEP_EMPTY_LISTS = {"containers", "verbs", "rules", "nodeSelectorTerms", "onPodConditions"}
# Subtrees that are raw JSON (runtime.RawExtension, apiextensions JSON, FieldsV1).
OPAQUE_FIELDS = {"fieldsV1", "openAPIV3Schema", "parameters"}


class _Rules:
    def __init__(self, rtype):
        self.kind = rtype.kind
        self.checked = rtype.group in CHECKED_GROUPS

    def opaque(self, path: tuple) -> bool:
        if path[-1] in OPAQUE_FIELDS or path[:2] == ("metadata", "managedFields"):
            return True
        return self.kind == "ControllerRevision" and path == ("data",)

    def is_map(self, path: tuple) -> bool:
        key = path[-1]
        if path[:1] == ("metadata",) and key in ("labels", "annotations"):
            return True
        if not self.checked:
            return False
        if key == "data":
            return path == ("data",) and self.kind in ("ConfigMap", "Secret")
        if key == "selector":  # a LabelSelector struct everywhere but in Service/ReplicationController specs
            return path == ("spec", "selector") and self.kind in ("Service", "ReplicationController")
        if key == "overhead":  # RuntimeClass.overhead is a struct holding podFixed
            return not (self.kind == "RuntimeClass" and path == ("overhead",))
        return key in MAP_FIELDS

    def drop_empty_list(self, path: tuple) -> bool:
        if path[:1] == ("metadata",):
            return True
        if not self.checked:
            return False
        key = path[-1]
        if key in KEEP_EMPTY_LISTS:
            return False
        if key == "values" and "onExitCodes" in path:
            return False
        return not (key == "names" and path[-2:-1] == ("images",))


def _walk(value, path: tuple, rules: _Rules) -> None:
    if isinstance(value, list):
        for item in value:
            _walk(item, path, rules)
        return
    if not isinstance(value, dict):
        return
    for key in list(value):
        child = value[key]
        sub = path + (key,)
        if rules.opaque(sub):
            if child is None:
                del value[key]
            continue
        if child is None:
            del value[key]
        elif isinstance(child, dict):
            if rules.is_map(sub):
                if not child:
                    del value[key]
            else:
                _walk(child, sub, rules)
        elif isinstance(child, list):
            if not child and rules.drop_empty_list(sub):
                del value[key]
            else:
                _walk(child, sub, rules)


def fold_string_data(secret: dict) -> None:
    """The v1 Secret conversion: ``stringData`` entries written into ``data`` base64-encoded (a key in
    both takes the ``stringData`` value) and ``stringData`` dropped, as it is write-only."""
    string_data = secret.get("stringData")
    if isinstance(string_data, dict):
        data = secret.get("data")
        if not isinstance(data, dict):
            data = secret["data"] = {}
        for key, text in string_data.items():
            data[key] = base64.b64encode(str(text if text is not None else "").encode("utf-8")).decode("ascii")
        del secret["stringData"]
    elif "stringData" in secret and string_data is None:
        del secret["stringData"]


def normalize(rtype, obj: dict) -> dict:
    """Normalize ``obj`` (of built-in ``rtype``) in place as the Go round trip would; returns it."""
    if not isinstance(obj, dict) or getattr(rtype, "custom", False):
        return obj
    if rtype.kind == "Secret" and rtype.group == "":
        fold_string_data(obj)
    _walk(obj, (), _Rules(rtype))
    return obj
