# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The hostile node corpus (tests/hostile_nodes.py) through the module and the action plugin.

For every case: no traceback (node side and controller side), a result that serialises as strict
JSON, done within a deadline (a blocked ``open`` of a FIFO would hang: an alarm turns it into a
failure), no path outside the root opened or listed (an audit hook sees every ``open``,
``os.listdir`` and ``os.scandir``), the sentinel written beside the root nowhere in the result,
bounded memory (tracemalloc peak), and the case's expected problem reported.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import signal
import sys
import time
import tracemalloc
from unittest.mock import MagicMock

import pytest

from ansible.playbook.play_context import PlayContext

from ansible_collections.gpufleet.dra_gate.plugins.action.gpu_node_facts import ActionModule as FactsAction
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.gpu_node import collect
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import NodeTree, RecordedCommands
from ansible_collections.gpufleet.dra_gate.plugins.modules import gpu_node_facts

import hostile_nodes
import node_trees

#: Seconds one case may take (the slowest, 20,000 nvidia-smi rows, takes about 1 s on 2 cores).
DEADLINE = 20
#: Peak Python memory of one case (a 4 GiB sparse file must not be read whole).
MEMORY_LIMIT = 96 * 1024 * 1024

_WATCH = {"paths": None}


def _audit(event, args):
    watched = _WATCH["paths"]
    if watched is None or event not in ("open", "os.listdir", "os.scandir"):
        return
    path = args[0] if args else None
    if isinstance(path, bytes):
        path = path.decode("utf-8", "surrogateescape")
    if isinstance(path, str):
        watched.append((event, path))


sys.addaudithook(_audit)


class Refused(Exception):
    pass


class _Module(object):
    """What the module's option checks need of AnsibleModule: fail_json ends the run with its message."""

    def fail_json(self, msg):
        raise Refused(msg)


def _alarm(signum, frame):
    raise AssertionError("the case did not finish within %d s (a blocking read?)" % DEADLINE)


def facts_action(module_result):
    task = MagicMock()
    task.args = {"root": "/x"}
    task.async_val = 0
    task.check_mode = False
    task.action = "gpufleet.dra_gate.gpu_node_facts"
    connection = MagicMock()
    connection._shell.tmpdir = None
    action = FactsAction(task, connection, PlayContext(), MagicMock(), MagicMock(), None)
    action._execute_module = MagicMock(return_value=module_result)
    return action


def strict(value):
    return json.dumps(value, ensure_ascii=False, allow_nan=False, sort_keys=True).encode("utf-8")


def run_case(case, root):
    """The module's main() on ``root`` (recorded commands), then the action plugin: the task's result."""
    module = _Module()
    try:
        gpu_node_facts.validate_containerd_config(module, case.option)
    except Refused as exc:
        return {"failed": True, "msg": str(exc)}
    tree = NodeTree(root)
    facts, raw = gpu_node_facts.serialisable_result(*collect(tree, RecordedCommands(tree), case.option))
    module_result = json.loads(strict({"changed": False, "ansible_facts": {"gpu_node": facts}, "gpu_node_raw": raw}))
    return facts_action(module_result).run(task_vars={})


@pytest.mark.parametrize("case", hostile_nodes.CASES, ids=[c.name for c in hostile_nodes.CASES])
def test_hostile_node(tmp_path, case):
    root = node_trees.build_tree(str(tmp_path / "node"), node_trees.shapes()["ubuntu2204-containerd2-cdi"]) \
        or str(tmp_path / "node")
    outside = os.path.join(os.path.dirname(root), "outside")
    hostile_nodes.outside_tree(outside)
    case.build(root, outside)
    real_root = os.path.realpath(root)
    base = os.path.realpath(str(tmp_path))
    seen = []
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.alarm(DEADLINE)
    tracemalloc.start()
    started = time.monotonic()
    try:
        _WATCH["paths"] = seen
        result = run_case(case, root)
    finally:
        _WATCH["paths"] = None
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)
        peak = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    elapsed = time.monotonic() - started
    text = strict(result).decode("utf-8")
    escaped = []
    for event, path in seen:
        absolute = os.path.realpath(os.path.join(os.getcwd(), path))
        if absolute.startswith(base + os.sep) and not (absolute == real_root or absolute.startswith(real_root + os.sep)):
            escaped.append((event, path))
        elif path.startswith(("/etc/", "/proc/driver", "/sys/", "/var/run/cdi", "/var/lib/kubelet")):
            escaped.append((event, path))
    assert escaped == [], "read outside the root: %r" % escaped[:5]
    assert hostile_nodes.SENTINEL not in text and hostile_nodes.SENTINEL.lower() not in text
    assert peak < MEMORY_LIMIT, "peak %d bytes" % peak
    assert elapsed < DEADLINE
    if result.get("failed"):
        # Refused as a whole (an option that is no absolute node path): a message naming the option.
        assert case.expect is None or case.expect in result["msg"]
        assert "containerd_config" in result["msg"]
        return
    facts = result["ansible_facts"]["gpu_node"]
    assert isinstance(facts["problems"], list)
    if case.expect is not None:
        reported = json.dumps(facts, ensure_ascii=False)
        assert case.expect in reported, json.dumps(facts["problems"])[:2000]
    # Whatever broke, the facts keep their documented shape.
    for key, kind in (("gpus", list), ("containerd", dict), ("cdi", dict), ("os", dict), ("driver", dict)):
        assert isinstance(facts[key], kind), key
