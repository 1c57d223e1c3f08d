# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The containerd_cdi role's judges (module_utils/judges/containerd_cdi_role.py).

Documentation: the sidecar files containerd_cdi_configured.yml, containerd_cdi_restarted.yml,
containerd_cdi_restore_outcome.yml and containerd_cdi_reverted.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import containerd_cdi_role as judge
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged

PREFIX = "containerd_cdi: "


def _call(function, *args, **kwargs):
    return judged(PREFIX, function, *args, **kwargs)


def containerd_cdi_configured(result, config):
    """The configure step's outcome and what comes next."""
    return _call(judge.configured, result, config)


def containerd_cdi_restarted(result, phase, command_run=None, systemd=None, systemd_verify=None, restart_command="",
                             service="containerd", started_at=None, finished_at=None):
    """A restart's steps and whether it worked."""
    return _call(judge.restarted, result, phase, command_run, systemd, systemd_verify, restart_command, service,
                 started_at, finished_at)


def containerd_cdi_restore_outcome(result, restored, change):
    """What the restore did."""
    return _call(judge.restore_outcome, result, restored, change)


def containerd_cdi_reverted(result, first_failure, revert_outcome):
    """The record after a failed change and its revert."""
    return _call(judge.reverted, result, first_failure, revert_outcome)


class FilterModule(object):
    """gpufleet.dra_gate containerd_cdi judges."""

    def filters(self):
        return {
            "containerd_cdi_configured": containerd_cdi_configured,
            "containerd_cdi_restarted": containerd_cdi_restarted,
            "containerd_cdi_restore_outcome": containerd_cdi_restore_outcome,
            "containerd_cdi_reverted": containerd_cdi_reverted,
        }
