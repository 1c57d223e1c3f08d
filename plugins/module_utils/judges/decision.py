# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The gate decision: may the operator stay at 26.7 (decision 1), may DRA go to production (decision 2)?

Pure logic (no I/O). ``gate_decision`` reads and verifies each run's evidence, the policy and the claim
records, and hands them to :func:`decide`; the result is the decision record (docs/decision.md, schema
``docs/decision-record.schema.json``). Deterministic: the same inputs and ``decided_at`` give the same
record, which :func:`dumps` writes byte for byte the same.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import datetime
import hashlib
import json
from fractions import Fraction

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges import gate_policy as gp
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.verdict import VERDICTS, finding

RECORD_SCHEMA = "gpufleet.dra_gate/decision-record"
RECORD_SCHEMA_VERSION = 1
SOURCE = "gpufleet.dra_gate gate decision"
UTC = datetime.timezone.utc

#: gate id -> (title, test, criterion, phase key)
GATE_TEXT = {
    "compatibility": ("Compatibility", "preflight matrix check on every cluster",
                      "no blocking finding (no unsupported version combination)", "preflight"),
    "snapshot": ("Rollback artifacts", "etcd, Helm and cluster state captured and verified", "every snapshot verified",
                 "snapshot"),
    "upgrade_canary": ("Operator upgrade, canary", "GPU Operator 26.7 on the canary, Device Plugin mode unchanged",
                       "verdict pass, every planned hop, control suite passing", "upgrade_canary"),
    "upgrade_production": ("Operator upgrade, production", "GPU Operator 26.7 in production after the canary",
                           "verdict pass, canary cleared, every planned hop, control suite passing",
                           "upgrade_production"),
    "ownership": ("Resource ownership", "one GPU backend per canary node",
                  "no ClusterPolicy, no device-plugin allocatable, isolation as declared", "dra_canary"),
    "runtime_cdi": ("Runtime and CDI", "containerd CDI, CDI specs against the ResourceSlices",
                    "no blocking CDI or ResourceSlice finding; the build completed", "dra_canary"),
    "claim_success": ("Claim success", "whole-GPU claim lifecycles", "success rate >= threshold", "dra_acceptance"),
    "allocation_latency_p95": ("Allocation latency p95", "claim created -> allocated",
                               "p95 <= threshold (measured, and the kubelet histogram when given)", "dra_acceptance"),
    "cleanup": ("Cleanup", "claims, pods and templates deleted after each lifecycle",
                "zero objects left behind, zero leaked claims", "dra_acceptance"),
    "cleanup_defect_rate": ("Cleanup defect rate", "claims or bindings remaining after their deletion",
                            "defects / completed lifecycles <= threshold", "dra_acceptance"),
    "numa_placement": ("NUMA placement", "NUMA-constrained claims", "zero violations, at least one claim checked",
                       "dra_acceptance"),
    "taint_behaviour": ("Taint behaviour", "device taints (DeviceTaintRule)",
                        "no allocation on a tainted device; NoSchedule evicts nothing; NoExecute evicts every holder",
                        "dra_acceptance"),
    "restart_recovery": ("Restarts", "DRA kubelet plugin and workload restarts",
                         "every plugin recovered within the threshold; zero leaked claims", "dra_acceptance"),
    "drain_reschedule": ("Drain and reschedule", "cordon, drain, maintenance, uncordon, reschedule",
                         "failed reschedules <= threshold; every node done; device health restored", "drain"),
    "rollback_time": ("Rollback", "the scripted rollback, timed to the control suite",
                      "rollback time <= the recovery-time objective; the control suite passing", "rollback"),
}
DECISION_GATES = dict((d, [g for g, dd, _t in gp.GATES if dd == d]) for d in ("operator_upgrade", "dra_promotion"))
DECISION_PHASES = {"operator_upgrade": ("preflight", "snapshot", "upgrade_canary", "upgrade_production")}


class DecisionError(ValueError):
    """Bad input to the decision (the message names the field)."""


# -- small helpers -----------------------------------------------------------------------------------

def _num(value):
    return value if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _frac(value):
    return Fraction(str(value)) if isinstance(value, float) else Fraction(value)


def measured(text, value=None, unit=None, numerator=None, denominator=None, percent=None):
    return {"text": text, "value": value, "unit": unit, "numerator": numerator, "denominator": denominator,
            "percent": percent}


def _rate_text(rate, what):
    if not isinstance(rate, dict) or _num(rate.get("denominator")) is None:
        return None
    return "%s of %s %s (%s %%)" % (rate.get("numerator"), rate.get("denominator"), what,
                                    "n/a" if rate.get("percent") is None else rate.get("percent"))


def _blocking(results, prefixes=None):
    found = []
    for item in (results or {}).get("findings") or []:
        if isinstance(item, dict) and item.get("severity") == "block":
            if prefixes is None or any(str(item.get("id", "")).startswith(p) for p in prefixes):
                found.append(item)
    return found


def _ids(findings):
    return ", ".join("%s [%s]" % (f.get("id"), f.get("subject")) for f in findings)


# -- choosing the records --------------------------------------------------------------------------

def _phase_key(entry, record):
    phase = entry.get("phase")
    if phase == "upgrade":
        scope = ((record or {}).get("results") or {}).get("scope")
        return "upgrade_production" if scope == "production" else "upgrade_canary"
    return phase


def _slice_of(item):
    found = (item.get("record") or {}).get("slice")
    return found if isinstance(found, dict) else None


def merge_slices(item, items):
    """The newest record of a phase key in a run, ``item``, standing for the sliced job it belongs to (docs/awx.md,
    "Sliced runs"): when its record carries ``slice`` (count, id, group), the newest record of every slice of the same
    group among ``items`` (the run's records of that key) is kept in ``slices`` and the merged verdict is the worst of
    theirs. ``slice_problem`` says why the slices do not make the whole job - fewer (a slice missing or failed before
    its record) or more slices than the count, or a host in two slices - and makes the phase ``incomplete``: a sliced
    phase never passes with fewer hosts. An unsliced record is returned as it is."""
    mine = _slice_of(item)
    if mine is None:
        return item
    group, count = mine.get("group"), mine.get("count")
    per_slice = {}
    for other in items:
        theirs = _slice_of(other)
        if theirs is None or theirs.get("group") != group:
            continue
        ident = str(theirs.get("id"))
        if ident not in per_slice or (other["attempt"] or 0) >= (per_slice[ident]["attempt"] or 0):
            per_slice[ident] = other
    slices = sorted(per_slice.values(), key=_order)
    problems = []
    counts = sorted(set(str(_slice_of(one).get("count")) for one in slices))
    if counts != [str(count)]:
        problems.append("its slices disagree on the slice count (%s)" % ", ".join(counts))
    elif not isinstance(count, int) or len(slices) != count:
        problems.append("%d of %s slices recorded (%s)%s" % (
            len(slices), count, ", ".join("slice %s: %s" % (_slice_of(one).get("id"), one["file"]) for one in slices),
            ": a slice is missing or failed before its record" if isinstance(count, int) and len(slices) < count
            else ""))
    seen = {}
    for one in slices:
        hosts = ((one.get("record") or {}).get("inputs") or {}).get("hosts") or []
        for host in hosts if isinstance(hosts, list) else []:
            seen.setdefault(str(host), []).append(str(_slice_of(one).get("id")))
    twice = sorted((host, ids) for host, ids in seen.items() if len(ids) > 1)
    if twice:
        problems.append("hosts in more than one slice: %s" % ", ".join(
            "%s (slices %s)" % (host, ", ".join(ids)) for host, ids in twice))
    problem = None
    if problems:
        problem = "run %s %s, sliced job %s: %s" % (item["run_id"], item["phase"], group, "; ".join(problems))
    return dict(item, slices=slices, slice_problem=problem,
                verdict=max((one["verdict"] for one in slices), key=_verdict_rank))


def _verdict_rank(verdict):
    """pass < warn < block (verdict.VERDICTS' order); anything else (a record without a verdict) ranks worst."""
    return VERDICTS.index(verdict) if verdict in VERDICTS else len(VERDICTS)


def _order(item):
    return (item["finished_at"] or "", item["run_id"], item["attempt"] or 0)


def select(runs, policy, decided_at):
    """``(phases, chosen, per_run)``: each phase key's status (docs/decision.md "Phases"), the chosen
    record per key, and per key every run's newest record (compatibility and snapshot judge each run)."""
    candidates, unverified = {}, {}
    for run in runs:
        newest, every = {}, {}
        for entry in run.get("entries") or []:
            record, sha256 = (run.get("records") or {}).get(entry.get("file"), (None, None))
            key = _phase_key(entry, record)
            item = {"run_id": run["run_id"], "phase": entry.get("phase"), "attempt": entry.get("attempt"),
                    "file": entry.get("file"), "sha256": sha256, "verdict": entry.get("verdict"),
                    "finished_at": (record or {}).get("finished_at"), "record": record}
            if run.get("reasons"):
                unverified.setdefault(key, []).append(run["run_id"])
                continue
            if record is None:
                continue
            every.setdefault(key, []).append(item)
            if key not in newest or (item["attempt"] or 0) >= (newest[key]["attempt"] or 0):
                newest[key] = item
        for key, item in newest.items():
            candidates.setdefault(key, []).append(merge_slices(item, every[key]))
    now = clock.parse(decided_at, "decided_at")
    phases, chosen = {}, {}
    for key in gp.PHASE_KEYS:
        items = sorted(candidates.get(key, []), key=_order)
        entry = {"status": "missing", "reason": None, "run_id": None, "phase": "upgrade" if key.startswith("upgrade_")
                 else key, "attempt": None, "file": None, "sha256": None, "verdict": None, "finished_at": None}
        if items:
            best = items[-1]
            chosen[key] = best
            entry.update((k, best[k]) for k in ("run_id", "attempt", "file", "sha256", "verdict", "finished_at"))
            results = best["record"].get("results") or {}
            finished = clock.parse_or_none(best["finished_at"])
            age_days = None if finished is None else (now - finished) / 86400.0
            if best.get("slice_problem"):
                entry.update(status="incomplete", reason=best["slice_problem"])
            elif results.get("check_mode"):
                entry.update(status="skipped", reason="%s: a check-mode run (nothing was applied or measured)"
                             % best["file"])
            elif finished is None:
                entry.update(status="skipped", reason="%s: not finished" % best["file"])
            elif age_days > policy["max_evidence_age_days"]:
                entry.update(status="stale", reason="%s of run %s finished %s, %.1f days before the decision; the "
                             "policy allows %d" % (best["file"], best["run_id"], best["finished_at"], age_days,
                                                   policy["max_evidence_age_days"]))
            elif age_days < 0:
                entry.update(status="stale", reason="%s finished %s, after the decision time %s" % (
                    best["file"], best["finished_at"], decided_at))
            else:
                entry["status"] = "present"
        elif key in unverified:
            entry.update(status="unverified", reason="the evidence of run %s does not verify: not read" % ", ".join(
                sorted(set(unverified[key]))))
        else:
            entry["reason"] = "no %s record in the given runs (%s)" % (key, ", ".join(r["run_id"] for r in runs))
        phases[key] = entry
    per_run = {}
    for key, items in candidates.items():
        # a sliced job's record stands for its slices: every slice's record is judged (a blocking finding in one fails)
        per_run[key] = sorted([one for item in items for one in (item.get("slices") or [item])], key=_order)
    return phases, chosen, per_run


# -- the gates ---------------------------------------------------------------------------------------

def _gate(gate_id, status, meas, reasons, item, fields, threshold=None):
    source = None
    if item is not None:
        source = {"phase_key": GATE_TEXT[gate_id][3], "run_id": item["run_id"], "file": item["file"],
                  "sha256": item["sha256"], "fields": fields}
    return {"status": status, "measured": meas, "reasons": list(reasons), "threshold": threshold, "source": source}


def _threshold(gate_id, policy):
    name = gp.THRESHOLD_OF.get(gate_id)
    if name is None:
        return None
    value = (policy.get("thresholds") or {}).get(name)
    comparison = ">=" if name.endswith("_min_percent") else "<="
    return {"name": name, "value": value, "comparison": comparison}


def _compare(value, threshold):
    """Whether ``value`` meets the threshold, exactly (fractions, no float rounding)."""
    limit = _frac(threshold["value"])
    return value >= limit if threshold["comparison"] == ">=" else value <= limit


def _results(item):
    return (item or {}).get("record", {}).get("results") or {} if item else {}


def gate_compatibility(items):
    if not items:
        return "not_measured", measured("no preflight record"), ["no preflight record in the given runs"], None, []
    blocks, reasons = [], []
    for item in items:
        found = _blocking(_results(item))
        if found or _results(item).get("verdict") == "block":
            reasons.append("run %s %s: verdict %s, blocking: %s" % (item["run_id"], item["file"],
                                                                    _results(item).get("verdict"), _ids(found) or "-"))
        blocks.extend(found)
    text = "%d blocking findings in %d preflight records" % (len(blocks), len(items))
    return ("fail" if reasons else "pass"), measured(text, len(blocks), "findings", len(blocks), len(items)), \
        reasons, items[-1], ["results.verdict", "results.findings"]


def gate_snapshot(items):
    if not items:
        return "not_measured", measured("no snapshot record"), ["no snapshot record in the given runs"], None, []
    reasons, good = [], 0
    for item in items:
        res = _results(item)
        if res.get("verified") is True and not res.get("bad") and res.get("verdict") != "block":
            good += 1
        else:
            reasons.append("run %s %s: verified %r, bad %s, verdict %s" % (
                item["run_id"], item["file"], res.get("verified"), len(res.get("bad") or []), res.get("verdict")))
    meas = measured("%d of %d snapshots verified" % (good, len(items)), good, "snapshots", good, len(items))
    return ("fail" if reasons else "pass"), meas, reasons, items[-1], ["results.verified", "results.bad"]


def gate_upgrade(item, production):
    res = _results(item)
    hops = [h for h in res.get("hops") or [] if isinstance(h, dict)]
    done = len([h for h in hops if h.get("ok") is True])
    planned = _num(res.get("planned_hops"))
    meas = measured("%d of %s planned hops, verdict %s" % (done, planned, res.get("verdict")), done, "hops", done,
                    planned)
    reasons = []
    if res.get("verdict") != "pass":
        reasons.append("verdict %s: %s" % (res.get("verdict"), _ids(_blocking(res)) or "no blocking finding"))
    if res.get("completed") is not True:
        reasons.append("the upgrade did not complete (failure: %s)" % (res.get("failure"),))
    if production and (res.get("canary") or {}).get("cleared") is not True:
        reasons.append("the canary was not cleared: %s" % "; ".join((res.get("canary") or {}).get("reasons") or []))
    last = hops[-1] if hops else {}
    suite = last.get("control_suite") if hops else res.get("baseline", {}).get("control_suite")
    if isinstance(suite, dict) and suite.get("passed") is False:
        reasons.append("the control suite did not pass after the last hop")
    return ("fail" if reasons else "pass"), meas, reasons, item, ["results.verdict", "results.completed", "results.hops"]


OWNERSHIP_IDS = ("dra_canary.cluster_policy_present", "dra_canary.device_plugin_allocatable",
                 "dra_canary.isolation_", "dra_canary.gpu_node_outside")
CDI_IDS = ("dra_canary.cdi_", "dra_canary.slice_", "dra_canary.node_", "dra_canary.gpu_cluster_not_ready")


def gate_ownership(item):
    res = _results(item)
    found = _blocking(res, OWNERSHIP_IDS)
    policies = (res.get("ownership") or {}).get("cluster_policies") or []
    reasons = ["%s [%s]: %s" % (f.get("id"), f.get("subject"), f.get("message")) for f in found]
    if (res.get("ownership") or {}).get("ok") is not True and not reasons:
        reasons.append("ownership.ok is %r" % ((res.get("ownership") or {}).get("ok"),))
    text = "%d ownership findings; ClusterPolicies found: %s" % (len(found), ", ".join(policies) or "none")
    return ("fail" if reasons else "pass"), measured(text, len(found), "findings"), reasons, item, \
        ["results.ownership", "results.findings"]


def gate_runtime_cdi(item):
    res = _results(item)
    found = _blocking(res, CDI_IDS)
    reasons = ["%s [%s]: %s" % (f.get("id"), f.get("subject"), f.get("message")) for f in found]
    if res.get("completed") is not True:
        reasons.append("the DRA canary build did not complete (refused: %s; failure: %s)" % (
            res.get("refused"), res.get("failure")))
    nodes = res.get("cdi") or {}
    gpus = sum(len((v or {}).get("gpus") or []) for v in nodes.values() if isinstance(v, dict))
    text = "%d blocking CDI/ResourceSlice findings; %d GPUs on %d nodes matched" % (len(found), gpus, len(nodes))
    return ("fail" if reasons else "pass"), measured(text, len(found), "findings"), reasons, item, \
        ["results.cdi", "results.findings", "results.completed"]


def _lifecycles(item):
    return _results(item).get("lifecycles") or {}


def gate_claim_success(item, threshold):
    rate = _lifecycles(item).get("success_rate") or {}
    num, den = _num(rate.get("numerator")), _num(rate.get("denominator"))
    if not den:
        return "not_measured", measured("no claim lifecycle attempted"), ["no lifecycle was attempted"], item, []
    meas = measured(_rate_text(rate, "claims succeeded"), float(rate.get("percent") or 0), "percent", num, den,
                    rate.get("percent"))
    fields = ["results.lifecycles.success_rate"]
    if threshold["value"] is None:
        return "not_measured", meas, ["no threshold %s in the policy" % threshold["name"]], item, fields
    if _results(item).get("failure"):
        return "fail", meas, ["the acceptance run failed: %s" % _results(item)["failure"]], item, fields
    ok = _compare(Fraction(num, den) * 100, threshold)
    return ("pass" if ok else "fail"), meas, [] if ok else [
        "%d of %d succeeded (%s %%), below %s %%" % (num, den, rate.get("percent"), threshold["value"])], item, fields


def _kubelet_p95(res):
    metrics = res.get("metrics") or {}
    quantiles = metrics.get("quantiles") or {}
    if not isinstance(quantiles, dict):
        return None
    for key in ("0.95", "p95", 0.95):
        value = quantiles.get(key)
        if isinstance(value, dict):
            value = value.get("value")
        if _num(value) is not None:
            return value
    return None


def claims_problem(lat, claims):
    """Why the per-claim records do not back the recorded latency quantiles, or None."""
    if not claims:
        return "no per-claim records (lifecycles.records_path) to check the quantiles against"
    if claims.get("error"):
        return claims["error"]
    samples = claims.get("samples") or []
    count = len(samples)
    if count != lat.get("count"):
        return "%s: %d successful claims in the per-claim records, %s in the record" % (
            claims.get("path"), count, lat.get("count"))
    for name, q in (("p50", 50), ("p95", 95), ("p99", 99)):
        if count and samples[max(1, -(-q * count // 100)) - 1] != lat.get(name):
            return "%s: the per-claim records give %s %r, the record %r" % (
                claims.get("path"), name, samples[max(1, -(-q * count // 100)) - 1], lat.get(name))
    return None


def gate_latency(item, threshold, claims):
    res = _results(item)
    lat = _lifecycles(item).get("allocation_latency_seconds") or {}
    p95, count = _num(lat.get("p95")), _num(lat.get("count"))
    if p95 is None:
        return "not_measured", measured("no allocation measured"), ["no successful claim: no allocation latency"], \
            item, []
    problem = claims_problem(lat, claims)
    if problem:
        return "not_measured", measured("p95 %.3f s recorded, not backed by the claim records" % p95, p95, "seconds",
                                        None, count), [problem], item, ["results.lifecycles.records_path"]
    kubelet = _kubelet_p95(res)
    value = max(p95, kubelet) if kubelet is not None else p95
    if kubelet is not None:
        also = "; kubelet histogram p95 %.3f s" % kubelet
    else:
        also = "; no Prometheus: kubelet histogram not read"
    text = "p95 %.3f s over %d claims (nearest rank)%s" % (p95, count or 0, also)
    meas = measured(text, value, "seconds", None, count)
    fields = ["results.lifecycles.allocation_latency_seconds", "results.metrics.quantiles"]
    if threshold["value"] is None:
        return "not_measured", meas, ["no threshold %s in the policy" % threshold["name"]], item, fields
    ok = _compare(_frac(value), threshold)
    return ("pass" if ok else "fail"), meas, [] if ok else ["p95 %.3f s above %s s" % (value, threshold["value"])], \
        item, fields


def _disruptions(item, kind):
    return [e for e in _lifecycles(item).get("disruptions") or [] if isinstance(e, dict) and e.get("type") == kind
            and e.get("started")]


def leaked_claims(item):
    out = []
    for event in _disruptions(item, "workload_restart"):
        out.extend(event.get("leaked") or [])
    for detail in (_lifecycles(item).get("cleanup_defects") or {}).get("details") or []:
        if "leaked" in (detail.get("reasons") or []):
            out.append(detail.get("claim"))
    return sorted(set(str(c) for c in out))


def gate_cleanup(item):
    lif = _lifecycles(item)
    if not lif:
        return "not_measured", measured("no acceptance lifecycles"), ["no lifecycle was run"], item, []
    left = list(lif.get("left_behind") or []) + list((_results(item).get("cleanup") or {}).get("left_behind") or [])
    leaked = leaked_claims(item)
    reasons = []
    if left:
        reasons.append("left behind: %s" % ", ".join(sorted(set(str(x) for x in left))))
    if leaked:
        reasons.append("leaked claims: %s" % ", ".join(leaked))
    total = len(set(str(x) for x in left)) + len(leaked)
    return ("fail" if reasons else "pass"), measured("%d objects left behind, %d claims leaked" % (
        len(set(str(x) for x in left)), len(leaked)), total, "objects"), reasons, item, \
        ["results.lifecycles.left_behind", "results.cleanup.left_behind", "results.lifecycles.disruptions"]


def gate_cleanup_rate(item, threshold):
    rate = _lifecycles(item).get("cleanup_defects") or {}
    num, den = _num(rate.get("numerator")), _num(rate.get("denominator"))
    if not den:
        return "not_measured", measured("no completed lifecycle"), ["no lifecycle completed"], item, []
    meas = measured(_rate_text(rate, "completed lifecycles with a cleanup defect"), rate.get("percent"), "percent",
                    num, den, rate.get("percent"))
    fields = ["results.lifecycles.cleanup_defects"]
    if threshold["value"] is None:
        return "not_measured", meas, ["no threshold %s in the policy" % threshold["name"]], item, fields
    ok = _compare(Fraction(num, den) * 100, threshold)
    return ("pass" if ok else "fail"), meas, [] if ok else ["%d of %d defective (claims: %s)" % (
        num, den, ", ".join(rate.get("claims") or []))], item, fields


def gate_numa(item):
    numa = _lifecycles(item).get("numa") or {}
    checked, violations = _num(numa.get("checked")) or 0, _num(numa.get("violations")) or 0
    meas = measured("%d violations of %d NUMA-constrained claims checked" % (violations, checked), violations,
                    "claims", violations, checked)
    fields = ["results.lifecycles.numa"]
    if violations:
        return "fail", meas, ["%s: devices %s on NUMA nodes %s" % (d.get("claim"), d.get("devices"), d.get("numa_nodes"))
                              for d in numa.get("details") or []] or ["%d NUMA violations" % violations], item, fields
    if not checked:
        return "not_measured", meas, ["no NUMA-constrained claim was placed (kind numa not run)"], item, fields
    return "pass", meas, [], item, fields


def gate_taints(item):
    events = _disruptions(item, "device_taint")
    fields = ["results.lifecycles.disruptions"]
    if not events:
        return "not_measured", measured("no device taint injected"), ["no device_taint disruption ran"], item, fields
    reasons, good = [], 0
    for event in events:
        bad = []
        if event.get("allocations_on_tainted_device"):
            bad.append("allocated while tainted: %s" % ", ".join(event["allocations_on_tainted_device"]))
        if event.get("effect") == "NoSchedule" and event.get("evicted"):
            bad.append("unplanned eviction under NoSchedule: %s" % ", ".join(h.get("pod", "?") for h in event["evicted"]))
        if event.get("effect") == "NoExecute" and event.get("not_evicted"):
            bad.append("NoExecute holders not evicted: %s" % ", ".join(event["not_evicted"]))
        if bad:
            reasons.append("%s taint on %s: %s" % (event.get("effect"), event.get("device"), "; ".join(bad)))
        else:
            good += 1
    meas = measured("%d of %d taint events as expected" % (good, len(events)), good, "events", good, len(events))
    return ("fail" if reasons else "pass"), meas, reasons, item, fields


def gate_restarts(item, threshold):
    plugins = _disruptions(item, "plugin_restart")
    workloads = _disruptions(item, "workload_restart")
    fields = ["results.lifecycles.disruptions"]
    if not plugins and not workloads:
        return "not_measured", measured("no restart injected"), ["no plugin_restart or workload_restart ran"], \
            item, fields
    recovered = [e for e in plugins if e.get("recovered") and _num(e.get("recovery_seconds")) is not None]
    worst = max([e["recovery_seconds"] for e in recovered] or [0])
    leaked = sorted(set(c for e in workloads for c in e.get("leaked") or []))
    meas = measured("%d of %d plugin restarts recovered, slowest %.3f s; %d workload restarts, %d claims leaked" % (
        len(recovered), len(plugins), worst, len(workloads), len(leaked)), worst if plugins else None, "seconds",
        len(recovered), len(plugins))
    reasons = []
    for event in plugins:
        if event not in recovered:
            reasons.append("the DRA kubelet plugin on %s did not recover" % event.get("node"))
    if leaked:
        reasons.append("claims leaked after a workload restart: %s" % ", ".join(leaked))
    if not plugins:
        return ("fail" if reasons else "not_measured"), meas, reasons or ["no plugin_restart ran"], item, fields
    if threshold["value"] is None:
        return ("fail" if reasons else "not_measured"), meas, reasons or [
            "no threshold %s in the policy" % threshold["name"]], item, fields
    if recovered and not _compare(_frac(worst), threshold):
        reasons.append("recovery took %.3f s, above %s s" % (worst, threshold["value"]))
    return ("fail" if reasons else "pass"), meas, reasons, item, fields


def gate_drain(item, threshold):
    res = _results(item)
    rate = res.get("failed_reschedule_rate") or {}
    num, den = _num(rate.get("numerator")), _num(rate.get("denominator"))
    nodes = [n for n in res.get("nodes") or [] if isinstance(n, dict)] if isinstance(res.get("nodes"), list) else \
        [dict(v, node=k) for k, v in (res.get("nodes") or {}).items() if isinstance(v, dict)]
    done = [n for n in nodes if n.get("status") == "done"]
    fields = ["results.failed_reschedule_rate", "results.nodes", "results.device_health_restored"]
    if not nodes:
        return "not_measured", measured("no node drained"), ["no node record"], item, fields
    meas = measured("%s failed of %s reschedules; %d of %d nodes done" % (num, den, len(done), len(nodes)),
                    num, "reschedules", num, den, rate.get("percent"))
    reasons = []
    for node in nodes:
        if node.get("status") != "done":
            reasons.append("node %s: %s" % (node.get("node") or node.get("name"), node.get("status")))
    for name, ok in sorted((res.get("device_health_restored") or {}).items()):
        if ok is not True:
            reasons.append("node %s: device health not restored" % name)
    if num is None:
        reasons.append("no failed_reschedule_rate recorded")
    elif not den and not reasons:
        return "not_measured", meas, ["no workload was evicted and rescheduled: the drain did not exercise "
                                      "rescheduling (0 of 0)"], item, fields
    elif threshold["value"] is None:
        return ("fail" if reasons else "not_measured"), meas, reasons or [
            "no threshold %s in the policy" % threshold["name"]], item, fields
    elif num > threshold["value"]:
        reasons.append("%d failed reschedules, above %s: %s" % (num, threshold["value"], ", ".join(
            "%s/%s" % (f.get("namespace"), f.get("name")) for f in res.get("failed_reschedules") or [])))
    return ("fail" if reasons else "pass"), meas, reasons, item, fields


def gate_rollback(item, threshold):
    res = _results(item)
    duration = _num(res.get("duration_seconds"))
    fields = ["results.duration_seconds", "results.decision_at", "results.completed_at", "results.control_suite"]
    reasons = []
    if duration is None:
        reasons.append("the rollback did not complete: no rollback time (the control suite never passed)")
    if (res.get("control_suite") or {}).get("passed") is not True:
        reasons.append("the control suite did not pass after the rollback")
    found = _blocking(res)
    if found:
        reasons.append("blocking: %s" % _ids(found))
    meas = measured("no rollback time" if duration is None else "%.3f s (%.2f min) from the decision to the control "
                    "suite passing" % (duration, duration / 60.0), duration, "seconds")
    if threshold["value"] is None:
        return ("fail" if reasons else "not_measured"), meas, reasons or [
            "no threshold %s in the policy (the recovery-time objective)" % threshold["name"]], item, fields
    if duration is not None and not _compare(_frac(duration), threshold):
        reasons.append("rollback took %.3f s, above the objective %s s" % (duration, threshold["value"]))
    return ("fail" if reasons else "pass"), meas, reasons, item, fields


def evaluate_gate(gate_id, chosen, per_run, phases, policy, claims=None):
    key = GATE_TEXT[gate_id][3]
    threshold = _threshold(gate_id, policy)
    if gate_id in ("compatibility", "snapshot"):
        items = per_run.get(key, []) if phases[key]["status"] == "present" else []
        status, meas, reasons, item, fields = (gate_compatibility if gate_id == "compatibility" else gate_snapshot)(
            [i for i in items if not (_results(i).get("check_mode"))])
    elif phases[key]["status"] != "present":
        status, meas, reasons, item, fields = "not_measured", measured("not measured: %s %s" % (
            key, phases[key]["status"])), [phases[key]["reason"] or "%s: %s" % (key, phases[key]["status"])], None, []
    else:
        item = chosen[key]
        table = {
            "upgrade_canary": lambda: gate_upgrade(item, False),
            "upgrade_production": lambda: gate_upgrade(item, True),
            "ownership": lambda: gate_ownership(item),
            "runtime_cdi": lambda: gate_runtime_cdi(item),
            "claim_success": lambda: gate_claim_success(item, threshold),
            "allocation_latency_p95": lambda: gate_latency(item, threshold, claims),
            "cleanup": lambda: gate_cleanup(item),
            "cleanup_defect_rate": lambda: gate_cleanup_rate(item, threshold),
            "numa_placement": lambda: gate_numa(item),
            "taint_behaviour": lambda: gate_taints(item),
            "restart_recovery": lambda: gate_restarts(item, threshold),
            "drain_reschedule": lambda: gate_drain(item, threshold),
            "rollback_time": lambda: gate_rollback(item, threshold),
        }
        status, meas, reasons, item, fields = table[gate_id]()
    if phases[key]["status"] != "present" and status == "pass":
        status, reasons = "not_measured", [phases[key]["reason"] or key]
    return _gate(gate_id, status, meas, reasons, item, fields, threshold)


# -- exceptions --------------------------------------------------------------------------------------

def exception_status(item, decided_at, warning_days):
    today = datetime.datetime.fromtimestamp(int(clock.parse(decided_at, "decided_at")), UTC).date()
    expires = datetime.datetime.strptime(item["expires"], "%Y-%m-%d").date()
    left = (expires - today).days
    if left < 0:
        return "expired", left
    return ("expiring" if left < warning_days else "active"), left


# -- the decision ------------------------------------------------------------------------------------

def inputs_digest(inputs):
    return hashlib.sha256(dumps(inputs).encode("utf-8")).hexdigest()


def dumps(data):
    """The canonical JSON text (sorted keys, two-space indent, a final newline): byte-identical for equal data."""
    return json.dumps(data, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def decide(policy, runs, decided_at, policy_source=None, claims=None, extras=None):
    """The decision record.

    ``policy``: checked by :func:`gate_policy.check`. ``runs``: per run ``{evidence_root, run_id, reasons
    (empty = verified), index_sha256, entries (index records), records {file: (record, sha256)}}``.
    ``decided_at``: RFC 3339. ``policy_source``: ``{path, sha256}``. ``claims``: ``{path, sha256, lines,
    samples, error}`` of the acceptance record's JSON Lines, read by the module. ``extras``: the record
    sections gathered from the evidence (``versions``, ``topology``, ...; :func:`sections`)."""
    if clock.parse_or_none(decided_at) is None:
        raise DecisionError("decided_at: expected %s, got %r" % (clock.FORM, decided_at))
    phases, chosen, per_run = select(runs, policy, decided_at)
    owners = policy.get("owners") or {}
    gates = []
    for gate_id, decision_key, _threshold_name in gp.GATES:
        title, test, criterion, _key = GATE_TEXT[gate_id]
        gate = evaluate_gate(gate_id, chosen, per_run, phases, policy, claims)
        gate.update(id=gate_id, title=title, decision=decision_key, test=test, criterion=criterion,
                    kind="local" if gate_id in gp.LOCAL_GATES else "universal", owner=owners.get(gate_id),
                    exception=None)
        gates.append(gate)
    findings, exceptions = [], []
    by_id = dict((g["id"], g) for g in gates)
    for item in policy.get("exceptions") or []:
        status, left = exception_status(item, decided_at, policy.get("exception_warning_days", 7))
        entry = dict(item, status=status, days_left=left)
        gate = by_id[item["gate"]]
        if status == "expired":
            findings.append(finding("decision.exception_expired", "block", "exception %s" % item["gate"],
                                    "expired %s (%d days ago)" % (item["expires"], -left), "an unexpired exception",
                                    "the exception for %s accepted by %s expired on %s: renew it or meet the "
                                    "threshold" % (item["gate"], item["accepted_by"], item["expires"]), SOURCE))
        else:
            if status == "expiring":
                findings.append(finding("decision.exception_expiring", "warn", "exception %s" % item["gate"],
                                        "expires %s (in %d days)" % (item["expires"], left),
                                        "at least %d days left" % policy.get("exception_warning_days", 7),
                                        "the exception for %s expires in %d days" % (item["gate"], left), SOURCE))
            if gate["status"] == "fail" and gate["exception"] is None:
                gate["status"] = "excepted"
                gate["exception"] = dict(entry)
            elif gate["exception"] is None:
                entry["status"] = "unused" if status == "active" else status
        exceptions.append(entry)
    for gate in gates:
        if not gate["owner"]:
            findings.append(finding("decision.owner_missing", "warn", "gate %s" % gate["id"], "no owner",
                                    "a named owner in policy.owners", "gate %s has no named owner" % gate["id"],
                                    SOURCE))
    decisions = {}
    for key in ("operator_upgrade", "dra_promotion"):
        ids = DECISION_GATES[key]
        mine = [by_id[i] for i in ids]
        failed = ["%s: %s" % (g["id"], "; ".join(g["reasons"]) or "failed") for g in mine if g["status"] == "fail"]
        missing = ["%s: not measured: %s" % (g["id"], "; ".join(g["reasons"])) for g in mine
                   if g["status"] == "not_measured"]
        required = [p for p in policy["required_phases"] if key == "dra_promotion" or p in DECISION_PHASES[key]]
        absent = ["phase %s: %s (%s)" % (p, phases[p]["status"], phases[p]["reason"]) for p in required
                  if phases[p]["status"] != "present"]
        unowned = ["%s: no named owner" % g["id"] for g in mine if not g["owner"]]
        blocked = []
        if key == "dra_promotion":
            blocked = ["%s [%s]: %s" % (f["id"], f["subject"], f["message"]) for f in findings
                       if f["severity"] == "block"]
            first = decisions["operator_upgrade"]["outcome"]
            if first == "reject":
                blocked.append("decision 1 (operator_upgrade) is reject: DRA promotion requires decision 1's evidence")
            elif first == "incomplete":
                missing.append("decision 1 (operator_upgrade) is incomplete: DRA promotion requires decision 1's "
                               "evidence")
        no, maybe = failed + blocked, absent + missing + unowned
        if key == "operator_upgrade":
            outcome = "reject" if no else ("incomplete" if maybe else "accept")
        else:
            outcome = "do-not-promote" if no else ("incomplete" if maybe else "promote")
        decisions[key] = {"outcome": outcome, "reasons": no + maybe, "gates": ids}
    runs_in = []
    for run in runs:
        runs_in.append({"evidence_root": run["evidence_root"], "run_id": run["run_id"],
                        "index_sha256": run.get("index_sha256"), "verified": not run.get("reasons"),
                        "problems": list(run.get("reasons") or []),
                        "records": [{"phase": e.get("phase"), "attempt": e.get("attempt"), "file": e.get("file"),
                                     "sha256": (run.get("records") or {}).get(e.get("file"), (None, None))[1],
                                     "verdict": e.get("verdict"),
                                     "finished_at": ((run.get("records") or {}).get(e.get("file"), (None, None))[0]
                                                     or {}).get("finished_at")}
                                    for e in run.get("entries") or []]})
    inputs = {"policy": dict(policy_source or {}, content=policy), "runs": runs_in, "decided_at": decided_at,
              "claims": None if not claims else dict((k, claims.get(k)) for k in ("path", "sha256", "lines"))}
    inputs["sha256"] = inputs_digest(inputs)
    record = {
        "schema": RECORD_SCHEMA, "schema_version": RECORD_SCHEMA_VERSION, "decided_at": decided_at,
        "inputs": inputs, "phases": phases, "gates": gates, "exceptions": exceptions, "findings": findings,
        "decisions": decisions,
        "decision": {"owners": dict(owners), "rollback_trigger": policy.get("rollback_trigger"),
                     "approver": policy.get("approver"),
                     "approval": {"approver": policy.get("approver"),
                                  "status": "pending" if decisions["dra_promotion"]["outcome"] == "promote"
                                  else "not requested"},
                     "exceptions": exceptions},
    }
    record.update(sections(chosen, per_run, policy, claims))
    if extras:
        record.update(extras)
    return record


# -- what the record keeps of the evidence --------------------------------------------------------

def _node_versions(facts):
    driver = facts.get("nvidia_driver") or facts.get("driver") or {}
    containerd = facts.get("containerd") or {}
    kernel = facts.get("kernel") or {}
    dmi = facts.get("firmware") or facts.get("dmi") or {}
    return {"kernel": kernel.get("release") if isinstance(kernel, dict) else kernel,
            "driver": driver.get("version") if isinstance(driver, dict) else driver,
            "runtime": containerd.get("version") if isinstance(containerd, dict) else containerd,
            "bios": dmi.get("bios_version") if isinstance(dmi, dict) else None,
            "firmware": sorted(set(str(g.get("vbios_version")) for g in facts.get("gpus") or []
                                   if isinstance(g, dict) and g.get("vbios_version"))) or None,
            "kubelet": (facts.get("kubelet") or {}).get("version") if isinstance(facts.get("kubelet"), dict) else None}


def sections(chosen, per_run, policy, claims):
    """``versions``, ``topology``, ``claims``, ``disruptions``, ``outcomes``, ``timelines``, ``compatibility``."""
    versions, topology, compatibility = {"nodes": {}}, [], []
    for item in per_run.get("preflight", []):
        record = item["record"] or {}
        res = record.get("results") or {}
        for host, facts in sorted((record.get("nodes") or {}).items()):
            if not isinstance(facts, dict):
                continue
            versions["nodes"]["%s/%s" % (item["run_id"], host)] = _node_versions(facts)
            for gpu in facts.get("gpus") or []:
                if isinstance(gpu, dict):
                    topology.append({"kind": "gpu", "run_id": item["run_id"], "node": host,
                                     "numa_node": gpu.get("numa_node"),
                                     "pci_bus_id": gpu.get("pci_bus_id") or gpu.get("pci_address"),
                                     "iommu_group": gpu.get("iommu_group"), "uuid": gpu.get("uuid"),
                                     "mig": gpu.get("mig_mode") or gpu.get("mig"), "model": gpu.get("name")})
            network = facts.get("network") if isinstance(facts.get("network"), dict) else {}
            for nic in network.get("nics") or []:
                if isinstance(nic, dict):
                    topology.append({"kind": "network", "run_id": item["run_id"], "node": host,
                                     "numa_node": nic.get("numa_node"), "pci_bus_id": nic.get("pci_bus_id"),
                                     "name": nic.get("name"), "driver": nic.get("driver")})
        cluster = record.get("cluster") or {}
        if isinstance(cluster, dict):
            server = cluster.get("api_server") if isinstance(cluster.get("api_server"), dict) else {}
            versions.setdefault("control_plane", {})[item["run_id"]] = server.get("git_version") or \
                server.get("version")
            for name, node in sorted((cluster.get("nodes") or {}).items()):
                if isinstance(node, dict) and "%s/%s" % (item["run_id"], name) in versions["nodes"]:
                    versions["nodes"]["%s/%s" % (item["run_id"], name)]["kubelet"] = node.get("kubelet_version")
        for found in res.get("findings") or []:
            if isinstance(found, dict) and found.get("severity") in ("block", "warn"):
                compatibility.append(dict(found, run_id=item["run_id"]))
    upgrade = _results(chosen.get("upgrade_production")) or _results(chosen.get("upgrade_canary"))
    if upgrade:
        versions["operator"] = {"from": upgrade.get("current_version"), "to": upgrade.get("target_version"),
                                "charts": [((h.get("chart") or {}).get("chart_version"),
                                            (h.get("chart") or {}).get("sha256")) for h in upgrade.get("hops") or []]}
    canary = _results(chosen.get("dra_canary"))
    if canary:
        versions["dra"] = canary.get("versions")
    acceptance = _results(chosen.get("dra_acceptance"))
    lif = acceptance.get("lifecycles") or {}
    drain = _results(chosen.get("drain"))
    rollback = _results(chosen.get("rollback"))
    evictions = sum(len(e.get("evicted") or []) for e in lif.get("disruptions") or [] if isinstance(e, dict))
    drain_nodes = drain.get("nodes") or []
    if isinstance(drain_nodes, dict):
        drain_nodes = [dict(v, node=k) for k, v in sorted(drain_nodes.items()) if isinstance(v, dict)]
    evictions_drain = sum(len(n.get("evictions") or []) for n in drain_nodes if isinstance(n, dict))
    rate = drain.get("failed_reschedule_rate") or {}
    duration = _num(rollback.get("duration_seconds"))
    outcomes = {
        "claims_attempted": _num(lif.get("attempted")), "claims_successful": _num(lif.get("successful")),
        "error_classes": lif.get("errors") or {},
        "allocation_latency_seconds": lif.get("allocation_latency_seconds"),
        "start_latency_seconds": lif.get("start_latency_seconds"),
        "allocation_latency_samples": list((claims or {}).get("samples") or []),
        "failed_reschedules": _num(rate.get("numerator")), "reschedule_attempts": _num(rate.get("denominator")),
        "leaked": len(leaked_claims(chosen.get("dra_acceptance"))) if chosen.get("dra_acceptance") else None,
        "evictions": {"taint": evictions, "drain": evictions_drain} if (lif or drain) else None,
        "rollback_minutes": None if duration is None else round(duration / 60.0, 3),
    }
    timelines = {"drain": [{"node": n.get("node") or n.get("name"), "wave": n.get("wave"), "status": n.get("status"),
                            "started_at": n.get("started_at"), "finished_at": n.get("finished_at")}
                           for n in drain_nodes if isinstance(n, dict)],
                 "rollback": None if not rollback else {
                     "decision_at": rollback.get("decision_at"), "completed_at": rollback.get("completed_at"),
                     "duration_seconds": duration,
                     "objective_seconds": (policy.get("thresholds") or {}).get("rollback_duration_max_seconds"),
                     "steps": [{"name": s.get("name"), "started_at": s.get("started_at"),
                                "finished_at": s.get("finished_at"), "ok": s.get("ok")}
                               for s in rollback.get("steps") or [] if isinstance(s, dict)]}}
    kept = ("type", "effect", "node", "device", "tainted_at", "removed_at", "restarted_at", "recovered",
            "recovery_seconds", "leaked")
    disruptions = {"claims": [dict((k, e.get(k)) for k in kept if k in e)
                              for e in lif.get("disruptions") or [] if isinstance(e, dict)],
                   "drain": {"cordons": len(drain_nodes), "drains": len([n for n in drain_nodes
                                                                         if n.get("status") == "done"])},
                   "rollback": bool(rollback)}
    claim_refs = {"records": [] if not claims else [dict((k, claims.get(k)) for k in ("path", "sha256", "lines"))],
                  "problems": [] if not claims or not claims.get("error") else [claims["error"]]}
    return {"versions": versions, "topology": topology, "claims": claim_refs, "disruptions": disruptions,
            "outcomes": outcomes, "timelines": timelines, "compatibility": compatibility}
