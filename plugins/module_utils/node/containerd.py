# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read containerd's version and configuration on a node: CDI and NVIDIA runtime facts.

Standard library only, Python 3.8+. TOML is read with ``tomllib`` (3.11+) or ``tomli`` when
importable, imported lazily; without either, :func:`load_toml` says so instead of failing.

Facts used (containerd/containerd; verified where marked):

* ``containerd --version`` prints ``<name> <package> <version> <revision>``. Upstream builds
  print a ``v``-prefixed ``git describe`` version; distributions differ (Debian 12 prints
  ``containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+deb12u3``: recorded
  from the real binary, see tests/fixtures/containerd/).
* Config ``version``: absent means 1 (``plugins.cri``), 2 is the 1.x format
  (``plugins."io.containerd.grpc.v1.cri"``), 3 is the 2.x format (CRI split into
  ``plugins."io.containerd.cri.v1.runtime"`` and ``...images``). 2.x migrates v2 files on load
  and dropped v1.
* CDI: containerd 1.6 has none; 1.7 has ``enable_cdi`` (default false) and ``cdi_spec_dirs``
  in the CRI plugin table; 2.x has them in ``io.containerd.cri.v1.runtime`` with
  ``enable_cdi`` defaulting to true.
* Imports (drop-ins): containerd 1.x merges ``plugins`` by plugin id and **replaces** a
  plugin's whole table with the later file's (verified with the real 1.6.20 binary:
  ``containerd -c main.toml config dump``, a drop-in that only adds a runtime drops the base
  file's other CRI settings; issue containerd#5837, #7982). containerd 2.0+ deep-merges plugin
  tables (containerd#9982). Top-level arrays (``imports``, ``disabled_plugins``,
  ``required_plugins``) are appended without duplicates; other scalars: the later file wins.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import check_int, quote

CONTAINERD_VERSION_ARGV = ["containerd", "--version"]
CONTAINERD_CONFIG_DUMP_ARGV = ["containerd", "config", "dump"]
CONTAINERD_CONFIG_DEFAULT_ARGV = ["containerd", "config", "default"]

DEFAULT_CDI_SPEC_DIRS = ["/etc/cdi", "/var/run/cdi"]

CRI_TABLE_V1 = "cri"
CRI_TABLE_V2 = "io.containerd.grpc.v1.cri"
CRI_TABLE_V3 = "io.containerd.cri.v1.runtime"

NO_TOML_MESSAGE = "no TOML parser on this Python (tomllib needs 3.11; install tomli)"

# ASCII digits, bounded (\d matches any Unicode digit; int() of 5,000 digits raises); \Z, not $
# (which also matches before a final newline).
_VERSION_TOKEN_RE = re.compile(r"\Av?([0-9]{1,9})\.([0-9]{1,9})(?:\.([0-9]{1,9}))?([-+~.][0-9A-Za-z.+~:-]{0,200})?\Z")
#: Config ``version`` values analysed: containerd knows 1 to 3; a larger one (up to this bound) is
#: "newer than this module knows", anything else (negative, a 4,000-digit hex number) is invalid.
CONFIG_VERSION_RANGE = (0, 1000)
_TOP_LEVEL_APPEND = ("imports", "disabled_plugins", "required_plugins")


def parse_containerd_version(stdout):
    """Return the version token from ``containerd --version`` output, or None.

    A leading ``v`` is stripped (``v2.3.1`` -> ``2.3.1``); distribution suffixes are kept as
    printed (``1.6.20~ds1``, ``1.6.36-0ubuntu1~22.04.1``).
    """
    if not stdout:
        return None
    if isinstance(stdout, bytes):
        stdout = stdout.decode("utf-8", "replace")
    for line in stdout.splitlines():
        tokens = line.split()
        if len(tokens) < 2:
            continue
        # <name> <package> <version> [<revision>]; accept a missing package defensively.
        candidates = tokens[2:3] if len(tokens) >= 3 else []
        if not candidates or not _VERSION_TOKEN_RE.match(candidates[0]):
            candidates = [t for t in tokens[1:] if _VERSION_TOKEN_RE.match(t)][:1]
        if candidates:
            token = candidates[0]
            if token.startswith("v"):
                token = token[1:]
            return token
    return None


def version_tuple(version):
    """(major, minor) of a containerd version string, or None."""
    if not version or not isinstance(version, str):
        return None
    match = _VERSION_TOKEN_RE.match(version.strip())
    if not match:
        return None
    return int(match.group(1)), int(match.group(2))


def load_toml(text):
    """Parse TOML text: ``(dict, None)`` on success, ``(None, message)`` otherwise."""
    parser = None
    try:
        import tomllib as parser  # Python 3.11+
    except ImportError:
        try:
            import tomli as parser  # the backport, same API
        except ImportError:
            parser = None
    if parser is None:
        return None, NO_TOML_MESSAGE
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    try:
        return parser.loads(text), None
    except parser.TOMLDecodeError as exc:
        return None, "TOML syntax error: %s" % exc


def _deep_merge(base, other):
    result = copy.deepcopy(base)
    for key, value in other.items():
        if isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _append_new(current, items):
    """``current`` (a list or None) followed by the ``items`` not in it yet, in linear time for
    hashable items (a drop-in may hold 100,000 ``disabled_plugins``)."""
    merged = list(current) if isinstance(current, list) else []
    seen = set()
    for item in merged:
        try:
            seen.add(item)
        except TypeError:  # a table inside the array: compared by value below
            pass
    for item in items:
        try:
            if item in seen:
                continue
            seen.add(item)
        except TypeError:
            if item in merged:
                continue
        merged.append(item)
    return merged


def merge_configs(base, dropin, binary_version=None):
    """Merge an imported (drop-in) config over ``base`` the way containerd does.

    * ``imports``, ``disabled_plugins``, ``required_plugins``: appended, without duplicates.
    * ``plugins``: containerd 2.0+ (and an unknown ``binary_version``) merges each plugin
      table recursively, later file wins for scalars and arrays. containerd 1.x replaces the
      whole table of each plugin id the drop-in mentions.
    * every other table is merged recursively; other scalars: the drop-in wins.
    Neither argument is modified.
    """
    base = base or {}
    dropin = dropin or {}
    vt = version_tuple(binary_version)
    replace_plugins = vt is not None and vt[0] < 2
    result = copy.deepcopy(base)
    for key, value in dropin.items():
        if key in _TOP_LEVEL_APPEND and isinstance(value, list):
            result[key] = _append_new(result.get(key), value)
        elif key == "plugins" and isinstance(value, dict) and isinstance(result.get(key), dict):
            plugins = result[key]
            for pid, ptable in value.items():
                if replace_plugins or not (isinstance(ptable, dict) and isinstance(plugins.get(pid), dict)):
                    plugins[pid] = copy.deepcopy(ptable)
                else:
                    plugins[pid] = _deep_merge(plugins[pid], ptable)
        elif isinstance(value, dict) and isinstance(result.get(key), dict):
            result[key] = _deep_merge(result[key], value)
        else:
            result[key] = copy.deepcopy(value)
    return result


def _get(table, *keys):
    cur = table
    for key in keys:
        if not isinstance(cur, dict):
            return None
        cur = cur.get(key)
    return cur


def _nvidia_runtimes(runtimes):
    names = []
    if not isinstance(runtimes, dict):
        return names
    for name in sorted(runtimes):
        rt = runtimes[name]
        binary = _get(rt, "options", "BinaryName")
        if str(name).startswith("nvidia") or (
                isinstance(binary, str) and "nvidia-container-runtime" in binary):
            names.append(name)
    return names


def analyse_config(config, binary_version=None):
    """Summarise CDI and NVIDIA runtime settings of a parsed (merged) containerd config.

    Returns a dict:

    * ``config_version``: 1, 2 or 3 (``version`` key; absent means 1), None if not an int.
    * ``binary_version``: the version given, ``binary_series``: ``"1.6"`` etc. or None.
    * ``cri_table``: the dotted plugin table that holds the CDI/runtime settings.
    * ``cdi_enabled``: True/False, or None when it cannot be decided.
    * ``cdi_enabled_source``: ``"config"`` (set in the file), ``"default"`` (containerd's
      default for that version), ``"unsupported"`` (containerd 1.6 and older: no CDI), or
      ``"unknown"`` (config/binary combination containerd would not load).
    * ``cdi_spec_dirs``: the directories containerd scans (explicit or default); ``[]`` when CDI
      is unsupported.
    * ``nvidia_runtime`` (bool), ``nvidia_runtime_names`` (sorted list): runtimes named
      ``nvidia*`` or whose ``options.BinaryName`` contains ``nvidia-container-runtime``.
    * ``default_runtime_name``: set value or containerd's default ``"runc"``.
    * ``imports``: the ``imports`` globs as written.
    * ``notes``: human-readable explanations of defaults and assumptions.
    * ``problems``: settings of the wrong type that containerd would refuse or ignore.
    """
    config = config if isinstance(config, dict) else {}
    notes = []
    raw_version = config.get("version", 1)
    config_version, version_error = check_int(raw_version, "version", CONFIG_VERSION_RANGE[0], CONFIG_VERSION_RANGE[1])
    config_problems = []
    if "version" not in config:
        notes.append("no top-level version: containerd reads this as config version 1")
    elif version_error and isinstance(raw_version, int) and not isinstance(raw_version, bool):
        config_problems.append("%s; not a config version containerd loads" % version_error)
    vt = version_tuple(binary_version)
    plugins = config.get("plugins") if isinstance(config.get("plugins"), dict) else {}

    if config_version == 3:
        cri_table = CRI_TABLE_V3
    elif config_version == 2:
        cri_table = CRI_TABLE_V2
    elif config_version == 1:
        cri_table = CRI_TABLE_V1
        if plugins.get(CRI_TABLE_V2) is not None and plugins.get(CRI_TABLE_V1) is None:
            notes.append("config version 1 with a fully qualified CRI table")
            cri_table = CRI_TABLE_V2
    else:
        cri_table = None
    cri = plugins.get(cri_table) if cri_table else None
    cri = cri if isinstance(cri, dict) else {}

    runtimes = _get(cri, "containerd", "runtimes")
    nvidia_names = _nvidia_runtimes(runtimes)
    default_runtime = _get(cri, "containerd", "default_runtime_name")
    if not isinstance(default_runtime, str) or not default_runtime:
        default_runtime = "runc"
    imports = config.get("imports")
    imports = list(imports) if isinstance(imports, list) else []

    explicit = cri.get("enable_cdi")
    explicit_dirs = cri.get("cdi_spec_dirs")
    cdi_enabled = None
    source = "unknown"
    dirs = list(DEFAULT_CDI_SPEC_DIRS)
    if isinstance(explicit_dirs, list):
        dirs = list(explicit_dirs)
    elif explicit_dirs is not None:
        config_problems.append("cdi_spec_dirs is not a list (got %s); ignored" % type(explicit_dirs).__name__)

    if config_version is None:
        notes.append("config version %s is not an integer from %d to %d" % (
            quote(raw_version), CONFIG_VERSION_RANGE[0], CONFIG_VERSION_RANGE[1]))
    elif vt is not None and vt < (1, 7):
        cdi_enabled, source, dirs = False, "unsupported", []
        notes.append("containerd %s has no CDI support (added in 1.7)" % binary_version)
    elif vt is not None and vt[0] >= 2 and config_version < 2:
        notes.append("containerd %s does not load config version 1" % binary_version)
    elif vt is not None and vt[0] < 2 and config_version >= 3:
        notes.append("containerd %s does not understand config version %d" % (binary_version, config_version))
    elif config_version > 3:
        notes.append("config version %d is newer than this module knows" % config_version)
    elif isinstance(explicit, bool):
        cdi_enabled, source = explicit, "config"
    else:
        source = "default"
        if config_version == 3:
            cdi_enabled = True
            notes.append("enable_cdi not set: containerd 2.x defaults to true")
        elif vt is not None and vt[0] >= 2:
            cdi_enabled = True
            notes.append("enable_cdi not set: containerd %s migrates this v%d config and "
                         "defaults to true" % (binary_version, config_version))
        else:
            cdi_enabled = False
            if vt is None:
                notes.append("enable_cdi not set and containerd version unknown: assuming the "
                             "containerd 1.7 default (false) for a v%d config; containerd 2.x "
                             "would default to true" % config_version)
            else:
                notes.append("enable_cdi not set: containerd %s defaults to false" % binary_version)
        if explicit is not None:
            notes.append("enable_cdi is %s, not a boolean: ignored" % quote(explicit))
            config_problems.append("enable_cdi is %s, not a boolean; ignored (the default applies)" % quote(explicit))

    return {
        "config_version": config_version,
        "binary_version": binary_version,
        "binary_series": "%d.%d" % vt if vt else None,
        "cri_table": 'plugins."%s"' % cri_table if cri_table else None,
        "cdi_enabled": cdi_enabled,
        "cdi_enabled_source": source,
        "cdi_spec_dirs": dirs,
        "nvidia_runtime": bool(nvidia_names),
        "nvidia_runtime_names": nvidia_names,
        "default_runtime_name": default_runtime,
        "imports": imports,
        "notes": notes,
        "problems": config_problems,
    }
