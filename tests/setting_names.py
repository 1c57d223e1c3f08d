# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The one naming rule of role variables (meta/settings.yml, docs/design.md "One name per setting").

A role reads the inventory setting ``dra_gate_<name>`` through its default ``<role>_<name>``, with the leading
words of ``<name>`` that are words of the role's name dropped (no stutter): role ``drain_waves`` reads
``dra_gate_drain_timeout`` through ``drain_waves_timeout``, role ``etcd_snapshot`` reads ``dra_gate_etcd_snapshot_dir``
through ``etcd_snapshot_dir``, role ``operator_rollback`` reads ``dra_gate_operator_release`` through
``operator_rollback_release``. Where that gives a bad name (nothing left, as for ``dra_gate_drain_waves`` in role
``drain_waves``), the setting's entry in meta/settings.yml names the variable: ``role_variable: {<role>: <variable>}``.

``role_variable`` is the only place the tests derive a role variable from a setting (tests/unit/test_settings_registry.py,
tests/unit/roles/test_argument_specs.py, the input rule tests); it lives here, on the tests' python path, so that
every test file can import it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import functools
import os

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
REGISTRY_PATH = os.path.join(REPO, "meta", "settings.yml")
PREFIX = "dra_gate_"


@functools.lru_cache(maxsize=None)
def overrides():
    """{setting: {role: variable}}: the registry's explicit role_variable entries."""
    with open(REGISTRY_PATH) as handle:
        settings = yaml.safe_load(handle)["settings"]
    return {name: dict(entry.get("role_variable") or {}) for name, entry in settings.items() if entry.get("role_variable")}


def role_variable(role, setting, explicit=True):
    """The variable through which ``role`` reads ``setting`` (``dra_gate_<name>``): the registry's role_variable
    for the role when there is one (``explicit``), else ``<role>_<name>`` less the leading role words of ``<name>``.
    Nothing left of ``<name>`` gives ``<role>_`` - never a valid variable, so that the registry must name one."""
    if explicit:
        named = overrides().get(setting, {}).get(role)
        if named:
            return named
    assert setting.startswith(PREFIX), setting
    words = setting[len(PREFIX):].split("_")
    role_words = role.split("_")
    while words and words[0] in role_words:
        words.pop(0)
    return role + "_" + "_".join(words)
