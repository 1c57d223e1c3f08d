# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Controller side of the ``gpu_node`` facts: parse the containerd config and the CDI specs.

The node module (``gpu_node.collect``) sends the raw, size-bounded texts of containerd's config, its
imports and the CDI spec files; :func:`complete` parses them with real parsers (``tomllib``,
PyYAML ``safe_load``), fills in the ``containerd`` and ``cdi`` facts exactly as documented in
docs/node-facts.md and keeps no raw text. It runs on the controller (Python 3.11+, where
``tomllib`` always exists), so every node is assessed the same whatever its Python.

Every file is parsed inside its own guard: a bad file (wrong types, nesting deep enough for a
``RecursionError``, garbage) becomes a ``problems`` entry with its path, never a traceback.

:func:`gather` is the whole pipeline (node read + controller parse) for callers that have the tree
on the controller: tests, the lab and offline evaluation of unpacked support bundles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import quote

# cdi, containerd and gpu_node are imported where they are needed: the action plugin runs for every
# host, the collection loader compiles each imported file from source, and most hosts have no CDI
# spec (bench/bench_node_facts.py measures the whole call against ping).

#: The CDI library's default spec directories (the same as ``cdi.DEFAULT_SPEC_DIRS``).
DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
#: Keys under containerd's registry configuration whose values are secrets.
CREDENTIAL_KEYS = ("auth", "password", "identitytoken", "identity_token", "registrytoken",
                   "registry_token", "token", "secret", "username")
REDACTED = "<redacted>"
#: Tables nested deeper than this are cut by :func:`redact_registry_credentials` (containerd's
#: deepest setting, a runtime's ``options.BinaryName``, is at depth 7; TOML allows 2,000-deep
#: dotted keys, deeper than Python's recursion limit).
MAX_CONFIG_DEPTH = 64
CUT_MARKER = "<cut: nested deeper than %d levels>" % MAX_CONFIG_DEPTH
#: ``imports`` patterns and ``cdi_spec_dirs`` entries assessed per file (the node reads at most
#: 256 files in all); more are one problem.
MAX_LIST_ENTRIES = 256
_ANALYSED_KEYS = ("config_version", "cdi_enabled", "cdi_enabled_source", "cdi_spec_dirs",
                  "nvidia_runtime", "nvidia_runtime_names", "default_runtime_name")


def _describe(exc):
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "%s: %s" % (type(exc).__name__, quote(str(exc), 300))


def _dotted(keys):
    return quote(".".join(str(k) for k in keys[:8]) + (".(%d keys)" % len(keys) if len(keys) > 8 else ""), 200)


def redact_registry_credentials(config, cut=None):
    """A copy of a parsed containerd config with every credential under a ``registry`` table redacted.

    Iterative (no recursion however deep the config). A table or array nested deeper than
    :data:`MAX_CONFIG_DEPTH` is replaced by :data:`CUT_MARKER`; its key path (a tuple of keys) is
    appended to ``cut`` when given.
    """
    top = [None]
    # (value, holder, slot, inside a registry table, depth, key path)
    stack = [(config, top, 0, False, 0, ())]
    while stack:
        value, holder, slot, inside_registry, depth, keys = stack.pop()
        if not isinstance(value, (dict, list)):
            holder[slot] = value
            continue
        if depth >= MAX_CONFIG_DEPTH:
            holder[slot] = CUT_MARKER
            if cut is not None:
                cut.append(keys)
            continue
        if isinstance(value, dict):
            out = {}
            for key, child in value.items():
                inside = inside_registry or "registry" in str(key).lower()
                if inside and str(key).lower() in CREDENTIAL_KEYS and not isinstance(child, (dict, list)):
                    out[key] = REDACTED
                else:
                    out[key] = None
                    stack.append((child, out, key, inside, depth + 1, keys + (key,)))
        else:
            out = [None] * len(value)
            for index, child in enumerate(value):
                stack.append((child, out, index, inside_registry, depth + 1, keys + (index,)))
        holder[slot] = out
    return top[0]


def _load_toml_file(problems, files, path):
    """``(config, error)`` of one containerd file sent by the node; errors are problems entries."""
    entry = files.get(path)
    if not isinstance(entry, dict):
        error = "not sent by the node"
        problems.append({"path": path, "reason": error})
        return None, error
    text = entry.get("text")
    if not isinstance(text, str):
        # Unreadable, too large or not UTF-8: the node already made it a problems entry.
        return None, str(entry.get("error") or "not readable")
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as containerd_mod
    try:
        config, error = containerd_mod.load_toml(text)
    except Exception as exc:  # pylint: disable=broad-except  # any parser failure is this file's problem
        config, error = None, "TOML not parsed: %s" % _describe(exc)
    if error:
        problems.append({"path": path, "reason": error})
        return None, error
    cut = []
    redacted = redact_registry_credentials(config, cut)
    for keys in cut[:5]:
        problems.append({"path": path, "reason": "TOML nested deeper than %d levels at %s; that part is "
                                                 "not assessed" % (MAX_CONFIG_DEPTH, _dotted(keys))})
    if len(cut) > 5:
        problems.append({"path": path, "reason": "%d more parts nested deeper than %d levels are not "
                                                 "assessed" % (len(cut) - 5, MAX_CONFIG_DEPTH)})
    return redacted, None


def _path_error(entry):
    """Why ``entry`` (a value of the config) is no node path, or None."""
    if not isinstance(entry, str):
        return "is not a string"
    if "\x00" in entry:
        return "holds a NUL byte"
    if not entry.startswith("/"):
        return "is not an absolute path"
    return None


def _valid_spec_dirs(problems, path, dirs):
    """containerd ``cdi_spec_dirs`` entries that are absolute path strings; the others are problems."""
    valid = []
    seen = set()
    entries = dirs if isinstance(dirs, list) else []
    for entry in entries[:MAX_LIST_ENTRIES]:
        error = _path_error(entry)
        if error:
            problems.append({"path": path, "reason": "cdi_spec_dirs: entry %s %s; ignored" % (quote(entry), error)})
        elif entry not in seen:
            seen.add(entry)
            valid.append(entry)
    if len(entries) > MAX_LIST_ENTRIES:
        problems.append({"path": path, "reason": "cdi_spec_dirs: %d entries; only the first %d are assessed" % (
            len(entries), MAX_LIST_ENTRIES)})
    if dirs is not None and not isinstance(dirs, list):
        problems.append({"path": path, "reason": "cdi_spec_dirs is not a list (got %s); ignored" % type(dirs).__name__})
    return valid


def complete_containerd(facts, raw, files, problems):
    """Fill in ``facts`` (the node's containerd facts) from the raw config texts."""
    raw = raw if isinstance(raw, dict) else {}
    if not raw.get("present"):
        return facts
    config_path = facts.get("config_path") or raw.get("config_path")
    if not isinstance(config_path, str):
        error = "config path sent by the node is %s, not a path" % quote(config_path)
        problems.append({"path": "containerd", "reason": error})
        facts["config_error"] = error
        return facts
    config, error = _load_toml_file(problems, files, config_path)
    if error:
        facts["config_error"] = error
        return facts
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as containerd_mod
    try:
        imports = config.get("imports") if "imports" in config else []
        if not isinstance(imports, list):
            problems.append({"path": config_path, "reason": "'imports' is not a list"})
            imports = []
        collected = raw.get("imports") if isinstance(raw.get("imports"), dict) else {}
        merged = config
        loaded = []
        patterns = []
        if len(imports) > MAX_LIST_ENTRIES:
            problems.append({"path": config_path, "reason": "imports: %d entries; only the first %d are assessed" % (
                len(imports), MAX_LIST_ENTRIES)})
        for pattern in imports[:MAX_LIST_ENTRIES]:
            if not isinstance(pattern, str):
                problems.append({"path": config_path, "reason": "imports: entry %s is not a string; ignored" % quote(pattern)})
                continue
            if "\x00" in pattern:
                problems.append({"path": config_path, "reason": "imports: entry %s holds a NUL byte; ignored" % quote(pattern)})
                continue
            patterns.append(pattern)
            if pattern not in collected:
                problems.append({"path": config_path, "reason": "imports: %s was not read on the node; its drop-ins "
                                                                "are not assessed" % quote(pattern)})
                continue
            paths = collected[pattern] if isinstance(collected[pattern], list) else []
            for path in sorted(p for p in paths if isinstance(p, str)):
                dropin, dropin_error = _load_toml_file(problems, files, path)
                if dropin is None or dropin_error:
                    continue
                try:
                    merged = containerd_mod.merge_configs(merged, dropin, facts.get("version"))
                except Exception as exc:  # pylint: disable=broad-except
                    problems.append({"path": path, "reason": "not merged: %s" % _describe(exc)})
                    continue
                loaded.append(path)
        analysis = containerd_mod.analyse_config(merged, facts.get("version"))
        for reason in analysis.get("problems") or []:
            problems.append({"path": config_path, "reason": reason})
        for key in _ANALYSED_KEYS:
            facts[key] = analysis.get(key)
        facts["cdi_spec_dirs"] = _valid_spec_dirs(problems, config_path, analysis.get("cdi_spec_dirs"))
        facts["imports"] = [{"pattern": p} for p in patterns]
        facts["imported_files"] = loaded
    except Exception as exc:  # pylint: disable=broad-except  # a config shape nobody foresaw
        problems.append({"path": config_path, "reason": "not analysed: %s" % _describe(exc)})
        facts["config_error"] = "not analysed: %s" % _describe(exc)
        for key in _ANALYSED_KEYS:
            facts[key] = [] if key in ("cdi_spec_dirs", "nvidia_runtime_names") else None
    return facts


def _unreadable_spec(path, error):
    return {"path": path, "cdi_version": None, "kind": None, "devices": [], "error": error,
            "loaded_by_runtime": False}


def complete_cdi(containerd_facts, raw, files, problems):
    """The ``cdi`` facts: specs of the default dirs and of containerd's ``cdi_spec_dirs``."""
    raw = raw if isinstance(raw, dict) else {}
    listed = raw.get("dirs") if isinstance(raw.get("dirs"), dict) else {}
    dirs = list(DEFAULT_SPEC_DIRS)
    for directory in containerd_facts.get("cdi_spec_dirs") or []:
        if directory not in dirs:
            dirs.append(directory)
    specs = []
    for directory in dirs:
        if directory not in listed:
            problems.append({"path": directory, "reason": "CDI spec directory named by containerd was not read on "
                                                          "the node; its specs are not assessed"})
            continue
        names = listed[directory] if isinstance(listed[directory], list) else []
        for name in names:
            if not isinstance(name, str):
                problems.append({"path": directory, "reason": "spec file name %s sent by the node is not a string; "
                                                              "ignored" % quote(name)})
                continue
            path = directory.rstrip("/") + "/" + name
            entry = files.get(path) if isinstance(files.get(path), dict) else {}
            text = entry.get("text")
            if not isinstance(text, str):
                specs.append(_unreadable_spec(path, "unreadable: %s" % (entry.get("error") or "not sent by the node")))
                continue
            from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import cdi as cdi_mod
            try:
                spec = cdi_mod.parse_cdi_spec(text, path)
            except Exception as exc:  # pylint: disable=broad-except  # one bad spec never hides the others
                problems.append({"path": path, "reason": "CDI spec not checked: %s" % _describe(exc)})
                spec = _unreadable_spec(path, "not checked: %s" % _describe(exc))
            # The CDI library loads only .json and .yaml: a .yml spec is silently ignored by the runtime.
            spec["loaded_by_runtime"] = cdi_mod.is_cdi_spec_filename(name, loaded_by_cdi_only=True)
            specs.append(spec)
    return {"spec_dirs": dirs, "specs": specs, "invalid_count": sum(1 for s in specs if s.get("error"))}


def complete(facts, raw):
    """Fill in the ``containerd`` and ``cdi`` facts from ``raw`` (see ``gpu_node.collect``).

    Returns ``facts`` (modified in place): the raw texts are never copied into it; parse problems
    are appended to ``facts["problems"]``. Never raises for bad node data.
    """
    raw = raw if isinstance(raw, dict) else {}
    files = raw.get("files") if isinstance(raw.get("files"), dict) else {}
    problems = facts.setdefault("problems", [])
    containerd = facts.get("containerd")
    if not isinstance(containerd, dict):
        containerd = facts["containerd"] = {}
    complete_containerd(containerd, raw.get("containerd"), files, problems)
    facts["cdi"] = complete_cdi(containerd, raw.get("cdi"), files, problems)
    return facts


def gather(tree, commands, containerd_config="/etc/containerd/config.toml"):
    """All ``gpu_node`` facts of ``tree``: the node's read and the controller's parse in one call."""
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import gpu_node
    facts, raw = gpu_node.collect(tree, commands, containerd_config)
    return complete(facts, raw)
