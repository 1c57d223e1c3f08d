#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: containerd_runtime
short_description: Restart containerd, wait until it serves, verify the configuration it loads; or restore a backup
version_added: 0.2.0
description:
  - O(state=restarted) runs O(restart_command) (an argv list, with a deadline), then does what O(state=verified) does.
  - O(state=verified) waits (until O(wait_timeout)) for the socket O(address) and for C(ctr --address SOCK version)
    to answer, then runs C(containerd --config CONFIG config dump) and checks that every O(expect) key of the CRI
    plugin table has its value and, with O(expect_nvidia_runtime), that an nvidia runtime is still configured.
    Fails naming every mismatch. The check is generic over O(expect); the role C(gpufleet.dra_gate.containerd_cdi)
    passes C(enable_cdi) and C(cdi_spec_dirs).
  - O(state=restored) puts a backup made by M(gpufleet.dra_gate.containerd_cdi) back (its C(restore) return), after
    checking the backup's sha256; a target that did not exist before (a new drop-in) is removed. No restart.
  - Where systemd runs, the role restarts with C(ansible.builtin.systemd_service) and calls O(state=verified).
  - The dump is read with C(tomllib)/C(tomli) when importable, else with a reader of the canonical form containerd
    prints. Registry credentials never appear in returns or messages. Standard library only, Python 3.8+.
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.node_root
  - gpufleet.dra_gate.attributes.node
options:
  state:
    description: What to do.
    type: str
    choices: [restarted, verified, restored]
    default: verified
  config:
    description: containerd's main config file (node path), given to C(config dump).
    type: path
    default: /etc/containerd/config.toml
  address:
    description: containerd's socket (node path).
    type: path
    default: /run/containerd/containerd.sock
  containerd:
    description: The containerd binary.
    type: str
    default: containerd
  ctr:
    description: The ctr binary.
    type: str
    default: ctr
  restart_command:
    description: The argv that restarts containerd; required with O(state=restarted).
    type: list
    elements: str
  restore:
    description: The C(restore) return of M(gpufleet.dra_gate.containerd_cdi); required with O(state=restored).
    type: dict
    suboptions:
      target:
        description: The node path of the file to put back.
        type: path
        required: true
      backup:
        description: The node path of the backup; null removes O(restore.target) (it did not exist before).
        type: path
      sha256:
        description: The backup's sha256; a backup that differs is refused.
        type: str
  expect:
    description: Keys of the CRI plugin table with the values the dump must show (e.g. C(enable_cdi), C(cdi_spec_dirs)).
    type: dict
    default: {}
  expect_table:
    description: The CRI plugin id; empty picks it from the dump's C(version) (2 - C(io.containerd.grpc.v1.cri), 3 - C(io.containerd.cri.v1.runtime)).
    type: str
    default: ""
  expect_nvidia_runtime:
    description: Whether an nvidia runtime must be configured in the CRI table.
    type: bool
    default: true
  wait_timeout:
    description: Deadline in seconds for the socket and C(ctr version) to answer after the restart.
    type: float
    default: 60
  timeout:
    description: Deadline in seconds of each command (restart, ctr, config dump); its process group is killed on expiry.
    type: float
    default: 60
attributes:
  check_mode:
    support: full
    description: O(state=verified) runs as usual (read-only); O(state=restarted) and O(state=restored) report what they would do.
  diff_mode:
    support: none
    description: No diff; O(state=restored) returns the paths it puts back.
seealso:
  - module: gpufleet.dra_gate.containerd_cdi
"""

EXAMPLES = r"""
- name: Restart containerd with a command and verify CDI
  gpufleet.dra_gate.containerd_runtime:
    state: restarted
    restart_command: [/usr/local/bin/restart-containerd]
    expect:
      enable_cdi: true
      cdi_spec_dirs: [/etc/cdi, /var/run/cdi]

- name: Put the backup back
  gpufleet.dra_gate.containerd_runtime:
    state: restored
    restore: "{{ cdi_config.restore }}"
"""

RETURN = r"""
state:
  description: The state asked for.
  returned: always
  type: str
steps:
  description: Each step (C(restore), C(restart), C(wait), C(verify)) with C(name), C(ok), C(detail), C(started_at), C(finished_at), C(duration_seconds).
  returned: always
  type: list
  elements: dict
server_version:
  description: The server version C(ctr version) printed.
  returned: when the daemon answered
  type: str
verify:
  description:
    - C(ok), C(problems), C(observed) (the O(expect) keys' dumped values), C(cri_table), C(config_version),
      C(nvidia_runtime_names), C(runtimes), C(parsed_by) (C(toml) or C(canonical)).
  returned: when verified
  type: dict
restored:
  description: C(target), C(backup), C(action) (C(copied) or C(removed)).
  returned: with O(state=restored)
  type: dict
started_at:
  description: Start, RFC 3339 UTC.
  returned: always
  type: str
finished_at:
  description: End, RFC 3339 UTC.
  returned: always
  type: str
duration_seconds:
  description: Duration in seconds.
  returned: always
  type: float
"""

import hashlib
import os
import stat
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import command_runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd_cdi as cdi
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import replace_keeping_mode


class StepFailed(Exception):
    pass


def real(root, path):
    return path if root in ("", "/") else os.path.join(root, path.lstrip("/"))


def restore_file(root, spec):
    target = real(root, spec["target"])
    if not spec.get("backup"):
        if os.path.lexists(target):
            os.unlink(target)
        return "removed"
    with open(real(root, spec["backup"]), "rb") as handle:
        data = handle.read()
    if spec.get("sha256") and hashlib.sha256(data).hexdigest() != spec["sha256"]:
        raise StepFailed("backup %s does not match its sha256 %s: not restored" % (spec["backup"], spec["sha256"]))
    replace_keeping_mode(target, data)
    return "copied"


def wait_ready(runner, params, root):
    """Wait for the socket and ``ctr version``; returns the server version."""
    address = real(root, params["address"])
    deadline = time.monotonic() + params["wait_timeout"]
    last = "socket %s not there" % params["address"]
    while True:
        if os.path.exists(address) and stat.S_ISSOCK(os.stat(address).st_mode):
            left = max(deadline - time.monotonic(), 1.0)
            result = runner.run([params["ctr"], "--address", address, "version"], timeout=min(params["timeout"], left))
            if result.rc == 0 and "Server:" in result.stdout:
                server = result.stdout.split("Server:", 1)[1]
                for line in server.splitlines():
                    if line.strip().startswith("Version:"):
                        return line.split(":", 1)[1].strip()
                return ""
            last = "%s: %s" % (result.describe(), (result.stderr or result.stdout).strip()[-300:])
        if time.monotonic() >= deadline:
            raise StepFailed("containerd did not answer within %g s (wait_timeout): %s" % (params["wait_timeout"], last))
        time.sleep(0.1)


def verify(runner, params, root):
    result = runner.run([params["containerd"], "--config", real(root, params["config"]), "config", "dump"])
    if result.rc != 0:
        raise StepFailed("%s: %s" % (result.describe(), cdi.redact_text(result.stderr.strip())[-400:]))
    dump, how = cdi.read_dump(result.stdout)
    ok, problems, summary = cdi.verify_dump(dump, params["expect"], params["expect_nvidia_runtime"], params["expect_table"] or None)
    summary.update(ok=ok, problems=problems, parsed_by=how)
    return summary


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["restarted", "verified", "restored"], default="verified"),
            root=dict(type="path", default="/"),
            config=dict(type="path", default="/etc/containerd/config.toml"),
            address=dict(type="path", default="/run/containerd/containerd.sock"),
            containerd=dict(type="str", default="containerd"),
            ctr=dict(type="str", default="ctr"),
            restart_command=dict(type="list", elements="str"),
            restore=dict(type="dict", options=dict(target=dict(type="path", required=True), backup=dict(type="path"),
                                                   sha256=dict(type="str"))),
            expect=dict(type="dict", default={}),
            expect_table=dict(type="str", default=""),
            expect_nvidia_runtime=dict(type="bool", default=True),
            wait_timeout=dict(type="float", default=60),
            timeout=dict(type="float", default=60),
        ),
        required_if=[("state", "restarted", ["restart_command"]), ("state", "restored", ["restore"])],
        supports_check_mode=True,
    )
    params = module.params
    root = params["root"] or "/"
    run = ModuleRun(module)
    steps = []
    result = dict(changed=False, state=params["state"], steps=steps)

    def finish():
        return run.timed(result)

    for name in ("wait_timeout", "timeout"):
        if not params[name] > 0:
            module.fail_json(msg="containerd_runtime: %s must be a positive number of seconds, got %r" % (name, params[name]), **finish())
    if params["state"] == "restarted" and not params["restart_command"]:
        module.fail_json(msg="containerd_runtime: restart_command must be a non-empty argv list with state=restarted", **finish())
    runner = command_runner.Runner(params["timeout"])

    def step(name, func):
        begun = time.time()
        entry = dict(name=name, ok=False, detail=None)
        steps.append(entry)
        try:
            entry["detail"] = func()
            entry["ok"] = True
        except (StepFailed, cdi.CdiError, command_runner.CommandError, IOError, OSError) as exc:
            entry["detail"] = cdi.redact_text(str(exc))
        finally:
            done = time.time()
            entry.update(started_at=clock.rfc3339(begun), finished_at=clock.rfc3339(done), duration_seconds=round(done - begun, 3))
        if not entry["ok"]:
            module.fail_json(msg="containerd_runtime: %s failed: %s" % (name, entry["detail"]), **finish())
        return entry["detail"]

    if params["state"] == "restored":
        result["changed"] = True
        if module.check_mode:
            result["restored"] = dict(target=params["restore"]["target"], backup=params["restore"]["backup"], action="would restore")
            module.exit_json(**finish())
        action = step("restore", lambda: restore_file(root, params["restore"]))
        result["restored"] = dict(target=params["restore"]["target"], backup=params["restore"]["backup"], action=action)
        module.exit_json(**finish())

    if params["state"] == "restarted":
        result["changed"] = True
        if module.check_mode:
            module.exit_json(msg="would run %s" % " ".join(params["restart_command"]), **finish())

        def restart():
            outcome = runner.run(params["restart_command"])
            if outcome.rc != 0:
                raise StepFailed("%s: %s" % (outcome.describe(), cdi.redact_text((outcome.stderr or outcome.stdout).strip())[-400:]))
            return outcome.describe()
        step("restart", restart)
    result["server_version"] = step("wait", lambda: wait_ready(runner, params, root))
    summary = step("verify", lambda: verify(runner, params, root))
    result["verify"] = summary
    if not summary["ok"]:
        steps[-1]["ok"] = False
        module.fail_json(msg="containerd_runtime: verify failed: %s" % "; ".join(summary["problems"]), **finish())
    module.exit_json(**finish())


if __name__ == "__main__":
    main()
