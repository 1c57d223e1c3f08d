# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A phase run as AWX / Automation Platform runs a job: through ansible-runner (the engine AWX's job runs use),
from a private data directory laid out as AWX writes one for a job:

    <pdd>/project/          the project (here: the user's working directory, whose ``playbooks`` is the collection's)
    <pdd>/inventory/        the job's inventory (AWX writes it there; here a copy of the user's inventory directory)
    <pdd>/env/extravars     the job's extra variables (launch variables, survey answers), JSON
    <pdd>/env/settings      runner settings as AWX sets them (no prompts: a task waiting on stdin times out)
    <pdd>/env/envvars       the job's environment (AWX: the credentials' injectors and the settings' env vars)
    <pdd>/env/cmdline       the job's further ansible-playbook arguments (limit, tags), as AWX passes them

What a job leaves: ``artifacts/<ident>/{status,rc,stdout,job_events/}``; the ``playbook_on_stats`` event carries the
``set_stats`` data as ``artifact_data`` (what AWX hands to the next node of a workflow). ansible-navigator
(``--ee false --mode stdout``) is the other way AAP users run content; :func:`navigator` runs it the same way.

Test scaffolding only (tests/lab/contract/test_readme_flow.py, tests/lab/contract/test_sliced_runs.py); never shipped
(galaxy.yml's build_ignore)."""

from __future__ import annotations

import dataclasses
import glob
import json
import os
import shlex
import shutil
import subprocess

import yaml

from upgrade_lab import REPO, VENV_BIN, env

# AWX's job settings: no pexpect prompts answered (a vars_prompt or pause would wait until the idle timeout and fail
# the job), the job's whole output kept, events written.
SETTINGS = {"idle_timeout": 300, "job_timeout": 900, "pexpect_timeout": 5, "suppress_ansible_output": True,
            "suppress_output_file": False}


@dataclasses.dataclass
class Job:
    """What a runner job left: its status (``successful``, ``failed``, ``timeout``, ``canceled``), rc, stdout,
    events, and the ``set_stats`` data (``artifact_data`` of ``playbook_on_stats``)."""
    status: str
    rc: int
    stdout: str
    events: list
    artifact_data: dict
    directory: str

    def tail(self, chars=6000) -> str:
        return "status %s rc %s\n%s" % (self.status, self.rc, self.stdout[-chars:])


def private_data_dir(base: str, project: str, inventory: str, extravars: dict, cmdline: str = "") -> str:
    """``base`` laid out as AWX lays out a job's private data directory (see the module docstring); ``project`` is
    linked, ``inventory`` (a directory: hosts file and group_vars/) copied. ``base`` must not exist."""
    os.makedirs(os.path.join(base, "env"))
    os.symlink(project, os.path.join(base, "project"))
    shutil.copytree(inventory, os.path.join(base, "inventory"))
    variables = env()
    envvars = {name: variables[name] for name in ("ANSIBLE_COLLECTIONS_PATH", "PYTHONPATH", "ANSIBLE_NOCOLOR",
                                                  "ANSIBLE_LOCALHOST_WARNING", "ANSIBLE_INVENTORY_UNPARSED_WARNING",
                                                  "PATH") if name in variables}
    for name, data in (("extravars", extravars), ("settings", SETTINGS), ("envvars", envvars)):
        with open(os.path.join(base, "env", name), "w") as handle:
            json.dump(data, handle)
    if cmdline:
        with open(os.path.join(base, "env", "cmdline"), "w") as handle:
            handle.write(cmdline)
    return base


def _events(directory: str) -> list:
    out = []
    for path in glob.glob(os.path.join(directory, "job_events", "*.json")):
        with open(path) as handle:
            out.append(json.load(handle))
    return sorted(out, key=lambda e: e.get("counter", 0))


def run_job(pdd: str, playbook: str, ident: str = "1", timeout: int = 900) -> Job:
    """``playbook`` (relative to the project) run by ansible-runner from ``pdd`` in a separate process, as AWX's
    worker does: ``ansible-runner run <pdd> -p <playbook> --ident <ident>``."""
    proc = subprocess.run([os.path.join(VENV_BIN, "ansible-runner"), "run", pdd, "-p", playbook, "--ident", ident],
                          env=env(), cwd=REPO, capture_output=True, text=True, timeout=timeout + 60, check=False)
    directory = os.path.join(pdd, "artifacts", ident)
    status_file, rc_file = os.path.join(directory, "status"), os.path.join(directory, "rc")
    if not os.path.exists(status_file):
        raise AssertionError("ansible-runner left no status (exit %s): %s %s" % (
            proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))
    with open(status_file) as handle:
        status = handle.read().strip()
    with open(rc_file) as handle:
        rc = int(handle.read().strip())
    with open(os.path.join(directory, "stdout"), errors="replace") as handle:
        stdout = handle.read()
    events = _events(directory)
    stats = [e for e in events if e.get("event") == "playbook_on_stats"]
    artifact_data = (stats[-1].get("event_data") or {}).get("artifact_data") or {} if stats else {}
    return Job(status, rc, stdout, events, artifact_data, directory)


def navigator(cwd: str, args: list, log_dir: str, timeout: int = 600) -> subprocess.CompletedProcess:
    """``ansible-navigator run <args> --ee false --mode stdout`` in ``cwd``: no execution environment (the
    collection and Python libraries of this venv), output as ansible-playbook prints it, its log and the playbook
    artifact kept out of ``cwd``."""
    argv = [os.path.join(VENV_BIN, "ansible-navigator"), "run"] + list(args) + [
        "--ee", "false", "--mode", "stdout", "--log-file", os.path.join(log_dir, "navigator.log"),
        "--playbook-artifact-enable", "false"]
    variables = env()
    variables["HOME"] = log_dir  # navigator's own cache and settings lookups stay in the scratch directory
    return subprocess.run(argv, env=variables, cwd=cwd, capture_output=True, text=True, timeout=timeout, check=False)


def extravars_of(*files: str, **more) -> dict:
    """Extra variables as a job template holds them: the YAML files' mappings (the ``-e @file`` of the CLI), then
    ``more``."""
    out = {}
    for path in files:
        with open(path) as handle:
            out.update(yaml.safe_load(handle))
    out.update(more)
    return out


def cmdline(*args: str) -> str:
    return " ".join(shlex.quote(a) for a in args)
