# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dra_canary role's judges (module_utils/judges/dra_canary_role.py); canary_tolerations serves dra_acceptance too.

Documentation: the sidecar files canary_tolerations.yml, dra_canary_spec.yml, dra_canary_refusal.yml,
dra_canary_failure.yml, dra_canary_smoke_workloads.yml and dra_canary_results.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_canary_role as judge
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged

PREFIX = "dra_canary: "


def _call(function, *args, **kwargs):
    return judged(PREFIX, function, *args, **kwargs)


def _mapping(value, name):
    if not isinstance(value, dict):
        raise AnsibleFilterError(PREFIX + "%s: expected a mapping of the step results" % name)
    return value


def canary_tolerations(taints):
    """The tolerations of key[=value]:Effect taints."""
    return _call(judge.tolerations, taints)


def dra_canary_spec(base, feature_gates, tolerations, override=None):
    """The GPUCluster spec."""
    return _call(judge.gpu_cluster_spec, base, feature_gates, tolerations, override)


def dra_canary_refusal(results, stage="preflight"):
    """Why the build is refused ('' when it is not)."""
    if stage == "features":
        return _call(judge.feature_refusal, results)
    if stage != "preflight":
        raise AnsibleFilterError(PREFIX + "dra_canary_refusal: stage: expected preflight or features, got %r" % (stage,))
    return _call(judge.refusal, **_mapping(results, "dra_canary_refusal"))


def dra_canary_failure(results, stage, host=None, msg=None):
    """The build's failure at ``stage`` ('' when none)."""
    if stage == "build":
        return _call(judge.build_failure, **_mapping(results, "dra_canary_failure"))
    if stage == "containerd":
        return _call(judge.containerd_failure, results, host, msg)
    return _call(judge.check_failure, results, stage)


def dra_canary_smoke_workloads(passthrough, extended_resource, passthrough_nodes):
    """The smoke workloads."""
    return _call(judge.smoke_workloads, passthrough, extended_resource, passthrough_nodes)


def dra_canary_results(steps, **decided):
    """The record's decided results."""
    return _call(judge.results, steps, **decided)


class FilterModule(object):
    """gpufleet.dra_gate dra_canary judges."""

    def filters(self):
        return {
            "canary_tolerations": canary_tolerations,
            "dra_canary_spec": dra_canary_spec,
            "dra_canary_refusal": dra_canary_refusal,
            "dra_canary_failure": dra_canary_failure,
            "dra_canary_smoke_workloads": dra_canary_smoke_workloads,
            "dra_canary_results": dra_canary_results,
        }
