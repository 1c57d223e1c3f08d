# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The upgrade, rollback and snapshot roles' decisions, made by the judges in module_utils/judges/.

Thin wrappers: each filter calls one judge function; a wrong input is an error naming the field.
Documentation: the sidecar file <filter name>.yml beside this one.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type


from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import rollback, snapshot, upgrade
from ansible_collections.gpufleet.dra_gate.plugins.plugin_utils.judged import judged


def _judged(name, function, *args, **kwargs):
    return judged(name + ": ", function, *args, **kwargs)


def release_capture(index, namespace, release):
    """The snapshot's newest capture of a Helm release in a run's artifact index."""
    return _judged("release_capture", snapshot.release_capture, index, namespace, release)


def snapshot_helm_release(facts, namespace, release):
    """Whether the Helm release exists, is absent, or could not be read (the problems)."""
    return _judged("snapshot_helm_release", snapshot.helm_release_state, facts, namespace, release)


def snapshot_etcd_skip(group, etcd_hosts, skip_captures):
    """The etcd snapshot's skipped-capture record, as a list (empty: it is taken)."""
    return _judged("snapshot_etcd_skip", snapshot.etcd_skip, group, etcd_hosts, skip_captures)


def snapshot_node_paths(containerd, components):
    """The node files the snapshot fetches: containerd, kubelet, manifests."""
    return _judged("snapshot_node_paths", snapshot.node_paths, containerd, components)


def upgrade_plan(cluster, compat, charts, namespace, release):
    """The upgrade plan's refusal, current version and hops from the registered planning results."""
    return _judged("upgrade_plan", upgrade.plan_refusal, cluster, compat, charts, namespace, release)


def upgrade_canary_plan(scope, run_id):
    """The canary part of the upgrade record before the check (required for production only)."""
    return _judged("upgrade_canary_plan", upgrade.canary_plan, scope, run_id)


def upgrade_canary_clearance(canary, index, check, target_version):
    """Whether the canary's evidence clears production: the canary record and the refusal."""
    return _judged("upgrade_canary_clearance", upgrade.canary_clearance, canary, index, check, target_version)


def upgrade_baseline_refusal(verify, suite, check_mode=False):
    """Why the cluster is not upgraded from its baseline ('' = it is)."""
    return _judged("upgrade_baseline_refusal", upgrade.baseline_refusal, verify, suite, check_mode=bool(check_mode))


def upgrade_baseline(verify, suite):
    """The upgrade record's baseline (the recorded keys of operator_verify and control_suite)."""
    return _judged("upgrade_baseline", upgrade.baseline_record, verify, suite)


def upgrade_hop(observed, check_mode=False):
    """One hop's record and failure from what its tasks registered."""
    return _judged("upgrade_hop", upgrade.hop_outcome, observed, check_mode=bool(check_mode))


def upgrade_completed(refused, failure, hops, plan, check_mode=False):
    """Whether the upgrade completed (not refused, no failure, not check mode, every planned hop ok)."""
    return _judged("upgrade_completed", upgrade.completed, refused, failure, hops, plan, check_mode=bool(check_mode))


def upgrade_unassessed_hosts(host_names, nodes, unassessed):
    """host -> reason for each host whose node the baseline could not assess."""
    return _judged("upgrade_unassessed_hosts", upgrade.unassessed_hosts, host_names, nodes, unassessed)


def rollback_reinstall_chart(recorded, charts):
    """The chart mapping's entry for the recorded chart's version: {chart, sha256}."""
    return _judged("rollback_reinstall_chart", rollback.reinstall_chart, recorded, charts)


def rollback_step(result, name, started_at=None, finished_at=None):
    """A rollback step's record from its task's registered result, as a list (empty: not recorded)."""
    return _judged("rollback_step", rollback.step, name, result, started_at=started_at, finished_at=finished_at)


def rollback_results(observed, check_mode=False):
    """The rollback's results (steps, completion, duration, failure) from what restore.yml registered."""
    return _judged("rollback_results", rollback.results, observed, check_mode=bool(check_mode))


class FilterModule(object):
    """gpufleet.dra_gate phase judge filters (upgrade, rollback, snapshot)."""

    def filters(self):
        return {
            "release_capture": release_capture,
            "snapshot_helm_release": snapshot_helm_release,
            "snapshot_etcd_skip": snapshot_etcd_skip,
            "snapshot_node_paths": snapshot_node_paths,
            "upgrade_plan": upgrade_plan,
            "upgrade_canary_plan": upgrade_canary_plan,
            "upgrade_canary_clearance": upgrade_canary_clearance,
            "upgrade_baseline_refusal": upgrade_baseline_refusal,
            "upgrade_baseline": upgrade_baseline,
            "upgrade_hop": upgrade_hop,
            "upgrade_completed": upgrade_completed,
            "upgrade_unassessed_hosts": upgrade_unassessed_hosts,
            "rollback_reinstall_chart": rollback_reinstall_chart,
            "rollback_step": rollback_step,
            "rollback_results": rollback_results,
        }
