# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The evidence record of a gate run: one JSON record per phase, an index, and readable summaries.

Pure logic (no I/O): building and validating records and rendering Markdown. The module
``gate_evidence`` writes what this returns. The schema is documented in docs/evidence.md.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

SCHEMA = "gpufleet.dra_gate/evidence-record"
SCHEMA_VERSION = 1
INDEX_SCHEMA = "gpufleet.dra_gate/evidence-index"
# Version 2: one entry per attempt (phase, attempt, file), records named <phase>-<attempt>.json.
INDEX_SCHEMA_VERSION = 2
INDEX_FILE = "index.json"
SUMMARY_FILE = "summary.md"
# The gate run's phases in the order they happen. This is data for validation and for ordering the
# run's summary only; no file name is derived from a position here, so inserting a phase renames
# nothing.
PHASES = ("preflight", "snapshot", "upgrade", "dra_canary", "dra_acceptance", "canary", "drain", "rollback", "decision")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REQUIRED = ("inputs", "results", "tools", "started_at")
# <phase>-<attempt>.json; the legacy form NN-<phase>.json (index schema version 1) is still read.
RECORD_RE = re.compile(r"^(?P<phase>[a-z][a-z0-9_]*)-(?P<attempt>[1-9][0-9]*)\.json$")
LEGACY_RECORD_RE = re.compile(r"^(?P<number>[0-9]{2})-(?P<phase>[a-z][a-z0-9_]*)\.json$")
SEVERITIES = ("block", "warn", "info")


class EvidenceError(ValueError):
    """A record that cannot be written; the message names the field and the expected form."""


def validate(run_id, phase, record):
    validate_names(run_id, phase)
    if not isinstance(record, dict):
        raise EvidenceError("record: expected a dict with keys %s" % ", ".join(REQUIRED))
    for key in REQUIRED:
        if key not in record:
            raise EvidenceError("record.%s: required field missing" % key)
    for key in ("inputs", "results", "tools"):
        if not isinstance(record[key], dict):
            raise EvidenceError("record.%s: expected a dict, got %s" % (key, type(record[key]).__name__))
    findings = record["results"].get("findings")
    if findings is not None and (not isinstance(findings, list) or not all(isinstance(f, dict) for f in findings)):
        raise EvidenceError("record.results.findings: expected a list of findings (dicts)")


def validate_names(run_id, phase):
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise EvidenceError("run_id: %r is not valid; expected letters, digits, '.', '_' or '-' "
                            "(at most 128, starting with a letter or digit)" % (run_id,))
    if phase not in PHASES:
        raise EvidenceError("phase: %r is not a gate phase; expected one of %s" % (phase, ", ".join(PHASES)))


def record_filename(phase, attempt):
    """``<phase>-<attempt>.json``: from the phase's name, never from its position in PHASES."""
    return "%s-%d.json" % (phase, attempt)


def summary_filename(phase, attempt):
    return "%s-%d.md" % (phase, attempt)


def parse_record_filename(name):
    """``(phase, attempt)`` of a record file name (``attempt`` None for the legacy ``NN-phase.json``),
    or None when the name is not a record's."""
    match = RECORD_RE.match(name)
    if match:
        return match.group("phase"), int(match.group("attempt"))
    match = LEGACY_RECORD_RE.match(name)
    if match:
        return match.group("phase"), None
    return None


def next_attempt(phase, index, names):
    """The attempt number of the next record of ``phase``: one more than any attempt that the index
    lists or that a file in the run directory (``names``) already holds, so a record left behind by a
    crash (on disk, not in the index) is never overwritten nor reused."""
    taken = [0]
    for entry in (index or {}).get("records", []):
        if entry.get("phase") == phase:
            taken.append(entry.get("attempt") or 1)
    for name in names:
        parsed = parse_record_filename(name)
        if parsed and parsed[0] == phase:
            taken.append(parsed[1] or 1)
    return max(taken) + 1


def load_index(text, run_id):
    """The evidence index parsed from ``text`` (None = a new one); an index of schema version 1 (one
    entry per phase) is read as attempt 1 of each phase. Raises EvidenceError on a bad index."""
    if not text:
        return {"schema": INDEX_SCHEMA, "schema_version": INDEX_SCHEMA_VERSION, "run_id": run_id, "records": []}
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise EvidenceError("the evidence index is not JSON: %s" % exc)
    if not isinstance(data, dict) or data.get("schema") != INDEX_SCHEMA or not isinstance(data.get("records"), list):
        raise EvidenceError("the evidence index is not a %s document with a records list" % INDEX_SCHEMA)
    for entry in data["records"]:
        if not isinstance(entry, dict) or not isinstance(entry.get("file"), str):
            raise EvidenceError("the evidence index has an entry without a file: %r" % (entry,))
        entry.setdefault("attempt", 1)
    return data


def build_record(run_id, phase, record, finished_at, attempt=1):
    """The full record as written: schema header, then the caller's fields."""
    validate(run_id, phase, record)
    full = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "phase": phase,
        "attempt": attempt,
        "started_at": record["started_at"],
        "finished_at": record.get("finished_at") or finished_at,
        "inputs": record["inputs"],
        "tools": record["tools"],
        "results": record["results"],
    }
    for key, value in record.items():
        if key not in full:
            full[key] = value
    return full


def dumps(data):
    return json.dumps(data, indent=2, sort_keys=True, default=str) + "\n"


def phase_order(entry):
    """Sort key of an index entry for summaries: the phase's place in PHASES, then the attempt."""
    phase = entry.get("phase")
    return (PHASES.index(phase) if phase in PHASES else len(PHASES), entry.get("attempt") or 1)


def append_index(index, run_id, entry):
    """A new index with ``entry`` ({phase, attempt, file, sha256, written_at, verdict, ...}) appended.
    Entries are never replaced or removed: every attempt keeps its own (append order = time order)."""
    index = dict(index or {})
    records = list(index.get("records", []))
    if any(e.get("file") == entry["file"] for e in records):
        raise EvidenceError("the evidence index already lists %s; records are never replaced" % entry["file"])
    records.append(dict(entry))
    return {"schema": INDEX_SCHEMA, "schema_version": INDEX_SCHEMA_VERSION, "run_id": index.get("run_id") or run_id,
            "records": records}


def _finding_key(finding):
    """What makes two findings the same: (id, subject); for coverage findings (id ``coverage.*``) the
    subject alone, so a host reported by compat_check is not reported again under another coverage id."""
    fid = str(finding.get("id") or "")
    return ("coverage" if fid.startswith("coverage.") else fid, finding.get("subject"))


def merge_findings(existing, extra):
    """``existing`` + the findings of ``extra`` that are not there yet (see _finding_key)."""
    seen = set(_finding_key(f) for f in existing)
    merged = list(existing)
    for finding in extra:
        key = _finding_key(finding)
        if key not in seen:
            seen.add(key)
            merged.append(finding)
    return merged


def record_names(names):
    """The names in a run directory that are evidence records (``<phase>-<N>.json``, legacy ``NN-<phase>.json``)."""
    return sorted(n for n in names if not n.startswith(".") and n != INDEX_FILE and parse_record_filename(n))


def judge_run_dir(index, observed):
    """The problems of a run directory's evidence, as ``[{file, problems}]``; empty = consistent.

    ``observed`` maps each evidence record file name found in the run directory (and each name the
    index lists) to what was measured without following links: ``exists``, ``is_link``, ``is_file``,
    ``sha256``, ``mode``. A record the index does not list (a crash between writing the record and
    updating the index), an indexed record that is missing, a link, not a regular file, has another
    sha256, or can be read by group or others, is a problem."""
    bad = []
    listed = {}
    for entry in (index or {}).get("records", []):
        listed[entry.get("file")] = entry
    for name in sorted(set(listed) | set(observed)):
        seen = observed.get(name) or {"exists": False}
        problems = []
        entry = listed.get(name)
        if entry is None:
            problems.append("an evidence record that the evidence index does not list (written, but the index was "
                            "never updated: a crash or a kill between the two?)")
        if not seen.get("exists"):
            problems.append("missing: the evidence index lists it, the file does not exist")
        elif seen.get("is_link"):
            problems.append("a symbolic link, not a record (never followed)")
        elif not seen.get("is_file"):
            problems.append("not a regular file")
        else:
            if entry is not None and seen.get("sha256") != entry.get("sha256"):
                problems.append("sha256 mismatch: indexed %s, found %s" % (entry.get("sha256"), seen.get("sha256")))
            mode = seen.get("mode")
            if mode is not None and mode & 0o077:
                problems.append("mode %04o: readable or writable by group or others (records are 0600)" % mode)
        if problems:
            bad.append({"file": name, "problems": problems})
    return bad


def _cell(value):
    if value is None:
        return "—"
    if isinstance(value, (list, tuple)):
        value = ", ".join(str(v) for v in value) or "—"
    elif isinstance(value, dict):
        value = ", ".join("%s=%s" % (k, v) for k, v in sorted(value.items())) or "—"
    return str(value).replace("|", "\\|").replace("\n", " ")


def _gpu_line(gpu):
    parts = [gpu.get("name") or "unknown GPU", gpu.get("pci_bus_id") or "?"]
    parts.append("NUMA %s" % ("n/a" if gpu.get("numa_node") is None else gpu["numa_node"]))
    parts.append("IOMMU group %s" % ("none" if gpu.get("iommu_group") is None else gpu["iommu_group"]))
    parts.append("driver %s" % (gpu.get("kernel_driver") or "none"))
    if gpu.get("mig_mode"):
        parts.append("MIG %s" % gpu["mig_mode"])
    return ", ".join(str(p) for p in parts)


def _cluster_lines(cluster):
    """A short section on the gpu_cluster_facts of a record (``record["cluster"]``)."""
    api = cluster.get("api_server") or {}
    nodes = cluster.get("nodes") or {}
    backends = {}
    for facts in nodes.values():
        backend = (facts or {}).get("gpu_backend") or "unknown"
        backends[backend] = backends.get(backend, 0) + 1
    lines = ["## Cluster", ""]
    lines.append("- API server %s; %d node(s), GPU backend: %s" % (
        api.get("version") or api.get("git_version") or "unknown", len(nodes),
        ", ".join("%s %d" % (k, v) for k, v in sorted(backends.items())) or "—"))
    apis = cluster.get("apis") or {}
    if "resource_k8s_io_v1" in apis:
        lines.append("- resource.k8s.io/v1 %s" % ("served" if apis["resource_k8s_io_v1"] else "not served"))
    operator = cluster.get("operator") or {}
    release = operator.get("helm_release")
    if release:
        lines.append("- GPU Operator Helm release %s/%s: chart %s %s, revision %s, %s" % (
            release.get("namespace"), release.get("name"), release.get("chart"), release.get("chart_version"),
            release.get("revision"), release.get("status")))
    elif operator:
        lines.append("- no GPU Operator Helm release found")
    for key, kind in (("cluster_policies", "ClusterPolicy"), ("gpu_clusters", "GPUCluster")):
        for item in operator.get(key) or []:
            lines.append("- %s %s: %s" % (kind, item.get("name"), item.get("state") or "no state"))
    bridges = [c.get("name") for c in cluster.get("device_classes") or [] if c.get("extended_resource_name")]
    lines.append("- DeviceClasses: %d (%d with extendedResourceName%s)" % (
        len(cluster.get("device_classes") or []), len(bridges), (": " + ", ".join(bridges)) if bridges else ""))
    claims = cluster.get("resource_claims") or {}
    if claims:
        lines.append("- ResourceClaims: %s total, %s allocated, %s deleted but still allocated" % (
            claims.get("total"), claims.get("allocated"), claims.get("deleting_allocated")))
    problems = cluster.get("problems") or []
    if problems:
        lines.append("- %d problem(s) reading the cluster: %s" % (len(problems), "; ".join(
            "%s: %s" % (p.get("what"), p.get("reason")) if isinstance(p, dict) else str(p) for p in problems[:5])))
    lines.append("")
    return lines


FINDING_COLUMNS = ("severity", "id", "subject", "observed", "expected", "message", "source")


def findings_lines(findings):
    """The ``## Findings`` section of every phase summary: one table row per finding, blocking first, then
    warnings, then info (each by subject and id), cells escaped; "No findings." when there are none."""
    lines = ["## Findings", ""]
    if findings:
        lines += ["| %s |" % " | ".join(FINDING_COLUMNS), "|%s" % ("---|" * len(FINDING_COLUMNS))]
        order = {"block": 0, "warn": 1, "info": 2}
        for finding in sorted(findings, key=lambda f: (order.get(f.get("severity"), 3), f.get("subject") or "", f.get("id") or "")):
            lines.append("| %s |" % " | ".join(_cell(finding.get(k)) for k in FINDING_COLUMNS))
    else:
        lines.append("No findings.")
    lines.append("")
    return lines


def render_preflight(record):
    """A human summary (Markdown) of a preflight record."""
    results = record.get("results", {})
    inputs = record.get("inputs", {})
    target = inputs.get("target") or results.get("target") or {}
    counts = results.get("counts", {})
    verdict = str(results.get("verdict", "unknown")).upper()
    lines = [
        "# Preflight: verdict %s" % verdict,
        "",
        "Run `%s`, %s → %s." % (record.get("run_id"), record.get("started_at"), record.get("finished_at")),
        "Target: GPU Operator %s, Kubernetes %s, allocation mode %s%s." % (
            target.get("operator_version", "?"), target.get("kubernetes_version") or "not given",
            target.get("allocation_mode", "?"), ", passthrough requested" if target.get("passthrough") else ""),
        "",
        "Findings: %d block, %d warn, %d info (%d not assessed)." % (
            counts.get("block", 0), counts.get("warn", 0), counts.get("info", 0), counts.get("not_assessed", 0)),
        "",
    ]
    path = results.get("upgrade_path")
    if path:
        if all(isinstance(hop, dict) for hop in path):
            steps = [str(path[0].get("from"))] + [str(hop.get("to")) for hop in path]
        else:
            steps = [str(hop) for hop in path]
        lines += ["Operator upgrade path: %s" % " → ".join(steps), ""]
    cluster = record.get("cluster")
    if isinstance(cluster, dict) and cluster:
        lines += _cluster_lines(cluster)
    nodes = record.get("nodes") or {}
    if nodes:
        lines += ["## Nodes", ""]
        for host in sorted(nodes):
            facts = nodes[host] or {}
            driver = facts.get("driver") or {}
            os_info = facts.get("os") or {}
            containerd = facts.get("containerd") or {}
            lines.append("### %s" % host)
            lines.append("")
            kernel = (facts.get("kernel") or {}).get("release") or "unknown"
            lines.append("- OS %s, kernel %s" % (os_info.get("pretty_name") or "unknown", kernel))
            if driver.get("loaded"):
                lines.append("- NVIDIA driver %s (%s kernel module)" % (
                    driver.get("version") or "unparsed", driver.get("flavor") or "unknown"))
            else:
                lines.append("- no NVIDIA driver found")
            gpus = facts.get("gpus") or []
            lines.append("- GPUs: %d" % len(gpus))
            for gpu in gpus:
                lines.append("  - %s" % _gpu_line(gpu))
            iommu = facts.get("iommu") or {}
            lines.append("- IOMMU %s (%d groups), iommufd %s" % (
                "on" if iommu.get("enabled") else "off", iommu.get("group_count") or 0,
                "yes" if iommu.get("iommufd") else "no"))
            if containerd.get("present"):
                lines.append("- containerd %s, config v%s, CDI %s" % (
                    containerd.get("version") or "unknown", containerd.get("config_version") or "?",
                    {True: "on", False: "off"}.get(containerd.get("cdi_enabled"), "unknown")))
            else:
                lines.append("- containerd not found")
            specs = (facts.get("cdi") or {}).get("specs") or []
            lines.append("- CDI specs: %d (%d invalid)" % (len(specs), sum(1 for s in specs if s.get("error"))))
            problems = facts.get("problems") or []
            if problems:
                lines.append("- %d problem(s) reading the node: %s" % (
                    len(problems), "; ".join("%s: %s" % (p.get("path"), p.get("reason")) for p in problems[:5])))
            lines.append("")
    lines += findings_lines(results.get("findings") or [])
    return "\n".join(lines)


def render_run_summary(index, phase_summaries):
    """The run's summary.md: one line per record (every attempt, in phase order), then the summary of
    each phase's latest attempt (``phase_summaries``: file name of the record -> Markdown text)."""
    entries = sorted(index.get("records", []), key=phase_order)
    lines = ["# Gate run %s" % index.get("run_id"), "", "| phase | attempt | verdict | record | sha256 |",
             "|---|---|---|---|---|"]
    for entry in entries:
        lines.append("| %s | %s | %s | %s | `%s` |" % (
            entry.get("phase"), entry.get("attempt") or 1, entry.get("verdict") or "—", entry["file"],
            (entry.get("sha256") or "")[:16]))
    lines.append("")
    latest = {}
    for entry in entries:
        latest[entry.get("phase")] = entry
    for entry in sorted(latest.values(), key=phase_order):
        text = phase_summaries.get(entry["file"])
        if text:
            lines += [text.rstrip(), ""]
    return "\n".join(lines)
