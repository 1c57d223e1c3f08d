# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and check Container Device Interface (CDI) spec files on a node.

The name and filename checks are standard library only (the node module uses them to pick spec
files); :func:`parse_cdi_spec` reads YAML/JSON with PyYAML (``safe_load``, the C loader when
built) and runs on the controller (``node_config``, the ``gpu_node_facts`` action plugin).

The checks follow what the CDI Go library (tags.cncf.io/container-device-interface, used by
containerd and CRI-O) does when it loads a spec, so that a file this module accepts is one the
runtime loads:

* ``pkg/cdi/spec.go``: strict decoding (unknown fields are an error), ``cdiVersion`` must be a
  known version and at least the minimum the spec's features need, vendor and class names are
  validated, device names are validated and unique, and a spec without devices is invalid.
* ``specs-go/version.go``: known versions and the features that raise the minimum version.
* ``pkg/parser/parser.go``: vendor/class/device name syntax. SPEC.md adds that the class (name
  segment) is at most 63 characters and the vendor (prefix) a DNS subdomain of at most 253.
* ``pkg/cdi/spec-dirs.go``: spec files are picked up by extension; note that the CDI library
  itself only loads ``.json`` and ``.yaml`` files (see :func:`is_cdi_spec_filename`).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import quote


KNOWN_CDI_VERSIONS = (
    "0.1.0", "0.2.0", "0.3.0", "0.4.0", "0.5.0", "0.6.0", "0.7.0", "0.8.0", "1.0.0", "1.1.0",
)
EARLIEST_SUPPORTED_CDI_VERSION = "0.3.0"
DEFAULT_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"]

# Extensions this collection treats as CDI specs, and the subset the CDI library loads.
CDI_SPEC_EXTENSIONS = (".yaml", ".yml", ".json")
CDI_LOADED_EXTENSIONS = (".yaml", ".json")

_TOP_LEVEL_FIELDS = ("cdiVersion", "kind", "annotations", "devices", "containerEdits")
_DEVICE_FIELDS = ("name", "annotations", "containerEdits")
_EDIT_FIELDS = ("env", "deviceNodes", "hooks", "mounts", "intelRdt", "additionalGids", "netDevices")

_NAME_CHARS_RE = re.compile(r"^[A-Za-z0-9_.\-]*$")
_DEVICE_CHARS_RE = re.compile(r"^[A-Za-z0-9_.:\-]*$")


def _is_alnum(ch):
    return ("A" <= ch <= "Z") or ("a" <= ch <= "z") or ("0" <= ch <= "9")


def is_cdi_spec_filename(name, loaded_by_cdi_only=False):
    """True when a directory entry is a CDI spec file by its extension.

    By default ``.yaml``, ``.yml`` and ``.json`` count. With ``loaded_by_cdi_only=True`` only
    the extensions the CDI library actually loads (``.yaml``, ``.json``) count: a ``.yml``
    file in /etc/cdi is silently ignored by containerd and CRI-O.
    """
    base = os.path.basename(name or "")
    if base.startswith(".") and base.count(".") == 1:
        return False  # ".yaml" alone is a hidden file without a stem
    exts = CDI_LOADED_EXTENSIONS if loaded_by_cdi_only else CDI_SPEC_EXTENSIONS
    ext = os.path.splitext(base)[1]
    return ext in exts


def _version_key(version):
    return tuple(int(p) for p in version.split("."))


def _normalise_version(value):
    """'v0.5.0' and '0.5.0' name the same version (specs-go newVersion trims a leading v)."""
    if value.startswith("v"):
        return value[1:]
    return value


def validate_name_segment(name, what):
    """Vendor/class syntax from pkg/parser: letter first, alnum last, [A-Za-z0-9_.-] between.

    Returns an error string or None.
    """
    if not name:
        return "empty %s name" % what
    if not ("A" <= name[0] <= "Z" or "a" <= name[0] <= "z"):
        return "%s %s should start with a letter" % (what, quote(name))
    if not _NAME_CHARS_RE.match(name):
        bad = [c for c in name if not re.match(r"[A-Za-z0-9_.\-]", c)][0]
        return "invalid character %r in %s %s" % (bad, what, quote(name))
    if not _is_alnum(name[-1]):
        return "%s %s should end with a letter or digit" % (what, quote(name))
    return None


def validate_kind(kind):
    """Validate a CDI ``kind`` (``vendor/class``). Returns an error string or None."""
    if not isinstance(kind, str):
        return "kind must be a string, got %s" % type(kind).__name__
    parts = kind.split("/", 1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return "kind %s is not of the form vendor/class (for example nvidia.com/gpu)" % quote(kind)
    vendor, klass = parts
    err = validate_name_segment(vendor, "vendor")
    if err:
        return "invalid kind %s: %s" % (quote(kind), err)
    if len(vendor) > 253:
        return "invalid kind %s: vendor longer than 253 characters" % quote(kind)
    err = validate_name_segment(klass, "class")
    if err:
        return "invalid kind %s: %s" % (quote(kind), err)
    if len(klass) > 63:
        return "invalid kind %s: class longer than 63 characters" % quote(kind)
    return None


def validate_device_name(name):
    """Device name syntax from pkg/parser: alnum first and last, [A-Za-z0-9_.:-] between."""
    if not isinstance(name, str):
        return "device name must be a string, got %s" % type(name).__name__
    if name == "":
        return "empty device name"
    if not _is_alnum(name[0]):
        return "device name %s should start with a letter or digit" % quote(name)
    if not _DEVICE_CHARS_RE.match(name):
        return "invalid character in device name %s" % quote(name)
    if not _is_alnum(name[-1]):
        return "device name %s should end with a letter or digit" % quote(name)
    return None


def _list(value):
    return value if isinstance(value, list) else []


def _edits_list(spec):
    edits = []
    for dev in _list(spec.get("devices")):
        if isinstance(dev, dict) and isinstance(dev.get("containerEdits"), dict):
            edits.append(dev["containerEdits"])
    if isinstance(spec.get("containerEdits"), dict):
        edits.append(spec["containerEdits"])
    return edits


# Types of the containerEdits fields (specs-go/config.go); a wrong type fails the CDI library's
# strict decoding, so it is an error of the spec here too.
_EDIT_LISTS = ("env", "deviceNodes", "hooks", "mounts", "additionalGids", "netDevices")
_EDIT_LIST_OF_MAPPINGS = ("deviceNodes", "hooks", "mounts", "netDevices")


def _edit_type_errors(edits, where):
    if edits is None:
        return []
    if not isinstance(edits, dict):
        return ["%s is not a mapping (got %s)" % (where, type(edits).__name__)]
    errors = []
    for field in _EDIT_LISTS:
        value = edits.get(field)
        if value is None:
            continue
        if not isinstance(value, list):
            errors.append("%s.%s is not a list (got %s)" % (where, field, type(value).__name__))
        elif field in _EDIT_LIST_OF_MAPPINGS:
            bad = [i for i, item in enumerate(value) if not isinstance(item, dict)]
            if bad:
                errors.append("%s.%s[%d] is not a mapping" % (where, field, bad[0]))
        elif field == "env" and not all(isinstance(item, str) for item in value):
            errors.append("%s.env holds a value that is not a string" % where)
    if edits.get("intelRdt") is not None and not isinstance(edits.get("intelRdt"), dict):
        errors.append("%s.intelRdt is not a mapping" % where)
    return errors


def minimum_required_version(spec):
    """The lowest cdiVersion the spec's features need (specs-go/version.go, best effort)."""
    required = EARLIEST_SUPPORTED_CDI_VERSION
    reasons = []

    def need(version, why):
        if _version_key(version) > _version_key(required):
            reasons.append((version, why))
            return version
        return required

    edits = _edits_list(spec)
    devices = [d for d in _list(spec.get("devices")) if isinstance(d, dict)]
    for e in edits:
        for m in _list(e.get("mounts")):
            if isinstance(m, dict) and m.get("type"):
                required = need("0.4.0", "mounts[].type")
    for d in devices:
        name = d.get("name")
        if isinstance(name, str) and name and not ("A" <= name[0] <= "Z" or "a" <= name[0] <= "z"):
            required = need("0.5.0", "device name %s does not start with a letter" % quote(name))
    for e in edits:
        for dn in _list(e.get("deviceNodes")):
            if isinstance(dn, dict) and dn.get("hostPath"):
                required = need("0.5.0", "deviceNodes[].hostPath")
    if spec.get("annotations") or any(d.get("annotations") for d in devices):
        required = need("0.6.0", "annotations")
    kind = spec.get("kind")
    if isinstance(kind, str) and "/" in kind and "." in kind.split("/", 1)[1]:
        required = need("0.6.0", "dots in the class name")
    for e in edits:
        if e.get("intelRdt") is not None or e.get("additionalGids"):
            required = need("0.7.0", "intelRdt/additionalGids")
        if e.get("netDevices"):
            required = need("1.1.0", "netDevices")
    why = reasons[-1][1] if reasons else None
    return required, why


#: Deeper nesting is refused before composing: PyYAML's C composer recurses on the C stack and
#: crashes the process (segmentation fault, seen with 100000 nested brackets) instead of raising.
#: Real CDI specs nest 7 levels deep (nvidia-ctk's spec).
MAX_SPEC_DEPTH = 64
#: Characters of one spec text parsed (the node sends at most 1 MiB per file).
MAX_SPEC_CHARS = 1024 * 1024
#: Nodes that aliases may add to a spec once expanded. PyYAML shares an alias's objects, but every
#: walk of the result (a check, a message, a copy) expands them: nine aliases of nine aliases ...
#: (billion laughs) are 10**9 nodes in a few hundred bytes; an alias inside its own anchor is endless.
#: Real CDI specs use no aliases.
MAX_ALIAS_NODES = 100000
#: Characters of a parser message kept (PyYAML quotes the offending text).
MAX_MESSAGE = 300
#: Errors reported per spec; the rest are counted.
MAX_ERRORS = 10


def _yaml():
    """PyYAML, imported only when a spec is parsed (on the controller): importing it costs about
    60 ms, and the node module imports this file for the file-name checks alone."""
    try:
        import yaml  # pylint: disable=import-outside-toplevel
    except ImportError:
        return None
    return yaml


def _nesting_depth(yaml, text, loader, limit):
    """The nesting depth of the YAML ``text`` (at most ``limit + 1``), from libyaml's event stream
    (an iterative state machine: no recursion however deep the text)."""
    return _scan_events(yaml, text, loader, limit)[0]


def _scan_events(yaml, text, loader, depth_limit, alias_limit=MAX_ALIAS_NODES):
    """``(depth, alias_nodes)`` of the YAML ``text`` from its event stream, before anything is
    composed: the nesting depth (stops past ``depth_limit``) and the number of nodes its aliases
    stand for once expanded (stops past ``alias_limit``). Iterative; aliases are counted, never
    expanded (each anchor's expanded size is known when its node ends)."""
    sizes = {}  # anchor -> expanded node count
    stack = []  # [anchor, node count so far] per open collection
    depth = deepest = alias_nodes = 0
    for event in yaml.parse(text, Loader=loader):
        if isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            stack.append([event.anchor, 1])
            depth += 1
            deepest = max(deepest, depth)
            if depth > depth_limit:
                break
            continue
        if isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
            anchor, count = stack.pop() if stack else (None, 1)
        elif isinstance(event, yaml.ScalarEvent):
            anchor, count = event.anchor, 1
        elif isinstance(event, yaml.AliasEvent):
            # An alias of an anchor still open is recursive: endless once expanded. An undefined one
            # is the composer's error.
            recursive = any(entry[0] == event.anchor for entry in stack)
            anchor, count = None, alias_limit + 1 if recursive else sizes.get(event.anchor, 1)
            alias_nodes += count
            if alias_nodes > alias_limit:
                break
        else:
            continue
        if anchor is not None:
            sizes[anchor] = count
        if stack:
            stack[-1][1] += count
    return deepest, alias_nodes


def _message(exc):
    text = " ".join(str(exc).split())
    return text if len(text) <= MAX_MESSAGE else text[:MAX_MESSAGE] + "... (cut)"


def load_spec_text(text):
    """YAML/JSON text -> ``(data, None)`` or ``(None, message)``; never raises for bad text.

    The CDI library reads both forms with a YAML decoder, so does this (JSON is YAML 1.2). Safe
    loading only, libyaml's C loader when built, else PyYAML's Python one. Before anything is
    composed, the event stream is scanned: a text nested deeper than :data:`MAX_SPEC_DEPTH` or whose
    aliases stand for more than :data:`MAX_ALIAS_NODES` nodes is refused, so is a text over
    :data:`MAX_SPEC_CHARS`. Messages are bounded (:data:`MAX_MESSAGE`).
    """
    yaml = _yaml()
    if yaml is None:
        return None, "PyYAML is not available (CDI specs are parsed on the controller)"
    if not isinstance(text, str):
        return None, "invalid YAML/JSON: the spec is not text"
    if len(text) > MAX_SPEC_CHARS:
        return None, "invalid YAML/JSON: larger than %d characters; not parsed" % MAX_SPEC_CHARS
    loader = getattr(yaml, "CSafeLoader", None) or yaml.SafeLoader
    try:
        depth, alias_nodes = _scan_events(yaml, text, loader, MAX_SPEC_DEPTH)
        if depth > MAX_SPEC_DEPTH:
            return None, "invalid YAML/JSON: nested deeper than %d levels" % MAX_SPEC_DEPTH
        if alias_nodes > MAX_ALIAS_NODES:
            return None, ("invalid YAML/JSON: its aliases expand to more than %d nodes (an alias bomb); "
                          "not loaded" % MAX_ALIAS_NODES)
        return yaml.load(text, Loader=loader), None  # nosec: a safe loader
    except yaml.YAMLError as exc:
        return None, "invalid YAML/JSON: %s" % _message(exc)
    except RecursionError:
        return None, "invalid YAML/JSON: nested too deeply"
    except (ValueError, TypeError, OverflowError) as exc:  # e.g. a timestamp out of range, int() of 5,000 digits
        return None, "invalid YAML/JSON: %s" % _message(exc)


def parse_cdi_spec(text, path):
    """Parse one CDI spec file's text.

    Returns ``{"path", "cdi_version", "kind", "devices", "error"}``: ``devices`` lists device
    names in file order; ``error`` is None for a spec the CDI library would load, else the first
    problem found (the other fields are filled as far as parsing got).
    """
    data, error = load_spec_text(text)
    if error:
        return {"path": path, "cdi_version": None, "kind": None, "devices": [], "error": error}
    return check_cdi_spec(data, path)


def check_cdi_spec(data, path):
    """Check one parsed CDI spec (see :func:`parse_cdi_spec`); wrong types are errors, never raised."""
    result = {"path": path, "cdi_version": None, "kind": None, "devices": [], "error": None}
    if data is None:
        result["error"] = "empty spec file"
        return result
    if not isinstance(data, dict):
        result["error"] = "spec is not a mapping (got %s)" % type(data).__name__
        return result

    errors = []
    version = data.get("cdiVersion")
    if "cdiVersion" not in data or version is None:
        errors.append("missing cdiVersion")
    elif not isinstance(version, str):
        errors.append("cdiVersion must be a string (quote it), got %s" % quote(version))
    else:
        result["cdi_version"] = version
        if _normalise_version(version) not in KNOWN_CDI_VERSIONS:
            errors.append("unknown cdiVersion %s (known: %s)" % (quote(version), ", ".join(KNOWN_CDI_VERSIONS)))

    kind = data.get("kind")
    if "kind" not in data or kind is None:
        errors.append("missing kind")
    else:
        if isinstance(kind, str):
            result["kind"] = kind
        err = validate_kind(kind)
        if err:
            errors.append(err)

    devices = data.get("devices")
    if "devices" not in data or devices is None:
        errors.append("missing devices")
    elif not isinstance(devices, list):
        errors.append("devices is not a list (got %s)" % type(devices).__name__)
    else:
        seen = set()
        for idx, dev in enumerate(devices):
            if not isinstance(dev, dict):
                errors.append("devices[%d] is not a mapping" % idx)
                continue
            name = dev.get("name")
            if name is None or name == "":
                errors.append("devices[%d] has no name" % idx)
                continue
            if isinstance(name, str):
                result["devices"].append(name)
            err = validate_device_name(name)
            if err:
                errors.append("devices[%d]: %s" % (idx, err))
                continue
            if name in seen:
                errors.append("multiple devices named %s" % quote(name))
            seen.add(name)
            unknown = _unknown_fields(dev, _DEVICE_FIELDS)
            if unknown:
                errors.append("devices[%d] (%s): unknown field(s) %s" % (idx, name, unknown))
            errors.extend(_edit_type_errors(dev.get("containerEdits"), "devices[%d].containerEdits" % idx))
        if not devices:
            errors.append("no devices")

    unknown = _unknown_fields(data, _TOP_LEVEL_FIELDS)
    if unknown:
        errors.append("unknown top-level field(s) %s" % unknown)
    errors.extend(_edit_type_errors(data.get("containerEdits"), "containerEdits"))
    for field in ("annotations",):
        if data.get(field) is not None and not isinstance(data.get(field), dict):
            errors.append("%s is not a mapping (got %s)" % (field, type(data.get(field)).__name__))
    for e in _edits_list(data):
        bad = _unknown_fields(e, _EDIT_FIELDS)
        if bad:
            errors.append("unknown containerEdits field(s) %s" % bad)
            break

    if not errors and result["cdi_version"]:
        needed, why = minimum_required_version(data)
        declared = _normalise_version(result["cdi_version"])
        if _version_key(needed) > _version_key(declared):
            errors.append("cdiVersion %s is too old: %s needs at least %s" % (declared, why, needed))

    if errors:
        shown = errors[:MAX_ERRORS]
        if len(errors) > MAX_ERRORS:
            shown.append("%d more errors" % (len(errors) - MAX_ERRORS))
        result["error"] = "; ".join(shown)
    return result


def _unknown_fields(mapping, known):
    """The keys of ``mapping`` not in ``known``, sorted, at most 10 named (each quoted, bounded)."""
    unknown = sorted((k if isinstance(k, str) else quote(k))[:64] for k in mapping if k not in known)
    text = ", ".join(unknown[:10])
    return text + (" and %d more" % (len(unknown) - 10) if len(unknown) > 10 else "")
