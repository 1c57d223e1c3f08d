# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The dra_acceptance and artifacts_verified roles' judges (module_utils/judges/dra_acceptance_role.py,
module_utils/judges/artifacts_verified_role.py).

Documentation: the sidecar files dra_acceptance_lifecycle_id.yml, dra_acceptance_results.yml and
artifacts_verified_refusal.yml.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import artifacts_verified_role
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import dra_acceptance_role
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged


_call = judged


def dra_acceptance_lifecycle_id(run, stamp):
    """The attempt's lifecycle run id."""
    return _call("dra_acceptance: ", dra_acceptance_role.lifecycle_id, run, stamp)


def dra_acceptance_results(lifecycles, cleanup, metrics, prometheus_url="", check_mode=False):
    """The record's results."""
    return _call("dra_acceptance: ", dra_acceptance_role.results, lifecycles, cleanup, metrics, prometheus_url,
                 check_mode)


def artifacts_verified_refusal(result, index_stat=None):
    """Whether the rollback artifacts verify and which refusal it is."""
    return _call("artifacts_verified: ", artifacts_verified_role.refusal, result, index_stat)


class FilterModule(object):
    """gpufleet.dra_gate dra_acceptance and artifacts_verified judges."""

    def filters(self):
        return {
            "dra_acceptance_lifecycle_id": dra_acceptance_lifecycle_id,
            "dra_acceptance_results": dra_acceptance_results,
            "artifacts_verified_refusal": artifacts_verified_refusal,
        }
