# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Every role documents each variable of its defaults/main.yml in meta/argument_specs.yml, and the
documented default is the one the role really uses. A role with entry points other than main (the
internal role phase: start, answered, finish) documents them per entry point; an option documented
in several entry points has the same spec in each."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

import pytest
import yaml

from setting_names import role_variable

ROLES = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))), "roles")
# "{{ dra_gate_x | default(LITERAL) }}": the inventory-wide variable, else LITERAL.
TEMPLATED_DEFAULT = re.compile(r"^\{\{\s*(?P<var>\w+)\s*\|\s*default\((?P<literal>.*)\)\s*\}\}$")
TYPES = {"str", "int", "bool", "list", "dict", "path", "raw", "float"}


def role_names():
    return sorted(name for name in os.listdir(ROLES) if os.path.isdir(os.path.join(ROLES, name)))


def load(role, *parts):
    with open(os.path.join(ROLES, role, *parts)) as handle:
        return yaml.safe_load(handle)


def options_of(role):
    """{name: spec} over every entry point of the role (main, or tasks_from entry points)."""
    specs = load(role, "meta", "argument_specs.yml")["argument_specs"]
    merged = {}
    for entry in sorted(specs):
        for name, spec in (specs[entry].get("options") or {}).items():
            assert merged.setdefault(name, spec) == spec, (entry, name)
    return merged


def test_there_are_roles():
    assert "preflight" in role_names() and "phase" in role_names()


def test_the_phase_skeleton_has_its_entry_points():
    specs = load("phase", "meta", "argument_specs.yml")["argument_specs"]
    assert sorted(specs) == ["answered", "finish", "start"]
    for entry in specs:
        assert os.path.isfile(os.path.join(ROLES, "phase", "tasks", entry + ".yml")), entry


@pytest.mark.parametrize("role", role_names())
def test_every_default_is_documented_and_nothing_else(role):
    defaults = load(role, "defaults", "main.yml") or {}
    options = options_of(role)
    # a required option has no default
    assert sorted(defaults) == sorted(n for n, spec in options.items() if not spec.get("required"))


@pytest.mark.parametrize("role", role_names())
def test_each_option_has_description_type_and_prefix(role):
    options = options_of(role)
    for name, spec in options.items():
        assert name.startswith(role + "_"), name
        assert spec.get("description"), name
        assert spec.get("type") in TYPES, name
        if spec.get("type") == "list":
            assert spec.get("elements"), name


@pytest.mark.parametrize("role", role_names())
def test_documented_defaults_match_the_role(role):
    defaults = load(role, "defaults", "main.yml") or {}
    options = options_of(role)
    for name, value in defaults.items():
        documented = options[name].get("default")
        match = TEMPLATED_DEFAULT.match(value) if isinstance(value, str) else None
        if match is None:
            assert documented == value, name
            continue
        assert role_variable(role, match.group("var")) == name, name
        if re.match(r"^[A-Za-z_]\w*$", match.group("literal")) and match.group("literal") not in ("true", "false"):
            continue  # another variable: the spec documents it in words
        try:  # a Jinja literal is a YAML flow value (true/false bare, strings quoted: 'true' stays a string)
            literal = yaml.safe_load(match.group("literal"))
        except yaml.YAMLError:
            continue  # an expression (e.g. a lookup); the spec documents it in words
        if isinstance(literal, str) and ("(" in literal or "~" in literal):
            continue  # an expression YAML read as a plain string
        assert documented == literal, name
        choices = options[name].get("choices")
        if choices:
            assert literal in choices, name
