# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action plugin for ``gpufleet.dra_gate.gpu_node_facts``: the node reads, the controller parses.

It runs the module on the target (standard library only, Python 3.8+), which returns the facts it
can tell and, in ``gpu_node_raw``, the raw size-bounded texts of containerd's config (and its
imports) and of the CDI spec files. Here, on the controller, ``node_config.complete`` parses them
(``tomllib``, PyYAML ``safe_load``) into the documented ``containerd`` and ``cdi`` facts, and the
raw texts are dropped: neither they nor registry credentials reach the returned facts.

The module's result is untrusted too (a node may run a modified module): it is made serialisable
(``node_values.sanitize``) before anything looks at it, a facts document with missing keys or keys
of the wrong type is repaired with problems entries that say so, a result that holds no facts at
all fails the task with a message, and a failure while parsing is a problems entry: never a
traceback.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.plugins.action import ActionBase
from ansible.utils.vars import merge_hash

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import complete
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.values import quote, sanitize

RAW_KEY = "gpu_node_raw"
#: Where problems about the facts document itself are filed.
DOCUMENT_PATH = "gpu_node_facts"
#: The facts' top-level keys (docs/node-facts.md), their types and what stands in for a missing or
#: malformed one.
FACT_TYPES = (
    ("schema_version", int, None), ("root", str, None), ("commands", str, None), ("os", dict, {}),
    ("kernel", dict, {}), ("firmware", dict, {}), ("driver", dict, {}), ("gpus", list, []),
    ("gpu_count", int, None), ("nvidia_smi", dict, {}), ("iommu", dict, {}), ("network", dict, {}),
    ("cdi", dict, {}), ("containerd", dict, {}), ("kubelet", dict, {}), ("python", str, None),
)


def _type_name(value):
    return type(value).__name__


def check_facts(facts):
    """Repair a facts document in place: ``problems`` a list of ``{"path", "reason"}`` strings, every
    key of :data:`FACT_TYPES` present with its type (else its stand-in, and a problem)."""
    problems = facts.get("problems")
    if not isinstance(problems, list):
        facts["problems"] = []
        if problems is not None or "problems" in facts:
            facts["problems"].append({"path": DOCUMENT_PATH, "reason": "facts from the node: 'problems' is a %s, "
                                                                       "not a list; dropped" % _type_name(problems)})
        else:
            facts["problems"].append({"path": DOCUMENT_PATH, "reason": "facts from the node: 'problems' missing"})
    else:
        for index, entry in enumerate(problems):
            if not (isinstance(entry, dict) and isinstance(entry.get("path"), str) and isinstance(entry.get("reason"), str)):
                problems[index] = {"path": DOCUMENT_PATH,
                                   "reason": "facts from the node: malformed problems entry %s" % quote(entry)}
    for key, kind, stand_in in FACT_TYPES:
        value = facts.get(key)
        if key in facts and (value is None and stand_in is None or isinstance(value, kind) and not isinstance(value, bool)):
            continue
        if key not in facts:
            reason = "facts from the node: %r missing" % key
        else:
            reason = "facts from the node: %r is a %s, not a %s (%s); replaced" % (
                key, _type_name(value), kind.__name__, quote(value))
        facts["problems"].append({"path": DOCUMENT_PATH, "reason": reason})
        facts[key] = type(stand_in)() if stand_in is not None else None
    return facts


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _supports_check_mode = True
    # The raw texts must be parsed (and dropped) here: an async job's result would bypass that. The
    # module bounds itself (a deadline per command); the task keyword ``timeout`` bounds the task.
    _supports_async = False

    #: Where the module puts the facts in its result: ``ansible_facts.gpu_node`` here.
    FACTS_PATH = ("ansible_facts", "gpu_node")

    def _holder(self, result):
        holder = result
        for key in self.FACTS_PATH[:-1]:
            holder = holder.get(key) if isinstance(holder, dict) else None
        return holder if isinstance(holder, dict) else None

    def _facts(self, result):
        holder = self._holder(result)
        if holder is None or not isinstance(holder.get(self.FACTS_PATH[-1]), dict):
            return None
        return holder[self.FACTS_PATH[-1]]

    def _complete(self, result, raw, notes):
        """Check, complete (parse the raw texts) and sanitise the facts of ``result`` in place."""
        facts = self._facts(result)
        if facts is None:
            result["failed"] = True
            result["msg"] = "%s: the module's result holds no facts mapping at %s" % (
                DOCUMENT_PATH, ".".join(self.FACTS_PATH))
            return
        check_facts(facts)
        facts["problems"].extend(notes)
        try:
            complete(facts, raw)
        except Exception as exc:  # pylint: disable=broad-except  # a document nobody foresaw: a finding
            facts["problems"].append({"path": DOCUMENT_PATH, "reason": "containerd and CDI facts not completed on "
                                                                       "the controller: %s: %s" % (
                                                                           type(exc).__name__, quote(str(exc), 300))})
        clean, more = sanitize(facts, ".".join(self.FACTS_PATH))
        if not isinstance(clean.get("problems"), list):
            clean["problems"] = []
        clean["problems"].extend(more)
        self._holder(result)[self.FACTS_PATH[-1]] = clean

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        del tmp
        module = self._execute_module(task_vars=task_vars)
        if not isinstance(module, dict):
            result.update(failed=True, msg="%s: the module returned a %s, not a result mapping" % (
                DOCUMENT_PATH, _type_name(module)))
            self._remove_tmp_path(self._connection._shell.tmpdir)
            return result
        raw = module.pop(RAW_KEY, None)
        # Serialisable and bounded in depth before anything walks it (merge_hash recurses).
        module, notes = sanitize(module, "result")
        raw, raw_notes = sanitize(raw, RAW_KEY)
        result = merge_hash(result, module)
        if not result.get("failed"):
            self._complete(result, raw, notes + raw_notes)
        self._remove_tmp_path(self._connection._shell.tmpdir)
        return result
