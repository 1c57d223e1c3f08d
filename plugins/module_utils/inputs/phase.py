# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The phase skeleton's common input rules (roles/phase, tasks_from: start), one per condition (module_utils/inputs/rules.py).

Every phase role calls ``start`` with its own values (``phase_evidence_root: "{{ operator_upgrade_evidence_root }}"``);
the check names the phase (the message's title) and the ``dra_gate_*`` setting, and - through input_check's
``fields``, which start.yml computes - the phase role's own variable, so a user reads ``upgrade: ... dra_gate_run_id (role variable
operator_upgrade_run_id)``, never a ``phase_*`` name they never set. The rules cover every condition of the
``start`` entry point's argument spec. ``phase_name``, ``phase_run_id_required`` and ``phase_changes_cluster`` are
the calling role's constants, not settings.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

PHASES = ("preflight", "snapshot", "upgrade", "dra_canary", "dra_acceptance", "canary", "drain", "rollback", "decision")


def _required(values):
    return i.is_bool_like(values.get("phase_run_id_required")) and i.as_bool(values.get("phase_run_id_required"))


def _optional(values):
    return not _required(values)


def _sliced(values):
    """The job runs as one of several slices (AWX job slicing: ``dra_gate_job_slice_count`` above 1)."""
    count = values.get("phase_job_slice_count")
    return i.whole_number(count) is None and int(count) > 1


def sliceable(value, values=None):
    """A phase that runs once per gate over the whole inventory refuses a sliced job, whatever ``value`` says."""
    if values is not None and not (i.is_bool_like(values.get("phase_sliceable")) and i.as_bool(values["phase_sliceable"])):
        return ("it is above 1, and this phase runs once per gate over the whole inventory (only the preflight runs "
                "sliced; docs/awx.md, \"Sliced runs\"): set job_slice_count 1 on its job template")
    return None


def slice_name(value, values=None):
    if value in ("", None):
        return "it is empty: a sliced job needs it (AWX gives awx_job_id and awx_workflow_job_id)"
    return i.run_id(str(value))


def required_run_id(value, values=None):
    if value == "":
        return "it is empty: this phase joins a gate run (the preflight's), so its run id must be given"
    return i.run_id(value)


def optional_run_id(value, values=None):
    """Empty (the phase picks a UTC timestamp once per play) or a run id."""
    return None if value == "" else i.run_id(value)


RULES = [
    i.Rule("phase_name", None, "one of %s (the calling role's constant)" % ", ".join(PHASES), i.choice(*PHASES)),
    i.Rule("phase_evidence_root", "dra_gate_evidence_root",
           "the absolute path of the private evidence root (install -d -m 0700)", i.absolute_path),
    i.Rule("phase_run_id", "dra_gate_run_id", "the gate run id (letters, digits, ._-), e.g. -e dra_gate_run_id=prod-2612",
           required_run_id, when=_required),
    i.Rule("phase_run_id", "dra_gate_run_id", "empty (a UTC timestamp is chosen) or a run id (letters, digits, ._-)",
           optional_run_id, when=_optional),
    i.Rule("phase_run_id_required", None, "true or false (the calling role's constant)", i.boolean),
    i.Rule("phase_fail_on", "dra_gate_fail_on", "block, warn or never", i.choice("block", "warn", "never")),
    i.Rule("phase_changes_cluster", None, "true or false (the calling role's constant)", i.boolean),
    i.Rule("phase_sliceable", None, "true or false (the calling role's constant)", i.boolean),
    i.Rule("phase_job_slice_count", "dra_gate_job_slice_count",
           "the number of slices the job runs as (its job template's job_slice_count), 1 or more",
           i.positive_whole_number),
    i.Rule("phase_job_slice_count", "dra_gate_job_slice_count", "1 for this phase", sliceable, when=_sliced),
    i.Rule("phase_job_slice", "dra_gate_job_slice",
           "the slice's identity (letters, digits, ._-; default awx_job_id)", slice_name, when=_sliced),
    i.Rule("phase_job_slice_group", "dra_gate_job_slice_group",
           "the sliced job's identity, the same for every slice (letters, digits, ._-; default awx_workflow_job_id)",
           slice_name, when=_sliced),
]
