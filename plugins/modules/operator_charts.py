#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: operator_charts
short_description: Plan the GPU Operator upgrade hops and pin and verify the chart of each
version_added: 0.3.0
description:
  - Takes the operator upgrade path that M(gpufleet.dra_gate.compat_check) planned (its C(upgrade_path)), or
    the current and target versions with the known releases, and the chart mapping (version -> chart
    directory, C(.tgz) archive, OCI reference or HTTPS URL, each pinned by sha256), and returns one entry
    per hop with the chart that hop installs.
  - Fails closed, before anything changes - every invalid entry of O(charts) (all named at once), a hop
    without a chart (every such hop named at once), a path longer than O(max_hops) (naming the hops it
    needs, so that a skipped major release is refused), a path that skips a major of O(releases), a local
    chart whose digest is not the pinned one (naming the expected and the actual digest).
  - A chart on the controller (C(path)) is verified here - an archive by the sha256 of its bytes, a
    directory by the canonical directory digest of docs/upgrade.md (sha256 over the sorted relative paths
    and their files' sha256s; symlinks and special files refused; modes and mtimes do not count).
  - OCI and HTTPS charts are not fetched (no network here) - they are returned with C(verified=false)
    and the pinned digest, which the pull step checks.
  - Versions are normalised - C(v26.3.1) and C(26.3.1) are the same release. A hop to a major
    (C(26.6.x), as compat_check names an intermediate major) takes the newest mapped release of that major.
  - Read-only; runs on the controller (or a delegate, where the chart files are).
author:
  - gpufleet maintainers (@gpufleet)
extends_documentation_fragment:
  - gpufleet.dra_gate.attributes.controller
options:
  charts:
    description:
      - The chart mapping, operator version -> chart, usually the inventory variable C(dra_gate_operator_charts).
        Keys are quoted releases (C("26.6.2") or C("v26.6.2")).
      - Each chart has exactly one of C(path) (an absolute path on the controller to a chart directory with a
        C(Chart.yaml) or a C(.tgz) archive), C(oci) (C(oci://<registry>/<repository>/<chart>), no tag) or
        C(url) (C(https://.../<name>.tgz)); C(sha256) (required - 64 hex characters, for C(oci) the manifest
        digest C(sha256:<64 hex>)); optionally C(chart_version) (the version string Helm is given, default the
        key as written) and C(images) (operand name -> C(<image>@sha256:<64 hex>)).
    type: dict
    required: true
  charts_name:
    description: The name O(charts) is given in error messages, for example C(dra_gate_operator_charts["26.6.2"].sha256).
    type: str
    default: dra_gate_operator_charts
  upgrade_path:
    description:
      - compat_check's C(upgrade_path) - a list of hops, each with C(from), C(to) and C(kind) (C(same_major) or
        C(next_major)). Checked to be contiguous, to start at O(current_version) and end at O(target_version)
        when those are given, and not to skip a major of O(releases) when that is given.
      - compat_check returns null when the current version is unknown; null is refused.
      - Without it, O(current_version), O(target_version) and O(releases) are required and the path is
        planned with compat_check's rule.
    type: list
    elements: dict
  current_version:
    description: The operator release running now, for example the cluster facts' C(operator.helm_release.chart_version).
    type: str
  target_version:
    description: The operator release to upgrade to.
    type: str
  releases:
    description:
      - The known operator releases, for example C(["26.3.x", "26.6.x", "26.7.0"]) (what C(releases) of
        M(gpufleet.dra_gate.compat_check) or the matrix lists). C(26.6.x) names a major. Quote each entry.
      - Required without O(upgrade_path); the list must include the majors of O(current_version) and
        O(target_version), so that no release between them is unknown.
    type: list
    elements: str
  max_hops:
    description:
      - The most hops the run may take. A path with more is refused naming every hop it needs; V(1) asks
        for a direct upgrade, which is refused when it would skip a major release.
    type: int
attributes:
  check_mode:
    support: full
    description: Read-only - the same checks and result in check mode.
  diff_mode:
    support: none
    description:
      - Reads only; there is nothing to diff.
notes:
  - Always C(changed=false).
  - The pull step (OCI, HTTPS) must check the digest it downloads against the hop's C(chart.sha256), and the
    upgrade step should re-verify a local chart right before it uses it.
seealso:
  - module: gpufleet.dra_gate.compat_check
  - module: gpufleet.dra_gate.helm_state
"""

EXAMPLES = r"""
- name: Check the fleet against GPU Operator 26.7.0
  gpufleet.dra_gate.compat_check:
    nodes: "{{ gpu_nodes }}"
    cluster: "{{ cluster_read.ansible_facts.gpu_cluster }}"
    target:
      operator_version: "26.7.0"
  run_once: true
  delegate_to: localhost
  register: compat

- name: Pin and verify the chart of every hop of compat_check's path
  gpufleet.dra_gate.operator_charts:
    charts: "{{ dra_gate_operator_charts }}"
    upgrade_path: "{{ compat.upgrade_path }}"
    target_version: "26.7.0"
  run_once: true
  delegate_to: localhost
  register: charts

- name: One step per hop
  ansible.builtin.debug:
    msg: "{{ item.from }} -> {{ item.to }} with {{ item.chart.source }} (sha256 {{ item.chart.sha256 }}, verified {{ item.chart.verified }})"
  loop: "{{ charts.hops }}"
  run_once: true

- name: Without compat_check - current and target from the facts, the releases from the matrix
  gpufleet.dra_gate.operator_charts:
    charts: "{{ dra_gate_operator_charts }}"
    current_version: "{{ cluster_read.ansible_facts.gpu_cluster.operator.helm_release.chart_version }}"
    target_version: "26.7.0"
    releases: ["26.3.x", "26.6.x", "26.7.0"]
  run_once: true
  delegate_to: localhost

- name: Refuse anything but a direct upgrade
  gpufleet.dra_gate.operator_charts:
    charts: "{{ dra_gate_operator_charts }}"
    upgrade_path: "{{ compat.upgrade_path }}"
    max_hops: 1
  run_once: true
  delegate_to: localhost

# group_vars/all.yml
# dra_gate_operator_charts:
#   "v26.6.2":
#     path: /srv/charts/gpu-operator-v26.6.2.tgz
#     sha256: "0f1e...64 hex"
#     images:
#       devicePlugin: nvcr.io/nvidia/k8s-device-plugin@sha256:4d3c...64 hex
#   "v26.7.0":
#     oci: oci://registry.example.com/nvidia/gpu-operator
#     sha256: "sha256:9a8b...64 hex"
"""

RETURN = r"""
hops:
  description:
    - One entry per hop, in order; empty when the current release is the target.
  returned: success
  type: list
  elements: dict
  contains:
    from:
      description: The release the hop starts from (the previous hop's C(to)), normalised (C(26.3.1)).
      type: str
    to:
      description: The release the hop installs, the mapped release (C(26.6.2) for a planned C(26.6.x)).
      type: str
    planned_to:
      description: The hop's C(to) as the path named it (C(26.6.x) for an intermediate major).
      type: str
    kind:
      description: C(same_major) or C(next_major).
      type: str
    chart:
      description: The chart of the hop.
      type: dict
      contains:
        version:
          description: The release, normalised (C(26.6.2)).
          type: str
        chart_version:
          description: The version string Helm is given (C(chart_version), else the mapping's key as written).
          type: str
        key:
          description: The mapping's key as written.
          type: str
        source:
          description: The path, OCI reference or URL.
          type: str
        kind:
          description: C(archive), C(directory), C(oci) or C(url).
          type: str
        sha256:
          description: The pinned digest - 64 hex characters, C(sha256:<64 hex>) for C(oci).
          type: str
        verified:
          description: True when the local chart was checked against C(sha256) here; false for C(oci) and C(url).
          type: bool
        images:
          description: The pinned operand images, operand name -> C(<image>@sha256:<digest>); empty when none.
          type: dict
  sample:
    - from: "26.3.1"
      to: "26.6.2"
      planned_to: "26.6.x"
      kind: next_major
      chart:
        version: "26.6.2"
        chart_version: "v26.6.2"
        key: "v26.6.2"
        source: /srv/charts/gpu-operator-v26.6.2.tgz
        kind: archive
        sha256: 0f1e2d3c4b5a69788796a5b4c3d2e1f00f1e2d3c4b5a69788796a5b4c3d2e1f0
        verified: true
        images: {}
verified:
  description: True when every hop's chart was verified here (false when any is C(oci) or C(url); true when there is no hop).
  returned: success
  type: bool
current_version:
  description: Where the path starts, normalised; null when the path is empty and no O(current_version) was given.
  returned: success
  type: str
target_version:
  description: Where the path ends, normalised; null when the path is empty and no O(target_version) was given.
  returned: success
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases.operator_charts import ChartsError, plan

MODULE_ARG_SPEC = dict(
    charts=dict(type="dict", required=True),
    charts_name=dict(type="str", default="dra_gate_operator_charts"),
    upgrade_path=dict(type="list", elements="dict"),
    current_version=dict(type="str"),
    target_version=dict(type="str"),
    releases=dict(type="list", elements="str"),
    max_hops=dict(type="int"),
)


def main():
    module = AnsibleModule(argument_spec=MODULE_ARG_SPEC, supports_check_mode=True)
    params = module.params
    if params["upgrade_path"] is None:
        missing = [key for key in ("current_version", "target_version", "releases") if params[key] is None]
        if missing:
            module.fail_json(msg="upgrade_path is missing or null (compat_check returns null when the current operator "
                                 "version is unknown: see its operator.upgrade_hops.not_assessed finding); without it "
                                 "give current_version, target_version and releases (missing: %s)" % ", ".join(missing))
    if params["max_hops"] is not None and params["max_hops"] < 1:
        module.fail_json(msg="max_hops: expected 1 or more, got %d" % params["max_hops"])
    try:
        result = plan(params["charts"], upgrade_path=params["upgrade_path"], current=params["current_version"],
                      target=params["target_version"], releases=params["releases"], max_hops=params["max_hops"],
                      name=params["charts_name"])
    except ChartsError as exc:
        module.fail_json(msg=str(exc))
    hops = result["hops"]
    if hops:
        path = " -> ".join([result["current"]] + [hop["to"] for hop in hops])
        pending = [hop["to"] for hop in hops if not hop["chart"]["verified"]]
        msg = "%d hop(s) %s; charts %s" % (len(hops), path, "verified" if not pending else
                                           "verified except %s (remote: the pull step checks the pinned digest)"
                                           % ", ".join(pending))
    else:
        msg = "no hop: %s is the target" % (result["current"] or "the current release")
    module.exit_json(changed=False, hops=hops, verified=result["verified"], current_version=result["current"],
                     target_version=result["target"], msg=msg)


if __name__ == "__main__":
    main()
