# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_cdi role's decisions (plugins/filter/containerd_cdi.py): the configure step's outcome (refused,
unchanged, would change, or written and pending its restart), a restart's steps and whether it worked, and the
revert's outcome after a failed change. Each returns the host's record (``containerd_cdi_result``) with the step
added, and what the role does next. Pure logic on the registered results."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError, checked_mapping, step_record


def _dict(value, field):
    return dict(checked_mapping(value, field))


def _record(result):
    result = _dict(result, "containerd_cdi_result")
    steps = result.get("steps") or []
    if not isinstance(steps, list):
        raise JudgeError("containerd_cdi_result.steps: expected a list, got %s" % type(steps).__name__)
    result["steps"] = list(steps)
    return result


def configured(result, config):
    """The configure step: the record with its outcome and step, ``apply`` (a written change: restart, verify,
    revert on failure), ``finish`` (nothing to restart: write the record now) and ``failure`` (the refusal)."""
    result, config = _record(result), _dict(config, "config")
    failed = bool(config.get("failed", False))
    if failed:
        outcome = "refused"
    elif not config.get("changed"):
        outcome = "unchanged"
    elif config.get("restore") is not None:
        outcome = "pending"
    else:
        outcome = "would change"
    for key in ("containerd_version", "method", "target", "reason", "backup"):
        result[key] = config.get(key)
    result["outcome"] = outcome
    result["steps"] = result["steps"] + [step_record(config, "configure", detail=config.get("reason") or "")]
    return {"result": result, "apply": outcome == "pending", "finish": outcome != "pending",
            "failure": ("containerd_cdi: refused: %s" % config.get("msg")) if failed else ""}


def restarted(result, phase, command_run=None, systemd=None, systemd_verify=None, restart_command="", service="containerd",
              started_at=None, finished_at=None):
    """A restart and verification (``phase``: restart or revert). With a ``restart_command`` the runtime module
    restarted and verified (``command_run``); without one systemd restarted the unit (``systemd``, its step recorded)
    and the runtime module verified (``systemd_verify``). -> the record with the steps and the verification, and
    ``failed`` and ``msg`` when it did not work."""
    if phase not in ("restart", "revert"):
        raise JudgeError("phase: expected restart or revert, got %r" % (phase,))
    result, systemd = _record(result), _dict(systemd, "systemd")
    use_command = bool(restart_command)
    runtime = _dict(command_run if use_command else systemd_verify, "runtime")
    if not use_command and systemd:
        step = step_record(systemd, "restart", phase=phase, detail="systemd restarted %s" % service,
                           started_at=started_at, finished_at=finished_at)
        step.pop("duration_seconds", None)
        result["steps"].append(step)
    for step in runtime.get("steps") or []:
        step = dict(step)
        step["phase"] = phase
        result["steps"].append(step)
    result["verify" if phase == "restart" else "revert_verify"] = runtime.get("verify")
    result["server_version"] = runtime.get("server_version")
    if not use_command and systemd.get("failed"):
        return {"result": result, "failed": True, "msg": systemd.get("msg", "systemd restart failed")}
    if runtime.get("failed"):
        return {"result": result, "failed": True, "msg": runtime.get("msg", "containerd restart or verification failed")}
    return {"result": result, "failed": False, "msg": ""}


def restore_outcome(result, restored, change):
    """What the restore did: the record with the restore's steps (phase revert), ``restored`` (the backup is back:
    restart and verify it) and the revert's outcome - 'restore failed: ...', or the backup restored (the outcome
    once the restart after it verified)."""
    result, restored = _record(result), _dict(restored, "restored")
    restore = _dict(_dict(change, "change").get("restore"), "change.restore")
    for step in restored.get("steps") or []:
        step = dict(step)
        step["phase"] = "revert"
        result["steps"].append(step)
    if restored.get("failed"):
        return {"result": result, "restored": False, "outcome": "restore failed: %s" % restored.get("msg")}
    return {"result": result, "restored": True,
            "outcome": "backup %s restored to %s, containerd restarted and verified" % (
                restore.get("backup") or "(none: the new drop-in removed)", restore.get("target"))}


def reverted(result, first_failure, revert_outcome):
    """After a failed change: the record with the outcome (reverted when the backup came back and verified, else
    failed), both outcomes, and the failure message."""
    result = _record(result)
    result["outcome"] = "reverted" if str(revert_outcome).startswith("backup ") else "failed"
    result["change_outcome"] = first_failure
    result["revert_outcome"] = revert_outcome
    return {"result": result,
            "failure": "containerd_cdi: the change failed: %s | revert: %s" % (first_failure, revert_outcome)}
