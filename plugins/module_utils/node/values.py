# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Checked conversion of the values a node prints, and the one sanitizer of the facts that leave it.

Everything read from a node (sysfs, procfs, nvidia-smi's CSV, recorded command results, parsed
TOML/YAML) is untrusted text. The converters here accept only what the field can hold:

* integers are ASCII digits only (``str.isdigit()`` and ``int()`` accept ``'¹'``, ``'٣'``,
  ``' 1_0 '``), at most :data:`MAX_DIGITS` of them (``int()`` of 5,000 digits raises), within the
  field's range; hex values likewise (``[0-9a-fA-F]``, a bounded number of digits);
* floats must be finite;
* messages quote at most :data:`QUOTE_LIMIT` characters of a bad value (:func:`quote` never
  expands a container, never formats a huge integer in decimal).

Each converter returns ``(value, error)``: ``error`` is None for a good value, else a message naming
the field, for the caller's ``problems`` entry; it never raises for bad input.

:func:`sanitize` is applied to the module's result on the node (``gpu_node_facts``, before
``exit_json``) and again on the controller (the action plugin, after parsing): iteratively (no
recursion however deep the input) it makes every value JSON- and UTF-8-safe. Strings with lone
surrogates (file names that are not UTF-8, decoded with ``surrogateescape``) get an explicit escaped
form (``eth\\xff0``), integers beyond :data:`INT_LIMIT` become strings, non-finite floats become None,
containers nested deeper than :data:`MAX_DEPTH` are cut; each change is a note
``{"path", "reason"}`` for ``problems``.

Standard library only (it runs on GPU nodes, Python 3.8+, and on the controller).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import math
import re

#: Characters of a bad value quoted in a message.
QUOTE_LIMIT = 64
#: Digits accepted in one integer field (2**64 has 20).
MAX_DIGITS = 20
#: Hex digits accepted in one hex field.
MAX_HEX_DIGITS = 16
#: Integers whose absolute value exceeds this leave the node as strings.
INT_LIMIT = 2 ** 63
#: Containers nested deeper than this are cut (the facts nest 6 levels).
MAX_DEPTH = 64
#: Values visited by one :func:`sanitize` call; the rest is cut.
MAX_ITEMS = 1000000
#: Notes returned by one :func:`sanitize` call; further changes are counted in a last note.
MAX_NOTES = 50
#: Exit statuses a recorded command may have (a negative one is the signal that ended it).
RC_RANGE = (-255, 255)

DEPTH_MARKER = "<cut: nested deeper than %d levels>" % MAX_DEPTH
ITEMS_MARKER = "<cut: more than %d values>" % MAX_ITEMS

_SURROGATES_RE = re.compile(u"[\ud800-\udfff]")
_INT_RE = re.compile(r"\A-?[0-9]+\Z")
_HEX_RE = re.compile(r"\A(?:0[xX])?([0-9a-fA-F]+)\Z")
_ASCII_SPACE = " \t\r\n\x0b\x0c"
_CONTROL_RE = re.compile(u"[\x00-\x1f\x7f]")


def _describe_int(value):
    # str() of an integer over 4300 digits raises (int_max_str_digits); 200 bits are 61 digits at most.
    if value.bit_length() <= 200:
        return "%d" % value
    return "<an integer of %d bits>" % value.bit_length()


_SMALL_SCALARS = (type(None), bool, int, float, str)


def _small_container(value, limit):
    """``repr`` of a list, tuple or dict of at most 8 short scalars (``['/x']``), else None."""
    if len(value) > 8:
        return None
    items = list(value.items()) if isinstance(value, dict) else [(None, item) for item in value]
    parts = []
    for key, item in items:
        for scalar in ((key, item) if isinstance(value, dict) else (item,)):
            if not isinstance(scalar, _SMALL_SCALARS) or (isinstance(scalar, str) and len(scalar) > limit) \
                    or (isinstance(scalar, int) and not isinstance(scalar, bool) and scalar.bit_length() > 64):
                return None
        parts.append("%s: %s" % (quote(key), quote(item)) if isinstance(value, dict) else quote(item))
    if isinstance(value, dict):
        text = "{%s}" % ", ".join(parts)
    elif isinstance(value, tuple):
        text = "(%s)" % (", ".join(parts) + ("," if len(parts) == 1 else ""))
    else:
        text = "[%s]" % ", ".join(parts)
    return text if len(text) <= 2 * limit else None


def quote(value, limit=QUOTE_LIMIT):
    """A short, printable, serialisable ``repr`` of ``value`` for a message; never raises.

    Strings and bytes are cut to ``limit`` characters (their length is said), containers are
    described by type and size (never expanded: a YAML alias bomb shares its children), huge
    integers by their size in bits.
    """
    try:
        if value is None or isinstance(value, bool):
            return repr(value)
        if isinstance(value, int):
            return _describe_int(value)
        if isinstance(value, float):
            return repr(value)
        if isinstance(value, (str, bytes)):
            # repr escapes lone surrogates and control characters: the result is always valid UTF-8.
            if len(value) <= limit:
                return repr(value)
            return "%s... (%d characters)" % (repr(value[:limit]), len(value))
        if isinstance(value, (list, tuple, dict)):
            small = _small_container(value, limit)
            if small is not None:
                return small
        if isinstance(value, (dict, list, tuple, set, frozenset)):
            return "<%s of %d items>" % (type(value).__name__, len(value))
    except Exception:  # pylint: disable=broad-except  # a message must never fail
        pass
    return "<%s>" % type(value).__name__


def _strip(text):
    return text.strip(_ASCII_SPACE) if isinstance(text, str) else text


def parse_int(text, field, minimum, maximum, max_digits=MAX_DIGITS):
    """``(int, None)`` for ASCII decimal ``text`` (optional ``-``, surrounding ASCII blanks) within
    ``minimum..maximum``, else ``(None, message)``."""
    value = _strip(text)
    if not isinstance(value, str) or len(value) > max_digits + 1 or not _INT_RE.match(value) \
            or len(value.lstrip("-")) > max_digits:
        return None, "%s: %s is not an integer from %d to %d" % (field, quote(text), minimum, maximum)
    number = int(value)
    if not minimum <= number <= maximum:
        return None, "%s: %s is out of range (%d to %d)" % (field, quote(text), minimum, maximum)
    return number, None


def parse_hex(text, field, digits=None, max_digits=MAX_HEX_DIGITS, prefix=True):
    """``(int, None)`` for hex ``text`` (``0x`` prefix required when ``prefix``; exactly ``digits``
    hex digits when given, else 1 to ``max_digits``), else ``(None, message)``."""
    value = _strip(text)
    match = _HEX_RE.match(value) if isinstance(value, str) and len(value) <= max_digits + 2 else None
    ok = match is not None and (not prefix or value[:2] in ("0x", "0X"))
    if ok:
        count = len(match.group(1))
        ok = count == digits if digits else count <= max_digits
    if not ok:
        form = "%d hex digits" % digits if digits else "at most %d hex digits" % max_digits
        return None, "%s: %s is not %s%s" % (field, quote(text), "0x and " if prefix else "", form)
    return int(match.group(1), 16), None


def hex_id(text, field, digits):
    """A PCI id as sysfs prints it (``0x10de``): ``("0x10de", None)`` lower case, or ``(None, message)``."""
    number, error = parse_hex(text, field, digits=digits)
    if error:
        return None, error
    return "0x%0*x" % (digits, number), None


def check_int(value, field, minimum, maximum):
    """``(value, None)`` for an int (not a bool) already parsed (TOML, JSON) within the range."""
    if isinstance(value, bool) or not isinstance(value, int):
        return None, "%s: %s is not an integer" % (field, quote(value))
    if not minimum <= value <= maximum:
        return None, "%s: %s is out of range (%d to %d)" % (field, quote(value), minimum, maximum)
    return value, None


def check_float(value, field):
    """``(float, None)`` for a finite int or float (not a bool), else ``(None, message)``."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None, "%s: %s is not a number" % (field, quote(value))
    if isinstance(value, float) and not math.isfinite(value):
        return None, "%s: %s is not a finite number" % (field, quote(value))
    return value, None


def command_rc(value):
    """The ``rc`` of a recorded command result: ``(int, None)`` or ``(None, message)``.

    JSON gives ``Infinity``, ``NaN``, ``true``, ``1e400`` and 5,000-digit numbers: only an int
    (not a bool) within :data:`RC_RANGE` is an exit status.
    """
    return check_int(value, "rc", RC_RANGE[0], RC_RANGE[1])


def text_value(text, field, limit=256):
    """``(text, None)`` for a one-line value of at most ``limit`` characters without control
    characters; None stays None; else ``(None, message)``."""
    if text is None:
        return None, None
    if not isinstance(text, str):
        return None, "%s: %s is not text" % (field, quote(text))
    if len(text) > limit:
        return None, "%s: longer than %d characters: %s" % (field, limit, quote(text))
    if _CONTROL_RE.search(text):
        return None, "%s: holds control characters: %s" % (field, quote(text))
    return text, None


def escape_text(text):
    """``(text, changed)``: lone surrogates replaced by ``\\xNN`` (the byte a ``surrogateescape``
    decode kept) or ``\\uDXXX``, so that the text encodes as UTF-8."""
    if not _SURROGATES_RE.search(text):
        return text, False

    def escape(match):
        code = ord(match.group(0))
        if 0xDC80 <= code <= 0xDCFF:
            return "\\x%02x" % (code - 0xDC00)
        return "\\u%04x" % code

    return _SURROGATES_RE.sub(escape, text), True


def _location(where, key=None, index=None):
    if index is not None:
        return "%s[%d]" % (where, index)
    text = key if len(key) <= QUOTE_LIMIT else key[:QUOTE_LIMIT] + "..."
    return "%s.%s" % (where, text) if where else text


class _Notes(object):
    def __init__(self):
        self.notes = []
        self.more = 0

    def add(self, path, reason):
        if len(self.notes) < MAX_NOTES:
            self.notes.append({"path": path, "reason": reason})
        else:
            self.more += 1

    def result(self, where):
        notes = list(self.notes)
        if self.more:
            notes.append({"path": where or "result",
                          "reason": "%d more values were changed to make the result serialisable" % self.more})
        return notes


def _scalar(value, location, notes):
    """A JSON- and UTF-8-safe scalar for ``value``."""
    if value is None or isinstance(value, bool):
        return value
    if isinstance(value, str):
        escaped, changed = escape_text(value)
        if changed:
            notes.add(location, "not valid UTF-8 (a name or text with undecodable bytes); shown with "
                                "backslash escapes: %s" % quote(escaped))
        return escaped
    if isinstance(value, int):
        if -INT_LIMIT <= value <= INT_LIMIT:
            return value
        text = _describe_int(value)
        notes.add(location, "integer out of range (beyond 2**63): %s; kept as a string" % text)
        return text
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        notes.add(location, "not a finite number (%r); replaced by null" % value)
        return None
    if isinstance(value, bytes):
        text = value.decode("utf-8", "backslashreplace")
        notes.add(location, "bytes, not text; shown with backslash escapes: %s" % quote(text))
        return text
    text = quote(value)
    notes.add(location, "a %s is not a JSON value; replaced by its description" % type(value).__name__)
    return text


def _key(key, where, notes):
    if isinstance(key, str):
        escaped, changed = escape_text(key)
        if changed:
            notes.add(where, "key not valid UTF-8 (a name with undecodable bytes); shown with backslash "
                             "escapes: %s" % quote(escaped))
        return escaped
    if isinstance(key, int) and not isinstance(key, bool) and -INT_LIMIT <= key <= INT_LIMIT:
        return "%d" % key  # as json.dumps writes it
    text = quote(key)
    notes.add(where, "key %s is not a string; written as its description" % text)
    return text


def sanitize(value, where=""):
    """``(clean, notes)``: a JSON- and UTF-8-safe copy of ``value`` and what was changed.

    Iterative (an explicit stack): dicts (keys made strings), lists and tuples (made lists) are
    copied; strings with lone surrogates are escaped (:func:`escape_text`); integers beyond
    :data:`INT_LIMIT` become strings; non-finite floats become None; bytes are decoded with
    escapes; other objects become a description. A container deeper than :data:`MAX_DEPTH` is
    replaced by :data:`DEPTH_MARKER`. ``notes`` is a list of ``{"path", "reason"}`` (``path`` is the
    location in ``value``, starting with ``where``), at most :data:`MAX_NOTES` and one summary.
    """
    notes = _Notes()
    top = [None]
    # (value, holder, key in holder, location, depth)
    stack = [(value, top, 0, where, 0)]
    visited = 0
    while stack:
        item, holder, slot, location, depth = stack.pop()
        visited += 1
        is_dict = isinstance(item, dict)
        if not is_dict and not isinstance(item, (list, tuple)):
            holder[slot] = _scalar(item, location, notes)
            continue
        if depth >= MAX_DEPTH:
            holder[slot] = DEPTH_MARKER
            notes.add(location, "nested deeper than %d levels; cut" % MAX_DEPTH)
            continue
        if visited > MAX_ITEMS:
            holder[slot] = ITEMS_MARKER
            notes.add(location, "more than %d values; cut" % MAX_ITEMS)
            continue
        children = []
        if is_dict:
            out = {}
            for key, child in item.items():
                clean = _key(key, location, notes)
                while clean in out:  # two keys the same once escaped
                    clean += "'"
                out[clean] = None
                children.append((child, out, clean, _location(location, key=clean), depth + 1))
        else:
            out = [None] * len(item)
            for index, child in enumerate(item):
                children.append((child, out, index, _location(location, index=index), depth + 1))
        holder[slot] = out
        children.reverse()  # visited in order: the notes follow the document
        stack.extend(children)
    return top[0], notes.result(where)
