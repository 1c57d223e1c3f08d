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
# The order in which a gate run's phases happen; a record's file name carries its position.
PHASES = ("preflight", "snapshot", "upgrade", "canary", "drain", "rollback", "decision")
RUN_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
REQUIRED = ("inputs", "results", "tools", "started_at")


class EvidenceError(ValueError):
    """A record that cannot be written; the message names the field and the expected form."""


def validate(run_id, phase, record):
    if not isinstance(run_id, str) or not RUN_ID_RE.match(run_id):
        raise EvidenceError("run_id: %r is not valid; expected letters, digits, '.', '_' or '-' "
                            "(at most 128, starting with a letter or digit)" % (run_id,))
    if phase not in PHASES:
        raise EvidenceError("phase: %r is not a gate phase; expected one of %s" % (phase, ", ".join(PHASES)))
    if not isinstance(record, dict):
        raise EvidenceError("record: expected a dict with keys %s" % ", ".join(REQUIRED))
    for key in REQUIRED:
        if key not in record:
            raise EvidenceError("record.%s: required field missing" % key)
    for key in ("inputs", "results", "tools"):
        if not isinstance(record[key], dict):
            raise EvidenceError("record.%s: expected a dict, got %s" % (key, type(record[key]).__name__))


def record_filename(phase):
    return "%02d-%s.json" % (PHASES.index(phase) + 1, phase)


def build_record(run_id, phase, record, finished_at):
    """The full record as written: schema header, then the caller's fields."""
    validate(run_id, phase, record)
    full = {
        "schema": SCHEMA,
        "schema_version": SCHEMA_VERSION,
        "run_id": run_id,
        "phase": phase,
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


def update_index(index, run_id, phase, filename, sha256, written_at, verdict):
    """Return a new index dict with ``phase`` recorded (replacing an earlier record of it)."""
    index = dict(index or {})
    entries = [e for e in index.get("records", []) if e.get("phase") != phase]
    entries.append({"phase": phase, "file": filename, "sha256": sha256, "written_at": written_at,
                    "verdict": verdict})
    entries.sort(key=lambda e: PHASES.index(e["phase"]) if e["phase"] in PHASES else len(PHASES))
    return {"schema": INDEX_SCHEMA, "schema_version": SCHEMA_VERSION, "run_id": run_id, "records": entries}


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
    findings = results.get("findings") or []
    lines += ["## Findings", ""]
    if findings:
        lines += ["| severity | id | subject | observed | expected | message | source |",
                  "|---|---|---|---|---|---|---|"]
        order = {"block": 0, "warn": 1, "info": 2}
        for finding in sorted(findings, key=lambda f: (order.get(f.get("severity"), 3), f.get("subject") or "", f.get("id") or "")):
            lines.append("| %s |" % " | ".join(_cell(finding.get(k)) for k in (
                "severity", "id", "subject", "observed", "expected", "message", "source")))
    else:
        lines.append("No findings.")
    lines.append("")
    return "\n".join(lines)


def render_run_summary(index, phase_summaries):
    """The run's summary.md: one line per phase record, then each phase's own summary."""
    lines = ["# Gate run %s" % index.get("run_id"), "", "| phase | verdict | record | sha256 |", "|---|---|---|---|"]
    for entry in index.get("records", []):
        lines.append("| %s | %s | %s | `%s` |" % (
            entry["phase"], entry.get("verdict") or "—", entry["file"], (entry.get("sha256") or "")[:16]))
    lines.append("")
    for entry in index.get("records", []):
        text = phase_summaries.get(entry["phase"])
        if text:
            lines += [text.rstrip(), ""]
    return "\n".join(lines)
