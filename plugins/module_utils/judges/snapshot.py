# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The snapshot phase's judge: its findings from its results (docs/artifacts.md). Pure logic."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.judges.findings import JudgeError, _dict, _finding, _list

_REV_RE = re.compile(r"rev ([0-9]+)$")


def snapshot_findings(results, check_mode=False):
    """The snapshot phase's findings from its results: a failed capture and an index that does not
    verify block (each bad entry named), a skipped capture warns (skipped is never passed). In check
    mode nothing was written, so an index that was not verified (``verified`` null) is no finding."""
    findings = []
    failure = results.get("capture_failure")
    if failure:
        findings.append(_finding("snapshot.capture_failed", "block", "capture", failure, "every capture taken",
                                 "a capture failed: %s" % failure))
    verified = results.get("verified")
    bad = results.get("bad") or []
    for item in bad:
        findings.append(_finding("snapshot.artifact_unverified", "block", item.get("path"), "; ".join(item.get("problems") or []),
                                 "the file as indexed (sha256, size, mode 0600)",
                                 "the artifact %s does not verify: %s" % (item.get("path"), "; ".join(item.get("problems") or []))))
    if verified is not True and not bad and not (check_mode and verified is None):
        findings.append(_finding("snapshot.index_unverified", "block", results.get("index") or "artifact index",
                                 verified, True, "the artifact index %s was not verified" % (results.get("index") or "")))
    for item in results.get("skipped") or []:
        findings.append(_finding("snapshot.capture_skipped", "warn", "%s %s" % (item.get("kind"), item.get("source")),
                                 "skipped", "captured",
                                 "%s %s was not captured: %s" % (item.get("kind"), item.get("source"), item.get("reason"))))
    return findings


def release_capture(index, namespace, release):
    """The snapshot's newest capture of a Helm release in a run's artifact index (the parsed index.json):
    ``{found, values_file, values_sha256, chart_file, images_file, images_sha256, revision}``. Entries are the
    release's when their source starts ``helm release <namespace>/<release> rev ``; for each kind
    (helm-values-user, helm-chart, helm-images) the last one counts; the revision is the values entry's
    ``rev N`` (0 without one). ``found`` is whether the user values were captured."""
    if not isinstance(index, dict) or not isinstance(index.get("artifacts"), list):
        raise JudgeError("index: expected the artifact index (a dict with an artifacts list)")
    prefix = "helm release %s/%s rev " % (namespace, release)
    entries = [e for e in index["artifacts"] if isinstance(e, dict) and str(e.get("source") or "").startswith(prefix)]

    def last(kind):
        found = [e for e in entries if e.get("kind") == kind]
        return found[-1] if found else {}

    values, chart, images = last("helm-values-user"), last("helm-chart"), last("helm-images")
    match = _REV_RE.search(str(values.get("source") or ""))
    return {"found": bool(values.get("path")), "values_file": values.get("path") or "", "values_sha256": values.get("sha256") or "",
            "chart_file": chart.get("path") or "", "images_file": images.get("path") or "",
            "images_sha256": images.get("sha256") or "", "revision": int(match.group(1)) if match else 0}


# ---- the role's decisions (roles/snapshot): reached through the filters in plugins/filter/judges.py ----

ETCD_SKIPPED_BY_CONFIG = "skipped by snapshot_skip_captures (dra_gate_skip_captures)"
ETCD_NO_HOSTS = "the inventory group has no hosts (no etcd reachable: a managed control plane?)"


def helm_release_state(facts, namespace, release):
    """Whether the release exists, is absent, or could not be read, from a registered gpu_cluster_facts
    result (include operator): ``{found, absent, problems}``. Absent only when no release was found and the
    read said ``not found`` for ``helm release <namespace>/<release>``; forbidden is not absent (neither
    found nor absent: the capture fails with the problems)."""
    cluster = _dict(_dict(_dict(facts).get("ansible_facts")).get("gpu_cluster"))
    what = "helm release %s/%s" % (namespace, release)
    mine = [p for p in _list(cluster.get("problems")) if isinstance(p, dict) and p.get("what") == what]
    found = _dict(cluster.get("operator")).get("helm_release") is not None
    absent = not found and any(str(p.get("reason") or "").startswith("not found") for p in mine)
    return {"found": found, "absent": absent, "problems": [p.get("reason") for p in mine]}


def etcd_skip(group, hosts, skip_captures):
    """The skipped-capture record of the etcd snapshot, as a list (empty: it is taken): skipped by
    configuration, or no host in the inventory group (or no group)."""
    skip = [str(s) for s in _list(skip_captures)]
    if "etcd" not in skip and _list(hosts):
        return []
    return [{"kind": "etcd-snapshot", "source": "inventory group %s" % (group or "(none)"),
             "reason": ETCD_SKIPPED_BY_CONFIG if "etcd" in skip else ETCD_NO_HOSTS}]


def node_paths(containerd, components):
    """The node files to fetch (node paths): ``{containerd, kubelet, manifests}`` from gpu_node_facts'
    containerd (config and imported files, each once, in order) and k8s_component_facts' components
    (the kubelet config when present; the static pod manifests present, sorted)."""
    containerd, components = _dict(containerd), _dict(components)
    paths = ([containerd["config_path"]] if containerd.get("config_path") else []) + _list(containerd.get("imported_files"))
    unique = []
    for path in paths:
        if path not in unique:
            unique.append(path)
    kubelet = _dict(components.get("kubelet"))
    manifests = sorted(_dict(v).get("path") for k, v in components.items() if k != "kubelet" and _dict(v).get("present"))
    return {"containerd": unique, "kubelet": [kubelet.get("path")] if kubelet.get("present") else [], "manifests": manifests}
