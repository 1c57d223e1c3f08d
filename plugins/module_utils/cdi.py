# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Parse and check Container Device Interface (CDI) spec files on a node.

Standard library only (Python 3.8+); YAML is read with the bundled ``mini_yaml`` subset loader.

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
        return "%s %r should start with a letter" % (what, name)
    if not _NAME_CHARS_RE.match(name):
        bad = [c for c in name if not re.match(r"[A-Za-z0-9_.\-]", c)][0]
        return "invalid character %r in %s %r" % (bad, what, name)
    if not _is_alnum(name[-1]):
        return "%s %r should end with a letter or digit" % (what, name)
    return None


def validate_kind(kind):
    """Validate a CDI ``kind`` (``vendor/class``). Returns an error string or None."""
    if not isinstance(kind, str):
        return "kind must be a string, got %s" % type(kind).__name__
    parts = kind.split("/", 1)
    if len(parts) != 2 or not parts[0] or not parts[1]:
        return "kind %r is not of the form vendor/class (for example nvidia.com/gpu)" % kind
    vendor, klass = parts
    err = validate_name_segment(vendor, "vendor")
    if err:
        return "invalid kind %r: %s" % (kind, err)
    if len(vendor) > 253:
        return "invalid kind %r: vendor longer than 253 characters" % kind
    err = validate_name_segment(klass, "class")
    if err:
        return "invalid kind %r: %s" % (kind, err)
    if len(klass) > 63:
        return "invalid kind %r: class longer than 63 characters" % kind
    return None


def validate_device_name(name):
    """Device name syntax from pkg/parser: alnum first and last, [A-Za-z0-9_.:-] between."""
    if not isinstance(name, str):
        return "device name must be a string, got %s" % type(name).__name__
    if name == "":
        return "empty device name"
    if not _is_alnum(name[0]):
        return "device name %r should start with a letter or digit" % name
    if not _DEVICE_CHARS_RE.match(name):
        return "invalid character in device name %r" % name
    if not _is_alnum(name[-1]):
        return "device name %r should end with a letter or digit" % name
    return None


def _edits_list(spec):
    edits = []
    for dev in spec.get("devices") or []:
        if isinstance(dev, dict) and isinstance(dev.get("containerEdits"), dict):
            edits.append(dev["containerEdits"])
    if isinstance(spec.get("containerEdits"), dict):
        edits.append(spec["containerEdits"])
    return edits


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
    devices = [d for d in (spec.get("devices") or []) if isinstance(d, dict)]
    for e in edits:
        for m in e.get("mounts") or []:
            if isinstance(m, dict) and m.get("type"):
                required = need("0.4.0", "mounts[].type")
    for d in devices:
        name = d.get("name")
        if isinstance(name, str) and name and not ("A" <= name[0] <= "Z" or "a" <= name[0] <= "z"):
            required = need("0.5.0", "device name %r does not start with a letter" % name)
    for e in edits:
        for dn in e.get("deviceNodes") or []:
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


def parse_cdi_spec(text, path):
    """Parse one CDI spec file's text.

    Returns ``{"path", "cdi_version", "kind", "devices", "error"}``: ``devices`` lists device
    names in file order; ``error`` is None for a spec the CDI library would load, else the first
    problem found (the other fields are filled as far as parsing got).
    """
    # Imported here: most nodes have no spec file, and the loader is the largest piece of node code
    # (compiling it on every facts run is measurable in bench/bench_node_facts.py).
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.mini_yaml import YAMLSubsetError, load as yaml_load

    result = {"path": path, "cdi_version": None, "kind": None, "devices": [], "error": None}
    try:
        data = yaml_load(text)
    except YAMLSubsetError as exc:
        result["error"] = "invalid YAML/JSON: %s" % exc
        return result
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
        errors.append("cdiVersion must be a string (quote it), got %r" % (version,))
    else:
        result["cdi_version"] = version
        if _normalise_version(version) not in KNOWN_CDI_VERSIONS:
            errors.append("unknown cdiVersion %r (known: %s)" % (version, ", ".join(KNOWN_CDI_VERSIONS)))

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
                errors.append("multiple devices named %r" % name)
            seen.add(name)
            unknown = sorted(str(k) for k in dev if k not in _DEVICE_FIELDS)
            if unknown:
                errors.append("devices[%d] (%s): unknown field(s) %s" % (idx, name, ", ".join(unknown)))
        if not devices:
            errors.append("no devices")

    unknown = sorted(str(k) for k in data if k not in _TOP_LEVEL_FIELDS)
    if unknown:
        errors.append("unknown top-level field(s) %s" % ", ".join(unknown))
    for e in _edits_list(data):
        bad = sorted(str(k) for k in e if k not in _EDIT_FIELDS)
        if bad:
            errors.append("unknown containerEdits field(s) %s" % ", ".join(bad))
            break

    if not errors and result["cdi_version"]:
        needed, why = minimum_required_version(data)
        declared = _normalise_version(result["cdi_version"])
        if _version_key(needed) > _version_key(declared):
            errors.append("cdiVersion %s is too old: %s needs at least %s" % (declared, why, needed))

    if errors:
        result["error"] = "; ".join(errors)
    return result
