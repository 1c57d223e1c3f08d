# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The values of an upgrade, merged explicitly and diffed (pure: standard library only, no I/O).

An upgrade never reuses the release's values silently (no ``--reuse-values``): the values it
passes are the user-supplied values captured from the release (``helm get values -o json``, what
``helm_state`` writes as ``values.user.json``) with the operator's overrides merged over them by
:func:`merge_values`, and Helm is told ``--reset-values`` so that these, over the new chart's
defaults, are all it uses. :func:`values_diff` says what that changes, for the evidence.

Merge rules (Helm's coalescing of one values layer over another, ``pkg/chart/common/util/coalesce.go``):

- a map over a map merges recursively, key by key;
- anything else replaces: lists are never merged element-wise, scalars replace, and a type change
  (a map replaced by a scalar or a list, or the reverse) takes the override's value;
- ``None`` (YAML ``null``) in an override deletes the key from the merged user values, so the
  chart's default applies again. (With ``helm upgrade -f user.yaml -f override.yaml`` a ``null``
  would survive into the user values and also delete the chart's default; here the merged values
  are written without it: the explicit form of "drop this setting".) A ``null`` inside a map the
  user values do not have is dropped the same way. A ``null`` already in the captured user values
  (a user who deleted a chart default) is kept as it is: it is part of what the release runs with.

Neither input is modified; the result shares no mutable object with them.

The diff is a list of ``{"path", "before", "after", "change"}``, ``change`` one of ``added``,
``removed``, ``changed``, sorted by path. Paths are dotted like ``--set`` keys
(``driver.version``); a ``.`` or ``\\`` inside a key is escaped with ``\\``. Maps are compared key by
key; lists and scalars as whole values. ``True`` differs from ``1`` and ``"1"`` from ``1``
(YAML-typed, not Python-equal); ``1`` equals ``1.0``. :func:`unified_diff` is the same change as
text (``difflib`` over sorted, indented JSON). Values can hold secrets: ``redact`` names keys whose
values the diff shows only as ``<redacted sha256:...>`` (a change is still visible as a change of
digest).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import difflib
import hashlib
import json

ADDED, REMOVED, CHANGED = "added", "removed", "changed"
REDACTED_PREFIX = "<redacted sha256:"


class ValuesError(ValueError):
    """Values that are not a map with string keys (``where`` names the input)."""


def _check(values, where):
    if values is None:
        return {}
    if not isinstance(values, dict):
        raise ValuesError("%s: values must be a map, got %s" % (where, type(values).__name__))
    _check_keys(values, where, [])
    return values


def _check_keys(node, where, keys):
    if isinstance(node, dict):
        for key, value in node.items():
            if not isinstance(key, str):
                raise ValuesError("%s: key %r at %s is not a string" % (where, key, join_path(keys) or "the top"))
            _check_keys(value, where, keys + [key])
    elif isinstance(node, list):
        for index, item in enumerate(node):
            _check_keys(item, where, keys + ["[%d]" % index])


def _without_nulls(value):
    """A deep copy of ``value`` whose maps have no ``None`` entries (a null deletes its key)."""
    if isinstance(value, dict):
        return dict((k, _without_nulls(v)) for k, v in value.items() if v is not None)
    return copy.deepcopy(value)


def _merge(base, override):
    result = dict((k, copy.deepcopy(v)) for k, v in base.items())
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _merge(result[key], value)
        else:
            result[key] = _without_nulls(value)
    return result


def merge_values(user_values, *overrides):
    """``user_values`` with each of ``overrides`` merged over it, in order (the last wins).

    ``None`` for any argument is an empty map. Raises :class:`ValuesError` for a non-map or a
    non-string key.
    """
    merged = copy.deepcopy(_check(user_values, "user values"))
    for number, override in enumerate(overrides, 1):
        merged = _merge(merged, _check(override, "override %d" % number))
    return merged


def merge_maps(base, override):
    """What ``helm -f a.yaml -f b.yaml`` does with two files (``pkg/cli/values`` ``mergeMaps``):
    maps merge recursively, anything else replaces, and a ``null`` is kept (Helm then deletes the
    chart's default for it). Used where values files are combined, not for the explicit merge."""
    result = dict((k, copy.deepcopy(v)) for k, v in _check(base, "base").items())
    for key, value in _check(override, "override").items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = merge_maps(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


# -- the diff -------------------------------------------------------------------------------------


def escape_key(key):
    return key.replace("\\", "\\\\").replace(".", "\\.")


def join_path(keys):
    return ".".join(escape_key(k) for k in keys)


def split_path(path):
    """The inverse of :func:`join_path`: ``a\\.b.c`` -> ``["a.b", "c"]``."""
    keys, current, escaped = [], [], False
    for char in path:
        if escaped:
            current.append(char)
            escaped = False
        elif char == "\\":
            escaped = True
        elif char == ".":
            keys.append("".join(current))
            current = []
        else:
            current.append(char)
    keys.append("".join(current))
    return keys


def same(left, right):
    """YAML-typed equality: bools are not numbers, strings are not numbers, maps and lists deep."""
    if isinstance(left, bool) or isinstance(right, bool):
        return isinstance(left, bool) and isinstance(right, bool) and left == right
    numbers = (int, float)
    if isinstance(left, numbers) and isinstance(right, numbers):
        return left == right
    if isinstance(left, dict) and isinstance(right, dict):
        return set(left) == set(right) and all(same(left[k], right[k]) for k in left)
    if isinstance(left, list) and isinstance(right, list):
        return len(left) == len(right) and all(same(a, b) for a, b in zip(left, right))
    if type(left) is not type(right):  # pylint: disable=unidiomatic-typecheck
        return False
    return left == right


def _digest(value):
    text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return "%s%s>" % (REDACTED_PREFIX, hashlib.sha256(text.encode("utf-8")).hexdigest()[:12])


def _redactor(redact):
    """``show(keys, value)``: the value as the diff shows it (a digest under a redacted key)."""
    names = set(k.lower() for k in (redact or ()))

    def hidden(keys):
        return bool(names) and any(k.lower() in names for k in keys)

    def show(keys, value):
        if value is None or not hidden(keys):
            return copy.deepcopy(value)
        return _digest(value)
    show.hidden = hidden
    return show


def _walk(before, after, keys, show, out):
    for key in sorted(set(before) | set(after)):
        path = keys + [key]
        if key not in after:
            out.append({"path": join_path(path), "before": show(path, before[key]), "after": None, "change": REMOVED})
        elif key not in before:
            out.append({"path": join_path(path), "before": None, "after": show(path, after[key]), "change": ADDED})
        elif isinstance(before[key], dict) and isinstance(after[key], dict):
            _walk(before[key], after[key], path, show, out)
        elif not same(before[key], after[key]):
            out.append({"path": join_path(path), "before": show(path, before[key]), "after": show(path, after[key]),
                        "change": CHANGED})


def values_diff(before, after, redact=None):
    """What changes from ``before`` to ``after`` (both maps): a list of
    ``{"path", "before", "after", "change"}``; empty when nothing changes.

    ``redact``: key names (case-insensitive) whose values, and everything under them, appear only
    as a digest.
    """
    out = []
    _walk(_check(before, "before"), _check(after, "after"), [], _redactor(redact), out)
    return out


def _redacted_copy(values, show, keys):
    result = {}
    for key, value in values.items():
        path = keys + [key]
        if show.hidden(path):
            result[key] = show(path, value)
        elif isinstance(value, dict):
            result[key] = _redacted_copy(value, show, path)
        else:
            result[key] = copy.deepcopy(value)
    return result


def unified_diff(before, after, redact=None, before_name="values (captured user values)",
                 after_name="values (merged for the upgrade)", context=3):
    """The diff as unified text over indented, key-sorted JSON (empty string when nothing changes)."""
    show = _redactor(redact)
    left = json.dumps(_redacted_copy(_check(before, "before"), show, []), indent=2, sort_keys=True).splitlines()
    right = json.dumps(_redacted_copy(_check(after, "after"), show, []), indent=2, sort_keys=True).splitlines()
    if left == right:
        return ""
    lines = difflib.unified_diff(left, right, fromfile=before_name, tofile=after_name, n=context, lineterm="")
    return "\n".join(lines) + "\n"


def plan(user_values, overrides, redact=None):
    """The merged values and their diff against the captured user values, for an upgrade's evidence:
    ``{"values": merged, "diff": [...], "diff_text": "...", "changed": bool}``."""
    merged = merge_values(user_values, overrides)
    before = _check(user_values, "user values")
    diff = values_diff(before, merged, redact=redact)
    return {"values": merged, "diff": diff, "diff_text": unified_diff(before, merged, redact=redact),
            "changed": bool(diff)}
