# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The snapshot phase's input rules (roles/snapshot), one per condition (module_utils/inputs/rules.py).

They cover every condition of the role's argument spec (types, choices) and what it cannot say: non-empty names,
the kubeconfig a file on the controller, absolute node paths, the known captures. The etcd snapshot's own inputs
are roles/etcd_snapshot's rules (inputs/etcd_snapshot.py), checked by roles/snapshot/tasks/inputs.yml right after
these when the etcd group has hosts.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i

CAPTURES = ("etcd", "helm", "cluster_state", "node_files")

RULES = [
    i.Rule("snapshot_evidence_root", "dra_gate_evidence_root",
           "the absolute path of the private evidence root (install -d -m 0700)", i.absolute_path),
    i.Rule("snapshot_run_id", "dra_gate_run_id",
           "the gate run id the artifacts belong to, normally the preflight's (letters, digits, ._-)", i.run_id),
    i.Rule("snapshot_kubeconfig", "dra_gate_kubeconfig", "the path of the cluster's kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("snapshot_kubeconfig", "dra_gate_kubeconfig", "an existing kubeconfig file on the controller",
           i.file_on_controller),
    i.Rule("snapshot_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)", i.string),
    i.Rule("snapshot_operator_release", "dra_gate_operator_release", "the operator's Helm release name",
           i.non_empty_string),
    i.Rule("snapshot_operator_namespace", "dra_gate_operator_namespace", "the operator's namespace", i.non_empty_string),
    i.Rule("snapshot_helm_backend", "dra_gate_helm_backend", "auto, cli or library", i.choice("auto", "cli", "library")),
    i.Rule("snapshot_etcd_group", "dra_gate_etcd_group",
           "the inventory group of the etcd members, or empty (no etcd snapshot, recorded as skipped)", i.string),
    i.Rule("snapshot_node_root", "dra_gate_node_root", "an absolute path (/ = the live node, else a recorded tree)",
           i.absolute_path),
    i.Rule("snapshot_node_commands", "dra_gate_node_commands", "auto, run, recorded or none",
           i.choice("auto", "run", "recorded", "none")),
    i.Rule("snapshot_containerd_config", "dra_gate_containerd_config", "the absolute path of containerd's config file",
           i.absolute_path),
    i.Rule("snapshot_manifests_dir", "dra_gate_manifests_dir", "the absolute path of the static pod manifests",
           i.absolute_path),
    i.Rule("snapshot_kubelet_config", "dra_gate_kubelet_config", "the absolute path of the kubelet's config file",
           i.absolute_path),
    i.Rule("snapshot_skip_captures", "dra_gate_skip_captures",
           "a list of captures not to take, each one of %s (e.g. [etcd])" % ", ".join(CAPTURES), i.subset_of(*CAPTURES)),
    i.Rule("snapshot_etcdutl", "dra_gate_etcdutl", "the path of etcdutl on the controller or empty (PATH)", i.string),
    i.Rule("snapshot_etcdctl", "dra_gate_etcdctl", "the path of etcdctl on the controller or empty (PATH)", i.string),
    i.Rule("snapshot_capture_timeout", "dra_gate_capture_timeout", "whole seconds above 0, such as 900",
           i.positive_whole_number),
]
