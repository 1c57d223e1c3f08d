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
on the controller: tests, ``kubelab`` and offline evaluation of unpacked support bundles.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

# cdi, containerd and gpu_node are imported where they are needed: the action plugin runs for every
# host, the collection loader compiles each imported file from source, and most hosts have no CDI
# spec (bench/bench_node_facts.py measures the whole call against ping).

#: The CDI library's default spec directories (the same as ``cdi.DEFAULT_SPEC_DIRS``).
DEFAULT_SPEC_DIRS = ("/etc/cdi", "/var/run/cdi")
#: Keys under containerd's registry configuration whose values are secrets.
CREDENTIAL_KEYS = ("auth", "password", "identitytoken", "identity_token", "registrytoken",
                   "registry_token", "token", "secret", "username")
REDACTED = "<redacted>"
_ANALYSED_KEYS = ("config_version", "cdi_enabled", "cdi_enabled_source", "cdi_spec_dirs",
                  "nvidia_runtime", "nvidia_runtime_names", "default_runtime_name")


def _describe(exc):
    if isinstance(exc, RecursionError):
        return "nested too deeply"
    return "%s: %s" % (type(exc).__name__, exc)


def redact_registry_credentials(config, _inside_registry=False):
    """A copy of a parsed containerd config with every credential under a ``registry`` table redacted."""
    if isinstance(config, dict):
        result = {}
        for key, value in config.items():
            inside = _inside_registry or "registry" in str(key).lower()
            if inside and str(key).lower() in CREDENTIAL_KEYS and not isinstance(value, (dict, list)):
                result[key] = REDACTED
            else:
                result[key] = redact_registry_credentials(value, inside)
        return result
    if isinstance(config, list):
        return [redact_registry_credentials(item, _inside_registry) for item in config]
    return config


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
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils import containerd as containerd_mod  # pylint: disable=import-outside-toplevel
    try:
        config, error = containerd_mod.load_toml(text)
    except Exception as exc:  # pylint: disable=broad-except  # any parser failure is this file's problem
        config, error = None, "TOML not parsed: %s" % _describe(exc)
    if error:
        problems.append({"path": path, "reason": error})
        return None, error
    return redact_registry_credentials(config), None


def _valid_spec_dirs(problems, path, dirs):
    """containerd ``cdi_spec_dirs`` entries that are absolute path strings; the others are problems."""
    valid = []
    for entry in dirs if isinstance(dirs, list) else []:
        if not isinstance(entry, str):
            problems.append({"path": path, "reason": "cdi_spec_dirs: entry %r is not a string; ignored" % (entry,)})
        elif not entry.startswith("/"):
            problems.append({"path": path, "reason": "cdi_spec_dirs: entry %r is not an absolute path; ignored" % entry})
        elif entry not in valid:
            valid.append(entry)
    if dirs is not None and not isinstance(dirs, list):
        problems.append({"path": path, "reason": "cdi_spec_dirs is not a list (got %s); ignored" % type(dirs).__name__})
    return valid


def complete_containerd(facts, raw, files, problems):
    """Fill in ``facts`` (the node's containerd facts) from the raw config texts."""
    raw = raw if isinstance(raw, dict) else {}
    if not raw.get("present"):
        return facts
    config_path = facts.get("config_path") or raw.get("config_path")
    config, error = _load_toml_file(problems, files, config_path)
    if error:
        facts["config_error"] = error
        return facts
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils import containerd as containerd_mod  # pylint: disable=import-outside-toplevel
    try:
        imports = config.get("imports") if "imports" in config else []
        if not isinstance(imports, list):
            problems.append({"path": config_path, "reason": "'imports' is not a list"})
            imports = []
        collected = raw.get("imports") if isinstance(raw.get("imports"), dict) else {}
        merged = config
        loaded = []
        patterns = []
        for pattern in imports:
            if not isinstance(pattern, str):
                problems.append({"path": config_path, "reason": "imports: entry %r is not a string; ignored" % (pattern,)})
                continue
            patterns.append(pattern)
            if pattern not in collected:
                problems.append({"path": config_path, "reason": "imports: %r was not read on the node; its drop-ins "
                                                                "are not assessed" % pattern})
                continue
            for path in sorted(collected[pattern]):
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
    listed = (raw or {}).get("dirs") if isinstance((raw or {}).get("dirs"), dict) else {}
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
        for name in listed[directory] or []:
            path = directory.rstrip("/") + "/" + name
            entry = files.get(path) if isinstance(files.get(path), dict) else {}
            text = entry.get("text")
            if not isinstance(text, str):
                specs.append(_unreadable_spec(path, "unreadable: %s" % (entry.get("error") or "not sent by the node")))
                continue
            from ansible_collections.gpufleet.dra_gate.plugins.module_utils import cdi as cdi_mod  # pylint: disable=import-outside-toplevel
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
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils import gpu_node  # pylint: disable=import-outside-toplevel
    facts, raw = gpu_node.collect(tree, commands, containerd_config)
    return complete(facts, raw)
