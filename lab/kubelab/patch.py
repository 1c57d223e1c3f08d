# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The four PATCH flavours of kube-apiserver, and managedFields bookkeeping.

* ``json_merge_patch`` / ``merge_patch_object``: ``application/merge-patch+json`` (RFC 7386).
* ``json_patch``: ``application/json-patch+json`` (RFC 6902).
* ``strategic_merge_patch``: ``application/strategic-merge-patch+json``, driven by a merge-key
  table (``DEFAULT_MERGE_KEYS``) instead of Go struct tags.
* ``apply_patch``: ``application/apply-patch+yaml`` (server-side apply) with field ownership and
  conflicts between managers (``conflict_error``).
* ``update_managed_fields``: the ``operation: Update`` entries every other write records.

Every function returns a new object and leaves its arguments untouched, except
``update_managed_fields``, which sets ``metadata.managedFields`` of the object it is given (and
returns that object).

Error codes follow ``staging/src/k8s.io/apiserver/pkg/endpoints/handlers/patch.go`` (kubernetes
master, read through the code search corpus):

* a JSON patch that does not decode (not a list) → ``errors.NewBadRequest`` → 400;
* a JSON patch that decodes but does not apply (failed ``test``, missing path, bad index, unknown
  ``op``) → ``errors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", GroupResource{},
  "", err.Error(), 0, false)`` → 422, reason ``Invalid``, message ``the server rejected our request
  due to an error in our request`` and no causes (``isUnexpectedResponse`` is false, so the
  evanphx/json-patch error text is dropped). Issues kubernetes/kubernetes#68202 and #68224 (500 in
  2018) were fixed that way (PR #68346 and follow-ups); the reply bodies quoted in
  kubernetes-client/javascript#2095 and in test fakes "measured against v1.37.0" agree: details
  ``{}``. ``PatchApplyError.detail`` keeps the underlying text for our own logs and tests.
* a merge patch that is not a JSON object → ``jsonpatch.ErrBadJSONPatch`` → 400 ``Invalid JSON Patch``.
* strategic merge patch: ``interpretStrategicMergePatchError``: bad directive formats → 400 with
  the ``mergepatch`` error text; ``ErrNoListOfLists`` and ``ErrPatchContentNotMatchRetainKeys`` →
  the same generic 422 as above; anything else (unknown ``$patch`` value, missing merge key) is
  passed through unwrapped and answered as a 500 ``Status`` with an empty reason.
* apply: ``fieldManager`` missing → 422 ``PatchOptions.meta.k8s.io "" is invalid: fieldManager:
  Required value: is required for apply patch`` (``ValidatePatchOptions``); ``metadata.managedFields``
  in the applied object → 400 ``metadata.managedFields must be nil``.

The resourceVersion precondition (kubectl's SSA migration JSON patch replaces
``/metadata/resourceVersion`` with the version it read) is not checked here: after patching, the
server calls ``check_resource_version(live, patched, ...)``, which raises kube's 409 Conflict when
the patched object names another resourceVersion than the stored one.

Server-side apply follows ``merge.Updater.Apply`` of sigs.k8s.io/structured-merge-diff and the
field manager stack of k8s.io/apiserver (``pkg/endpoints/handlers/fieldmanager``, ``internal``):
an apply by manager M conflicts on each field another managedFields entry owns (Apply or Update,
any subresource; M's own Update entry is another manager, since the identifier holds the
operation) when the apply adds it or changes its value; the same value means shared ownership.
Without ``force``: 409 Conflict, ``getConflictMessage``'s text, ``FieldManagerConflict`` causes
with ``fieldpath.Path`` strings, and nothing is written (also under ``dryRun=All``). With
``force`` the fields move to M's entry. ``lastAppliedManager`` (manager ``kubectl`` may take fields
the client-side ``last-applied-configuration`` still matches) and ``skipNonAppliedManager``
(``before-first-apply`` for an object without managedFields) are mirrored too. ``force`` is parsed
as the apiserver parses a boolean query parameter (``parse_bool_param``).

Known differences from kube-apiserver (server-side apply): field sets are computed from the
merge-key table, not from OpenAPI schemas: maps and structs are not told apart (no ``"."`` entries
for maps), atomic structs and maps (``+structType=atomic`` such as ``LabelSelector``,
``x-kubernetes-map-type: atomic``) are granular here, keyed lists use one key field, and a list
not in the table is atomic; so a conflict may be reported on a finer or coarser path than kube's.
Conflicts are listed with managers sorted (kube's causes follow Go map order); the
``last-applied-configuration`` annotation is not rewritten by a ``kubectl`` server-side apply
(``lastAppliedUpdater``); managedFields are not capped at 10 Update entries
(``capManagersManager``); there is one served version per group, so no conversion of field sets.
Pruning removes fields the same manager applied before and no longer applies, unless another
manager owns them or something below them.
"""

from __future__ import annotations

import datetime
import json

from kubelab.clone import clone
from kubelab.errors import ApiError, bad_request, conflict

__all__ = [
    "ATOMIC",
    "MERGE_SET",
    "DEFAULT_MERGE_KEYS",
    "GENERIC_INVALID_MESSAGE",
    "PatchApplyError",
    "json_merge_patch",
    "merge_patch_object",
    "json_patch",
    "strategic_merge_patch",
    "apply_patch",
    "update_managed_fields",
    "validate_patch_options",
    "check_resource_version",
    "manager_from_user_agent",
    "fields_v1",
    "fields_v1_paths",
    "json_equal",
    "parse_bool_param",
    "manager_identifier",
    "print_manager",
    "field_path_string",
    "conflict_error",
    "ApplyConflict",
    "LAST_APPLIED_ANNOTATION",
    "BEFORE_FIRST_APPLY",
]

GENERIC_INVALID_MESSAGE = "the server rejected our request due to an error in our request"
MAX_JSON_PATCH_OPERATIONS = 10000

_MISSING = object()


class PatchApplyError(ApiError):
    """422 ``Invalid`` with kube's generic message; ``detail`` says what went wrong."""

    def __init__(self, detail: str):
        super().__init__(422, "Invalid", GENERIC_INVALID_MESSAGE)
        self.detail = detail

    def __str__(self) -> str:
        return "%s (%s)" % (self.message, self.detail)


def _internal(message: str) -> ApiError:
    """An error kube-apiserver passes through unwrapped: 500 with an empty reason."""
    return ApiError(500, "", message)


def json_equal(left, right) -> bool:
    """Equality of JSON values: ``True`` is not ``1``, ``1`` is ``1.0``."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    if isinstance(left, (int, float)) and isinstance(right, (int, float)):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(json_equal(a, b) for a, b in zip(left, right))
    return type(left) is type(right) and left == right


# ----------------------------------------------------------------------------------------------
# RFC 7386 JSON merge patch

def _merge_patch(target, patch):
    if not isinstance(patch, dict):
        return clone(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = _merge_patch(result.get(key), value)
    return result


def json_merge_patch(target, patch):
    """RFC 7386 MergePatch(target, patch): objects merge recursively, ``null`` deletes a member."""
    return _merge_patch(clone(target), patch)


def merge_patch_object(target: dict, patch) -> dict:
    """``application/merge-patch+json`` as kube-apiserver applies it to an object.

    A patch that is not a JSON object is refused with 400 ``Invalid JSON Patch``.
    """
    if not isinstance(patch, dict):
        raise bad_request("Invalid JSON Patch")
    return json_merge_patch(target, patch)


# ----------------------------------------------------------------------------------------------
# RFC 6902 JSON patch

def _pointer(path) -> list[str]:
    if not isinstance(path, str):
        raise PatchApplyError("path is not a string: %r" % (path,))
    if path == "":
        return []
    if not path.startswith("/"):
        raise PatchApplyError('doc is missing path: "%s": missing value' % path)
    return [part.replace("~1", "/").replace("~0", "~") for part in path[1:].split("/")]


def _index(token: str, size: int, for_add: bool) -> int:
    if token == "-" and for_add:
        return size
    if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        raise PatchApplyError("Unable to access invalid index: %s: invalid index referenced" % token)
    index = int(token)
    if index > size or (index == size and not for_add):
        raise PatchApplyError("Unable to access invalid index: %d: invalid index referenced" % index)
    return index


def _walk(doc, tokens: list[str], what: str, path: str):
    node = doc
    for token in tokens:
        if isinstance(node, dict) and token in node:
            node = node[token]
        elif isinstance(node, list):
            node = node[_index(token, len(node), False)]
        else:
            raise PatchApplyError('%s operation does not apply: doc is missing path: "%s": missing value' % (what, path))
    return node


def _jp_get(doc, path: str, what: str):
    return _walk(doc, _pointer(path), what, path)


def _jp_add(doc, path: str, value):
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _walk(doc, tokens[:-1], "add", path)
    key = tokens[-1]
    if isinstance(parent, dict):
        parent[key] = value
    elif isinstance(parent, list):
        parent.insert(_index(key, len(parent), True), value)
    else:
        raise PatchApplyError('add operation does not apply: doc is missing path: "%s": missing value' % path)
    return doc


def _jp_remove(doc, path: str, what: str = "remove"):
    tokens = _pointer(path)
    if not tokens:
        raise PatchApplyError('%s operation does not apply: doc is missing path: "%s": missing value' % (what, path))
    parent = _walk(doc, tokens[:-1], what, path)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise PatchApplyError("Unable to remove nonexistent key: %s: missing value" % key)
        return doc, parent.pop(key)
    if isinstance(parent, list):
        return doc, parent.pop(_index(key, len(parent), False))
    raise PatchApplyError('%s operation does not apply: doc is missing path: "%s": missing value' % (what, path))


def _jp_replace(doc, path: str, value):
    tokens = _pointer(path)
    if not tokens:
        return value
    parent = _walk(doc, tokens[:-1], "replace", path)
    key = tokens[-1]
    if isinstance(parent, dict):
        if key not in parent:
            raise PatchApplyError("replace operation does not apply: doc is missing key: %s: missing value" % path)
        parent[key] = value
    elif isinstance(parent, list):
        parent[_index(key, len(parent), False)] = value
    else:
        raise PatchApplyError("replace operation does not apply: doc is missing path: %s: missing value" % path)
    return doc


def _op_value(op: dict, kind: str):
    if "value" not in op:
        raise PatchApplyError("%s operation has no value: missing value" % kind)
    return clone(op["value"])


def _op_string(op: dict, member: str, kind: str) -> str:
    value = op.get(member)
    if not isinstance(value, str):
        raise PatchApplyError("%s operation has no %s: missing value" % (kind, member))
    return value


def _apply_op(doc, op):
    if not isinstance(op, dict):
        raise PatchApplyError("Unexpected kind: %r" % (op,))
    kind = op.get("op")
    if kind == "add":
        return _jp_add(doc, _op_string(op, "path", kind), _op_value(op, kind))
    if kind == "remove":
        return _jp_remove(doc, _op_string(op, "path", kind))[0]
    if kind == "replace":
        return _jp_replace(doc, _op_string(op, "path", kind), _op_value(op, kind))
    if kind == "move":
        source, path = _op_string(op, "from", kind), _op_string(op, "path", kind)
        if source == path:
            _jp_get(doc, source, kind)
            return doc
        if path.startswith(source + "/"):
            raise PatchApplyError("move operation does not apply: cannot move %s into its child %s" % (source, path))
        doc, value = _jp_remove(doc, source, kind)
        return _jp_add(doc, path, value)
    if kind == "copy":
        source, path = _op_string(op, "from", kind), _op_string(op, "path", kind)
        value = clone(_jp_get(doc, source, kind))
        return _jp_add(doc, path, value)
    if kind == "test":
        path = _op_string(op, "path", kind)
        expected = _op_value(op, kind)
        try:
            actual = _jp_get(doc, path, kind)
        except PatchApplyError:
            if expected is None:
                return doc      # evanphx/json-patch: a missing value tests equal to null
            raise PatchApplyError("testing value %s failed: test failed" % path) from None
        if not json_equal(actual, expected):
            raise PatchApplyError("testing value %s failed: test failed" % path)
        return doc
    raise PatchApplyError("Unexpected kind: %s" % (kind,))


def json_patch(target, ops):
    """Apply an RFC 6902 JSON patch (a list of operations) to ``target``; all or nothing.

    Not a list: 400 BadRequest. More than 10000 operations: 413. An operation that does not
    apply: ``PatchApplyError`` (422 Invalid, kube's generic message).
    """
    if not isinstance(ops, list):
        raise bad_request("json: cannot unmarshal %s into Go value of type jsonpatch.Patch" % _go_type(ops))
    if len(ops) > MAX_JSON_PATCH_OPERATIONS:
        raise ApiError(413, "RequestEntityTooLarge", "Request entity too large: The allowed maximum operations in a "
                       "JSON patch is %d, got %d" % (MAX_JSON_PATCH_OPERATIONS, len(ops)))
    doc = clone(target)
    for op in ops:
        doc = _apply_op(doc, op)
    return doc


def _go_type(value) -> str:
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list):
        return "array"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    if isinstance(value, str):
        return "string"
    return "null" if value is None else type(value).__name__


def check_resource_version(live: dict, patched: dict, group: str, resource: str, name: str) -> None:
    """The precondition of an update: a resourceVersion in ``patched`` must be ``live``'s.

    Raises 409 Conflict (``the object has been modified; please apply your changes to the latest
    version and try again``). An empty or absent resourceVersion means an unconditional update.
    """
    want = ((patched or {}).get("metadata") or {}).get("resourceVersion")
    have = ((live or {}).get("metadata") or {}).get("resourceVersion")
    if want and want != have:
        raise conflict(group, resource, name,
                       "the object has been modified; please apply your changes to the latest version and try again")


# ----------------------------------------------------------------------------------------------
# merge keys

ATOMIC = None           # the list is replaced as a whole (also: any list not in the table)
MERGE_SET = "$set"      # a list of scalars merged as a set (patchStrategy "merge" without a key)

_CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")

#: path pattern -> merge key, ``MERGE_SET`` or ``ATOMIC``. Paths are field names joined by ``.``
#: (list items add nothing); ``*`` stands for one field, a leading ``**`` for any number (also
#: none): ``**.spec.containers`` covers Pods (``spec.containers``), workload templates
#: (``spec.template.spec.containers``) and CronJobs (``spec.jobTemplate.spec.template.spec...``).
#: From the ``patchStrategy``/``patchMergeKey`` tags of k8s.io/api core/v1, apps/v1, batch/v1,
#: policy/v1 (and CRD ``x-kubernetes-list-map-keys`` for server-side apply).
DEFAULT_MERGE_KEYS: dict = {
    # ObjectMeta (objects, pod templates, job templates, volume claim templates)
    "**.metadata.ownerReferences": "uid",
    "**.metadata.finalizers": MERGE_SET,
    "**.metadata.managedFields": ATOMIC,
    # PodSpec
    "**.spec.volumes": "name",
    "**.spec.imagePullSecrets": "name",
    "**.spec.hostAliases": "ip",
    "**.spec.topologySpreadConstraints": "topologyKey",
    "**.spec.schedulingGates": "name",
    "**.spec.resourceClaims": "name",
    "**.spec.tolerations": ATOMIC,
    "**.spec.readinessGates": ATOMIC,
    # Node: NodeSpec.Taints has no patchStrategy tag, so kubectl taint sends the whole list
    "spec.taints": ATOMIC,
    "spec.podCIDRs": MERGE_SET,
    # Service
    "spec.ports": "port",
    # CustomResourceDefinition (server-side apply only: no strategic merge patch for CRDs)
    "spec.versions": "name",
    # status of pods, nodes, namespaces, workloads, jobs, PDBs, CRDs
    "status.conditions": "type",
    "status.addresses": "type",
    "status.podIPs": "ip",
    "status.hostIPs": "ip",
    "status.resourceClaimStatuses": "name",
}
for _list in _CONTAINER_LISTS:
    DEFAULT_MERGE_KEYS["**.spec.%s" % _list] = "name"
    DEFAULT_MERGE_KEYS["**.spec.%s.ports" % _list] = "containerPort"
    DEFAULT_MERGE_KEYS["**.spec.%s.env" % _list] = "name"
    DEFAULT_MERGE_KEYS["**.spec.%s.volumeMounts" % _list] = "mountPath"
    DEFAULT_MERGE_KEYS["**.spec.%s.volumeDevices" % _list] = "devicePath"
    DEFAULT_MERGE_KEYS["**.spec.%s.resizePolicy" % _list] = "resourceName"
del _list


def _pattern_matches(pattern: tuple, path: tuple) -> bool:
    if not pattern:
        return not path
    head = pattern[0]
    if head == "**":
        return any(_pattern_matches(pattern[1:], path[i:]) for i in range(len(path) + 1))
    if not path:
        return False
    return (head in ("*", path[0])) and _pattern_matches(pattern[1:], path[1:])


class _MergeKeys:
    """A compiled merge-key table: exact patterns first, then the most specific wildcard one."""

    def __init__(self, table: dict | None):
        table = DEFAULT_MERGE_KEYS if table is None else table
        self.exact = {}
        self.wild = []
        for pattern, value in table.items():
            parts = tuple(pattern.split("."))
            if "*" in parts or "**" in parts:
                literal = sum(1 for p in parts if p not in ("*", "**"))
                self.wild.append((literal, parts, value))
            else:
                self.exact[parts] = value
        self.wild.sort(key=lambda item: -item[0])
        self.cache = {}

    def lookup(self, path: tuple):
        if path in self.cache:
            return self.cache[path]
        if path in self.exact:
            value = self.exact[path]
        else:
            value = ATOMIC
            for _literal, parts, candidate in self.wild:
                if _pattern_matches(parts, path):
                    value = candidate
                    break
        self.cache[path] = value
        return value


_DEFAULT_KEYS = _MergeKeys(None)  # the compiled DEFAULT_MERGE_KEYS, made once: its lookup cache serves every call


def _merge_keys(table) -> _MergeKeys:
    if isinstance(table, _MergeKeys):
        return table
    return _DEFAULT_KEYS if table is None else _MergeKeys(table)


# ----------------------------------------------------------------------------------------------
# strategic merge patch

_SET_ORDER = "$setElementOrder/"
_DELETE_PRIMITIVE = "$deleteFromPrimitiveList/"


def _go_map(value) -> str:
    return json.dumps(value, sort_keys=True)


def _strip(value, path: tuple, keys: _MergeKeys):
    """A patch value that lands where nothing was: directives and nulls removed."""
    if isinstance(value, dict):
        return _merge_map({}, dict(value), path, keys)
    if isinstance(value, list):
        return _merge_list([], value, path, keys)
    return clone(value)


def _list_key_value(item, key):
    return item.get(key, _MISSING) if isinstance(item, dict) else _MISSING


def _dedup(values: list) -> list:
    out = []
    for value in values:
        if not any(json_equal(value, seen) for seen in out):
            out.append(value)
    return out


def _merge_list(original: list, patch: list, path: tuple, keys: _MergeKeys) -> list:
    strategy = keys.lookup(path)
    if strategy is ATOMIC:
        return [_strip(item, path, keys) for item in patch]
    if not patch:
        return _dedup(clone(original)) if strategy == MERGE_SET else clone(original)
    if strategy == MERGE_SET or not any(isinstance(item, dict) for item in patch):
        if strategy == MERGE_SET or all(not isinstance(item, dict) for item in original):
            return _dedup(list(original) + [clone(item) for item in patch])
        return [_strip(item, path, keys) for item in patch]
    key = strategy
    result = list(original)
    plain = []
    replace = False
    for item in patch:
        if not isinstance(item, dict):
            raise PatchApplyError("list of maps expected at %s" % ".".join(path))
        if "$patch" not in item:
            plain.append(item)
            continue
        directive = item["$patch"]
        if directive == "delete":
            wanted = item.get(key, _MISSING)
            if wanted is _MISSING:
                raise _internal("map: %s does not contain declared merge key: %s" % (_go_map(item), key))
            result = [old for old in result if not json_equal(_list_key_value(old, key), wanted)]
        elif directive == "replace":
            replace = True
        elif directive == "merge":
            raise _internal("merging lists cannot yet be specified in the patch")
        else:
            raise _internal("unknown patch type: %s in map: %s" % (directive, _go_map(item)))
    if replace:
        return [_strip(item, path, keys) for item in plain]
    for item in plain:
        wanted = item.get(key, _MISSING)
        if wanted is _MISSING:
            raise _internal("map: %s does not contain declared merge key: %s" % (_go_map(item), key))
        for index, old in enumerate(result):
            if json_equal(_list_key_value(old, key), wanted):
                merged = _merge_map(dict(old) if isinstance(old, dict) else {}, dict(item), path, keys)
                result[index] = merged
                break
        else:
            result.append(_strip(item, path, keys))
    return result


def _order_index(order: list, item, key) -> int:
    for index, entry in enumerate(order):
        if key is None:
            if json_equal(entry, item):
                return index
        elif isinstance(entry, dict) and json_equal(entry.get(key, _MISSING), _list_key_value(item, key)):
            return index
    return -1


def _normalize_order(merged: list, order: list, original: list, key) -> list:
    """``normalizeElementOrder``: items named by ``$setElementOrder`` in that order, the others
    (server-only items) kept where they were relative to them."""
    patch_items = [item for item in merged if _order_index(order, item, key) >= 0]
    server_only = [item for item in merged if _order_index(order, item, key) < 0]
    patch_items.sort(key=lambda item: _order_index(order, item, key))
    big = len(original) + 1
    server_only.sort(key=lambda item: (_order_index(original, item, key) if _order_index(original, item, key) >= 0
                                       else big))
    result = []
    i = j = 0
    while i < len(server_only) or j < len(patch_items):
        if i >= len(server_only):
            result.append(patch_items[j])
            j += 1
        elif j >= len(patch_items):
            result.append(server_only[i])
            i += 1
        else:
            left = _order_index(original, server_only[i], key)
            right = _order_index(original, patch_items[j], key)
            if left >= 0 and right >= 0 and left < right:
                result.append(server_only[i])
                i += 1
            else:
                result.append(patch_items[j])
                j += 1
    return result


def _merge_map(original: dict, patch: dict, path: tuple, keys: _MergeKeys) -> dict:
    """``mergeMap``: ``original`` (ours to change) with ``patch`` (a shallow copy, ours to change)."""
    if "$patch" in patch:
        directive = patch.pop("$patch")
        if directive == "replace":
            return _merge_map({}, patch, path, keys)
        if directive == "delete":
            return {}
        if directive != "merge":
            raise _internal("unknown patch type: %s in map: %s" % (directive, _go_map(patch)))
    if "$retainKeys" in patch:
        retain = patch.pop("$retainKeys")
        if not isinstance(retain, list):
            raise bad_request("invalid patch format of retainKeys")
        for key, value in patch.items():
            if not key.startswith("$") and value is not None and key not in retain:
                raise PatchApplyError("patch content doesn't match retainKeys list")
        for key in list(original):
            if key not in retain:
                del original[key]
    for directive_key in [k for k in patch if k.startswith(_SET_ORDER)]:
        order = patch.pop(directive_key)
        field = directive_key[len(_SET_ORDER):]
        if not isinstance(order, list):
            raise bad_request("invalid patch format of setElementOrder list")
        field_path = path + (field,)
        strategy = keys.lookup(field_path)
        key = None if strategy in (ATOMIC, MERGE_SET) else strategy
        current = original.get(field)
        current = current if isinstance(current, list) else []
        patch_list = patch.pop(field, _MISSING)
        if patch_list is None:
            original.pop(field, None)
            continue
        if patch_list is _MISSING:
            merged = list(current)
        elif not isinstance(patch_list, list):
            raise bad_request("invalid patch format of setElementOrder list")
        else:
            merged = _merge_list(current, patch_list, field_path, keys)
        merged = _normalize_order(merged, order, current, key)
        if merged:
            original[field] = merged
        else:
            original.pop(field, None)
    for directive_key in [k for k in patch if k.startswith(_DELETE_PRIMITIVE)]:
        doomed = patch.pop(directive_key)
        field = directive_key[len(_DELETE_PRIMITIVE):]
        if not isinstance(doomed, list):
            raise bad_request("invalid patch format of primitive list")
        current = original.get(field)
        if isinstance(current, list):
            original[field] = [v for v in current if not any(json_equal(v, d) for d in doomed)]
    for key, value in patch.items():
        if key.startswith("$"):
            continue        # an unknown directive: typed decoding would drop it
        field_path = path + (key,)
        if value is None:
            original.pop(key, None)
            continue
        old = original.get(key)
        if isinstance(old, dict) and isinstance(value, dict):
            original[key] = _merge_map(dict(old), dict(value), field_path, keys)
        elif isinstance(old, list) and isinstance(value, list):
            original[key] = _merge_list(old, value, field_path, keys)
        else:
            original[key] = _strip(value, field_path, keys)
    return original


def strategic_merge_patch(target: dict, patch, merge_keys: dict | None = None) -> dict:
    """Apply a Kubernetes strategic merge patch.

    Maps merge recursively and ``null`` deletes a key; lists whose path has a merge key in
    ``merge_keys`` (default ``DEFAULT_MERGE_KEYS``) merge item by item, ``MERGE_SET`` lists merge
    as sets, other lists are replaced. Directives: ``$patch: replace|delete|merge`` (in a map or
    as a list item), ``$retainKeys``, ``$setElementOrder/<field>``,
    ``$deleteFromPrimitiveList/<field>``.
    """
    if not isinstance(patch, dict):
        raise bad_request("json: cannot unmarshal %s into Go value of type map[string]interface {}" % _go_type(patch))
    keys = _merge_keys(merge_keys)
    return _merge_map(clone(target) if isinstance(target, dict) else {}, clone(patch), (), keys)


# ----------------------------------------------------------------------------------------------
# field sets (FieldsV1) and managedFields

# apiVersion, kind and these metadata fields are never owned (managedfields stripmeta.go)
_STRIPPED_META = frozenset(("name", "namespace", "uid", "resourceVersion", "generation", "creationTimestamp",
                            "managedFields", "selfLink", "clusterName", "deletionTimestamp",
                            "deletionGracePeriodSeconds"))


def _key_token(key: str, item: dict) -> str:
    return "k:" + json.dumps({key: item[key]}, sort_keys=True, separators=(",", ":"))


def _collect(value, path: tuple, tokens: tuple, keys: _MergeKeys, members: set) -> None:
    if value is None:
        return      # an explicit null sets nothing
    if isinstance(value, dict):
        if not value and tokens:
            members.add(tokens)
            return
        for name, child in value.items():
            if not tokens and name in ("apiVersion", "kind"):
                continue
            if tokens == ("f:metadata",) and name in _STRIPPED_META:
                continue
            _collect(child, path + (name,), tokens + ("f:" + name,), keys, members)
        return
    if isinstance(value, list):
        strategy = keys.lookup(path)
        if strategy == MERGE_SET and all(not isinstance(v, (dict, list)) for v in value):
            members.update(tokens + ("v:" + json.dumps(v, separators=(",", ":")),) for v in value)
            if not value:
                members.add(tokens)
            return
        if strategy not in (ATOMIC, MERGE_SET) and value and all(isinstance(v, dict) and strategy in v for v in value):
            for item in value:
                item_tokens = tokens + (_key_token(strategy, item),)
                members.add(item_tokens)
                for name, child in item.items():
                    _collect(child, path + (name,), item_tokens + ("f:" + name,), keys, members)
            return
    members.add(tokens)


def _field_set(obj, keys: _MergeKeys) -> set:
    members: set = set()
    if isinstance(obj, dict):
        _collect(obj, (), (), keys, members)
    members.discard(())
    return members


def fields_v1(members) -> dict:
    """Encode a set of paths (tuples of ``f:``/``k:``/``v:`` tokens) as a ``fieldsV1`` tree."""
    tree: dict = {}
    for path in members:
        node = tree
        for token in path:
            node = node.setdefault(token, {})
    for path in members:
        node = tree
        for token in path:
            node = node[token]
        if node and "." not in node:
            node["."] = {}
    return _sorted_tree(tree)


def _sorted_tree(tree: dict) -> dict:
    return {key: _sorted_tree(tree[key]) for key in sorted(tree)}


def fields_v1_paths(tree) -> set:
    """Decode a ``fieldsV1`` tree into the set of paths it owns."""
    members: set = set()

    def walk(node, prefix):
        for token, child in (node or {}).items():
            if token == ".":
                members.add(prefix)
            elif isinstance(child, dict) and child:
                walk(child, prefix + (token,))
            else:
                members.add(prefix + (token,))

    walk(tree if isinstance(tree, dict) else {}, ())
    members.discard(())
    return members


def _match_item(items: list, token: str):
    """The index of the list item a ``k:`` or ``v:`` token names, or -1."""
    try:
        wanted = json.loads(token[2:])
    except ValueError:
        return -1
    for index, item in enumerate(items):
        if token.startswith("k:"):
            if isinstance(item, dict) and isinstance(wanted, dict) and all(
                    json_equal(item.get(k, _MISSING), v) for k, v in wanted.items()):
                return index
        elif json_equal(item, wanted):
            return index
    return -1


def _value_at(obj, path: tuple):
    node = obj
    for token in path:
        if token.startswith("f:") and isinstance(node, dict) and token[2:] in node:
            node = node[token[2:]]
        elif token[:2] in ("k:", "v:") and isinstance(node, list):
            index = _match_item(node, token)
            if index < 0:
                return _MISSING
            node = node[index]
        else:
            return _MISSING
    return node


def _remove_at(obj, path: tuple) -> None:
    if not path:
        return
    parent = _value_at(obj, path[:-1])
    token = path[-1]
    if token.startswith("f:") and isinstance(parent, dict):
        parent.pop(token[2:], None)
    elif token[:2] in ("k:", "v:") and isinstance(parent, list):
        index = _match_item(parent, token)
        if index >= 0:
            del parent[index]


def _same_at(before, after, path: tuple) -> bool:
    old, new = _value_at(before, path), _value_at(after, path)
    if path and path[-1][:2] in ("k:", "v:"):
        return (old is _MISSING) == (new is _MISSING)
    if old is _MISSING or new is _MISSING:
        return old is new
    return json_equal(old, new)


def _now(now: str | None) -> str:
    if now:
        return now
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _without_managed_fields(obj: dict) -> dict:
    """A deep copy of ``obj`` without ``metadata.managedFields`` (which is never copied)."""
    meta = obj.get("metadata") if isinstance(obj, dict) else None
    if isinstance(meta, dict) and "managedFields" in meta:
        obj = dict(obj, metadata={key: value for key, value in meta.items() if key != "managedFields"})
    return clone(obj)


def _shallow_without_managed_fields(obj: dict) -> dict:
    """``obj`` without ``metadata.managedFields``, sharing everything else (for reading only)."""
    meta = obj.get("metadata")
    if isinstance(meta, dict):
        return dict(obj, metadata={key: value for key, value in meta.items() if key != "managedFields"})
    return dict(obj)


def _changed_fields(previous: dict, result: dict, keys: _MergeKeys) -> tuple[set, set]:
    """The paths a write changed (owned in ``result`` with another value, or new) and removed.

    The same sets as comparing the whole field sets of both objects (``_field_set``), found by
    walking only the parts that differ: a map entry equal in both (Python's ``==``, at C speed) owns
    the same fields with the same values and is skipped; a list is compared as a whole. (``==`` takes
    ``True`` for ``1``: no API field holds a boolean in one version and a number in the next, the
    schema types it.)"""
    changed: set = set()
    removed: set = set()

    def walk(old: dict, new: dict, path: tuple, tokens: tuple) -> None:
        for name in set(old) | set(new):
            if not tokens and name in ("apiVersion", "kind"):
                continue
            if tokens == ("f:metadata",) and name in _STRIPPED_META:
                continue
            before, after = old.get(name, _MISSING), new.get(name, _MISSING)
            if before is after or (type(before) is type(after) and before == after):
                continue
            child_path, child_tokens = path + (name,), tokens + ("f:" + name,)
            if isinstance(before, dict) and isinstance(after, dict) and before and after:
                walk(before, after, child_path, child_tokens)
                continue
            old_set: set = set()
            new_set: set = set()
            if before is not _MISSING:
                _collect(before, child_path, child_tokens, keys, old_set)
            if after is not _MISSING:
                _collect(after, child_path, child_tokens, keys, new_set)
            changed.update(p for p in new_set if p not in old_set or not _same_at(previous, result, p))
            removed.update(old_set - new_set)

    walk(previous, result, (), ())
    return changed, removed


class _Entry:
    """One managedFields entry with its decoded field set."""

    def __init__(self, raw: dict):
        self.raw = dict(raw)
        self.members = fields_v1_paths(raw.get("fieldsV1"))
        self.before = set(self.members)

    def ident(self) -> tuple:
        return (self.raw.get("manager", ""), self.raw.get("operation", ""), self.raw.get("subresource", ""))

    def render(self) -> dict:
        if self.members != self.before:
            self.raw["fieldsV1"] = fields_v1(self.members)
            self.raw["fieldsType"] = "FieldsV1"
        return self.raw


def _entries(obj) -> list[_Entry]:
    raw = ((obj or {}).get("metadata") or {}).get("managedFields")
    if not isinstance(raw, list):
        return []
    return [_Entry(e) for e in raw if isinstance(e, dict)]


def _set_entries(obj: dict, entries: list[_Entry]) -> dict:
    rendered = [e.render() for e in entries if e.members]
    if rendered:
        obj.setdefault("metadata", {})["managedFields"] = rendered
    elif isinstance(obj.get("metadata"), dict):
        obj["metadata"].pop("managedFields", None)
    return obj


def _is_item_key(path: tuple) -> bool:
    """``(..., 'k:{"name":"x"}', 'f:name')``: the key field of a keyed list item, kept with the item."""
    if len(path) < 2 or not path[-2].startswith("k:") or not path[-1].startswith("f:"):
        return False
    try:
        return path[-1][2:] in json.loads(path[-2][2:])
    except (ValueError, TypeError):
        return False


def _owned_elsewhere(path: tuple, others: list[_Entry]) -> bool:
    size = len(path)
    return any(member[:size] == path for entry in others for member in entry.members)


def _new_entry(manager: str, operation: str, api_version: str, subresource: str, now: str) -> _Entry:
    raw = {"manager": manager, "operation": operation, "apiVersion": api_version, "time": now,
           "fieldsType": "FieldsV1", "fieldsV1": {}}
    if subresource:
        raw["subresource"] = subresource
    entry = _Entry(raw)
    entry.before = None
    return entry


def validate_patch_options(patch_type: str, field_manager: str | None, force=None) -> None:
    """``ValidatePatchOptions``: apply needs a fieldManager; ``force`` is only for apply.

    ``patch_type`` is the media type (``application/apply-patch+yaml`` ...). Raises 422 Invalid
    on ``PatchOptions.meta.k8s.io``.
    """
    causes = []
    is_apply = patch_type.startswith("application/apply-patch")
    if not is_apply and force is not None:
        causes.append({"reason": "FieldValueForbidden", "field": "force",
                       "message": "Forbidden: may not be specified for non-apply patch"})
    if is_apply and not field_manager:
        causes.append({"reason": "FieldValueRequired", "field": "fieldManager",
                       "message": "Required value: is required for apply patch"})
    if field_manager and len(field_manager) > 128:
        causes.append({"reason": "FieldValueTooLong", "field": "fieldManager",
                       "message": "Too long: may not be more than 128 bytes"})
    if causes:
        text = "; ".join("%s: %s" % (c["field"], c["message"]) for c in causes)
        raise ApiError(422, "Invalid", 'PatchOptions.meta.k8s.io "" is invalid: %s' % text,
                       {"group": "meta.k8s.io", "kind": "PatchOptions", "causes": causes})


def manager_from_user_agent(user_agent: str | None) -> str:
    """The field manager kube-apiserver records when a write names none: the User-Agent up to ``/``."""
    return (user_agent or "").split("/")[0][:128]


def parse_bool_param(value) -> bool:
    """A boolean query parameter as kube-apiserver decodes it (``Convert_Slice_string_To_Pointer_bool``).

    Absent (``None``), ``"0"`` and any casing of ``"false"`` are false; any other value, the empty
    string included, is true (the Python client sends ``True``/``False``). Booleans pass through.
    """
    if value is None:
        return False
    if isinstance(value, bool):
        return value
    text = str(value)
    return not (text == "0" or text.lower() == "false")


# ----------------------------------------------------------------------------------------------
# server-side apply: conflicts

LAST_APPLIED_ANNOTATION = "kubectl.kubernetes.io/last-applied-configuration"
BEFORE_FIRST_APPLY = "before-first-apply"


def manager_identifier(entry: dict) -> str:
    """``BuildManagerIdentifier``: the entry as JSON without time, fieldsType and fieldsV1 (and
    without apiVersion for an Apply entry), in ``ManagedFieldsEntry``'s field order."""
    ident = {}
    for field in ("manager", "operation", "apiVersion", "subresource"):
        value = entry.get(field)
        if field == "apiVersion" and entry.get("operation") == "Apply":
            continue
        if value:
            ident[field] = value
    return json.dumps(ident, separators=(",", ":"), ensure_ascii=False)


def _go_quote(text: str) -> str:
    """Go's ``%q`` (``strconv.Quote``) for the strings of a field path or manager name."""
    out = ['"']
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif char in "\a\b\f\n\r\t\v":
            out.append({"\a": "\\a", "\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t",
                        "\v": "\\v"}[char])
        elif ord(char) < 0x20 or ord(char) == 0x7f:
            out.append("\\x%02x" % ord(char))
        elif not char.isprintable() and ord(char) > 0x7f:
            out.append("\\u%04x" % ord(char) if ord(char) <= 0xffff else "\\U%08x" % ord(char))
        else:
            out.append(char)
    out.append('"')
    return "".join(out)


def print_manager(entry: dict) -> str:
    """``printManager`` of k8s.io/apiserver ``internal/conflict.go`` for a managedFields entry.

    ``"<manager>"``, `` with subresource "<sub>"`` when it has one, and for an Update entry
    `` using <apiVersion>`` (`` at <RFC3339 time>`` when the entry has a time). kube-apiserver
    prints the manager identifier, which carries no time, so conflicts never show one.
    """
    text = _go_quote(str(entry.get("manager", "")))
    if entry.get("subresource"):
        text = "%s with subresource %s" % (text, _go_quote(str(entry["subresource"])))
    if entry.get("operation") == "Update":
        if not entry.get("time"):
            return "%s using %s" % (text, entry.get("apiVersion", ""))
        return "%s using %s at %s" % (text, entry.get("apiVersion", ""), entry["time"])
    return text


def _value_string(value) -> str:
    """``value.ToString`` of structured-merge-diff, for key values in a field path."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() and abs(value) < 1e21 else repr(value)
    if isinstance(value, str):
        return _go_quote(value)
    if isinstance(value, list):
        return "[" + ",".join(_value_string(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ",".join("%s=%s" % (k, _value_string(value[k])) for k in sorted(value)) + "}"
    return str(value)


def field_path_string(path: tuple) -> str:
    """``fieldpath.Path.String``: ``.spec.replicas``, ``.spec.containers[name="nginx"].image``,
    ``.metadata.finalizers[="a"]``, ``.metadata.labels.app``."""
    parts = []
    for token in path:
        kind, body = token[:2], token[2:]
        if kind == "f:":
            parts.append("." + body)
        elif kind == "k:":
            try:
                key = json.loads(body)
            except ValueError:
                key = {}
            parts.append("[" + ",".join("%s=%s" % (k, _value_string(key[k])) for k in sorted(key)) + "]")
        elif kind == "v:":
            try:
                parts.append("[=%s]" % _value_string(json.loads(body)))
            except ValueError:
                parts.append("[=%s]" % body)
        elif kind == "i:":
            parts.append("[%s]" % body)
        else:
            parts.append(token)
    return "".join(parts)


def _element_key(token: str) -> tuple:
    """``PathElement.Compare`` order: field names, then keys, then values, then indexes."""
    rank = {"f:": 0, "k:": 1, "v:": 2, "i:": 3}.get(token[:2], 4)
    if rank == 1:
        try:
            key = json.loads(token[2:])
            return (rank, [(k, json.dumps(key[k], sort_keys=True)) for k in sorted(key)], "")
        except (ValueError, AttributeError):
            pass
    if rank == 3 and token[2:].isdigit():
        return (rank, [], "%020d" % int(token[2:]))
    return (rank, [], token[2:])


def _set_order(paths) -> list:
    """The order ``fieldpath.Set.Iterate`` visits ``paths``: at each level the members (sorted),
    then the children (sorted), depth first."""
    ordered: list = []

    def walk(prefix: tuple, subset: list) -> None:
        depth = len(prefix)
        members = {p[depth] for p in subset if len(p) == depth + 1}
        ordered.extend(prefix + (token,) for token in sorted(members, key=_element_key))
        children = {p[depth] for p in subset if len(p) > depth + 1}
        for token in sorted(children, key=_element_key):
            walk(prefix + (token,), [p for p in subset if len(p) > depth + 1 and p[depth] == token])

    walk((), [p for p in paths if p])
    return ordered


class ApplyConflict:
    """One conflict of an apply: the other manager's entry and the field path."""

    def __init__(self, entry: dict, path: tuple):
        self.entry = entry
        self.path = path
        self.manager = manager_identifier(entry)


def conflict_error(conflicts: list) -> ApiError:
    """``NewConflictError`` / ``getConflictMessage`` (k8s.io/apiserver ``internal/conflict.go``).

    409, reason ``Conflict``, details with only ``causes`` (``FieldManagerConflict``, ``conflict
    with <printManager>``, the field path), as ``errors.NewApplyConflict`` builds them.
    """
    by_manager: dict = {}
    for item in conflicts:
        by_manager.setdefault(item.manager, []).append(item)
    ordered = []
    for ident in sorted(by_manager):
        items = {c.path: c for c in by_manager[ident]}
        ordered.extend(items[p] for p in _set_order(items))
    causes = [{"reason": "FieldManagerConflict", "message": "conflict with %s" % print_manager(_without_time(c.entry)),
               "field": field_path_string(c.path)} for c in ordered]
    if len(ordered) == 1:
        message = "Apply failed with 1 conflict: conflict with %s: %s" % (
            print_manager(_without_time(ordered[0].entry)), field_path_string(ordered[0].path))
    else:
        lines = []
        for ident in sorted(by_manager):
            group = [c for c in ordered if c.manager == ident]
            lines.append("conflicts with %s:" % print_manager(_without_time(group[0].entry)))
            lines.extend("- %s" % field_path_string(c.path) for c in group)
        message = "Apply failed with %d conflicts: %s" % (len(ordered), "\n".join(lines))
    return ApiError(409, "Conflict", message, {"causes": causes})


def _without_time(entry: dict) -> dict:
    return {k: v for k, v in entry.items() if k != "time"}


def _names(path: tuple) -> tuple:
    return tuple(token[2:] for token in path if token.startswith("f:"))


def _granular_list(value: list, path: tuple, keys: _MergeKeys) -> bool:
    """A list that is not a leaf of the field set (keyed or set-merged), as ``_collect`` sees it."""
    strategy = keys.lookup(_names(path))
    if strategy == MERGE_SET:
        return all(not isinstance(v, (dict, list)) for v in value)
    if strategy is ATOMIC:
        return False
    return bool(value) and all(isinstance(v, dict) and strategy in v for v in value)


def _changed(before, after, path: tuple, keys: _MergeKeys) -> bool:
    """Whether ``path`` is in ``Comparison.Modified`` or ``Comparison.Added`` of live → new
    (structured-merge-diff ``typed/compare.go``): added nodes, and leaves whose value differs.
    Maps and list items present on both sides are not leaves; a removed field is neither."""
    old, new = _value_at(before, path), _value_at(after, path)
    if new is _MISSING:
        return False
    if old is _MISSING:
        return True
    if isinstance(old, dict) and isinstance(new, dict):
        return False
    if isinstance(old, list) and isinstance(new, list) and (old or new) \
            and all(not side or _granular_list(side, path, keys) for side in (old, new)):
        return False
    return not json_equal(old, new)


def _last_applied_allowed(live: dict, keys: _MergeKeys) -> set | None:
    """``lastAppliedManager.allowedConflictsFromLastApplied``: the fields of the client-side
    last-applied annotation whose value the live object still has (``None``: no usable annotation)."""
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED_ANNOTATION)
    if not text:
        return None
    try:
        last = json.loads(text)
    except ValueError:
        return None
    if not isinstance(last, dict) or last.get("apiVersion") != live.get("apiVersion"):
        return None
    return {p for p in _field_set(last, keys) if not _changed(last, live, p, keys)
            and _value_at(live, p) is not _MISSING}


def _find_conflicts(before: dict, result: dict, others: list, keys: _MergeKeys) -> list:
    conflicts = []
    for entry in others:
        for path in entry.members:
            if _changed(before, result, path, keys):
                conflicts.append(ApplyConflict(entry.raw, path))
    return conflicts


def apply_patch(live: dict | None, applied: dict, field_manager: str, force: bool = False, *,
                merge_keys: dict | None = None, subresource: str = "", reset_fields=(),
                now: str | None = None) -> dict:
    """Server-side apply: ``applied`` merged onto ``live`` (or onto nothing), with conflicts.

    Mirrors structured-merge-diff ``merge.Updater.Apply`` as k8s.io/apiserver's field manager
    stack calls it:

    * the new object is ``live`` with the configuration merged in, minus the fields this manager
      applied before and no longer applies (``prune``; kept when another manager owns them);
    * a field another manager's entry owns (Apply or Update, any subresource; this manager's own
      Update entry counts as another manager) conflicts when the apply adds it or changes its
      value (``Comparison.Modified``/``Added``); the same value is shared ownership;
    * without ``force``: 409 ``Conflict`` (``conflict_error``) and nothing changes; with ``force``
      the conflicting fields leave the other entries (an emptied entry is dropped);
    * ``lastAppliedManager``: for manager ``kubectl``, conflicts on fields the client-side
      ``last-applied-configuration`` annotation still matches are allowed (forced);
    * ``skipNonAppliedManager``: a live object without managedFields first gets a
      ``before-first-apply`` Update entry owning its fields;
    * fields the new object no longer has leave every entry.

    Returns the new object with ``metadata.managedFields``. ``reset_fields`` are top-level keys
    the server ignores in this request (``("status",)`` for a main resource with a status
    subresource); an apply to ``status`` only sets ``status`` and metadata.
    """
    validate_patch_options("application/apply-patch+yaml", field_manager)
    if not isinstance(applied, dict):
        raise bad_request("error decoding YAML: json: cannot unmarshal %s into Go value of type "
                          "map[string]interface {}" % _go_type(applied))
    if (applied.get("metadata") or {}).get("managedFields") is not None:
        raise bad_request("metadata.managedFields must be nil")
    force = parse_bool_param(force)
    keys = _merge_keys(merge_keys)
    config = clone(applied)
    for field in reset_fields:
        config.pop(field, None)
    if subresource == "status":
        config = {k: v for k, v in config.items() if k in ("apiVersion", "kind", "metadata", "status")}
    now = _now(now)
    before = _without_managed_fields(live) if isinstance(live, dict) else {}
    entries = _entries(live)
    if isinstance(live, dict) and not entries:
        first = _new_entry(BEFORE_FIRST_APPLY, "Update", str(before.get("apiVersion") or ""), "", now)
        kept = {k: v for k, v in before.items() if k not in reset_fields}
        first.members = _field_set(kept, keys)
        entries.append(first)
    ident = (field_manager, "Apply", subresource)
    mine = next((e for e in entries if e.ident() == ident), None)
    others = [e for e in entries if e is not mine]
    applied_set = _field_set(config, keys)

    result = clone(before)
    if mine is not None:
        for path in sorted(mine.members - applied_set, key=len, reverse=True):
            if not _owned_elsewhere(path, others) and not _is_item_key(path):
                _remove_at(result, path)
    result = _merge_map(result, config, (), keys)

    conflicts = _find_conflicts(before, result, others, keys)
    if conflicts and not force:
        allowed = _last_applied_allowed(before, keys) if field_manager == "kubectl" else None
        remaining = [c for c in conflicts if allowed is None or c.path not in allowed]
        if remaining:
            raise conflict_error(remaining)
        # every conflict is one the last-applied annotation allows: applied as with force
    taken: dict = {}
    for item in conflicts:
        taken.setdefault(id(item.entry), set()).add(item.path)
    for entry in others:
        entry.members = {p for p in entry.members
                         if p not in taken.get(id(entry.raw), ()) and _value_at(result, p) is not _MISSING}
    if mine is None:
        mine = _new_entry(field_manager, "Apply", str(config.get("apiVersion") or before.get("apiVersion") or ""),
                          subresource, now)
        entries.append(mine)
    mine.members = set(applied_set)
    if mine.before is None or mine.members != mine.before or not json_equal(before, result):
        mine.raw["time"] = now
        mine.raw["apiVersion"] = str(config.get("apiVersion") or mine.raw.get("apiVersion") or "")
        mine.before = None
    return _set_entries(result, entries)


def update_managed_fields(obj: dict, manager: str, operation: str = "Update", old: dict | None = None, *,
                          merge_keys: dict | None = None, subresource: str = "", now: str | None = None) -> dict:
    """Record a non-apply write (create, update, patch) of ``manager`` in managedFields.

    Sets ``obj["metadata"]["managedFields"]`` in place (removes it when no entry is left) and
    returns ``obj``; nothing else in ``obj`` changes.

    ``old`` is the stored object (``None`` for a create, where the manager owns every field).
    The fields whose value the write changed move to ``manager``'s ``operation`` entry; fields it
    removed leave every entry. Entries come from ``obj`` when the request set them (kubectl's
    SSA migration patch does), else from ``old``; ``[{}]`` clears them (as in kube). A write that
    changes nothing leaves managedFields as they were, timestamps included.
    """
    keys = _merge_keys(merge_keys)
    requested = (obj.get("metadata") or {}).get("managedFields")
    if requested == [{}]:
        entries = []
    elif isinstance(requested, list) and requested:
        entries = _entries(obj)
    else:
        entries = _entries(old)
    result = _shallow_without_managed_fields(obj)
    previous = _shallow_without_managed_fields(old) if isinstance(old, dict) else {}
    changed, removed = _changed_fields(previous, result, keys)
    ident = (manager, operation, subresource)
    mine = next((e for e in entries if e.ident() == ident), None)
    for entry in entries:
        if entry is not mine:
            entry.members = {p for p in entry.members if p not in changed and p not in removed}
    if changed or (mine is not None and mine.members & removed):
        now = _now(now)
        if mine is None:
            mine = _new_entry(manager, operation, str(result.get("apiVersion") or ""), subresource, now)
            entries.append(mine)
        mine.members = (mine.members | changed) - removed
        if changed:
            mine.raw["time"] = now
            mine.before = None
    _set_entries(result, entries)
    managed = (result.get("metadata") or {}).get("managedFields")
    if managed is not None:
        obj.setdefault("metadata", {})["managedFields"] = managed
    elif isinstance(obj.get("metadata"), dict):
        obj["metadata"].pop("managedFields", None)
    return obj
