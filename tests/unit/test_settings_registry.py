# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""One name per setting (issue 28): meta/settings.yml lists every inventory setting (``dra_gate_*``) once, and
the roles, playbooks, inventories, docs, tests and module docs are held to it.

A setting used anywhere that the registry does not list is a typo or a second name for a concept; two listed
names made of the same words (``operator_target_version`` / ``target_operator_version``) are one concept with
two names; a module option that two roles feed from different settings is one too (that is how the README's
``dra_gate_target_operator_version`` once never reached the upgrade). A role reads a setting through the
default ``<role>_<name>: "{{ dra_gate_<name> | default(X) }}"`` - the same ``<name>``, less its leading words that
are words of the role's name (``drain_waves_timeout`` <- ``dra_gate_drain_timeout``), or the variable the setting's
``role_variable`` names for the role where that rule gives a bad name (one function derives the name everywhere:
``role_variable`` of tests/setting_names.py) - and documents that
variable in its meta/argument_specs.yml with the registry's type and default; every place that defaults a
setting defaults it to the registry's value; every setting is read by a role or a playbook, and the registry
says which; a setting only a play keyword reads (scope ``play``: extra vars only) is never set in an
inventory; each input rule (``plugins/module_utils/inputs/<role>.py``) names the setting its role variable
really reads."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import functools
import importlib
import os
import re

import pytest
import yaml

from setting_names import role_variable

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REGISTRY_PATH = os.path.join(REPO, "meta", "settings.yml")
NAME = re.compile(r"(?<![A-Za-z0-9_])dra_gate_[a-z0-9_]*[a-z0-9](?![A-Za-z0-9_*])")
# "{{ dra_gate_x | default(REST) }}", the form of a role default that reads a setting
ROLE_DEFAULT = re.compile(r"^\{\{\s*(?P<setting>dra_gate_\w+)\s*\|\s*default\((?P<rest>.*)\)\s*\}\}$", re.S)
# any "dra_gate_x | default(LITERAL)" in a role or a playbook
DEFAULTED = re.compile(r"(?P<setting>dra_gate_\w+)\s*\|\s*default\(")
# an option value that is one role variable, maybe with filters: "{{ preflight_node_timeout | float }}"
ONE_VARIABLE = re.compile(r"^\{\{\s*(?P<var>[a-z_][a-z0-9_]*)\s*(\|[^{}]*)?\}\}$")
TYPES = {"str", "int", "bool", "list", "dict", "path", "raw", "float"}
# Where settings are used (relative to the repository root), and what is never scanned.
SCANNED = ("README.md", "dra-gate", "bench", "docs", "extensions", "inventories", "lab", "meta", "molecule", "playbooks",
           "plugins", "roles", "tests")
NOT_SCANNED = ("tests/fixtures", "tests/output", "tests/unit/test_settings_registry.py", "meta/settings.yml")
# Names in prose that stand for any setting, not for one.
PLACEHOLDERS = {"dra_gate_x"}
TASK_KEYWORDS = {
    "name", "when", "register", "tags", "vars", "run_once", "delegate_to", "check_mode", "ignore_errors",
    "ignore_unreachable", "timeout", "loop", "loop_control", "block", "rescue", "always", "notify", "changed_when",
    "failed_when", "until", "retries", "delay", "no_log", "environment", "become", "throttle", "args",
    "module_defaults", "any_errors_fatal", "listen", "diff", "delegate_facts", "become_user"}

# Violations known and being fixed elsewhere: (check, subject) -> (why, the files it may be in). An entry nothing
# needs any more fails test_known_exceptions_are_still_needed, so that it is removed with the fix.
KNOWN = {}
USED = set()


def known(check, subject, where=()):
    """Whether this violation is a known one in these files (noted in USED, so that stale entries can be found)."""
    entry = KNOWN.get((check, subject))
    if entry is None or not all(w.startswith(entry[1]) for w in where):
        return False
    USED.add((check, subject))
    return True


def load_yaml(*parts):
    with open(os.path.join(REPO, *parts)) as handle:
        return yaml.safe_load(handle)


@functools.lru_cache(maxsize=None)
def registry():
    return load_yaml("meta", "settings.yml")["settings"]


def role_names():
    return sorted(name for name in os.listdir(os.path.join(REPO, "roles"))
                  if os.path.isfile(os.path.join(REPO, "roles", name, "defaults", "main.yml")))


def role_defaults(role):
    return load_yaml("roles", role, "defaults", "main.yml") or {}


def role_options(role):
    """{name: spec} over every entry point of the role's meta/argument_specs.yml."""
    specs = (load_yaml("roles", role, "meta", "argument_specs.yml") or {}).get("argument_specs") or {}
    merged = {}
    for entry in sorted(specs):
        merged.update((specs[entry] or {}).get("options") or {})
    return merged


def settings_of_role_variables():
    """{role variable: the setting its default reads} over every role (the ROLE_DEFAULT form)."""
    out = {}
    for role in role_names():
        for name, value in role_defaults(role).items():
            match = ROLE_DEFAULT.match(value) if isinstance(value, str) else None
            if match:
                out[name] = match.group("setting")
    return out


def scanned_files():
    for top in SCANNED:
        path = os.path.join(REPO, top)
        if os.path.isfile(path):
            yield top
            continue
        for base, dirs, files in os.walk(path):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__" and not d.startswith("."))
            for name in sorted(files):
                rel = os.path.relpath(os.path.join(base, name), REPO)
                if not rel.startswith(NOT_SCANNED) and not name.endswith((".pyc", ".tgz", ".gz", ".db")):
                    yield rel


def read_text(rel):
    try:
        with open(os.path.join(REPO, rel), encoding="utf-8") as handle:
            return handle.read()
    except (UnicodeDecodeError, IsADirectoryError):
        return ""


def without_comments(text):
    return "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))


@functools.lru_cache(maxsize=None)
def uses():
    """{setting name: [files that name it]} over every scanned file."""
    found = collections.defaultdict(list)
    for rel in scanned_files():
        for name in sorted(set(NAME.findall(read_text(rel)))):
            found[name].append(rel)
    return found


def reader_of(rel):
    """The reader a file belongs to (roles/<role>, playbooks/<file>, extensions/<file>), or None."""
    parts = rel.split("/")
    if parts[0] == "roles" and len(parts) > 3 and parts[2] in ("defaults", "tasks", "vars", "templates", "handlers"):
        return "roles/" + parts[1]
    if parts[0] in ("playbooks", "extensions") and rel.endswith(".yml"):
        return rel  # extensions/awx: the AWX objects name every setting (surveys); the workflow reads dra_gate_gate_id
    return None


@functools.lru_cache(maxsize=None)
def mentions():
    """{setting: {reader: definite}} - definite when a role's defaults or a playbook (outside comments) read it;
    a role's tasks, vars and templates only mention it (a message names a setting as often as a task reads it)."""
    found = collections.defaultdict(dict)
    for rel in scanned_files():
        reader = reader_of(rel)
        if reader is None:
            continue
        definite = "/defaults/" in rel or rel.startswith("playbooks/")
        for name in set(NAME.findall(without_comments(read_text(rel)))):
            found[name][reader] = found[name].get(reader, False) or definite
    return found


def words(name):
    """The words of a setting name, order and plural -s ignored: one concept, one set of words."""
    return tuple(sorted(w[:-1] if len(w) > 3 and w.endswith("s") else w for w in name[len("dra_gate_"):].split("_")))


def task_lists(data):
    """Every task list of a tasks file or a playbook (plays' tasks, pre_tasks, post_tasks, handlers)."""
    if not isinstance(data, list):
        return []
    plays = [item for item in data if isinstance(item, dict) and ("hosts" in item or "import_playbook" in item)]
    if not plays:
        return [data]
    return [play.get(key) or [] for play in plays for key in ("pre_tasks", "tasks", "post_tasks", "handlers")]


def tasks_of(tasks):
    for task in tasks or []:
        if not isinstance(task, dict):
            continue
        yield task
        for key in ("block", "rescue", "always"):
            yield from tasks_of(task.get(key))


def yaml_files(*tops):
    for top in tops:
        for base, _dirs, files in os.walk(os.path.join(REPO, top)):
            for name in sorted(files):
                if name.endswith(".yml"):
                    yield os.path.relpath(os.path.join(base, name), REPO)


def literal(text):
    """A Jinja literal as YAML reads it, or a marker for an expression (another variable, omit, a lookup)."""
    text = text.strip()
    if re.match(r"^[A-Za-z_]\w*$", text) and text not in ("true", "false", "none", "None"):
        return EXPRESSION
    if text in ("none", "None"):
        return None
    try:
        value = yaml.safe_load(text)
    except yaml.YAMLError:
        return EXPRESSION
    if isinstance(value, str) and (("(" in value or "~" in value) or not re.match(r"^'.*'$|^\".*\"$", text)):
        return EXPRESSION
    return value


EXPRESSION = object()


def first_argument(text):
    """The first argument of a call whose '(' has been consumed: the text up to the matching ',' or ')'."""
    depth, quote = 0, None
    for index, char in enumerate(text):
        if quote:
            if char == quote:
                quote = None
        elif char in "'\"":
            quote = char
        elif char in "([{":
            depth += 1
        elif char in ")]}":
            if depth == 0:
                return text[:index]
            depth -= 1
        elif char == "," and depth == 0:
            return text[:index]
    return text


def defaults_given(text):
    """(setting, literal) of every ``dra_gate_x | default(LITERAL)`` in the text (expressions left out)."""
    for match in DEFAULTED.finditer(text):
        value = literal(first_argument(text[match.end():]))
        if value is not EXPRESSION:
            yield match.group("setting"), value


# --- the checks: each returns its violations (known exceptions left out) ----------------------------------------

def registry_form_violations():
    with open(REGISTRY_PATH) as handle:
        text = handle.read()
    names = re.findall(r"^  (dra_gate_\w+):", text, re.M)
    wrong = ["%s is listed twice" % n for n, c in collections.Counter(names).items() if c > 1]
    if names != sorted(names):
        wrong.append("meta/settings.yml is not sorted by name")
    listed = registry()
    for name, entry in listed.items():
        problems = []
        if not NAME.match(name) or NAME.match(name).group(0) != name:
            problems.append("not a setting name")
        extra = set(entry) - {"type", "elements", "default", "choices", "scope", "description", "read_by",
                              "separate_from", "default_differs", "role_variable"}
        if extra:
            problems.append("unknown keys %s" % sorted(extra))
        if entry.get("type") not in TYPES:
            problems.append("type %r" % entry.get("type"))
        if (entry.get("type") == "list") != ("elements" in entry):
            problems.append("elements go with type list, and only with it")
        if not isinstance(entry.get("description"), str) or len(entry["description"]) < 10:
            problems.append("no description")
        if "default" not in entry:
            problems.append("no default (null when there is none)")
        elif "choices" in entry and entry["default"] not in entry["choices"]:
            problems.append("default not one of the choices")
        if entry.get("scope", "inventory") not in ("inventory", "play"):
            problems.append("scope %r" % entry.get("scope"))
        if not isinstance(entry.get("read_by"), list) or not entry["read_by"]:
            problems.append("read by nothing")
        problems += ["separate_from %s is not listed" % o for o in entry.get("separate_from") or {} if o not in listed]
        problems += role_variable_problems(name, entry)
        wrong += ["%s: %s" % (name, p) for p in problems]
    return wrong


def role_variable_problems(name, entry):
    """An explicit role_variable names, for a role that reads the setting, a variable of that role that the rule
    would not give; a role the rule leaves no name (nothing once the role words are dropped) must have one."""
    named = entry.get("role_variable") or {}
    if not isinstance(named, dict):
        return ["role_variable is not a mapping role -> variable"]
    problems = []
    for role, variable in sorted(named.items()):
        if "roles/%s" % role not in (entry.get("read_by") or []):
            problems.append("role_variable names role %s, which read_by does not list" % role)
        if not isinstance(variable, str) or not re.match(r"^%s(_[a-z0-9]+)+$" % re.escape(role), variable):
            problems.append("role_variable %r of role %s is not %s_<words>" % (variable, role, role))
        elif variable == role_variable(role, name, explicit=False):
            problems.append("role_variable %s of role %s is what the rule gives: leave it out" % (variable, role))
    for reader in entry.get("read_by") or []:
        role = reader[len("roles/"):] if reader.startswith("roles/") else None
        if role and role_variable(role, name) == role + "_":
            problems.append("the rule leaves role %s no name for it: give role_variable {%s: ...}" % (role, role))
    return problems


def twin_violations():
    listed = registry()
    by_words = collections.defaultdict(set)
    for name in set(listed) | set(uses()):
        if name not in PLACEHOLDERS:
            by_words[words(name)].add(name)
    wrong = []
    for names in sorted(sorted(n) for n in by_words.values() if len(n) > 1):
        if not all(known("unregistered", n, uses().get(n, ())) for n in names if n not in listed):
            wrong.append("one concept, two names (the same words): %s" % names)
    return wrong


def unregistered_violations():
    listed = registry()
    return ["%s (in %s) is not in meta/settings.yml: a typo, or a second name for a listed setting" % (name, files)
            for name, files in sorted(uses().items())
            if name not in listed and name not in PLACEHOLDERS and not known("unregistered", name, files)]


def read_by_violations():
    found = mentions()
    wrong = []
    for name, entry in registry().items():
        readers = found.get(name, {})
        wrong += ["%s: read by %s, which read_by does not list" % (name, reader)
                  for reader, definite in sorted(readers.items()) if definite and reader not in entry["read_by"]]
        wrong += ["%s: read_by lists %s, which does not read it" % (name, reader)
                  for reader in entry["read_by"] if reader not in readers and not known("read_by", "%s %s" % (name, reader))]
    return wrong


def play_scope_violations():
    play_only = {name for name, entry in registry().items() if entry.get("scope") == "play"}
    wrong = []
    for rel in yaml_files("inventories"):
        keys = set()
        pending = [load_yaml(rel)]
        while pending:
            node = pending.pop()
            if isinstance(node, dict):
                keys.update(k for k in node if isinstance(k, str))
                pending += list(node.values())
        wrong += ["%s sets %s: a play keyword reads it, give it with -e" % (rel, k) for k in sorted(keys & play_only)]
    return wrong


def naming_rule_violations(role):
    listed = registry()
    named = collections.defaultdict(list)  # {role variable: the settings the rule gives it in this role}
    for setting in sorted(listed):
        named[role_variable(role, setting)].append(setting)
    wrong = []
    for name, value in role_defaults(role).items():
        match = ROLE_DEFAULT.match(value) if isinstance(value, str) else None
        if match is None:
            if name in named:
                wrong.append("%s does not read %s" % (name, " or ".join(named[name])))
            if isinstance(value, str) and NAME.search(value):
                wrong.append("%s reads a setting in another form than {{ dra_gate_<name> | default(...) }}: %s" % (name, value))
            continue
        setting = match.group("setting")
        if role_variable(role, setting) != name and not known("unregistered", setting, ["roles/%s/" % role]):
            wrong.append("%s reads %s, which the rule names %s: the rule is %s_<name> <- dra_gate_<name>, the leading "
                         "words of <name> that are words of the role's name dropped, or the setting's role_variable"
                         % (name, setting, role_variable(role, setting), role))
    return wrong


def documentation_violations(role):
    listed, options = registry(), role_options(role)
    wrong = []
    for name, value in role_defaults(role).items():
        match = ROLE_DEFAULT.match(value) if isinstance(value, str) else None
        if match is None or match.group("setting") not in listed:
            continue
        entry, spec = listed[match.group("setting")], options.get(name)
        if spec is None:
            wrong.append("%s: not in roles/%s/meta/argument_specs.yml" % (name, role))
            continue
        if spec.get("type") != entry["type"] and {spec.get("type"), entry["type"]} != {"str", "path"}:
            wrong.append("%s: type %s, the registry's %s" % (name, spec.get("type"), entry["type"]))
        if spec.get("elements") != entry.get("elements"):
            wrong.append("%s: elements %s, the registry's %s" % (name, spec.get("elements"), entry.get("elements")))
        if spec.get("choices") and spec["choices"] != entry.get("choices"):
            wrong.append("%s: choices %s, the registry's %s" % (name, spec["choices"], entry.get("choices")))
        differs = "roles/" + role in (entry.get("default_differs") or {})
        if "default" in spec and spec["default"] != entry["default"] and not differs:
            wrong.append("%s: default %r, the registry's %r" % (name, spec["default"], entry["default"]))
    return wrong


def default_violations():
    listed = registry()
    wrong = []
    for rel in yaml_files("roles", "playbooks"):
        reader = reader_of(rel)
        if reader is None:
            continue
        for setting, value in defaults_given(without_comments(read_text(rel))):
            entry = listed.get(setting)
            if entry is None or reader in (entry.get("default_differs") or {}):
                continue
            if value != entry["default"]:
                wrong.append("%s: %s defaults to %r, the registry (and every other place) to %r" % (
                    rel, setting, value, entry["default"]))
    return wrong


def _options_fed(args, of_variable, prefix=""):
    for key, value in args.items():
        path = prefix + str(key)
        if isinstance(value, dict):
            yield from _options_fed(value, of_variable, path + ".")
        elif isinstance(value, str):
            match = ONE_VARIABLE.match(value.strip())
            if match and match.group("var") in of_variable:
                yield path, of_variable[match.group("var")]


def module_option_violations():
    listed, of_variable = registry(), settings_of_role_variables()
    fed = collections.defaultdict(set)
    for rel in yaml_files("roles"):
        if "/tasks/" not in rel:
            continue
        for tasks in task_lists(load_yaml(rel)):
            for task in tasks_of(tasks):
                for module, args in task.items():
                    if module not in TASK_KEYWORDS and isinstance(args, dict):
                        for option, setting in _options_fed(args, of_variable):
                            fed[(module, option)].add((setting, rel.split("/")[1]))
    wrong = []
    for (module, option), pairs in sorted(fed.items()):
        settings, roles = {s for s, _r in pairs}, {r for _s, r in pairs}
        if len(settings) < 2 or len(roles) < 2:
            continue  # one setting, or one role using an option for two of its own settings
        apart = [a for a in settings if set((listed.get(a) or {}).get("separate_from") or {}) & settings]
        if len(settings) == 2 and apart:
            continue
        unlisted = ["roles/%s/" % r for s, r in pairs if s not in listed] or ["-"]  # excused only where unlisted
        if not known("one_option", "%s %s" % (module, option), unlisted):
            wrong.append("%s %s is fed from different settings in different roles: %s" % (module, option, sorted(pairs)))
    return wrong


def pass_through_violations():
    of_variable = settings_of_role_variables()
    wrong = []
    for rel in yaml_files("roles", "playbooks"):
        if "/tasks/" not in rel and not rel.startswith("playbooks/"):
            continue
        data = load_yaml(rel)
        blocks = [task.get("vars") or {} for tasks in task_lists(data) for task in tasks_of(tasks)]
        if rel.startswith("playbooks/") and isinstance(data, list):
            blocks += [dict(role) for play in data if isinstance(play, dict) for role in play.get("roles") or []
                       if isinstance(role, dict)]
        for block in blocks:
            for name, value in block.items():
                if name not in of_variable or not isinstance(value, str):
                    continue
                match = ONE_VARIABLE.match(value.strip()) or re.match(r"^\{\{\s*(?P<var>dra_gate_\w+)", value.strip())
                source = of_variable.get(match.group("var"), match.group("var")) if match else None
                if source and source.startswith("dra_gate_") and source != of_variable[name]:
                    wrong.append("%s: %s (%s) is given %s" % (rel, name, of_variable[name], source))
    return wrong


def input_rule_modules():
    directory = os.path.join(REPO, "plugins", "module_utils", "inputs")
    names = sorted(name[:-3] for name in os.listdir(directory) if re.match(r"^\w+\.py$", name) and name not in ("__init__.py", "rules.py"))
    assert names, "no input rule modules under %s" % directory
    return names


def rules_of(role):
    return importlib.import_module("ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs." + role).RULES


def input_rule_violations(role):
    defaults, of_variable, listed = role_defaults(role), settings_of_role_variables(), registry()
    wrong = []
    for rule in rules_of(role):
        if rule.field not in defaults and rule.field not in role_options(role):
            if not known("rule_setting", rule.field):
                wrong.append("%s: no such variable of role %s" % (rule.field, role))
        elif rule.setting and of_variable.get(rule.field) != rule.setting and not known("rule_setting", rule.field):
            wrong.append("%s: the rule names %s, the role reads %s" % (rule.field, rule.setting, of_variable.get(rule.field)))
        if rule.setting and rule.setting not in listed:
            wrong.append("%s: %s is not in meta/settings.yml" % (rule.field, rule.setting))
    return wrong


ROLE_CHECKS = (naming_rule_violations, documentation_violations)
CHECKS = (registry_form_violations, twin_violations, unregistered_violations, read_by_violations,
          play_scope_violations, default_violations, module_option_violations, pass_through_violations)


# --- the tests ---------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("check", CHECKS, ids=lambda c: c.__name__)
def test_settings(check):
    wrong = check()
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("role", role_names())
@pytest.mark.parametrize("check", ROLE_CHECKS, ids=lambda c: c.__name__)
def test_role_settings(check, role):
    wrong = check(role)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("role", input_rule_modules())
def test_input_rules_name_the_setting_their_role_variable_reads(role):
    wrong = input_rule_violations(role)
    assert not wrong, "\n".join(wrong)
    from ansible_collections.gpufleet.dra_gate.plugins.modules import input_check  # pylint: disable=import-outside-toplevel
    assert input_check.RULES.get(role) is rules_of(role), "plugins/modules/input_check.py does not register inputs_%s" % role
    assert yaml.safe_load(input_check.DOCUMENTATION)["options"]["role"]["choices"] == sorted(input_check.RULES)


@pytest.mark.parametrize("role", input_rule_modules())
def test_the_role_passes_every_ruled_variable_to_input_check(role):
    calls = []
    for rel in yaml_files(os.path.join("roles", role, "tasks")):
        for tasks in task_lists(load_yaml(rel)):
            calls += [t["gpufleet.dra_gate.input_check"] for t in tasks_of(tasks) if "gpufleet.dra_gate.input_check" in t]
    if not calls:
        pytest.skip("roles/%s does not call input_check yet" % role)
    fields = sorted(set(rule.field for rule in rules_of(role)))
    for call in calls:
        assert call["role"] == role
        assert sorted(call["values"]) == fields, sorted(set(fields) ^ set(call["values"]))
        for name, value in call["values"].items():
            assert str(value).replace(" ", "") == "{{%s}}" % name, (name, value)


def test_known_exceptions_are_still_needed():
    USED.clear()
    for check in CHECKS:
        check()
    for role in role_names():
        for check in ROLE_CHECKS:
            check(role)
    for role in input_rule_modules():
        input_rule_violations(role)
    stale = sorted(set(KNOWN) - USED)
    assert not stale, "remove these KNOWN entries, nothing needs them any more: %s" % stale
