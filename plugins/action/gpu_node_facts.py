# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.gpu_node_facts``: the node reads, the controller parses.

It runs the module on the target (standard library only, Python 3.8+), which returns the facts it
can tell and, in ``gpu_node_raw``, the raw size-bounded texts of containerd's config (and its
imports) and of the CDI spec files. Here, on the controller, ``node_config.complete`` parses them
(``tomllib``, PyYAML ``safe_load``) into the documented ``containerd`` and ``cdi`` facts, and the
raw texts are dropped: neither they nor registry credentials reach the returned facts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node_config import complete

RAW_KEY = "gpu_node_raw"


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    # The raw texts must be parsed (and dropped) here: an async job's result would bypass that. The
    # module bounds itself (a deadline per command); the task keyword ``timeout`` bounds the task.
    _supports_async = False

    #: Where the module puts the facts in its result: ``ansible_facts.gpu_node`` here.
    FACTS_PATH = ("ansible_facts", "gpu_node")

    def _facts(self, result):
        holder = result
        for key in self.FACTS_PATH[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or not isinstance(holder.get(self.FACTS_PATH[-1]), dict):
            return None
        return holder[self.FACTS_PATH[-1]]

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        module = self._execute_module(task_vars=task_vars)
        raw = module.pop(RAW_KEY, None)
        result = merge_hash(result, module)
        facts = self._facts(result)
        if facts is not None and not result.get("failed"):
            complete(facts, raw)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
