# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The DRA acceptance tests' input rules (roles/dra_acceptance), one per condition (module_utils/inputs/rules.py).
The canary pool's labels and taints are the dra_canary role's settings, checked by the same rules."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs.dra_canary import taints

DNS_LABEL_RE = re.compile(r"^[a-z0-9]([-a-z0-9]{0,61}[a-z0-9])?$")
KINDS = ("template", "extended", "mig", "numa")


def dns_label(value, values=None):
    if not isinstance(value, str):
        return "it is not a string"
    return None if DNS_LABEL_RE.match(value) else "it is not a DNS label (lower-case letters, digits and -)"


def kinds(value, values=None):
    reason = i.string_list(value)
    if reason:
        return reason
    if not value:
        return "it is empty"
    bad = [kind for kind in value if kind not in KINDS]
    return "'%s' in it is not one of %s" % (bad[0], "|".join(KINDS)) if bad else None


def non_negative_number(value, values=None):
    return None if i.whole_number(value) is None or i.positive_number(value) is None else "it is not a number of 0 or more"


def mapping_list(value, values=None):
    if not isinstance(value, (list, tuple)):
        return "it is not a list"
    bad = [item for item in value if not isinstance(item, dict)]
    return "an item of it is not a mapping" if bad else None


def url_or_empty(value, values=None):
    if not isinstance(value, str):
        return "it is not a string"
    return None if value == "" or re.match(r"^https?://[^\s/]+", value) else "it is not an http(s) URL"


RULES = [
    i.Rule("dra_acceptance_evidence_root", "dra_gate_evidence_root", "the absolute path of a private directory",
           i.absolute_path),
    i.Rule("dra_acceptance_run_id", "dra_gate_run_id", "the canary's own gate run id (letters, digits and ._-)", i.run_id),
    i.Rule("dra_acceptance_kubeconfig", "dra_gate_kubeconfig", "the path of the canary cluster's kubeconfig on the controller",
           i.non_empty_string),
    i.Rule("dra_acceptance_kube_context", "dra_gate_kube_context", "a context name or empty (the current one)", i.string),
    i.Rule("dra_acceptance_namespace", "dra_gate_acceptance_namespace", "a namespace name (a DNS label)", dns_label),
    i.Rule("dra_acceptance_count", "dra_gate_acceptance_count", "a whole number above 0", i.positive_whole_number),
    i.Rule("dra_acceptance_concurrency", "dra_gate_acceptance_concurrency", "a whole number above 0",
           i.positive_whole_number),
    i.Rule("dra_acceptance_long_lived", "dra_gate_acceptance_long_lived", "a whole number, 0 or more", i.whole_number),
    i.Rule("dra_acceptance_kinds", "dra_gate_acceptance_kinds", "a non-empty list of template|extended|mig|numa",
           kinds),
    i.Rule("dra_acceptance_device_class", "dra_gate_acceptance_device_class", "a DeviceClass name",
           i.non_empty_string),
    i.Rule("dra_acceptance_mig_device_class", "dra_gate_acceptance_mig_device_class", "a DeviceClass name",
           i.non_empty_string),
    i.Rule("dra_acceptance_extended_resource_name", "dra_gate_acceptance_extended_resource_name",
           "an extended resource name such as nvidia.com/gpu", i.non_empty_string),
    i.Rule("dra_acceptance_canary_labels", "dra_gate_canary_labels", "a mapping of node labels", i.mapping),
    i.Rule("dra_acceptance_canary_taints", "dra_gate_canary_taints", "a list of key[=value]:Effect", taints),
    i.Rule("dra_acceptance_image", "dra_gate_acceptance_image", "an image reference", i.non_empty_string),
    i.Rule("dra_acceptance_hold_seconds", "dra_gate_acceptance_hold_seconds", "seconds, 0 or more",
           non_negative_number),
    i.Rule("dra_acceptance_delete_grace_seconds", "dra_gate_acceptance_delete_grace_seconds",
           "whole seconds, 0 or more", i.whole_number),
    i.Rule("dra_acceptance_lifecycle_timeout", "dra_gate_acceptance_lifecycle_timeout", "seconds above 0",
           i.positive_number),
    i.Rule("dra_acceptance_cleanup_timeout", "dra_gate_acceptance_cleanup_timeout", "seconds above 0",
           i.positive_number),
    i.Rule("dra_acceptance_timeout", "dra_gate_acceptance_timeout", "seconds above 0", i.positive_number),
    i.Rule("dra_acceptance_progress_every", "dra_gate_acceptance_progress_every", "a whole number above 0",
           i.positive_whole_number),
    i.Rule("dra_acceptance_disruptions", "dra_gate_acceptance_disruptions",
           "a list of disruptions (mappings; claim_lifecycle's disruptions option), [] for none", mapping_list),
    i.Rule("dra_acceptance_prometheus_url", "dra_gate_prometheus_url", "an http(s) URL or empty (metrics skipped)",
           url_or_empty),
    i.Rule("dra_acceptance_prometheus_token", "dra_gate_prometheus_token", "a bearer token or empty", i.string),
    i.Rule("dra_acceptance_prometheus_validate_certs", "dra_gate_prometheus_validate_certs", "true or false", i.boolean),
    i.Rule("dra_acceptance_dcgm_metrics", "dra_gate_dcgm_metrics", "a list of DCGM metric names", i.string_list),
]
