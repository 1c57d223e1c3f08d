# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Deadlines of the node's commands: fake nvidia-smi and containerd binaries that hang (also with a
child holding the pipes), are slow but in time, print garbage or huge output -> bounded, named results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import time

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import gather
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.tree import LiveCommands, NodeTree, RecordedCommands
from ansible_collections.gpufleet.dra_gate.plugins.modules import gpu_node_facts

import node_trees

SMI_ROW = "0, 00000000:17:00.0, 0x233510DE, NVIDIA H200, GPU-f06f0ae7-4822-3c65-0972-1d839772e142, Disabled, 143771, 580.173.02, 96.00.A5.00.1A"
CSV = node_trees.SMI_HEADER + SMI_ROW + "\n"
SCRIPTS = {
    "hang": "exec sleep 1000\n",
    "hang-child": "sleep 1000 &\nsleep 1000\n",  # a child keeps stdout open after the leader is killed
    "exit-child": "sleep 1000 &\necho partial\nexit 0\n",  # the leader exits, a child holds the pipe
    "slow": "sleep 0.3\ncat <<'EOF'\n%s\nEOF\n",
    "garbage": "head -c 4096 /dev/urandom\n",
    "huge": "yes '0, 00000000:17:00.0, x' | head -c 3000000\n",
}


def fake_bin(tmp_path, name, body):
    directory = tmp_path / "bin"
    directory.mkdir(exist_ok=True)
    path = directory / name
    path.write_text("#!/bin/sh\n" + body)
    path.chmod(0o755)
    return str(path)


def live(tmp_path, binaries, timeout=1.0, max_output=1024 * 1024):
    paths = dict((name, fake_bin(tmp_path, name, body)) for name, body in binaries.items())
    return LiveCommands(Runner(timeout, max_output=max_output), paths.get)


def facts_with(tmp_path, commands):
    root = node_trees.build_tree(tmp_path / "tree", dict(node_trees.shapes()["smi-fails"], smi="none"))
    tree = NodeTree(root)
    started = time.monotonic()
    facts = gather(tree, commands)
    json.dumps(facts)
    return facts, time.monotonic() - started


def problems_at(facts, path):
    return [p["reason"] for p in facts["problems"] if p["path"] == path]


@pytest.mark.parametrize("script", ["hang", "hang-child"])
def test_hanging_nvidia_smi_and_containerd_are_named_problems_within_the_deadline(tmp_path, script):
    commands = live(tmp_path, {"nvidia-smi": SCRIPTS[script], "containerd": SCRIPTS[script]}, timeout=0.5)
    facts, elapsed = facts_with(tmp_path, commands)
    assert elapsed < 6  # two deadlines of 0.5 s, plus the runner's kill grace; never the 1000 s sleep
    assert facts["nvidia_smi"]["status"] == "timed_out"
    reason = problems_at(facts, "nvidia-smi")[0]
    assert "nvidia-smi --query-gpu=" in reason and "timed out after 0.5 s" in reason
    assert "containerd --version: timed out after 0.5 s" in problems_at(facts, "containerd --version")[0]
    assert facts["containerd"]["present"] is True and facts["containerd"]["version"] is None
    assert facts["gpu_count"] == 1 and facts["gpus"][0]["sources"] == ["sysfs", "procfs"]  # fallbacks still work
    assert commands.results["nvidia-smi"]["timed_out"] is True


def test_leader_exits_while_a_child_holds_the_pipe(tmp_path):
    commands = live(tmp_path, {"containerd": SCRIPTS["exit-child"]}, timeout=5)
    facts, elapsed = facts_with(tmp_path, commands)
    assert elapsed < 5
    assert "version not recognised" in problems_at(facts, "containerd --version")[0]


def test_slow_but_within_the_deadline(tmp_path):
    commands = live(tmp_path, {"nvidia-smi": SCRIPTS["slow"] % CSV.strip(),
                               "containerd": SCRIPTS["slow"] % "containerd github.com/containerd/containerd/v2 v2.3.1 3f5c8c8"},
                    timeout=5)
    facts, _elapsed = facts_with(tmp_path, commands)
    assert facts["nvidia_smi"]["status"] == "ok"
    assert facts["gpus"][0]["vbios_version"] == "96.00.A5.00.1A"
    assert facts["containerd"]["version"] == "2.3.1"
    assert not problems_at(facts, "nvidia-smi")


def test_garbage_output_is_unparsed_not_a_crash(tmp_path):
    commands = live(tmp_path, {"nvidia-smi": SCRIPTS["garbage"], "containerd": SCRIPTS["garbage"]})
    facts, _elapsed = facts_with(tmp_path, commands)
    assert facts["nvidia_smi"]["status"] == "unparsed"
    assert problems_at(facts, "nvidia-smi")[0].startswith("output not understood")
    assert facts["containerd"]["version"] is None
    assert problems_at(facts, "containerd --version")


def test_huge_output_is_bounded_and_never_used(tmp_path):
    commands = live(tmp_path, {"nvidia-smi": SCRIPTS["huge"], "containerd": SCRIPTS["huge"]}, max_output=65536)
    facts, _elapsed = facts_with(tmp_path, commands)
    assert facts["nvidia_smi"]["status"] == "failed"
    assert "output larger than 65536 bytes; not used" in problems_at(facts, "nvidia-smi")[0]
    assert len(commands.results["nvidia-smi"]["stdout"]) <= 65536
    assert "output larger than" in problems_at(facts, "containerd --version")[0]


def test_a_timed_out_command_recorded_in_a_bundle_replays_as_the_same_problem(tmp_path):
    commands = live(tmp_path, {"nvidia-smi": SCRIPTS["hang"]}, timeout=0.3)
    facts, _elapsed = facts_with(tmp_path, commands)
    root = str(tmp_path / "tree")
    os.makedirs(os.path.join(root, ".gpufleet/commands"), exist_ok=True)
    with open(os.path.join(root, ".gpufleet/commands/nvidia-smi.json"), "w") as handle:
        json.dump(commands.results["nvidia-smi"], handle)
    tree = NodeTree(root)
    replayed = gather(tree, RecordedCommands(tree))
    assert replayed["nvidia_smi"]["status"] == "timed_out"
    assert problems_at(replayed, "nvidia-smi") == problems_at(facts, "nvidia-smi")


def test_module_timeout_option_with_a_hanging_nvidia_smi_on_path(run_module, tmp_path, monkeypatch):
    """gpu_node_facts on this machine (root=/) with a hanging nvidia-smi first on PATH."""
    fake_bin(tmp_path, "nvidia-smi", SCRIPTS["hang-child"])
    monkeypatch.setenv("PATH", "%s:%s" % (tmp_path / "bin", os.environ.get("PATH", "")))
    started = time.monotonic()
    result = run_module(gpu_node_facts, {"timeout": 0.5})
    assert time.monotonic() - started < 10
    facts = result["ansible_facts"]["gpu_node"]
    assert facts["nvidia_smi"]["status"] == "timed_out"
    assert any(p["path"] == "nvidia-smi" and "timed out after 0.5 s" in p["reason"] for p in facts["problems"])


def test_module_refuses_a_non_positive_timeout(run_module, tmp_path):
    result = run_module(gpu_node_facts, {"root": str(tmp_path), "timeout": 0})
    assert result["failed"] is True and result["msg"].startswith("timeout:")
