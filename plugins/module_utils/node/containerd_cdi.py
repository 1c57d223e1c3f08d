# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Enable CDI in containerd's configuration, and verify what a containerd binary loads.

Standard library only, Python 3.8+ (runs on GPU nodes); no Ansible imports.

The change is computed on the text, so every byte outside the two settings is kept:

* containerd 2.x (config v3): ``[plugins.'io.containerd.cri.v1.runtime'] enable_cdi, cdi_spec_dirs``
  in a drop-in file under a directory that the main file's ``imports`` already globs (2.x merges
  plugin tables); without such a glob, the main file is edited in place.
* containerd 1.7 (config v2): ``[plugins."io.containerd.grpc.v1.cri"]``. containerd 1.x *replaces*
  a plugin's whole table with the last imported file's that mentions the plugin, so a small drop-in
  would drop the rest of the CRI table: the file that carries the effective CRI table (the main file,
  or the last import that mentions the plugin) is edited in place.
* containerd 1.6 and older have no CDI: refused, naming the version.

Only the lines of ``enable_cdi`` and ``cdi_spec_dirs`` directly in the CRI table are replaced (or
inserted after its header; the header is appended when the file has none). Runtime subtables
(``nvidia``) are never touched. Registry credentials are redacted in every diff and message.

:func:`read_dump` reads ``containerd config dump`` output: with ``tomllib``/``tomli`` when importable,
else with a reader of the canonical form containerd itself prints (go-toml: one ``[table]`` header
per table, one ``key = value`` per line), enough for the values verified here.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import glob
import json
import os
import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as ctd
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import CREDENTIAL_KEYS, REDACTED

DEFAULT_DROPIN_STEM = "99-gpufleet-cdi"
MANAGED_KEYS = ("enable_cdi", "cdi_spec_dirs")

_BARE = re.compile(r"[A-Za-z0-9_-]+")
_KEY_LINE = re.compile(r"^(\s*)([A-Za-z0-9_-]+|\"[^\"]*\"|'[^']*')\s*=")
_CRED_LINE = re.compile(r"^(\s*)([A-Za-z0-9_\"'.-]+?)(\s*=\s*)(.*?)(\r?\n)?$")
_VERSION_LINE = re.compile(r"^\s*version\s*=\s*(\d+)\s*(#.*)?$")


class CdiError(Exception):
    """The change cannot be made safely; the message says why (never holds a credential)."""


def redact_text(text):
    """``text`` with the value of every credential key (node_config.CREDENTIAL_KEYS) replaced."""
    out = []
    for line in text.splitlines(True):
        match = _CRED_LINE.match(line)
        if match and match.group(2).split(".")[-1].strip("\"'").lower() in CREDENTIAL_KEYS:
            line = "%s%s%s\"%s\"%s" % (match.group(1), match.group(2), match.group(3), REDACTED, match.group(5) or "")
        out.append(line)
    return "".join(out)


def header_keys(line):
    """The key list of a ``[table]`` header line, or None (not a header, or an ``[[array]]``)."""
    text = line.strip()
    if not text.startswith("[") or text.startswith("[["):
        return None
    keys, pos, current = [], 1, None
    while pos < len(text):
        char = text[pos]
        if char in " \t":
            pos += 1
        elif char == "]":
            if current is None:
                return None
            keys.append(current)
            rest = text[pos + 1:].strip()
            return keys if not rest or rest.startswith("#") else None
        elif char == ".":
            if current is None:
                return None
            keys.append(current)
            current = None
            pos += 1
        elif char in "\"'":
            end = text.find(char, pos + 1)
            if end < 0 or current is not None:
                return None
            current = text[pos + 1:end]
            if char == '"' and "\\" in current:
                try:
                    current = json.loads('"%s"' % current)
                except ValueError:
                    return None
            pos = end + 1
        else:
            match = _BARE.match(text, pos)
            if not match or current is not None:
                return None
            current = match.group(0)
            pos = match.end()
    return None


def cri_table(version):
    """``(plugin id, config version)`` that holds CDI for a containerd version; CdiError for 1.6 and older."""
    vt = ctd.version_tuple(version)
    if vt is None:
        raise CdiError("containerd version %r is not understood; expected the version printed by "
                       "'containerd --version' (for example 1.7.27 or 2.1.4)" % (version,))
    if vt < (1, 7):
        raise CdiError("containerd %s has no CDI support (CDI came with containerd 1.7): nothing is changed; "
                       "upgrade containerd to 1.7 or 2.x first" % version)
    if vt[0] >= 2:
        return ctd.CRI_TABLE_V3, 3
    return ctd.CRI_TABLE_V2, 2


def file_version(text):
    """The top-level ``version`` of a config text (text level), or None when it has none."""
    for line in text.splitlines():
        if header_keys(line) is not None or line.strip().startswith("[["):
            return None
        match = _VERSION_LINE.match(line)
        if match:
            return int(match.group(1))
    return None


def target_table(version, main_text):
    """``(plugin id, config version)`` to edit for this binary and this main file.

    containerd 2.x migrates a version 2 file on load: such a file keeps its v2 CRI table (edited in
    place). A file without ``version`` is config version 1, which 2.x does not load and which 1.7 reads
    with ``plugins.cri``: refused (migrate it to version 2 first)."""
    pid, binary_config = cri_table(version)
    written = file_version(main_text)
    if written is None or written < 2:
        raise CdiError("the main config has no 'version = 2' or 'version = 3' (config version 1, plugins.cri): "
                       "migrate it to version %d first; nothing is changed" % binary_config)
    if written > binary_config:
        raise CdiError("config version %d is newer than containerd %s reads (%d); nothing is changed" % (written, version, binary_config))
    if written == 2:
        return ctd.CRI_TABLE_V2, 2
    return pid, binary_config


def _mentions(text, pid):
    """True when a header of ``text`` is the plugin table ``pid`` or one of its subtables."""
    for line in text.splitlines():
        keys = header_keys(line)
        if keys and len(keys) >= 2 and keys[0] == "plugins" and keys[1] == pid:
            return True
    return False


def _newline(text):
    return "\r\n" if "\r\n" in text else "\n"


def _value_end(lines, index):
    """Index of the last line of the value that starts on ``lines[index]`` (multi-line arrays)."""
    depth, quote = 0, None
    for pos in range(index, len(lines)):
        line = lines[pos]
        start = line.index("=") + 1 if pos == index else 0
        for char in line[start:]:
            if quote:
                if char == quote:
                    quote = None
            elif char in "\"'":
                quote = char
            elif char == "#":
                break
            elif char == "[":
                depth += 1
            elif char == "]":
                depth -= 1
        if depth <= 0:
            return pos
    return len(lines) - 1


def toml_value(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, list):
        return "[%s]" % ", ".join(json.dumps(item) for item in value)
    return json.dumps(value)


def edit_table(text, keys, values):
    """``text`` with ``values`` (ordered pairs) set directly in the table ``keys``; other bytes kept."""
    newline = _newline(text)
    lines = text.splitlines(True)
    header, end = None, len(lines)
    for index, line in enumerate(lines):
        found = header_keys(line)
        if header is None and found == keys:
            header = index
        elif header is not None and (found is not None or line.strip().startswith("[[")):
            end = index
            break
    if header is None:
        block = "".join("  %s = %s%s" % (key, toml_value(value), newline) for key, value in values)
        prefix = text if not text or text.endswith(("\n", "\r")) else text + newline
        return prefix + newline + "[%s]%s" % (".".join(_quote(k) for k in keys), newline) + block
    indent = None
    for index in range(header + 1, end):
        match = _KEY_LINE.match(lines[index])
        if match:
            indent = match.group(1)
            break
    if indent is None:
        indent = re.match(r"\s*", lines[header]).group(0) + "  "
    pending = list(values)
    index = header + 1
    while index < end:
        match = _KEY_LINE.match(lines[index])
        key = match.group(2).strip("\"'") if match else None
        if key in dict(pending):
            last = _value_end(lines, index)
            lead = match.group(1)
            eol = newline if lines[last].endswith(("\n", "\r")) else ""
            lines[index:last + 1] = ["%s%s = %s%s" % (lead, key, toml_value(dict(pending)[key]), eol)]
            end -= last - index
            pending = [(k, v) for k, v in pending if k != key]
        index += 1
    if pending:
        lines[header + 1:header + 1] = ["%s%s = %s%s" % (indent, key, toml_value(value), newline) for key, value in pending]
        if not lines[header].endswith(("\n", "\r")):
            lines[header] += newline
    return "".join(lines)


def _quote(key):
    return key if _BARE.fullmatch(key) else json.dumps(key)


def dropin_name(pattern, stem=DEFAULT_DROPIN_STEM):
    """Path of the drop-in that ``pattern`` (an ``imports`` glob) would load, or None.

    Only ``<dir>/<prefix>*<suffix>`` globs with a plain directory are used."""
    directory, base = os.path.split(pattern)
    if not directory or any(c in directory for c in "*?[") or base.count("*") != 1 or any(c in base for c in "?["):
        return None
    prefix, suffix = base.split("*")
    if not suffix.endswith(".toml") and suffix:
        return None
    name = prefix + stem + (suffix or ".toml")
    return os.path.join(directory, name) if fnmatch.fnmatch(name, base) else None


def resolve_import(pattern, config_path):
    """An ``imports`` entry as containerd resolves it: relative to the main file's directory."""
    return pattern if os.path.isabs(pattern) else os.path.join(os.path.dirname(config_path), pattern)


def expand_imports(patterns, config_path, root="/"):
    """``[(node path, real path)]`` of the files the imports load, in containerd's order."""
    found = []
    for pattern in patterns:
        node_pattern = resolve_import(pattern, config_path)
        real = os.path.join(root, node_pattern.lstrip("/")) if root not in ("", "/") else node_pattern
        matches = sorted(glob.glob(real)) if glob.has_magic(real) else ([real] if os.path.exists(real) else [])
        for match in matches:
            node = "/" + os.path.relpath(match, root).lstrip("/") if root not in ("", "/") else match
            if node not in [entry[0] for entry in found]:
                found.append((node, match))
    return found


def import_patterns(text):
    """The top-level ``imports`` array of a config text (text level: before the first table)."""
    lines = text.splitlines(True)
    for index, line in enumerate(lines):
        if header_keys(line) is not None or line.strip().startswith("[["):
            break
        match = _KEY_LINE.match(line)
        if match and match.group(2).strip("\"'") == "imports":
            last = _value_end(lines, index)
            value = "".join(lines[index:last + 1]).split("=", 1)[1]
            value = re.sub(r"#[^\n'\"]*", "", value).strip()
            items = re.findall(r"\"((?:[^\"\\]|\\.)*)\"|'([^']*)'", value)
            return [a or b for a, b in items]
    return []


def plan(version, config_path, main_text, imports, spec_dirs, stem=DEFAULT_DROPIN_STEM):
    """Decide the change. ``imports``: ``[(node path, text)]`` in load order.

    Returns ``{"method": "dropin"|"edit"|"none", "target": path, "before": text|None, "after": text,
    "cri_table", "config_version", "reason"}``; raises CdiError when nothing can be changed safely.
    """
    if not isinstance(spec_dirs, list) or not spec_dirs or not all(isinstance(d, str) and d.startswith("/") for d in spec_dirs):
        raise CdiError("spec_dirs must be a non-empty list of absolute directories, got %r" % (spec_dirs,))
    pid, config_version = target_table(version, main_text)
    values = [("enable_cdi", True), ("cdi_spec_dirs", list(spec_dirs))]
    keys = ["plugins", pid]
    if config_version == 3 and ctd.version_tuple(version)[0] >= 2:
        dropin = None
        for pattern in import_patterns(main_text):
            candidate = dropin_name(resolve_import(pattern, config_path), stem)
            if candidate:
                dropin = candidate
                break
        if dropin:
            existing = dict(imports).get(dropin)
            after = (existing if existing is not None else
                     "# Managed by gpufleet.dra_gate (containerd_cdi): CDI for the CRI runtime plugin.\n"
                     "# containerd 2.x merges plugin tables from imports, so only these settings are here.\n"
                     "version = 3\n")
            after = edit_table(after, keys, values)
            return {"method": "dropin" if existing != after else "none", "target": dropin, "before": existing, "after": after,
                    "cri_table": pid, "config_version": 3,
                    "reason": "containerd %s merges plugin tables from imports: drop-in %s" % (version, dropin)}
        reason = "containerd %s: no imports glob of the form <dir>/<prefix>*<suffix> in %s: edited in place" % (version, config_path)
        target, before = config_path, main_text
    else:
        target, before = config_path, main_text
        reason = "containerd %s replaces a plugin's whole table from an import: the file with the CRI table is edited in place" % version
        if ctd.version_tuple(version)[0] >= 2:
            reason = "containerd %s migrates this config version 2 file on load: its CRI table is edited in place" % version
        for node, text in imports:
            if _mentions(text, pid):
                target, before = node, text
        if target != config_path:
            reason += " (%s carries the effective CRI table)" % target
    after = edit_table(before, keys, values)
    return {"method": "edit" if after != before else "none", "target": target, "before": before, "after": after,
            "cri_table": pid, "config_version": config_version, "reason": reason}


def merged_config(version, main_text, imports, replace_text=None, config_path="the main config"):
    """The merged parsed config (``replace_text``: ``(path, text)`` to use instead of a file's own)."""
    def load(path, text):
        if replace_text and replace_text[0] == path:
            text = replace_text[1]
        data, error = ctd.load_toml(text)
        if error:
            raise CdiError("%s: %s" % (path, redact_text(error)))
        return data
    merged = load(config_path, main_text)
    for path, text in imports:
        merged = ctd.merge_configs(merged, load(path, text), version)
    return merged


def effective_cdi(pid, merged):
    """``(enable_cdi, cdi_spec_dirs)`` set in a merged parsed config's table ``pid`` (None where unset)."""
    cri = ctd._get(merged, "plugins", pid)  # pylint: disable=protected-access
    cri = cri if isinstance(cri, dict) else {}
    return cri.get("enable_cdi"), cri.get("cdi_spec_dirs")


def check_candidate(version, main_text, imports, change, config_path, spec_dirs):
    """Parse the files as they would be after ``change`` and check the merged CDI settings.

    Raises CdiError when a file does not parse or the merged result is not CDI on with ``spec_dirs``
    (another file would override the change)."""
    target = change["target"]
    files = list(imports)
    if change["method"] == "dropin" and target not in dict(files):
        # glob order: after the last file of its directory that sorts before it, else before the
        # first file of its directory, else last
        directory = os.path.dirname(target)
        positions = [i for i, item in enumerate(files) if os.path.dirname(item[0]) == directory]
        earlier = [i for i in positions if files[i][0] < target]
        position = earlier[-1] + 1 if earlier else (positions[0] if positions else len(files))
        files.insert(position, (target, change["after"]))
    if target == config_path:
        main_text = change["after"]
    merged = merged_config(version, main_text, files, replace_text=(target, change["after"]), config_path=config_path)
    enabled, dirs = effective_cdi(change["cri_table"], merged)
    if enabled is not True or dirs != list(spec_dirs):
        raise CdiError("after the change containerd %s would load enable_cdi=%s cdi_spec_dirs=%s from %s and its imports "
                       "(another file overrides the setting?): nothing is changed"
                       % (version, json.dumps(enabled), json.dumps(dirs), config_path))
    return merged


def read_dump(text):
    """Parse ``containerd config dump`` output: ``(dict, how)``; ``how`` is ``toml`` or ``canonical``."""
    data, error = ctd.load_toml(text)
    if error is None:
        return data, "toml"
    if error != ctd.NO_TOML_MESSAGE:
        raise CdiError("containerd config dump printed no valid TOML: %s" % redact_text(error))
    result = {}
    result_table = result
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        keys = header_keys(stripped)
        if keys is not None:
            result_table = result
            for key in keys:
                result_table = result_table.setdefault(key, {})
            continue
        if stripped.startswith("[["):
            result_table = {}
            continue
        match = _KEY_LINE.match(stripped)
        if not match:
            continue
        raw = stripped.split("=", 1)[1].strip()
        try:
            value = json.loads(raw.replace("'", '"')) if raw not in ("true", "false") else raw == "true"
        except ValueError:
            value = raw
        result_table[match.group(2).strip("\"'")] = value
    return result, "canonical"


def verify_dump(dump, expect, expect_nvidia=True, table=None):
    """Check a parsed dump: ``expect`` maps keys of the CRI table to values. Returns ``(ok, problems, summary)``."""
    problems = []
    version = dump.get("version")
    pid = table or (ctd.CRI_TABLE_V3 if version == 3 else ctd.CRI_TABLE_V2)
    plugins = dump.get("plugins") if isinstance(dump.get("plugins"), dict) else {}
    cri = plugins.get(pid) if isinstance(plugins.get(pid), dict) else {}
    if not cri:
        problems.append("config dump has no plugins.%s table" % json.dumps(pid))
    observed = {}
    for key in sorted(expect or {}):
        observed[key] = cri.get(key)
        if cri.get(key) != expect[key]:
            problems.append("plugins.%s.%s is %s, expected %s" % (json.dumps(pid), key, json.dumps(cri.get(key)),
                                                                  json.dumps(expect[key])))
    runtimes = ctd._get(cri, "containerd", "runtimes")  # pylint: disable=protected-access
    nvidia = ctd._nvidia_runtimes(runtimes)  # pylint: disable=protected-access
    if expect_nvidia and not nvidia:
        problems.append("no nvidia runtime in plugins.%s.containerd.runtimes" % json.dumps(pid))
    summary = {"config_version": version, "cri_table": pid, "observed": observed, "nvidia_runtime_names": nvidia,
               "runtimes": sorted(runtimes) if isinstance(runtimes, dict) else []}
    return not problems, problems, summary


def compute(version, config_path, main_text, imports, spec_dirs, stem=DEFAULT_DROPIN_STEM):
    """The whole decision: refuse (CdiError), or the change ``plan`` returns plus ``validated``.

    With a TOML parser every file is parsed first (a syntax error is refused before anything else),
    a config whose merged CDI settings are already right is ``method: none``, and the candidate is
    checked. Without one (``validated: False``) the caller validates the candidate with the binary.
    """
    cri_table(version)
    parser = ctd.load_toml("")[1] != ctd.NO_TOML_MESSAGE
    if parser:
        current = merged_config(version, main_text, imports, config_path=config_path)
    pid, config_version = target_table(version, main_text)
    if parser:
        enabled, dirs = effective_cdi(pid, current)
        if enabled is True and dirs == list(spec_dirs):
            return {"method": "none", "target": config_path, "before": main_text, "after": main_text,
                    "cri_table": pid, "config_version": config_version, "validated": True,
                    "reason": "CDI is already on with %s" % json.dumps(list(spec_dirs))}
    change = plan(version, config_path, main_text, imports, spec_dirs, stem)
    if parser and change["method"] != "none":
        check_candidate(version, main_text, imports, change, config_path, spec_dirs)
    change["validated"] = parser
    return change
