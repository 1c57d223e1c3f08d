# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A small, safe YAML loader for the subset that CDI spec files use.

Runs on managed nodes (Python 3.8+, standard library only), where PyYAML may be absent.

Supported:
  * JSON (tried first with :func:`json.loads`; JSON is YAML flow syntax).
  * Block mappings and block sequences by indentation, including the "indentless" sequence
    that ``nvidia-ctk cdi generate`` writes (``key:`` followed by ``- item`` at the same column),
    ``- key: value`` items holding mappings, and ``- - x`` nested sequences.
  * Plain, single-quoted and double-quoted scalars (all YAML escapes, line folding);
    multi-line plain scalars are folded.
  * Literal ``|`` and folded ``>`` block scalars with chomping (``-``/``+``) and an
    indentation digit.
  * Flow sequences ``[a, b]`` and flow mappings ``{a: b}``, nested, over several lines.
  * Comments, a leading ``%YAML``-free ``---`` document start, a trailing ``...``.
  * Scalar resolution per the YAML 1.2 core schema: ``null``/``~``/empty, ``true``/``false``
    (three spellings each), decimal/``0o``/``0x`` integers, floats, ``.inf``/``.nan``.
    Anything else is a string, so version-like values such as ``0.5.0`` stay strings.

Rejected with :class:`YAMLSubsetError` (line number + message, never a bare traceback):
  anchors, aliases, tags, directives, complex (``?``) keys, several documents, duplicate keys,
  tabs used as indentation, and malformed input.

Differences from PyYAML (which implements YAML 1.1) that matter only for values CDI specs
do not contain: ``yes``/``no``/``on``/``off`` stay strings here, ``0755`` is decimal 755
(PyYAML: octal), ``1e3`` is a float here (PyYAML: a string), ``1_000`` and ``1:20`` stay
strings, timestamps stay strings (PyYAML: datetime), and ``=`` is a plain string.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re


class YAMLSubsetError(ValueError):
    """The text is not YAML, or uses YAML outside the supported subset.

    ``line`` is the 1-based line number (or None when unknown); ``message`` the reason.
    """

    def __init__(self, line, message):
        self.line = line
        self.message = message
        if line is None:
            text = message
        else:
            text = "line %d: %s" % (line, message)
        super(YAMLSubsetError, self).__init__(text)


_INT_DEC_RE = re.compile(r"^[-+]?[0-9]+$")
_INT_OCT_RE = re.compile(r"^0o[0-7]+$")
_INT_HEX_RE = re.compile(r"^0x[0-9a-fA-F]+$")
_FLOAT_RE = re.compile(r"^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$")
_INF_RE = re.compile(r"^[-+]?\.(inf|Inf|INF)$")
_NAN_RE = re.compile(r"^\.(nan|NaN|NAN)$")

_NULLS = ("", "~", "null", "Null", "NULL")
_TRUES = ("true", "True", "TRUE")
_FALSES = ("false", "False", "FALSE")

_SIMPLE_ESCAPES = {
    "0": "\x00",
    "a": "\x07",
    "b": "\x08",
    "t": "\t",
    "\t": "\t",
    "n": "\n",
    "v": "\x0b",
    "f": "\x0c",
    "r": "\r",
    "e": "\x1b",
    " ": " ",
    '"': '"',
    "/": "/",
    "\\": "\\",
    "N": "\x85",
    "_": "\xa0",
    "L": "\u2028",
    "P": "\u2029",
}
_HEX_ESCAPES = {"x": 2, "u": 4, "U": 8}

_FLOW_INDICATORS = ",[]{}"


def resolve_scalar(text):
    """Resolve a plain (unquoted) scalar per the YAML 1.2 core schema."""
    if text in _NULLS:
        return None
    if text in _TRUES:
        return True
    if text in _FALSES:
        return False
    if _INT_DEC_RE.match(text):
        return int(text, 10)
    if _INT_OCT_RE.match(text):
        return int(text[2:], 8)
    if _INT_HEX_RE.match(text):
        return int(text[2:], 16)
    if _FLOAT_RE.match(text):
        return float(text)
    if _INF_RE.match(text):
        return float("-inf") if text.startswith("-") else float("inf")
    if _NAN_RE.match(text):
        return float("nan")
    return text


def _leading_spaces(line):
    count = 0
    for ch in line:
        if ch == " ":
            count += 1
        else:
            break
    return count


def _is_doc_marker(line, marker):
    return line.startswith(marker) and (len(line) == 3 or line[3] in " \t")


def _blank_or_comment(rest):
    stripped = rest.strip(" \t")
    return stripped == "" or stripped.startswith("#")


class _Parser(object):
    """Recursive-descent parser over the lines of one document."""

    def __init__(self, text):
        self.text = text
        self.lines = text.split("\n")
        self.offsets = []
        pos = 0
        for line in self.lines:
            self.offsets.append(pos)
            pos += len(line) + 1
        self.li = 0
        # Column where the current line's content starts when it is not the line's own
        # indentation (after "- " or "--- "); None means "use the indentation".
        self.col = None

    # -- helpers -----------------------------------------------------------------------------
    def error(self, message, li=None):
        if li is None:
            li = self.li
        return YAMLSubsetError(min(li, len(self.lines) - 1) + 1, message)

    def _advance_line(self):
        self.li += 1
        self.col = None

    def _line_of_offset(self, offset):
        lo, hi = 0, len(self.offsets) - 1
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if self.offsets[mid] <= offset:
                lo = mid
            else:
                hi = mid - 1
        return lo

    def peek(self):
        """Skip blank and comment lines; return the current content column or None at the end."""
        while self.li < len(self.lines):
            line = self.lines[self.li]
            if self.col is None:
                indent = _leading_spaces(line)
                if indent < len(line) and line[indent] == "\t" and line.strip(" \t") != "":
                    raise self.error("tab character used for indentation")
                col = indent
            else:
                col = self.col
            rest = line[col:]
            if _blank_or_comment(rest):
                self._advance_line()
                continue
            if self.col is None and col == 0 and (_is_doc_marker(line, "---") or _is_doc_marker(line, "...")):
                return None
            return col
        return None

    def _check_indicators(self, ch, li=None):
        if ch == "&":
            raise self.error("anchors (&) are not supported", li)
        if ch == "*":
            raise self.error("aliases (*) are not supported", li)
        if ch == "!":
            raise self.error("tags (!) are not supported", li)
        if ch in "@`":
            raise self.error("reserved indicator %r cannot start a plain scalar" % ch, li)
        if ch == "%":
            message = "directives (%) are not supported"
            raise self.error(message, li)

    def _is_seq_item(self, col):
        line = self.lines[self.li]
        return line[col] == "-" and (col + 1 == len(line) or line[col + 1] in " \t")

    def _find_key_colon(self, line, col):
        """Return the index of the ':' ending a block mapping key starting at col, or -1."""
        if col >= len(line):
            return -1
        ch = line[col]
        if ch in "\"'":
            try:
                dummy, end = self._scan_quoted(line, col, single_line=True)
            except YAMLSubsetError:
                return -1
            i = end
            while i < len(line) and line[i] in " \t":
                i += 1
            if i < len(line) and line[i] == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
                return i
            return -1
        if ch in "[{":
            return -1
        if ch == "?" and (col + 1 == len(line) or line[col + 1] in " \t"):
            raise self.error("complex mapping keys (?) are not supported")
        i = col
        while i < len(line):
            c = line[i]
            if c == "#" and i > col and line[i - 1] in " \t":
                return -1
            if c == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
                return i
            i += 1
        return -1

    # -- block structure ---------------------------------------------------------------------
    def parse_document(self):
        # Leading blank lines, comments, an optional "---".
        while self.li < len(self.lines):
            line = self.lines[self.li]
            if _blank_or_comment(line):
                self._advance_line()
                continue
            if line.startswith("%"):
                raise self.error("directives (%) are not supported")
            if _is_doc_marker(line, "---"):
                rest_col = 3
                while rest_col < len(line) and line[rest_col] in " \t":
                    rest_col += 1
                if _blank_or_comment(line[rest_col:]):
                    self._advance_line()
                else:
                    self.col = rest_col
            break
        value = self.parse_block_node(-1)
        # Only blank lines, comments and "..." may follow.
        col = self.peek()
        if col is not None:
            raise self.error("unexpected content (bad indentation or a second value)")
        while self.li < len(self.lines):
            line = self.lines[self.li]
            if _is_doc_marker(line, "---"):
                raise self.error("multiple documents are not supported")
            if _is_doc_marker(line, "..."):
                self._advance_line()
                continue
            if not _blank_or_comment(line):
                raise self.error("unexpected content after the document end")
            self._advance_line()
        return value

    def parse_block_node(self, parent_indent, allow_indentless_seq=False):
        col = self.peek()
        if col is None:
            return None
        if col <= parent_indent:
            if allow_indentless_seq and col == parent_indent and self._is_seq_item(col):
                return self.parse_sequence(col)
            return None
        line = self.lines[self.li]
        if self._is_seq_item(col):
            return self.parse_sequence(col)
        if self._find_key_colon(line, col) >= 0:
            return self.parse_mapping(col)
        return self.parse_inline_value(col, parent_indent)

    def parse_sequence(self, indent):
        items = []
        while True:
            col = self.peek()
            if col is None or col < indent:
                break
            if col > indent:
                raise self.error("bad indentation of a sequence entry")
            if not self._is_seq_item(col):
                break
            line = self.lines[self.li]
            k = col + 1
            while k < len(line) and line[k] in " \t":
                k += 1
            if k >= len(line) or line[k] == "#":
                self._advance_line()
            else:
                self.col = k
            items.append(self.parse_block_node(indent))
        return items

    def parse_mapping(self, indent):
        result = {}
        while True:
            col = self.peek()
            if col is None or col < indent:
                break
            if col > indent:
                raise self.error("bad indentation of a mapping entry")
            line = self.lines[self.li]
            if self._is_seq_item(col):
                # An indentless sequence is consumed by the key that owns it; one here has none.
                raise self.error("sequence entry where a mapping key was expected")
            colon = self._find_key_colon(line, col)
            if colon < 0:
                raise self.error("expected a 'key: value' mapping entry")
            key = self._parse_key(line, col, colon)
            if key in result:
                raise self.error("duplicate mapping key %r" % (key,))
            k = colon + 1
            while k < len(line) and line[k] in " \t":
                k += 1
            if k >= len(line) or line[k] == "#":
                self._advance_line()
                value = self.parse_block_node(indent, allow_indentless_seq=True)
            else:
                value = self.parse_inline_value(k, indent)
            result[key] = value
        return result

    def _parse_key(self, line, col, colon):
        ch = line[col]
        if ch in "\"'":
            value, dummy = self._scan_quoted(line, col, single_line=True)
            return value
        self._check_indicators(ch)
        text = line[col:colon].rstrip(" \t")
        return resolve_scalar(text)

    def parse_inline_value(self, k, parent_indent):
        """Parse the node starting at column k of the current line; leaves the line consumed."""
        line = self.lines[self.li]
        ch = line[k]
        self._check_indicators(ch)
        if ch in "|>":
            return self._parse_block_scalar(k, parent_indent)
        if ch in "[{\"'":
            start = self.offsets[self.li] + k
            if ch in "[{":
                value, end = self._parse_flow_node(self.text, start)
            else:
                value, end = self._scan_quoted(self.text, start)
            end_li = self._line_of_offset(end)
            end_col = end - self.offsets[end_li]
            rest = self.lines[end_li][end_col:]
            self.li = end_li
            if not _blank_or_comment(rest):
                raise self.error("unexpected text after a value: %r" % rest.strip())
            self._advance_line()
            return value
        if ch == "-" and (k + 1 == len(line) or line[k + 1] in " \t"):
            raise self.error("a sequence entry cannot start here (block sequences go on their own line)")
        return self._parse_plain(k, parent_indent)

    def _plain_segment(self, line, start):
        """Plain scalar text from start to a comment or line end; rejects ': ' inside."""
        i = start
        end = len(line)
        while i < len(line):
            c = line[i]
            if c == "#" and i > start and line[i - 1] in " \t":
                end = i
                break
            if c == ":" and (i + 1 == len(line) or line[i + 1] in " \t"):
                raise self.error("mapping values are not allowed here")
            i += 1
        return line[start:end].strip(" \t"), end < len(line)

    def _parse_plain(self, k, parent_indent):
        line = self.lines[self.li]
        text, had_comment = self._plain_segment(line, k)
        parts = [text]
        self._advance_line()
        if had_comment:
            return resolve_scalar(text)
        # Multi-line plain scalar: continuation lines indented deeper than the parent.
        pending_breaks = 0
        li = self.li
        while li < len(self.lines):
            nxt = self.lines[li]
            if nxt.strip(" \t") == "":
                pending_breaks += 1
                li += 1
                continue
            indent = _leading_spaces(nxt)
            if indent <= parent_indent or nxt[indent] == "#":
                break
            if indent == 0 and (_is_doc_marker(nxt, "---") or _is_doc_marker(nxt, "...")):
                break
            self.li = li
            seg, had_comment = self._plain_segment(nxt, indent)
            if pending_breaks:
                parts.append("\n" * pending_breaks)
            else:
                parts.append(" ")
            parts.append(seg)
            pending_breaks = 0
            li += 1
            self.li = li
            if had_comment:
                break
        self.col = None
        if len(parts) == 1:
            return resolve_scalar(text)
        return resolve_scalar("".join(parts))

    def _parse_block_scalar(self, k, parent_indent):
        line = self.lines[self.li]
        folded = line[k] == ">"
        chomping = None  # None = clip, False = strip, True = keep
        increment = None
        i = k + 1
        while i < len(line) and line[i] not in " \t#":
            c = line[i]
            if c in "+-" and chomping is None:
                chomping = c == "+"
            elif c.isdigit() and c != "0" and increment is None:
                increment = int(c)
            else:
                raise self.error("invalid block scalar header %r" % line[k:].strip())
            i += 1
        if not _blank_or_comment(line[i:]):
            raise self.error("invalid block scalar header %r" % line[k:].strip())
        li = self.li + 1
        n = len(self.lines)
        min_indent = max(parent_indent + 1, 1)
        if increment is not None:
            indent = min_indent + increment - 1
        else:
            indent = None
            probe = li
            while probe < n:
                text = self.lines[probe]
                if text.strip(" ") != "":
                    indent = _leading_spaces(text)
                    break
                probe += 1
            if indent is None or indent < min_indent:
                indent = max(min_indent, 1)
        lines = self.lines

        def has_break(idx):
            return "\n" if idx < n - 1 else ""

        def is_empty(idx):
            return lines[idx].strip(" ") == "" and len(lines[idx]) <= indent

        def is_content(idx):
            return not is_empty(idx) and _leading_spaces(lines[idx]) >= indent

        chunks = []
        line_break = ""
        breaks = []
        while li < n and is_empty(li):
            breaks.append(has_break(li))
            li += 1
        while li < n and is_content(li):
            text = lines[li]
            chunks.extend(breaks)
            leading_non_space = text[indent] not in " \t"
            chunks.append(text[indent:])
            line_break = has_break(li)
            li += 1
            breaks = []
            while li < n and is_empty(li):
                breaks.append(has_break(li))
                li += 1
            if li < n and is_content(li):
                if folded and line_break == "\n" and leading_non_space and lines[li][indent] not in " \t":
                    if not breaks:
                        chunks.append(" ")
                else:
                    chunks.append(line_break)
        if chomping is not False:
            chunks.append(line_break)
        if chomping is True:
            chunks.extend(breaks)
        self.li = li
        self.col = None
        return "".join(chunks)

    # -- flow and quoted scalars (work on the whole text, may span lines) --------------------
    def _skip_flow_space(self, s, i):
        while i < len(s):
            c = s[i]
            if c in " \t\r\n":
                i += 1
            elif c == "#" and (i == 0 or s[i - 1] in " \t\r\n"):
                while i < len(s) and s[i] != "\n":
                    i += 1
            else:
                break
        return i

    def _flow_error(self, s, i, message):
        if s is self.text:
            return YAMLSubsetError(self._line_of_offset(min(i, len(s) - 1 if s else 0)) + 1, message)
        return self.error(message)

    def _parse_flow_node(self, s, i, depth=0):
        if depth > 100:
            raise self._flow_error(s, i, "flow collections nested too deeply")
        i = self._skip_flow_space(s, i)
        if i >= len(s):
            raise self._flow_error(s, i, "unexpected end of input in a flow collection")
        c = s[i]
        if c == "[":
            return self._parse_flow_seq(s, i, depth)
        if c == "{":
            return self._parse_flow_map(s, i, depth)
        if c in "\"'":
            return self._scan_quoted(s, i)
        if c in "&*!%@`":
            li = self._line_of_offset(i) if s is self.text else None
            self._check_indicators(c, li)
        if c in "]},":
            raise self._flow_error(s, i, "unexpected %r in a flow collection" % c)
        return self._scan_flow_plain(s, i)

    def _scan_flow_plain(self, s, i):
        start = i
        parts = []
        seg_start = i
        while i < len(s):
            c = s[i]
            if c in _FLOW_INDICATORS:
                break
            if c == ":" and (i + 1 == len(s) or s[i + 1] in " \t\r\n" + _FLOW_INDICATORS):
                break
            if c == "#" and i > start and s[i - 1] in " \t":
                break
            if c == "\n":
                parts.append(s[seg_start:i].strip(" \t\r"))
                seg_start = i + 1
            i += 1
        parts.append(s[seg_start:i].strip(" \t\r"))
        parts = [p for p in parts if p != ""]
        if not parts:
            raise self._flow_error(s, start, "empty plain scalar in a flow collection")
        return resolve_scalar(" ".join(parts)), i

    def _flow_key_value(self, s, i, depth):
        """Parse 'key[: value]' inside a flow collection; returns (key, value, has_colon, i)."""
        if s[i] == ":" and (i + 1 == len(s) or s[i + 1] in " \t\r\n" + _FLOW_INDICATORS):
            key = None  # ": value" with an empty key
        else:
            key, i = self._parse_flow_node(s, i, depth + 1)
        j = self._skip_flow_space(s, i)
        if j < len(s) and s[j] == ":":
            j = self._skip_flow_space(s, j + 1)
            if j < len(s) and s[j] in ",]}":
                return key, None, True, j
            value, j = self._parse_flow_node(s, j, depth + 1)
            return key, value, True, j
        return key, None, False, i

    def _parse_flow_seq(self, s, i, depth):
        items = []
        i += 1
        while True:
            i = self._skip_flow_space(s, i)
            if i >= len(s):
                raise self._flow_error(s, i, "unterminated flow sequence")
            if s[i] == "]":
                return items, i + 1
            key, value, has_colon, i = self._flow_key_value(s, i, depth)
            if has_colon:
                self._check_hashable(s, i, key)
                items.append({key: value})
            else:
                items.append(key)
            i = self._skip_flow_space(s, i)
            if i < len(s) and s[i] == ",":
                i += 1
            elif i < len(s) and s[i] == "]":
                continue
            else:
                raise self._flow_error(s, i, "expected ',' or ']' in a flow sequence")

    def _parse_flow_map(self, s, i, depth):
        result = {}
        i += 1
        while True:
            i = self._skip_flow_space(s, i)
            if i >= len(s):
                raise self._flow_error(s, i, "unterminated flow mapping")
            if s[i] == "}":
                return result, i + 1
            if s[i] == "?" and i + 1 < len(s) and s[i + 1] in " \t\r\n":
                raise self._flow_error(s, i, "complex mapping keys (?) are not supported")
            key, value, dummy, i = self._flow_key_value(s, i, depth)
            self._check_hashable(s, i, key)
            if key in result:
                raise self._flow_error(s, i, "duplicate mapping key %r" % (key,))
            result[key] = value
            i = self._skip_flow_space(s, i)
            if i < len(s) and s[i] == ",":
                i += 1
            elif i < len(s) and s[i] == "}":
                continue
            else:
                raise self._flow_error(s, i, "expected ',' or '}' in a flow mapping")

    def _check_hashable(self, s, i, key):
        if isinstance(key, (list, dict)):
            raise self._flow_error(s, i, "collections as mapping keys are not supported")

    def _scan_quoted(self, s, i, single_line=False):
        quote = s[i]
        out = []
        protected = 0  # length of out that line folding must not strip (escapes)
        i += 1
        n = len(s)
        while True:
            if i >= n or (single_line and s[i] == "\n"):
                raise self._flow_error(s, i, "unterminated quoted scalar")
            c = s[i]
            if quote == "'" and c == "'":
                if i + 1 < n and s[i + 1] == "'":
                    out.append("'")
                    protected = len(out)
                    i += 2
                    continue
                return "".join(out), i + 1
            if quote == '"' and c == '"':
                return "".join(out), i + 1
            if quote == '"' and c == "\\":
                if i + 1 >= n:
                    raise self._flow_error(s, i, "unterminated escape in a double-quoted scalar")
                e = s[i + 1]
                if e in "\r\n":
                    i += 2 if e == "\n" else (3 if s[i + 2:i + 3] == "\n" else 2)
                    while i < n and s[i] in " \t":
                        i += 1
                    protected = len(out)
                    continue
                if e in _SIMPLE_ESCAPES:
                    out.append(_SIMPLE_ESCAPES[e])
                    protected = len(out)
                    i += 2
                    continue
                if e in _HEX_ESCAPES:
                    width = _HEX_ESCAPES[e]
                    digits = s[i + 2:i + 2 + width]
                    if len(digits) != width or not re.match(r"^[0-9a-fA-F]+$", digits):
                        raise self._flow_error(s, i, "invalid \\%s escape in a double-quoted scalar" % e)
                    try:
                        out.append(chr(int(digits, 16)))
                    except (ValueError, OverflowError):
                        raise self._flow_error(s, i, "invalid code point in \\%s escape" % e)
                    protected = len(out)
                    i += 2 + width
                    continue
                raise self._flow_error(s, i, "unknown escape '\\%s' in a double-quoted scalar" % e)
            if c == "\n":
                # Line folding: strip trailing blanks, count empty lines, drop leading blanks.
                while len(out) > protected and out[-1] in (" ", "\t"):
                    out.pop()
                i += 1
                empty = 0
                while True:
                    j = i
                    while j < n and s[j] in " \t":
                        j += 1
                    if j < n and s[j] == "\n":
                        empty += 1
                        i = j + 1
                        continue
                    i = j
                    break
                out.append("\n" * empty if empty else " ")
                continue
            out.append(c)
            i += 1


def load(text):
    """Load one YAML (or JSON) document from text; raise YAMLSubsetError on anything else."""
    if isinstance(text, bytes):
        try:
            text = text.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise YAMLSubsetError(None, "not UTF-8 text: %s" % exc)
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        return json.loads(text)
    except ValueError:
        pass
    text = text.replace("\r\n", "\n").replace("\r", "\n")
    parser = _Parser(text)
    try:
        return parser.parse_document()
    except YAMLSubsetError:
        raise
    except (IndexError, KeyError, TypeError, ValueError, RecursionError) as exc:
        raise YAMLSubsetError(min(parser.li, len(parser.lines) - 1) + 1,
                              "cannot parse this YAML (%s: %s)" % (type(exc).__name__, exc))
