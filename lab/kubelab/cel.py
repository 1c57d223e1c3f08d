# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A subset of CEL, enough for DRA device selectors (DeviceClasses, claims, DeviceTaintRules).

``compile_expression(text)`` parses (cached) and ``Program.evaluate(env)`` evaluates;
``device_matches(text, device)`` does both for one device seen through ``device_env(driver,
device)``, which is what Kubernetes gives a selector: ``device.driver`` (string),
``device.attributes[domain][name]`` and ``device.capacity[domain][name]``. Attribute names without
a domain in the ResourceSlice belong to the driver's domain (``type`` of ``gpu.nvidia.com`` is
``device.attributes['gpu.nvidia.com'].type``); ``resource.kubernetes.io/pciBusID`` is
``device.attributes['resource.kubernetes.io'].pciBusID``. An unknown domain is an empty map;
an unknown attribute is a runtime error ("no such key"), as in Kubernetes, so guard with ``has()``.

Supported:

* literals: strings ('...' or "...", with backslash escapes), ints, doubles, ``true``,
  ``false``, ``null``, lists ``[a, b]``;
* operators: ``&&``, ``||`` (with CEL's error absorption: ``false && <error>`` is false), ``!``,
  unary ``-``, ``+``/``-`` on ints, doubles and (``+``) strings, ``==``, ``!=``, ``<``, ``<=``,
  ``>``, ``>=`` (same-type operands; ints and doubles compare with each other), ``x in list``,
  ``key in map``, parentheses;
* selection ``a.b`` and indexing ``a['b']``, ``list[0]``;
* functions: ``has(a.b)``, ``size(x)``, ``quantity('40Gi')``, ``semver('1.2.3')``;
* methods: strings ``startsWith``, ``endsWith``, ``contains``, ``matches`` (Python ``re``),
  ``lowerAscii``, ``upperAscii``, ``size``; quantities ``compareTo``, ``isGreaterThan``,
  ``isLessThan``, ``asInteger``, ``asApproximateFloat``; versions ``compareTo``,
  ``isGreaterThan``, ``isLessThan``, ``major``, ``minor``, ``patch``.

Not supported (a ``CelError`` naming the construct and column): the ternary ``?:``, ``*``, ``/``,
``%``, macros other than ``has`` (``all``, ``exists``, ``map``, ``filter``), maps literals, bytes
and uint literals, and any other function or method. The error's message starts with "CEL".
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

_QUANTITY = re.compile(r"^([+-]?(?:\d+(?:\.\d*)?|\.\d+))([eE][+-]?\d+|[numkMGTPE]|[KMGTPE]i)?$")
_SUFFIX = {None: 1, "n": 10 ** -9, "u": 10 ** -6, "m": 10 ** -3, "k": 10 ** 3, "M": 10 ** 6, "G": 10 ** 9,
           "T": 10 ** 12, "P": 10 ** 15, "E": 10 ** 18, "Ki": 2 ** 10, "Mi": 2 ** 20, "Gi": 2 ** 30, "Ti": 2 ** 40,
           "Pi": 2 ** 50, "Ei": 2 ** 60}
_SEMVER = re.compile(r"^v?(\d+)(?:\.(\d+))?(?:\.(\d+))?(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
_TOKEN = re.compile(r"""\s*(?:
    (?P<num>\d+\.\d+(?:[eE][+-]?\d+)?|\d+[eE][+-]?\d+|0[xX][0-9a-fA-F]+|\d+)
  | (?P<str>'(?:[^'\\\n]|\\.)*'|"(?:[^"\\\n]|\\.)*")
  | (?P<id>[A-Za-z_][A-Za-z0-9_]*)
  | (?P<op>&&|\|\||==|!=|<=|>=|[<>!().,\[\]+\-*/%?:{}])
)""", re.VERBOSE)
_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", "'": "'", '"': '"'}


class CelError(ValueError):
    """A compile error or an unsupported construct; the message starts with "CEL"."""


class CelEvalError(CelError):
    """A runtime error (no such key, no such overload); the message starts with "CEL runtime error"."""


@dataclass(frozen=True)
class Quantity:
    """A resource.Quantity: ``value`` is exact enough (a float of the parsed amount)."""
    text: str
    value: float

    def compare(self, other) -> int:
        return (self.value > other.value) - (self.value < other.value)


@dataclass(frozen=True)
class Semver:
    text: str
    key: tuple

    def compare(self, other) -> int:
        return (self.key > other.key) - (self.key < other.key)


def parse_quantity(text: str) -> Quantity:
    match = _QUANTITY.match(str(text).strip())
    if not match:
        raise CelEvalError("CEL runtime error: invalid quantity %r" % (text,))
    suffix = match.group(2)
    if suffix and suffix[0] in "eE" and len(suffix) > 1:
        value = float(match.group(1) + suffix)
    else:
        value = float(match.group(1)) * _SUFFIX[suffix]
    return Quantity(str(text), value)


def parse_semver(text: str) -> Semver:
    match = _SEMVER.match(str(text).strip())
    if not match:
        raise CelEvalError("CEL runtime error: invalid semver %r" % (text,))
    numbers = tuple(int(match.group(i) or 0) for i in (1, 2, 3))
    pre = match.group(4)
    # A pre-release sorts before the release itself.
    return Semver(str(text), numbers + ((0, pre) if pre else (1, "")))


# -- device environment ----------------------------------------------------------------------------

def attribute_value(attr: dict):
    """A ResourceSlice DeviceAttribute ({string|int|bool|version: ...}) as a CEL value."""
    if not isinstance(attr, dict):
        return None
    if "string" in attr:
        return str(attr["string"])
    if "bool" in attr:
        return bool(attr["bool"])
    if "int" in attr:
        return int(attr["int"])
    if "version" in attr:
        try:
            return parse_semver(attr["version"])
        except CelEvalError:
            return None
    return None


def qualified(driver: str, name: str) -> tuple[str, str]:
    if "/" in name:
        domain, _sep, short = name.rpartition("/")
        return domain, short
    return driver, name


def device_env(driver: str, device: dict) -> dict:
    """The ``device`` variable a selector sees for one ResourceSlice device."""
    attributes: dict = {}
    for name, attr in (device.get("attributes") or {}).items():
        value = attribute_value(attr)
        if value is not None:
            domain, short = qualified(driver, name)
            attributes.setdefault(domain, {})[short] = value
    capacity: dict = {}
    for name, cap in (device.get("capacity") or {}).items():
        try:
            value = parse_quantity((cap or {}).get("value"))
        except CelEvalError:
            continue
        domain, short = qualified(driver, name)
        capacity.setdefault(domain, {})[short] = value
    return {"driver": driver, "attributes": _Domains(attributes), "capacity": _Domains(capacity),
            "allowMultipleAllocations": bool(device.get("allowMultipleAllocations"))}


class _Domains(dict):
    """``device.attributes``: any domain exists (empty when the device has none of it)."""

    def __missing__(self, key):
        return {}


# -- parser ----------------------------------------------------------------------------------------

def _tokenize(text: str) -> list:
    tokens, pos = [], 0
    text = text.rstrip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            pos += len(text[pos:]) - len(text[pos:].lstrip())
            raise CelError("CEL syntax error at column %d: unexpected %r" % (pos + 1, text[pos:pos + 1]))
        kind = match.lastgroup
        value = match.group(kind)
        column = match.start(kind) + 1
        if kind == "num":
            if value.lower().startswith("0x"):
                value = int(value, 16)
            elif "." in value or "e" in value.lower():
                value = float(value)
            else:
                value = int(value)
        elif kind == "str":
            value = re.sub(r"\\(.)", lambda m: _ESCAPES.get(m.group(1), "\\" + m.group(1)), value[1:-1])
        elif kind == "id" and value == "in":
            kind = "op"
        tokens.append((kind, value, column))
        pos = match.end()
    tokens.append(("end", None, len(text) + 1))
    return tokens


_BINARY = {"||": 1, "&&": 2, "==": 3, "!=": 3, "<": 3, "<=": 3, ">": 3, ">=": 3, "in": 3, "+": 4, "-": 4}
_METHODS = {"startsWith", "endsWith", "contains", "matches", "lowerAscii", "upperAscii", "size", "compareTo",
            "isGreaterThan", "isLessThan", "asInteger", "asApproximateFloat", "major", "minor", "patch"}
_UNSUPPORTED = {"*": "the '*' operator", "/": "the '/' operator", "%": "the '%' operator", "?": "the ternary '?:'",
                "{": "map literals", ":": "':'", "}": "'}'"}


class _Parser:
    """Precedence climbing over the token list; nodes are tuples ``(kind, ...)``."""

    def __init__(self, text: str):
        self.text = text
        self.tokens = _tokenize(text)
        self.pos = 0

    def peek(self):
        return self.tokens[self.pos]

    def take(self):
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def fail(self, token, what: str = ""):
        kind, value, column = token
        if kind == "op" and value in _UNSUPPORTED:
            raise CelError("CEL: unsupported construct at column %d: %s" % (column, _UNSUPPORTED[value]))
        shown = "end of expression" if kind == "end" else repr(value)
        raise CelError("CEL syntax error at column %d: unexpected %s%s" % (column, shown, what and ", " + what))

    def expect(self, op: str):
        token = self.take()
        if token[0] != "op" or token[1] != op:
            self.fail(token, "expected %r" % op)
        return token

    def parse(self):
        node = self.expression(0)
        if self.peek()[0] != "end":
            self.fail(self.peek())
        return node

    def expression(self, min_prec: int):
        left = self.unary()
        while True:
            kind, value, _column = self.peek()
            prec = _BINARY.get(value) if kind == "op" else None
            if prec is None or prec <= min_prec:
                if kind == "op" and value in _UNSUPPORTED:
                    self.fail(self.peek())
                return left
            self.take()
            right = self.expression(prec)
            left = ("binary", value, left, right)

    def unary(self):
        kind, value, _column = self.peek()
        if kind == "op" and value in ("!", "-"):
            self.take()
            return ("unary", value, self.unary())
        return self.member()

    def member(self):
        node = self.primary()
        while True:
            kind, value, _column = self.peek()
            if kind == "op" and value == ".":
                self.take()
                name = self.take()
                if name[0] != "id":
                    self.fail(name, "expected a field or method name")
                if self.peek()[1] == "(" and self.peek()[0] == "op":
                    if name[1] not in _METHODS:
                        raise CelError("CEL: unsupported method at column %d: .%s()" % (name[2], name[1]))
                    node = ("method", node, name[1], self.arguments(), name[2])
                else:
                    node = ("select", node, name[1])
            elif kind == "op" and value == "[":
                self.take()
                index = self.expression(0)
                self.expect("]")
                node = ("index", node, index)
            else:
                return node

    def arguments(self) -> list:
        self.expect("(")
        args = []
        if self.peek()[1] == ")" and self.peek()[0] == "op":
            self.take()
            return args
        while True:
            args.append(self.expression(0))
            token = self.take()
            if token[0] == "op" and token[1] == ")":
                return args
            if token[0] != "op" or token[1] != ",":
                self.fail(token, "expected ',' or ')'")

    def primary(self):
        token = self.take()
        kind, value, column = token
        if kind in ("num", "str"):
            return ("lit", value)
        if kind == "id":
            if value in ("true", "false"):
                return ("lit", value == "true")
            if value == "null":
                return ("lit", None)
            if self.peek()[0] == "op" and self.peek()[1] == "(":
                args = self.arguments()
                if value == "has":
                    if len(args) != 1 or args[0][0] != "select":
                        raise CelError("CEL syntax error at column %d: has() needs one field selection, "
                                       "e.g. has(device.attributes['d'].name)" % column)
                    return ("has", args[0][1], args[0][2])
                if value not in _FUNCTIONS:
                    raise CelError("CEL: unsupported function at column %d: %s()" % (column, value))
                return ("call", value, args, column)
            return ("ident", value, column)
        if kind == "op" and value == "(":
            node = self.expression(0)
            self.expect(")")
            return node
        if kind == "op" and value == "[":
            items = []
            if not (self.peek()[0] == "op" and self.peek()[1] == "]"):
                while True:
                    items.append(self.expression(0))
                    nxt = self.take()
                    if nxt[0] == "op" and nxt[1] == "]":
                        break
                    if nxt[0] != "op" or nxt[1] != ",":
                        self.fail(nxt, "expected ',' or ']'")
            else:
                self.take()
            return ("list", items)
        self.fail(token)
        return None


# -- evaluation ------------------------------------------------------------------------------------

def _type_name(value) -> str:
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int):
        return "int"
    if isinstance(value, float):
        return "double"
    if isinstance(value, str):
        return "string"
    if value is None:
        return "null_type"
    if isinstance(value, Quantity):
        return "Quantity"
    if isinstance(value, Semver):
        return "Semver"
    if isinstance(value, dict):
        return "map"
    if isinstance(value, list):
        return "list"
    return type(value).__name__


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _equal(left, right) -> bool:
    if _number(left) and _number(right):
        return left == right
    if _type_name(left) != _type_name(right):
        return False  # heterogeneous equality is false, as in cel-go
    if isinstance(left, (Quantity, Semver)):
        return left.compare(right) == 0
    return left == right


def _order(op: str, left, right) -> bool:
    same = _type_name(left) == _type_name(right)
    if (_number(left) and _number(right)) or (same and _type_name(left) in ("string", "bool")):
        cmp = (left > right) - (left < right)
    else:
        raise CelEvalError("CEL runtime error: no such overload: %s %s %s" % (_type_name(left), op, _type_name(right)))
    return {"<": cmp < 0, "<=": cmp <= 0, ">": cmp > 0, ">=": cmp >= 0}[op]


def _need(value, kinds: tuple, what: str):
    if _type_name(value) not in kinds:
        raise CelEvalError("CEL runtime error: no such overload: %s(%s)" % (what, _type_name(value)))
    return value


def _fn_quantity(text):
    return parse_quantity(_need(text, ("string",), "quantity"))


def _fn_semver(text, *_rest):
    return parse_semver(_need(text, ("string",), "semver"))


def _fn_size(value):
    return len(_need(value, ("string", "list", "map"), "size"))


_FUNCTIONS = {"quantity": _fn_quantity, "semver": _fn_semver, "size": _fn_size}


def _method(target, name: str, args: list, column: int):
    kind = _type_name(target)
    if kind == "string":
        unary = {"lowerAscii": str.lower, "upperAscii": str.upper, "size": len}
        if name in unary and not args:
            return unary[name](target)
        if name in ("startsWith", "endsWith", "contains", "matches") and len(args) == 1:
            arg = _need(args[0], ("string",), name)
            if name == "matches":
                try:
                    return re.search(arg, target) is not None
                except re.error as exc:
                    raise CelEvalError("CEL runtime error: bad regular expression %r: %s" % (arg, exc)) from exc
            return {"startsWith": target.startswith, "endsWith": target.endswith,
                    "contains": target.__contains__}[name](arg)
    elif kind in ("Quantity", "Semver"):
        if name in ("compareTo", "isGreaterThan", "isLessThan") and len(args) == 1:
            cmp = target.compare(_need(args[0], (kind,), name))
            return {"compareTo": cmp, "isGreaterThan": cmp > 0, "isLessThan": cmp < 0}[name]
        if kind == "Quantity" and name == "asInteger" and not args:
            return int(target.value)
        if kind == "Quantity" and name == "asApproximateFloat" and not args:
            return float(target.value)
        if kind == "Semver" and name in ("major", "minor", "patch") and not args:
            return target.key[("major", "minor", "patch").index(name)]
    elif kind in ("list", "map") and name == "size" and not args:
        return len(target)
    raise CelEvalError("CEL runtime error at column %d: no such overload: %s.%s(%s)"
                       % (column, kind, name, ", ".join(_type_name(a) for a in args)))


def _lookup(container, key):
    if isinstance(container, dict):
        try:
            return container[key]
        except KeyError:
            raise CelEvalError("CEL runtime error: no such key: %s" % (key,)) from None
    if isinstance(container, list) and _number(key) and isinstance(key, int):
        if not 0 <= key < len(container):
            raise CelEvalError("CEL runtime error: index out of range: %d" % key)
        return container[key]
    raise CelEvalError("CEL runtime error: no such overload: %s[%s]" % (_type_name(container), _type_name(key)))


def _eval(node, env: dict):
    kind = node[0]
    if kind == "lit":
        return node[1]
    if kind == "ident":
        if node[1] not in env:
            raise CelEvalError("CEL runtime error at column %d: undeclared reference to %r" % (node[2], node[1]))
        return env[node[1]]
    if kind == "list":
        return [_eval(item, env) for item in node[1]]
    if kind == "select":
        return _lookup(_eval(node[1], env), node[2])
    if kind == "index":
        return _lookup(_eval(node[1], env), _eval(node[2], env))
    if kind == "has":
        target = _eval(node[1], env)
        if not isinstance(target, dict):
            raise CelEvalError("CEL runtime error: has() on %s" % _type_name(target))
        return node[2] in target
    if kind == "call":
        return _FUNCTIONS[node[1]](*[_eval(arg, env) for arg in node[2]])
    if kind == "method":
        return _method(_eval(node[1], env), node[2], [_eval(arg, env) for arg in node[3]], node[4])
    if kind == "unary":
        value = _eval(node[2], env)
        if node[1] == "!":
            return not _need(value, ("bool",), "!")
        return -_need(value, ("int", "double"), "-")
    op, left_node, right_node = node[1], node[2], node[3]
    if op in ("&&", "||"):
        return _logical(op, left_node, right_node, env)
    left, right = _eval(left_node, env), _eval(right_node, env)
    if op == "==":
        return _equal(left, right)
    if op == "!=":
        return not _equal(left, right)
    if op == "in":
        if isinstance(right, list):
            return any(_equal(left, item) for item in right)
        if isinstance(right, dict):
            return left in right
        raise CelEvalError("CEL runtime error: no such overload: %s in %s" % (_type_name(left), _type_name(right)))
    if op in ("+", "-"):
        if _number(left) and _number(right):
            return left + right if op == "+" else left - right
        if op == "+" and _type_name(left) == _type_name(right) and _type_name(left) in ("string", "list"):
            return left + right
        raise CelEvalError("CEL runtime error: no such overload: %s %s %s" % (_type_name(left), op, _type_name(right)))
    return _order(op, left, right)


def _logical(op: str, left_node, right_node, env: dict) -> bool:
    decisive = op == "||"  # true decides ||, false decides &&
    error = None
    for side in (left_node, right_node):
        try:
            value = _need(_eval(side, env), ("bool",), op)
        except CelEvalError as exc:
            error = error or exc
            continue
        if value is decisive:
            return decisive
    if error is not None:
        raise error
    return not decisive


class Program:
    def __init__(self, text: str, tree):
        self.text = text
        self.tree = tree

    def evaluate(self, env: dict):
        try:
            return _eval(self.tree, env)
        except RecursionError:
            raise CelEvalError("CEL runtime error: expression too deeply nested") from None


@functools.lru_cache(maxsize=512)
def compile_expression(text: str) -> Program:
    if not isinstance(text, str) or not text.strip():
        raise CelError("CEL syntax error: empty expression")
    try:
        return Program(text, _Parser(text).parse())
    except RecursionError:
        raise CelError("CEL syntax error: expression too deeply nested") from None


def device_matches(text: str, device: dict) -> bool:
    """Evaluate a selector for ``device`` (a ``device_env``); a non-bool result is an error."""
    result = compile_expression(text).evaluate({"device": device})
    if not isinstance(result, bool):
        raise CelEvalError("CEL runtime error: selector %r returned %s, not bool" % (text, _type_name(result)))
    return result
