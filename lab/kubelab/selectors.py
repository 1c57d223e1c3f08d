# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Label and field selectors, as kube-apiserver parses and applies them.

Label selectors follow ``k8s.io/apimachinery/pkg/labels`` (``labels.Parse``): ``a=b``, ``a==b``,
``a!=b``, ``a in (x, y)``, ``a notin (x)``, ``a``, ``!a``, ``a>1``, ``a<1``, comma-separated (a
comma inside ``( )`` separates values), whitespace tolerant, keys and values validated as label
keys and values. Errors read as kube-apiserver's: ``unable to parse requirement: found ...``.

Field selectors follow ``k8s.io/apimachinery/pkg/fields`` (``fields.ParseSelector``): terms
``field=value``, ``field==value``, ``field!=value`` joined by ``,``; ``\\,``, ``\\=`` and ``\\\\``
escape a value. Which fields a kind supports follows the field label conversion functions that
kube-apiserver registers (``pkg/apis/core/v1/conversion.go`` and friends); any other field is
refused with 400 ``field label not supported: <field>``.

All errors are ``ApiError(400, "BadRequest", ...)``.
"""

from __future__ import annotations

import re

from kubelab.errors import bad_request

__all__ = [
    "LabelSelector",
    "Requirement",
    "FieldSelector",
    "FieldRequirement",
    "parse_label_selector",
    "label_selector_from_object",
    "label_selector_causes",
    "parse_field_selector",
    "field_value",
    "supported_fields",
    "EVERYTHING",
    "NOTHING",
]

# ----------------------------------------------------------------------------------------------
# label keys and values (k8s.io/apimachinery/pkg/util/validation)

_NAME_FMT = "([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]"
_NAME_RE = re.compile("^" + _NAME_FMT + "$")
_VALUE_FMT = "(" + _NAME_FMT + ")?"
_VALUE_RE = re.compile("^" + _VALUE_FMT + "$")
_DNS1123_SUBDOMAIN_FMT = "[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*"
_DNS1123_SUBDOMAIN_RE = re.compile("^" + _DNS1123_SUBDOMAIN_FMT + "$")

_NAME_MSG = ("name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
             "alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '%s')"
             % _NAME_FMT)
_VALUE_MSG = ("a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must "
              "start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used "
              "for validation is '%s')" % _VALUE_FMT)
_PREFIX_MSG = ("prefix part a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' or "
               "'.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for "
               "validation is '%s')" % _DNS1123_SUBDOMAIN_FMT)


def _key_errors(key: str) -> list[str]:
    """Problems with ``key`` as a qualified name (``[prefix/]name``), kube's wording."""
    parts = key.split("/")
    if len(parts) == 1:
        prefix, name = "", parts[0]
    elif len(parts) == 2:
        prefix, name = parts
        if not prefix:
            return ["prefix part must be non-empty"]
    else:
        return ["a qualified name must consist of alphanumeric characters, '-', '_' or '.', and must start and end "
                "with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for "
                "validation is '%s') with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')"
                % _NAME_FMT]
    errors = []
    if prefix:
        if len(prefix) > 253:
            errors.append("prefix part must be no more than 253 characters")
        if not _DNS1123_SUBDOMAIN_RE.match(prefix):
            errors.append(_PREFIX_MSG)
    if not name:
        errors.append("name part must be non-empty")
    else:
        if len(name) > 63:
            errors.append("name part must be no more than 63 characters")
        if not _NAME_RE.match(name):
            errors.append(_NAME_MSG)
    return errors


def _value_errors(value: str) -> list[str]:
    errors = []
    if len(value) > 63:
        errors.append("must be no more than 63 characters")
    if not _VALUE_RE.match(value):
        errors.append(_VALUE_MSG)
    return errors


def _quote(text: str) -> str:
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


# ----------------------------------------------------------------------------------------------
# label selectors

OPERATORS = ("=", "==", "!=", "in", "notin", "exists", "!", "gt", "lt")
_SET_BASED = {"in", "notin"}


class Requirement:
    """One term of a label selector: ``key operator values``.

    ``operator`` is one of ``=``, ``==``, ``!=``, ``in``, ``notin``, ``exists``, ``!`` (does not
    exist), ``gt``, ``lt`` (the ``selection.Operator`` strings of apimachinery).
    """

    __slots__ = ("key", "operator", "values")

    def __init__(self, key: str, operator: str, values=()):
        self.key = key
        self.operator = operator
        self.values = tuple(sorted(set(values)))

    def matches(self, labels: dict | None) -> bool:
        labels = labels or {}
        present = self.key in labels
        op = self.operator
        if op in ("=", "==", "in"):
            return present and str(labels[self.key]) in self.values
        if op in ("!=", "notin"):
            return not present or str(labels[self.key]) not in self.values
        if op == "exists":
            return present
        if op == "!":
            return not present
        if op in ("gt", "lt"):
            if not present:
                return False
            try:
                have = int(str(labels[self.key]))
            except ValueError:
                return False
            want = int(self.values[0])
            return have > want if op == "gt" else have < want
        return False

    def __str__(self) -> str:
        op = self.operator
        if op == "exists":
            return self.key
        if op == "!":
            return "!" + self.key
        if op in _SET_BASED:
            return "%s %s (%s)" % (self.key, op, ",".join(self.values))
        symbol = {"gt": ">", "lt": "<"}.get(op, op)
        return "%s%s%s" % (self.key, symbol, self.values[0] if self.values else "")

    def __repr__(self) -> str:
        return "Requirement(%r, %r, %r)" % (self.key, self.operator, self.values)

    def __eq__(self, other) -> bool:
        return isinstance(other, Requirement) and (self.key, self.operator, self.values) == (
            other.key, other.operator, other.values)

    def __hash__(self) -> int:
        return hash((self.key, self.operator, self.values))


class LabelSelector:
    """A conjunction of requirements. No requirements: matches everything, unless ``nothing``."""

    def __init__(self, requirements=(), nothing: bool = False):
        self.requirements = sorted(requirements, key=lambda r: r.key)
        self.nothing = nothing

    def matches(self, labels: dict | None) -> bool:
        if self.nothing:
            return False
        return all(r.matches(labels) for r in self.requirements)

    def empty(self) -> bool:
        """True when it selects everything."""
        return not self.nothing and not self.requirements

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "LabelSelector(%r)" % str(self) if not self.nothing else "LabelSelector(<nothing>)"


EVERYTHING = LabelSelector()
NOTHING = LabelSelector(nothing=True)

_SPECIAL = "=!(),<>"
_TOK_ID, _TOK_EOS, _TOK_IN, _TOK_NOTIN = "identifier", "end of string", "in", "notin"
_SYMBOLS = {"==": "==", "!=": "!=", "=": "=", "!": "!", "(": "(", ")": ")", ",": ",", ">": ">", "<": "<"}


def _lex(text: str) -> list[tuple[str, str]]:
    """Tokens ``(kind, literal)``: kinds are ``identifier``, a symbol, or ``end of string``."""
    tokens = []
    i, n = 0, len(text)
    while i < n:
        ch = text[i]
        if ch.isspace():
            i += 1
            continue
        if ch in _SPECIAL:
            two = text[i:i + 2]
            if two in ("==", "!="):
                tokens.append((two, two))
                i += 2
            else:
                tokens.append((ch, ch))
                i += 1
            continue
        j = i
        while j < n and not text[j].isspace() and text[j] not in _SPECIAL:
            j += 1
        word = text[i:j]
        tokens.append((word if word in (_TOK_IN, _TOK_NOTIN) else _TOK_ID, word))
        i = j
    tokens.append((_TOK_EOS, ""))
    return tokens


class _LabelParser:
    def __init__(self, text: str):
        self.tokens = _lex(text)
        self.pos = 0

    def peek(self, values: bool = False) -> tuple[str, str]:
        kind, lit = self.tokens[self.pos]
        if values and kind in (_TOK_IN, _TOK_NOTIN):
            kind = _TOK_ID
        return kind, lit

    def take(self, values: bool = False) -> tuple[str, str]:
        tok = self.peek(values)
        if self.pos < len(self.tokens) - 1:
            self.pos += 1
        return tok

    def parse(self) -> list[Requirement]:
        requirements = []
        while True:
            kind, lit = self.peek()
            if kind == _TOK_EOS:
                return requirements
            if kind not in (_TOK_ID, "!"):
                raise ValueError("found '%s', expected: !, identifier, or 'end of string'" % lit)
            try:
                requirements.append(self.requirement())
            except ValueError as exc:
                raise ValueError("unable to parse requirement: %s" % exc) from None
            kind, lit = self.take()
            if kind == _TOK_EOS:
                return requirements
            if kind != ",":
                raise ValueError("found '%s', expected: ',' or 'end of string'" % lit)
            kind, lit = self.peek()
            if kind not in (_TOK_ID, "!"):
                raise ValueError("found '%s', expected: identifier after ','" % lit)

    def requirement(self) -> Requirement:
        operator = ""
        kind, lit = self.take()
        if kind == "!":
            operator = "!"
            kind, lit = self.take()
        if kind != _TOK_ID:
            raise ValueError("found '%s', expected: identifier" % lit)
        key = lit
        errors = _key_errors(key)
        if errors:
            raise ValueError("key: Invalid value: %s: %s" % (_quote(key), "; ".join(errors)))
        if self.peek(values=True)[0] in (_TOK_EOS, ","):
            return Requirement(key, operator or "exists")
        if operator == "!":
            return Requirement(key, "!")
        kind, lit = self.take()
        operator = {"=": "=", "==": "==", "!=": "!=", _TOK_IN: "in", _TOK_NOTIN: "notin", ">": "gt", "<": "lt"}.get(kind)
        if operator is None:
            raise ValueError("found '%s', expected: in, notin, =, ==, !=, gt, lt" % lit)
        if operator in _SET_BASED:
            values = self.value_set()
        else:
            values = self.exact_value()
        return _new_requirement(key, operator, values)

    def value_set(self) -> list[str]:
        kind, lit = self.take()
        if kind != "(":
            raise ValueError("found '%s', expected: '('" % lit)
        kind, lit = self.peek(values=True)
        if kind == ")":
            self.take()
            return []
        if kind not in (_TOK_ID, ","):
            raise ValueError("found '%s', expected: ',', ')' or identifier" % lit)
        values = []
        while True:
            kind, lit = self.take(values=True)
            if kind == _TOK_ID:
                values.append(lit)
                kind2, lit2 = self.peek(values=True)
                if kind2 == ")":
                    self.take()
                    return values
                if kind2 != ",":
                    raise ValueError("found '%s', expected: ',' or ')'" % lit2)
            elif kind == ",":
                # "a in (x,,y)" and "a in (x,)": kube inserts an empty value
                if self.peek(values=True)[0] != _TOK_ID:
                    values.append("")
                if self.peek(values=True)[0] == ")":
                    self.take()
                    return values
            else:
                raise ValueError("found '%s', expected: ',', or identifier" % lit)

    def exact_value(self) -> list[str]:
        kind, lit = self.peek(values=True)
        if kind in (_TOK_EOS, ","):
            return [""]
        kind, lit = self.take(values=True)
        if kind != _TOK_ID:
            raise ValueError("found '%s', expected: identifier" % lit)
        return [lit]


def _new_requirement(key: str, operator: str, values: list[str]) -> Requirement:
    """``labels.NewRequirement``: the operator-specific checks on ``values``."""
    if operator in _SET_BASED and not values:
        raise ValueError("values: Invalid value: []string{}: for 'in', 'notin' operators, values set can't be empty")
    if operator in ("=", "==", "!=") and len(values) != 1:
        raise ValueError("values: Invalid value: %s: exact-match compatibility requires one single value" % values)
    if operator in ("exists", "!") and values:
        raise ValueError("values: Invalid value: %s: values set must be empty for exists and does not exist" % values)
    if operator in ("gt", "lt"):
        if len(values) != 1:
            raise ValueError("values: Invalid value: %s: for 'Gt', 'Lt' operators, exactly one value is required"
                             % values)
        try:
            int(values[0])
        except ValueError:
            raise ValueError("values[0]: Invalid value: %s: for 'Gt', 'Lt' operators, the value must be an integer"
                             % _quote(values[0])) from None
    else:
        for index, value in enumerate(values):
            errors = _value_errors(value)
            if errors:
                raise ValueError("values[%d][%s]: Invalid value: %s: %s" % (index, key, _quote(value), "; ".join(errors)))
    return Requirement(key, operator, values)


def parse_label_selector(text: str | None) -> LabelSelector:
    """Parse the query-string form of a label selector (already URL-decoded).

    ``None`` or blank selects everything. Bad syntax raises 400 BadRequest with kube's message.
    """
    if text is None or not text.strip():
        return LabelSelector()
    try:
        return LabelSelector(_LabelParser(text).parse())
    except ValueError as exc:
        raise bad_request(str(exc)) from None


_OBJECT_OPERATORS = {"In": "in", "NotIn": "notin", "Exists": "exists", "DoesNotExist": "!"}


def label_selector_causes(selector, field: str = "spec.selector") -> list[dict]:
    """Validation causes (``{"reason", "message", "field"}``) for a ``metav1.LabelSelector`` object.

    Empty when valid; the server turns a non-empty list into ``errors.invalid(...)`` (422).
    """
    causes = []
    if selector is None:
        return causes
    if not isinstance(selector, dict):
        return [{"reason": "FieldValueInvalid", "field": field,
                 "message": "Invalid value: %s: must be an object" % (selector,)}]
    for key, value in (selector.get("matchLabels") or {}).items():
        for message in _key_errors(str(key)):
            causes.append({"reason": "FieldValueInvalid", "field": "%s.matchLabels" % field,
                           "message": "Invalid value: %s: %s" % (_quote(str(key)), message)})
        if not isinstance(value, str):
            causes.append({"reason": "FieldValueInvalid", "field": "%s.matchLabels" % field,
                           "message": "Invalid value: %s: must be a string" % (value,)})
            continue
        for message in _value_errors(value):
            causes.append({"reason": "FieldValueInvalid", "field": "%s.matchLabels" % field,
                           "message": "Invalid value: %s: %s" % (_quote(value), message)})
    for index, expr in enumerate(selector.get("matchExpressions") or []):
        where = "%s.matchExpressions[%d]" % (field, index)
        if not isinstance(expr, dict):
            causes.append({"reason": "FieldValueInvalid", "field": where, "message": "must be an object"})
            continue
        operator, values = expr.get("operator"), expr.get("values") or []
        if operator in ("In", "NotIn") and not values:
            causes.append({"reason": "FieldValueRequired", "field": where + ".values",
                           "message": "Required value: must be specified when `operator` is 'In' or 'NotIn'"})
        elif operator in ("Exists", "DoesNotExist") and values:
            causes.append({"reason": "FieldValueForbidden", "field": where + ".values",
                           "message": "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"})
        elif operator not in _OBJECT_OPERATORS:
            causes.append({"reason": "FieldValueInvalid", "field": where + ".operator",
                           "message": "Invalid value: %s: not a valid selector operator" % _quote(str(operator))})
        for message in _key_errors(str(expr.get("key", ""))):
            causes.append({"reason": "FieldValueInvalid", "field": where + ".key",
                           "message": "Invalid value: %s: %s" % (_quote(str(expr.get("key", ""))), message)})
    return causes


def label_selector_from_object(selector) -> LabelSelector:
    """``metav1.LabelSelectorAsSelector``: ``{"matchLabels": {...}, "matchExpressions": [...]}``.

    ``None`` selects nothing; ``{}`` selects everything (as in apimachinery). A bad operator or
    bad values raise 400 BadRequest (call ``label_selector_causes`` first to answer 422 instead).
    """
    if selector is None:
        return LabelSelector(nothing=True)
    if not isinstance(selector, dict):
        raise bad_request("invalid label selector: %r" % (selector,))
    requirements = []
    try:
        for key, value in sorted((selector.get("matchLabels") or {}).items()):
            errors = _key_errors(str(key))
            if errors:
                raise ValueError("key: Invalid value: %s: %s" % (_quote(str(key)), "; ".join(errors)))
            requirements.append(_new_requirement(str(key), "=", [str(value)]))
        for expr in selector.get("matchExpressions") or []:
            operator = _OBJECT_OPERATORS.get(expr.get("operator"))
            if operator is None:
                raise ValueError("%s is not a valid label selector operator" % _quote(str(expr.get("operator"))))
            key = str(expr.get("key", ""))
            errors = _key_errors(key)
            if errors:
                raise ValueError("key: Invalid value: %s: %s" % (_quote(key), "; ".join(errors)))
            requirements.append(_new_requirement(key, operator, [str(v) for v in expr.get("values") or []]))
    except ValueError as exc:
        raise bad_request(str(exc)) from None
    return LabelSelector(requirements)


# ----------------------------------------------------------------------------------------------
# field selectors

def _get(obj: dict, *path):
    for part in path:
        if not isinstance(obj, dict):
            return None
        obj = obj.get(part)
    return obj


def _text(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _bool(value) -> str:
    return "true" if value else "false"


def _pod_ips(obj: dict) -> str:
    ips = _get(obj, "status", "podIPs") or []
    return ",".join(str(ip.get("ip", "")) for ip in ips if isinstance(ip, dict))


# kind -> field -> getter; every kind also has metadata.name and metadata.namespace
# (pkg/apis/*/v1/conversion.go: AddFieldLabelConversionFunc; pkg/registry/*/strategy.go: ToSelectableFields).
_FIELDS = {
    "Pod": {
        "spec.nodeName": lambda o: _text(_get(o, "spec", "nodeName")),
        "spec.restartPolicy": lambda o: _text(_get(o, "spec", "restartPolicy")),
        "spec.schedulerName": lambda o: _text(_get(o, "spec", "schedulerName")),
        "spec.serviceAccountName": lambda o: _text(_get(o, "spec", "serviceAccountName")),
        "spec.hostNetwork": lambda o: _bool(_get(o, "spec", "hostNetwork")),
        "status.phase": lambda o: _text(_get(o, "status", "phase")),
        "status.podIP": lambda o: _text(_get(o, "status", "podIP")),
        "status.podIPs": _pod_ips,
        "status.nominatedNodeName": lambda o: _text(_get(o, "status", "nominatedNodeName")),
    },
    "Node": {
        "spec.unschedulable": lambda o: _bool(_get(o, "spec", "unschedulable")),
    },
    # pkg/registry/resource/resourceslice/strategy.go: ResourceSliceToSelectableFields
    "ResourceSlice": {
        "spec.nodeName": lambda o: _text(_get(o, "spec", "nodeName")),
        "spec.driver": lambda o: _text(_get(o, "spec", "driver")),
    },
    "Event": {
        "involvedObject.kind": lambda o: _text(_get(o, "involvedObject", "kind")),
        "involvedObject.namespace": lambda o: _text(_get(o, "involvedObject", "namespace")),
        "involvedObject.name": lambda o: _text(_get(o, "involvedObject", "name")),
        "involvedObject.uid": lambda o: _text(_get(o, "involvedObject", "uid")),
        "involvedObject.apiVersion": lambda o: _text(_get(o, "involvedObject", "apiVersion")),
        "involvedObject.resourceVersion": lambda o: _text(_get(o, "involvedObject", "resourceVersion")),
        "involvedObject.fieldPath": lambda o: _text(_get(o, "involvedObject", "fieldPath")),
        "reason": lambda o: _text(o.get("reason")),
        "reportingComponent": lambda o: _text(o.get("reportingComponent")),
        "source": lambda o: _text(_get(o, "source", "component")),
        "type": lambda o: _text(o.get("type")),
    },
    "Namespace": {
        "status.phase": lambda o: _text(_get(o, "status", "phase")),
    },
    "Secret": {
        "type": lambda o: _text(o.get("type")),
    },
    "Service": {
        "spec.clusterIP": lambda o: _text(_get(o, "spec", "clusterIP")),
        "spec.type": lambda o: _text(_get(o, "spec", "type")),
    },
    "ReplicaSet": {
        "status.replicas": lambda o: _text(_get(o, "status", "replicas") or 0),
    },
    "ReplicationController": {
        "status.replicas": lambda o: _text(_get(o, "status", "replicas") or 0),
    },
    "Job": {
        "status.successful": lambda o: _text(_get(o, "status", "succeeded") or 0),
    },
    "CertificateSigningRequest": {
        "spec.signerName": lambda o: _text(_get(o, "spec", "signerName")),
    },
}

_META_FIELDS = {
    "metadata.name": lambda o: _text(_get(o, "metadata", "name")),
    "metadata.namespace": lambda o: _text(_get(o, "metadata", "namespace")),
}


def supported_fields(kind: str | None = None) -> list[str]:
    """Field selector fields for ``kind``; ``None``: those of every kind known here."""
    fields = set(_META_FIELDS)
    if kind is None:
        for table in _FIELDS.values():
            fields.update(table)
    else:
        fields.update(_FIELDS.get(kind, {}))
    return sorted(fields)


def field_value(obj: dict, field: str) -> str:
    """The string a field selector compares for ``field`` of ``obj`` (kind from ``obj["kind"]``)."""
    getter = _META_FIELDS.get(field) or _FIELDS.get(obj.get("kind", ""), {}).get(field)
    if getter is None:
        for table in _FIELDS.values():
            if field in table:
                getter = table[field]
                break
    if getter is None:
        raise bad_request("field label not supported: %s" % field)
    return getter(obj)


class FieldRequirement:
    """``field op value`` with ``op`` one of ``=``, ``==``, ``!=``."""

    __slots__ = ("field", "operator", "value")

    def __init__(self, field: str, operator: str, value: str):
        self.field = field
        self.operator = operator
        self.value = value

    def matches(self, obj: dict) -> bool:
        have = field_value(obj, self.field)
        return have != self.value if self.operator == "!=" else have == self.value

    def __str__(self) -> str:
        escaped = self.value.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
        return "%s%s%s" % (self.field, self.operator, escaped)

    def __repr__(self) -> str:
        return "FieldRequirement(%r, %r, %r)" % (self.field, self.operator, self.value)


class FieldSelector:
    """A conjunction of field requirements; none selects everything."""

    def __init__(self, requirements=()):
        self.requirements = list(requirements)

    def matches(self, obj: dict) -> bool:
        return all(r.matches(obj) for r in self.requirements)

    def empty(self) -> bool:
        return not self.requirements

    def exact_value(self, field: str) -> str | None:
        """The value ``field`` must equal (``field=value``), if the selector pins one."""
        for req in self.requirements:
            if req.field == field and req.operator in ("=", "=="):
                return req.value
        return None

    def __str__(self) -> str:
        return ",".join(str(r) for r in self.requirements)

    def __repr__(self) -> str:
        return "FieldSelector(%r)" % str(self)


def _split_terms(text: str) -> list[str]:
    """Split on commas that are not escaped by a backslash (``fields.splitTerms``)."""
    terms, current, escaped = [], [], False
    for ch in text:
        if escaped:
            current.append(ch)
            escaped = False
        elif ch == "\\":
            current.append(ch)
            escaped = True
        elif ch == ",":
            terms.append("".join(current))
            current = []
        else:
            current.append(ch)
    terms.append("".join(current))
    return terms


def _split_term(term: str):
    """``fields.splitTerm``: the first ``!=``, ``==`` or ``=`` not escaped by a backslash."""
    i = 0
    while i < len(term):
        if term[i] == "\\":
            i += 2
            continue
        for op in ("!=", "==", "="):
            if term.startswith(op, i):
                return term[:i], op, term[i + len(op):]
        i += 1
    return None


def _unescape(value: str) -> str:
    out, i = [], 0
    while i < len(value):
        ch = value[i]
        if ch == "\\":
            nxt = value[i + 1:i + 2]
            if nxt not in ("\\", ",", "="):
                raise bad_request("invalid field selector: invalid escape sequence: %s" % value[i:i + 2])
            out.append(nxt)
            i += 2
            continue
        if ch in ",=":
            raise bad_request("invalid field selector: unescaped character in value: %s" % ch)
        out.append(ch)
        i += 1
    return "".join(out)


def parse_field_selector(text: str | None, kind: str | None = None) -> FieldSelector:
    """Parse a field selector (already URL-decoded) for objects of ``kind`` (``"Pod"``, ...).

    ``kind=None`` accepts any field known for any kind. Bad syntax raises 400 ``invalid selector:
    ...``; a field the kind does not support raises 400 ``field label not supported: <field>``.
    """
    if text is None or not text.strip():
        return FieldSelector()
    allowed = set(supported_fields(kind))
    requirements = []
    for term in sorted(_split_terms(text)):
        if not term:
            continue
        parts = _split_term(term)
        if parts is None:
            raise bad_request("invalid selector: '%s'; can't understand '%s'" % (text, term))
        field, op, raw = parts
        value = _unescape(raw)
        if field not in allowed:
            raise bad_request("field label not supported: %s" % field)
        requirements.append(FieldRequirement(field, op, value))
    return FieldSelector(requirements)
