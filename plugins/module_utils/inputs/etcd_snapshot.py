# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The etcd snapshot's input rules (roles/etcd_snapshot), one per condition (module_utils/inputs/rules.py).

They cover every condition of the role's argument spec (types) and what it cannot say: the etcd group a group of the
inventory with hosts (``values["__context__"]["groups"]``), one http(s) endpoint, an absolute snapshot directory,
a plain file name prefix, whole numbers, positive deadlines, the maximum age's form.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.inputs import rules as i


def etcd_group(value, values=None):
    """A group of the inventory (context ``groups``) with at least one host."""
    if not isinstance(value, str) or not value.strip():
        return "it is empty" if value == "" else "it is not a string"
    groups = ((values or {}).get("__context__") or {}).get("groups") or {}
    if value not in groups:
        names = sorted(name for name in groups if name not in ("all", "ungrouped"))
        return "it is not a group of the inventory (its groups: %s)" % (", ".join(names) or "none")
    return None if groups[value] else "the group has no hosts"


_WHOLE = "a whole number, 0 or more"
_SECONDS = "whole seconds above 0"

RULES = [
    i.Rule("etcd_snapshot_group", "dra_gate_etcd_group", "the inventory group of the etcd members (with hosts)",
           etcd_group),
    i.Rule("etcd_snapshot_endpoint", "dra_gate_etcd_endpoint",
           "ONE client URL of the member, http(s)://host:port, such as https://127.0.0.1:2379 (never a list)",
           i.matching(r"^https?://[^,\s]+\Z", "it is not one http(s) URL")),
    i.Rule("etcd_snapshot_cacert", "dra_gate_etcd_cacert", "a path on the member or empty (kubeadm's)", i.string),
    i.Rule("etcd_snapshot_cert", "dra_gate_etcd_cert", "a path on the member or empty (kubeadm's)", i.string),
    i.Rule("etcd_snapshot_key", "dra_gate_etcd_key", "a path on the member or empty (kubeadm's)", i.string),
    i.Rule("etcd_snapshot_dir", "dra_gate_etcd_snapshot_dir",
           "the absolute path of the snapshots' directory on the member", i.absolute_path),
    i.Rule("etcd_snapshot_prefix", "dra_gate_etcd_snapshot_prefix",
           "a file name prefix: a letter or digit, then letters, digits, ._-",
           i.matching(r"^[A-Za-z0-9][A-Za-z0-9._-]*\Z", "it is not a plain file name prefix")),
    i.Rule("etcd_snapshot_retention", "dra_gate_etcd_snapshot_retention",
           _WHOLE + " (snapshots kept, the new one included; 0 keeps all)", i.whole_number),
    i.Rule("etcd_snapshot_max_age", "dra_gate_etcd_snapshot_max_age",
           "seconds, or a whole number with s, m, h or d, such as 1h",
           i.matching(r"^[0-9]+[smhd]?\Z", "it is not seconds or N[smhd]")),
    i.Rule("etcd_snapshot_etcdctl", "dra_gate_etcdctl", "the path of etcdctl on the member or empty (PATH)", i.string),
    i.Rule("etcd_snapshot_etcdutl", "dra_gate_etcdutl", "the path of etcdutl on the member or empty (PATH)", i.string),
    i.Rule("etcd_snapshot_timeout", "dra_gate_etcd_timeout", _SECONDS + ", such as 10", i.positive_whole_number),
    i.Rule("etcd_snapshot_save_timeout", "dra_gate_etcd_save_timeout", _SECONDS + ", such as 600",
           i.positive_whole_number),
    i.Rule("etcd_snapshot_max_raft_lag", "dra_gate_etcd_max_raft_lag", _WHOLE + " (raft entries)", i.whole_number),
]
