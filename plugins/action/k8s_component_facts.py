# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.k8s_component_facts``: the node reads, the controller parses.

The module (standard library only, Python 3.8+) returns the facts skeleton and, in
``k8s_components_raw``, the raw size-bounded texts of the static pod manifests and the kubelet
config. Here ``k8s_components.complete`` parses them with PyYAML ``safe_load`` into the documented
facts, and the raw texts are dropped.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.components import complete

RAW_KEY = "k8s_components_raw"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    # The raw texts must be parsed (and dropped) here: an async job's result would bypass that.
    _supports_async = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        module = self._execute_module(task_vars=task_vars)
        raw = module.pop(RAW_KEY, None)
        result = merge_hash(result, module)
        facts = (result.get("ansible_facts") or {}).get("k8s_components") if isinstance(result.get("ansible_facts"), dict) else None
        if isinstance(facts, dict) and not result.get("failed"):
            complete(facts, raw)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
