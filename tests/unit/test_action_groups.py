# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""meta/runtime.yml against the modules (issue 30): every module whose argument spec holds the k8s auth
options is in the ``k8s`` action group, every member of a group exists and its documentation (with its
fragments) names that group and no other, and the k8s members document the connection options."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib
import os

import pytest
import yaml

from ansible.module_utils import basic
from ansible.utils.plugin_docs import get_docstring

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import K8S_AUTH_ARG_SPEC

ROOT = os.path.join(os.path.dirname(__file__), "..", "..")
MODULES_DIR = os.path.join(ROOT, "plugins", "modules")
MODULES = sorted(name[:-3] for name in os.listdir(MODULES_DIR) if name.endswith(".py") and not name.startswith("_"))
COLLECTION = "gpufleet.dra_gate"


def _groups():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        return yaml.safe_load(handle)["action_groups"]


class _Built(Exception):
    pass


def _argument_spec(name, monkeypatch):
    """The argument spec the module's main() builds its AnsibleModule with (stopped right there)."""
    seen = {}

    def fake_init(self, argument_spec=None, *args, **kwargs):
        seen["spec"] = argument_spec or {}
        raise _Built()

    monkeypatch.setattr(basic.AnsibleModule, "__init__", fake_init)
    module = importlib.import_module("ansible_collections.gpufleet.dra_gate.plugins.modules." + name)
    with pytest.raises(_Built):
        module.main()
    return seen["spec"]


class _FragmentLoader(object):
    """The collection's own doc fragments, as ansible-doc's loader finds them (``gpufleet.dra_gate.<name>``)."""

    def get(self, name):
        prefix = COLLECTION + "."
        if not name.startswith(prefix) or "." in name[len(prefix):]:
            return None
        try:
            module = importlib.import_module("ansible_collections.gpufleet.dra_gate.plugins.doc_fragments."
                                             + name[len(prefix):])
        except ImportError:
            return None
        fragment = module.ModuleDocFragment
        fragment.ansible_name = name
        return fragment


def _docs(name):
    """The module's DOCUMENTATION with its fragments merged (unknown fragments fail)."""
    return get_docstring(os.path.join(MODULES_DIR, name + ".py"), _FragmentLoader(), collection_name=COLLECTION,
                         is_module=True)[0]


def test_groups_list_existing_modules_once():
    for group, members in _groups().items():
        assert members == sorted(members), group
        assert len(set(members)) == len(members), group
        for member in members:
            assert member in MODULES, (group, member)
    k8s, controller = set(_groups()["k8s"]), set(_groups()["controller"])
    assert not k8s & controller


@pytest.mark.parametrize("name", MODULES)
def test_k8s_auth_means_k8s_group(name, monkeypatch):
    spec = _argument_spec(name, monkeypatch)
    takes_auth = set(K8S_AUTH_ARG_SPEC) <= set(spec)
    # kubeconfig and api_key are the k8s auth set's own names (context and host are also other modules' words)
    assert takes_auth or not {"kubeconfig", "api_key"} & set(spec), "%s takes part of the k8s auth options" % name
    assert takes_auth == (name in _groups()["k8s"]), name


@pytest.mark.parametrize("name", MODULES)
def test_docs_name_the_group(name):
    doc = _docs(name)
    groups = [group for group, members in _groups().items() if name in members]
    membership = (doc.get("attributes") or {}).get("action_group", {}).get("membership", [])
    assert sorted(membership) == sorted("%s.%s" % (COLLECTION, group) for group in groups), name
    if "k8s" in groups:
        assert set(K8S_AUTH_ARG_SPEC) <= set(doc["options"]), name
