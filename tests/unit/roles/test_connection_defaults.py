# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The roles set the cluster connection once (issue 30): no task of a role's tasks files passes kubeconfig or
context to a module of the k8s action group - they come from module_defaults group/gpufleet.dra_gate.k8s,
and every module_defaults of that group names the role's own kubeconfig and context variables."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest
import yaml

ROOT = os.path.join(os.path.dirname(__file__), "..", "..", "..")
GROUP = "group/gpufleet.dra_gate.k8s"
TASK_FILES = sorted(glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml")))


def _k8s_modules():
    with open(os.path.join(ROOT, "meta", "runtime.yml")) as handle:
        return set("gpufleet.dra_gate." + name for name in yaml.safe_load(handle)["action_groups"]["k8s"])


def _tasks(items):
    for item in items or []:
        if not isinstance(item, dict):
            continue
        yield item
        for key in ("block", "rescue", "always"):
            yield from _tasks(item.get(key))


def _defaults(task):
    found = [task.get("module_defaults")]
    for include in ("ansible.builtin.include_tasks", "ansible.builtin.import_tasks"):
        if isinstance(task.get(include), dict):
            found.append((task[include].get("apply") or {}).get("module_defaults"))
    return [d for d in found if d]


@pytest.mark.parametrize("path", TASK_FILES, ids=lambda p: os.path.relpath(p, ROOT))
def test_no_task_passes_the_connection(path):
    role = path.split(os.sep)[-3]
    with open(path) as handle:
        tasks = list(_tasks(yaml.safe_load(handle)))
    modules = _k8s_modules()
    for task in tasks:
        for key, args in task.items():
            if key in modules and isinstance(args, dict):
                assert not {"kubeconfig", "context"} & set(args), (path, task.get("name"))
        for defaults in _defaults(task):
            connection = defaults[GROUP]
            assert connection["kubeconfig"] == "{{ %s_kubeconfig }}" % role, (path, task.get("name"))
            assert connection["context"] == "{{ %s_kube_context | default(omit, true) }}" % role, (path, task.get("name"))
