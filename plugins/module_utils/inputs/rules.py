# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A phase's input checks, one rule per condition, decided in Python.

Each rule names the role variable (``field``), the inventory setting a user sets (``setting``, the
``dra_gate_*`` name the role's default reads) and what is expected, with a test that returns None when
the value is fine or the reason it is not. ``failures`` runs every rule and returns only the failed
ones, so a user reads the one thing wrong (and how to fix it), never the whole list of conditions.
``message`` turns them into the single error the play prints once (module ``input_check``, run once
on the controller). The rules of each phase are in ``inputs_<role>.py``; the registry is in the module.

Pure logic, standard library only.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

# \Z, not $: "$" also matches before a final newline, and "run\n" is no run id.
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}\Z")
RELEASE_RE = re.compile(r"^v?(\d+)\.(\d+)\.(\d+)\Z")
_MISSING = object()


class Rule(object):
    """One condition on one input: ``test(value, values)`` returns None (fine) or the reason it fails.
    ``when(values)`` (optional) says whether the rule applies (e.g. only for a production run)."""

    __slots__ = ("field", "setting", "expected", "test", "when")

    def __init__(self, field, setting, expected, test, when=None):
        self.field = field
        self.setting = setting
        self.expected = expected
        self.test = test
        self.when = when


def _show(value):
    if value is _MISSING:
        return "nothing (not set)"
    if value is None:
        return "null"
    if isinstance(value, str):
        return "'%s'" % value if len(value) <= 200 else "'%s...' (%d characters)" % (value[:200], len(value))
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "..."


def failures(rules, values):
    """The failed rules, in rule order: dicts with field, setting, got, expected and reason."""
    failed = []
    for rule in rules:
        if rule.when is not None and not rule.when(values):
            continue
        value = values.get(rule.field, _MISSING)
        try:
            reason = rule.test(value, values) if value is not _MISSING else "it is not set"
        except (TypeError, ValueError, AttributeError) as exc:  # a value of a shape the test did not expect
            reason = "it has the wrong form (%s)" % exc
        if reason:
            failed.append({"field": rule.field, "setting": rule.setting, "got": _show(value),
                           "expected": rule.expected, "reason": reason})
    return failed


def message(role, failed):
    """One error for all the failed rules: each names the setting, what was given and what is expected."""
    lines = ["%s: %d input%s wrong, nothing was changed:" % (role, len(failed), "" if len(failed) == 1 else "s")]
    for item in failed:
        name = item["setting"] or item["field"]
        also = " (role variable %s)" % item["field"] if item["setting"] and item["setting"] != item["field"] else ""
        lines.append("- %s%s: %s; got %s; expected %s." % (name, also, item["reason"], item["got"], item["expected"]))
    return "\n".join(lines)


# --- tests: each returns None when the value is fine, else the reason -------------------------------------

def is_bool_like(value):
    return isinstance(value, bool) or (isinstance(value, str) and value.strip().lower() in (
        "true", "false", "yes", "no"))


def as_bool(value):
    """The boolean of a value that ``is_bool_like`` accepts (Ansible's -e passes strings)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() in ("true", "yes")


def _number(value):
    if isinstance(value, bool):
        raise ValueError("a boolean is not a number")
    if isinstance(value, (int, float)):
        return value
    if isinstance(value, str) and re.match(r"^\s*-?[0-9]+([.][0-9]+)?\s*\Z", value):
        return float(value) if "." in value else int(value)
    raise ValueError("not a number")


def string(value, values=None):
    return None if isinstance(value, str) else "it is not a string"


def non_empty_string(value, values=None):
    if not isinstance(value, str):
        return "it is not a string"
    return None if value.strip() else "it is empty"


def absolute_path(value, values=None):
    if not isinstance(value, str) or not value:
        return "it is empty" if value == "" else "it is not a path"
    if os.path.isabs(value):
        return None
    return "it is a relative path (~ is not expanded here)" if value.startswith("~") else "it is a relative path"


def absolute_path_or_empty(value, values=None):
    if value in ("", None):
        return None
    return absolute_path(value)


def choice(*choices):
    def test(value, values=None):
        return None if value in choices else "it is not one of %s" % "|".join(str(c) for c in choices)
    return test


def boolean(value, values=None):
    return None if is_bool_like(value) else "it is not true or false"


def boolean_or_null(value, values=None):
    """true, false (also as the strings -e passes) or null; the role turns a string into a boolean before use."""
    return None if value is None or is_bool_like(value) else "it is not true, false or null"


def mapping(value, values=None):
    return None if isinstance(value, dict) else "it is not a mapping"


def non_empty_mapping(value, values=None):
    if not isinstance(value, dict):
        return "it is not a mapping"
    return None if value else "it is empty"


def string_list(value, values=None):
    if not isinstance(value, (list, tuple)):
        return "it is not a list"
    bad = [item for item in value if not isinstance(item, str)]
    return "%s in it is not a string" % _show(bad[0]) if bad else None


def positive_number(value, values=None):
    try:
        number = _number(value)
    except ValueError:
        return "it is not a number"
    return None if number > 0 else "it is not above 0"


def whole_number(value, values=None):
    try:
        number = _number(value)
    except ValueError:
        return "it is not a whole number"
    return None if isinstance(number, int) and number >= 0 else "it is not a whole number"


def positive_whole_number(value, values=None):
    reason = whole_number(value)
    return reason or (None if _number(value) > 0 else "it is not above 0")


def whole_number_or_empty(value, values=None):
    return None if value in ("", None) else whole_number(value)


def run_id(value, values=None):
    if not isinstance(value, str) or not value:
        return "it is empty" if value == "" else "it is not a string"
    return None if RUN_ID_RE.match(value) else "it has characters other than letters, digits and ._- (or is too long)"


def release(value, values=None):
    """A full release ``26.7.0`` (``v26.7.0`` normalised): a major.minor alone names no chart."""
    if not isinstance(value, str):
        return "it is not a string"
    if RELEASE_RE.match(value.strip()):
        return None
    if re.match(r"^v?\d+(\.\d+)?$", value.strip()):
        return "it names no single release (major.minor.patch is needed)"
    return "it is not a release"


def normalise_release(value):
    """``v26.7.0`` -> ``26.7.0``; None for anything that is not a full release."""
    match = RELEASE_RE.match(str(value).strip()) if value is not None else None
    return "%s.%s.%s" % match.groups() if match else None


def non_negative_number(value, values=None):
    try:
        number = _number(value)
    except ValueError:
        return "it is not a number"
    return None if number >= 0 else "it is below 0"


def file_on_controller(value, values=None):
    """A path that is a file where the check runs (the controller; a symlink to a file is one). An empty or
    non-string value is a non-empty-string rule's to report, so that a mistake is named once."""
    if not isinstance(value, str) or not value.strip():
        return None
    return None if os.path.isfile(value) else "there is no such file on the controller"


def matching(pattern, reason):
    """A test: a string (or a number written as one) that matches ``pattern`` in full, else ``reason``."""
    compiled = re.compile(pattern)

    def test(value, values=None):
        if isinstance(value, bool) or not isinstance(value, (str, int)):
            return "it is not a string"
        return None if compiled.match(str(value)) and "\n" not in str(value) else reason
    return test


def subset_of(*choices):
    """A test: a list whose items are each one of ``choices`` (the unknown ones named)."""
    def test(value, values=None):
        if not isinstance(value, (list, tuple)):
            return "it is not a list"
        bad = [item for item in value if item not in choices]
        return "%s in it is not one of %s" % (", ".join(_show(b) for b in bad), "|".join(choices)) if bad else None
    return test


# --- test helpers (for the unit tests of inputs_<role>.py) -----------------------------------------------

# Values tried against every option: whatever the role's argument spec refuses among them, the rules must refuse.
PROBES = ("abc", "", " ", "-1", -1, 0, 1, 1.5, "1.5", True, False, "yes", "on", "1", "true", None, [], [1], ["x"],
          {}, {"a": 1}, "/abs/path", "rel/path", "~/x", "26.7", "1,2", "a=b", "run\n")


def spec_gaps(rules, good, refuses, probes=PROBES):
    """The (field, value) pairs that ``refuses(values)`` (a role's argument spec validation: true when it refuses
    ``values``) refuses but the rules do not refuse naming that field alone; empty when the rules cover the spec.

    ``good`` is a complete set of values every rule accepts. Run it with Ansible's ``ArgumentSpecValidator`` over
    the role's meta/argument_specs.yml: the argument spec is validated once per host at the role's start, so it must
    never be the one to refuse a value - the rules (checked once, on the controller) refuse it first."""
    gaps = []
    for field in sorted(name for name in good if name != "__context__"):
        for value in probes:
            values = dict(good, **{field: value})
            if refuses(values) and set(item["field"] for item in failures(rules, values)) != {field}:
                gaps.append((field, value))
    return gaps
