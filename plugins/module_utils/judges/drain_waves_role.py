# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The drain_waves role's decisions (plugins/filter/drain_waves.py): a node's wave, whether an earlier attempt
or a stop leaves it alone, the node's and the wave's records from the registered step results, the rollout's
state read back from its 0600 files, and the drain record's nodes (done, this attempt's, or not started with
why) and totals. Pure logic except ``read_state`` (reads the rollout's own state directory on the controller)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.phase_role import JudgeError, checked_list, checked_mapping


def wave_of(plan, host):
    """The wave number of ``host`` in the wave plan (``[{wave, hosts}]``)."""
    for index, wave in enumerate(checked_list(plan, "waves planned")):
        wave = checked_mapping(wave, "waves planned entry %d" % index)
        if host in checked_list(wave.get("hosts"), "waves planned entry %d hosts" % index):
            return int(wave.get("wave"))
    raise JudgeError("host %s: in no wave of the plan" % host)


def node_start(prior, stops, maintenance_tasks="", expect_reboot=False, check_mode=False):
    """What a node's rollout does first: ``finished_earlier`` (an earlier attempt of this run finished it: never
    drained again), ``stopped_earlier`` (a stop marker of this attempt: the node stays untouched), whether the
    maintenance runs (tasks given, not check mode) and whether the node must come back with a new boot."""
    prior = checked_mapping(prior, "the node's earlier record")
    finished = prior.get("status") == "done"
    stopped = bool(checked_list(stops, "stop markers"))
    maintenance = bool(maintenance_tasks) and not check_mode
    return {"finished_earlier": finished, "stopped_earlier": stopped and not finished,
            "run_maintenance": maintenance, "expect_new_boot": bool(expect_reboot) and maintenance}


def _sum_pdb_retries(evictions):
    return sum(int(checked_mapping(e, "eviction").get("pdb_retries") or 0) for e in evictions)


def node_record(node, host, wave, stamp, outcome=None, started_at=None, finished_at=None, drain=None, restore=None,
                uncordon=None, reschedule=None, maintenance_seconds=None, check_mode=False):
    """The node's record (what a rerun resumes from) from its steps' registered results ({} or None where a step
    did not run). ``outcome``: {status, step, reason}; none means the rollout failed before one was noted
    (stopped). The node is cordoned unless the uncordon step ran and succeeded."""
    outcome = checked_mapping(outcome, "outcome")
    drain = checked_mapping(drain, "drain")
    restore = checked_mapping(restore, "restore")
    uncordon = checked_mapping(uncordon, "uncordon")
    reschedule = checked_mapping(reschedule, "reschedule")
    uncordoned = bool(uncordon) and not uncordon.get("failed") and not uncordon.get("skipped")
    evictions = checked_list(drain.get("evictions"), "drain.evictions")
    return {
        "node": node,
        "host": host,
        "wave": int(wave),
        "attempt_stamp": stamp,
        "status": outcome.get("status") or "stopped",
        "stopped_step": outcome.get("step"),
        "stopped_reason": outcome.get("reason"),
        "started_at": started_at,
        "finished_at": finished_at,
        "before": drain.get("snapshot"),
        "after": restore.get("snapshot"),
        "cordoned": False if uncordoned else bool(drain.get("cordoned", False)),
        "evictions": evictions,
        "pdb_retries": _sum_pdb_retries(evictions),
        "skipped_pods": drain.get("skipped", []),
        "blocked_pods": drain.get("blocked", []),
        "claims_waited": drain.get("claims_waited", []),
        "device_health_restored": restore.get("device_health_restored"),
        "device_health_gaps": restore.get("gaps", []),
        "failed_reschedules": reschedule.get("failed_reschedules", []),
        "failed_reschedule_rate": reschedule.get("failed_reschedule_rate"),
        "not_rescheduled": reschedule.get("not_counted", []),
        "steps": {
            "drain_seconds": drain.get("timings"),
            "maintenance_seconds": maintenance_seconds,
            "restore_seconds": restore.get("seconds"),
            "reschedule_seconds": reschedule.get("seconds"),
        },
        "check_mode": bool(check_mode),
    }


def node_line(record):
    """The node's outcome line."""
    record = checked_mapping(record, "record")
    rate = checked_mapping(record.get("failed_reschedule_rate"), "failed_reschedule_rate")
    status = str(record.get("status") or "stopped")
    where = "" if status == "done" else " at %s: %s" % (record.get("stopped_step"), record.get("stopped_reason"))
    evictions = checked_list(record.get("evictions"), "evictions")
    return "wave %s node %s: %s%s - %d evicted (%d PDB retries), failed reschedules %s of %s" % (
        record.get("wave"), record.get("node"), status.upper(), where, len(evictions), _sum_pdb_retries(evictions),
        rate.get("numerator", "-"), rate.get("denominator", "-"))


def _when(stamp):
    try:
        return clock.parse(stamp, "batch entry started_at")
    except ValueError as exc:
        raise JudgeError(str(exc))


def wave_record(wave, stamp, finished_at, batch):
    """The wave's record from its hosts' outcomes: ``batch`` lists {node, started_at, status} of the batch's hosts
    that started (a host without ``started_at`` never started and is not in the wave's record)."""
    started = [checked_mapping(b, "batch entry") for b in checked_list(batch, "batch") if checked_mapping(b, "batch entry").get("started_at")]
    return {
        "wave": int(wave),
        "attempt_stamp": stamp,
        "started_at": min((b["started_at"] for b in started), key=_when) if started else None,
        "finished_at": finished_at,
        "nodes": [b.get("node") for b in started],
        "done": [b.get("node") for b in started if b.get("status") == "done"],
        "stopped": [b.get("node") for b in started if b.get("status") != "done"],
    }


def wave_line(record):
    """The wave's outcome line."""
    record = checked_mapping(record, "wave record")
    stopped = checked_list(record.get("stopped"), "stopped")
    return "wave %s: %d of %d node(s) done%s" % (
        record.get("wave"), len(checked_list(record.get("done"), "done")), len(checked_list(record.get("nodes"), "nodes")),
        (", STOPPED at %s: later waves stay untouched" % ", ".join(str(n) for n in stopped)) if stopped else "")


def _read_json(path):
    try:
        with open(path, "r") as handle:
            return json.load(handle)
    except (OSError, ValueError) as exc:
        raise JudgeError("the rollout's state file %s does not read as JSON: %s" % (path, exc))


def read_state(state_dir, stamp, node=None):
    """The rollout's state from its directory (nothing where a directory does not exist, as in check mode on a
    new run): ``stops`` (this attempt's stop markers) and ``nodes`` (every node record) and ``waves`` (every wave
    record), each sorted by file name; with ``node`` (one node's rollout), ``stops`` and ``prior``, that node's
    record ({} when none)."""
    if not isinstance(state_dir, str) or not state_dir:
        raise JudgeError("state_dir: expected the rollout's state directory, got %r" % (state_dir,))

    def files(pattern):
        return sorted(path for path in glob.glob(os.path.join(glob.escape(state_dir), pattern)) if os.path.isfile(path))

    state = {"stops": [_read_json(p) for p in files("stop-%s-*.json" % glob.escape(str(stamp)))]}
    if node is None:
        state["nodes"] = [_read_json(p) for p in files("nodes/*.json")]
        state["waves"] = [_read_json(p) for p in files("waves/*.json")]
    else:
        if not isinstance(node, str) or not node or "/" in node:
            raise JudgeError("node: expected a node name, got %r" % (node,))
        path = os.path.join(state_dir, "nodes", "%s.json" % node)
        state["prior"] = _read_json(path) if os.path.isfile(path) else {}
    return state


def why_untouched(stops):
    stops = [checked_mapping(s, "stop marker") for s in checked_list(stops, "stops")]
    if not stops:
        return "not reached in this attempt"
    return "the rollout stopped at %s (wave %s): later waves untouched" % (
        ", ".join(str(s.get("node")) for s in stops), ", ".join(str(s.get("wave")) for s in stops))


def finish(hosts_nodes, records, stops, stamp):
    """The drain record's nodes and totals. ``hosts_nodes``: [[host, node], ...] in play order; ``records``: the
    node records read back; ``stops``: this attempt's stop markers. A node's record counts when it is done (an
    earlier attempt's included) or from this attempt; any other node did not start, with why and what an earlier
    attempt left (``earlier``). -> {nodes, rates, failed_reschedules, device_health_restored, pdb_retries}."""
    by_node = {}
    for index, record in enumerate(checked_list(records, "records")):
        record = checked_mapping(record, "records entry %d" % index)
        by_node[record.get("node")] = record
    why = why_untouched(stops)
    nodes = []
    for index, pair in enumerate(checked_list(hosts_nodes, "hosts_nodes")):
        pair = checked_list(pair, "hosts_nodes entry %d" % index)
        if len(pair) != 2:
            raise JudgeError("hosts_nodes entry %d: expected [host, node], got %r" % (index, pair))
        host, node = pair
        record = by_node.get(node)
        if record is not None and (record.get("status") == "done" or record.get("attempt_stamp") == stamp):
            nodes.append(record)
        else:
            nodes.append({"node": node, "host": host, "status": "not_started", "why": why, "earlier": record})
    failed = []
    for node in nodes:
        failed.extend(checked_list(node.get("failed_reschedules"), "failed_reschedules of %s" % node.get("node")))
    return {
        "nodes": nodes,
        "rates": [n["failed_reschedule_rate"] for n in nodes if n.get("failed_reschedule_rate")],
        "failed_reschedules": failed,
        "device_health_restored": dict((n.get("node"), n.get("device_health_restored")) for n in nodes),
        "pdb_retries": sum(int(n.get("pdb_retries") or 0) for n in nodes),
    }
