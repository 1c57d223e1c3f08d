#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_restore
short_description: Restore one etcd member's data directory from a verified snapshot
version_added: 0.2.0
description:
  - Verifies the snapshot again (sha256 equal to O(sha256), the sha256 integrity trailer, C(snapshot
    status -w json)), then runs C(etcdutl snapshot restore) (C(etcdctl snapshot restore) where there is
    no etcdutl) into a B(new) data directory with this member's O(name), the whole O(initial_cluster),
    O(initial_cluster_token) and the member's O(initial_advertise_peer_urls).
  - Every member of the cluster must be restored from the same snapshot with the same
    O(initial_cluster) and O(initial_cluster_token); the playbook C(gpufleet.dra_gate.etcd_restore)
    does that for the C(etcd) group.
  - Uses C(--bump-revision) O(bump_revision) with C(--mark-compacted) when the tool's
    C(snapshot restore --help) lists both (etcdutl 3.6+, etcdutl/etcdctl 3.5.10+, etcdctl 3.4.27+).
    When the tool lacks them, fails unless O(accept_no_revision_bump=true).
  - Writes an evidence JSON next to the snapshot (or in O(evidence_dir)) recording the file, its
    status, the argv, the tool and its version, and the revision-bump choice.
  - Never touches a running etcd or its current data directory; pointing etcd at the new directory
    and starting it are steps of the procedure in docs/rollback.md.
  - Runs on the etcd member with the Python standard library only.
author:
  - gpufleet maintainers (@gpufleet)
options:
  snapshot:
    description: The snapshot file on this member.
    type: path
    required: true
  sha256:
    description: The sha256 the operator confirmed; the file must have exactly this one.
    type: str
    required: true
  name:
    description: This member's name (etcd C(--name)); must appear in O(initial_cluster).
    type: str
    required: true
  initial_cluster:
    description:
      - All members, the same on every member. Either the C(--initial-cluster) string
        (C(name1=https://10.0.0.1:2380,name2=...)) or a list of dicts with C(name) and C(peer_url).
    type: raw
    required: true
  initial_cluster_token:
    description: The cluster token, the same on every member; use a new one for the restored cluster.
    type: str
    required: true
  initial_advertise_peer_urls:
    description: This member's peer URLs; must be this member's URLs in O(initial_cluster).
    type: list
    elements: str
    required: true
  data_dir:
    description:
      - The new data directory. Refused when it exists and is not empty, or when it is (or is inside)
        O(current_data_dir).
    type: path
    required: true
  current_data_dir:
    description: The data directory etcd uses now; never written, only compared with O(data_dir).
    type: path
  bump_revision:
    description:
      - How far to raise the revision after the restore (with C(--mark-compacted)); C(0) means no bump.
      - The etcd guide recommends it for Kubernetes, so that informers do not see revisions go backwards.
    type: int
    default: 1000000000
  accept_no_revision_bump:
    description: Restore without the revision bump when the tool does not support it (recorded in the evidence).
    type: bool
    default: false
  evidence_dir:
    description: Directory for the evidence JSON; default is the snapshot's directory.
    type: path
  etcdctl:
    description: Path of C(etcdctl); default is the one on C(PATH).
    type: path
  etcdutl:
    description: Path of C(etcdutl); default is the one on C(PATH). Preferred over etcdctl when found.
    type: path
attributes:
  check_mode:
    support: full
    description: >-
      Verifies the file when it is present and decides the flags; writes no data directory and no
      evidence and returns the argv it would run. A snapshot not yet copied to the member is reported, not verified.
  diff_mode:
    support: none
    description: Returns no diff.
notes:
  - Stop every kube-apiserver before restoring and restore all members from the same snapshot;
    see docs/rollback.md for the whole Kubernetes procedure.
seealso:
  - module: gpufleet.dra_gate.etcd_snapshot
  - name: etcd disaster recovery
    description: Restoring a cluster, and the revision bump for Kubernetes.
    link: https://etcd.io/docs/v3.6/op-guide/recovery/
"""

EXAMPLES = r"""
- name: Restore this member into a new data directory
  gpufleet.dra_gate.etcd_restore:
    snapshot: /var/backups/etcd/etcd-snapshot-20261130T085800Z-rev4711.db
    sha256: "{{ dra_gate_restore_confirm_sha256 }}"
    name: "{{ etcd_member_name }}"
    initial_cluster: etcd-1=https://10.0.0.1:2380,etcd-2=https://10.0.0.2:2380,etcd-3=https://10.0.0.3:2380
    initial_cluster_token: etcd-restored-20261130
    initial_advertise_peer_urls: ["{{ etcd_peer_url }}"]
    data_dir: /var/lib/etcd-restored-20261130
    current_data_dir: /var/lib/etcd
"""

RETURN = r"""
data_dir:
  description: The data directory written (or that would be written).
  returned: always
  type: str
argv:
  description: The restore command, for humans.
  returned: always
  type: str
tool:
  description: C(etcdutl) or C(etcdctl).
  returned: always
  type: str
tool_version:
  description: The tool's version, when it printed one.
  returned: always
  type: str
revision_bump:
  description: >-
    The choice: C(requested), C(supported) (flags listed by the tool), C(used) (the bump applied,
    0 for none), C(accepted_without) (restored without a bump by O(accept_no_revision_bump)).
  returned: always
  type: dict
status:
  description: C(snapshot status -w json) of the file.
  returned: when the file was verified
  type: dict
evidence:
  description: Path of the evidence JSON (in check mode, the path it would write).
  returned: always
  type: str
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import etcd_cli


def argument_spec():
    return dict(
        snapshot=dict(type="path", required=True),
        sha256=dict(type="str", required=True),
        name=dict(type="str", required=True),
        initial_cluster=dict(type="raw", required=True),
        initial_cluster_token=dict(type="str", required=True, no_log=False),
        initial_advertise_peer_urls=dict(type="list", elements="str", required=True),
        data_dir=dict(type="path", required=True),
        current_data_dir=dict(type="path"),
        bump_revision=dict(type="int", default=etcd_cli.DEFAULT_BUMP_REVISION),
        accept_no_revision_bump=dict(type="bool", default=False),
        evidence_dir=dict(type="path"),
        etcdctl=dict(type="path"),
        etcdutl=dict(type="path"),
    )


def write_json_private(path, data):
    tmp = "%s.tmp-%d" % (path, os.getpid())
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(data, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.rename(tmp, path)


def inside(path, parent):
    path, parent = os.path.realpath(path), os.path.realpath(parent)
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    for name in list(os.environ):
        if name.startswith(("ETCDCTL_", "ETCDUTL_")):
            del os.environ[name]
    expected = p["sha256"].strip().lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        module.fail_json(msg="sha256 must be 64 hex digits, got %r" % p["sha256"])
    try:
        if isinstance(p["initial_cluster"], list):
            cluster = etcd_cli.initial_cluster(p["initial_cluster"])
        else:
            cluster = str(p["initial_cluster"])
        members = etcd_cli.parse_initial_cluster(cluster)
        etcd_cli.check_member_name(p["name"])
        urls = [etcd_cli.check_peer_url(u) for u in p["initial_advertise_peer_urls"]]
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    own = sorted(url for member, url in members if member == p["name"])
    if not own:
        module.fail_json(msg="member %s is not in the initial cluster %s" % (p["name"], cluster))
    if own != sorted(urls):
        module.fail_json(msg="member %s advertises %s but the initial cluster gives it %s"
                         % (p["name"], ",".join(urls), ",".join(own)))

    data_dir = p["data_dir"]
    if p["current_data_dir"] and (inside(data_dir, p["current_data_dir"]) or inside(p["current_data_dir"], data_dir)):
        module.fail_json(msg="data_dir %s overlaps the current data directory %s; restore into a new directory"
                         % (data_dir, p["current_data_dir"]))
    if os.path.exists(data_dir) and (not os.path.isdir(data_dir) or os.listdir(data_dir)):
        module.fail_json(msg="data_dir %s exists and is not empty; a restore never writes over an existing data "
                             "directory" % data_dir)

    etcdctl = p["etcdctl"] or module.get_bin_path("etcdctl")
    etcdutl = p["etcdutl"] or module.get_bin_path("etcdutl")
    cli = etcd_cli.EtcdCli(lambda argv, env: module.run_command(argv, environ_update=env), etcdctl, etcdutl)
    try:
        tool_name, tool = cli.offline_tool
        tool_version = cli.tool_version()[1]
        supported = etcd_cli.supports_revision_bump(cli.restore_help())
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg=str(exc))

    snapshot = p["snapshot"]
    result = {"changed": True, "data_dir": data_dir, "tool": tool_name, "tool_version": tool_version}
    verified = os.path.isfile(snapshot)
    if verified:
        digest = etcd_cli.file_digest(snapshot)
        if digest["sha256"] != expected:
            module.fail_json(msg="snapshot %s has sha256 %s, not the confirmed %s; nothing restored"
                             % (snapshot, digest["sha256"], expected), **result)
        problem = etcd_cli.trailer_problem(digest)
        if problem:
            module.fail_json(msg="snapshot %s is refused: %s" % (snapshot, problem), **result)
        try:
            result["status"] = cli.snapshot_status(snapshot)[0]
        except etcd_cli.EtcdCliError as exc:
            module.fail_json(msg="snapshot %s is refused: %s" % (snapshot, exc), **result)
    elif not module.check_mode:
        module.fail_json(msg="snapshot %s does not exist on this member" % snapshot, **result)

    requested = p["bump_revision"]
    if requested < 0:
        module.fail_json(msg="bump_revision must be >= 0, got %d" % requested)
    used = requested if supported else 0
    bump = {"requested": requested, "supported": supported, "used": used,
            "accepted_without": bool(requested > 0 and not supported)}
    result["revision_bump"] = bump
    if requested > 0 and not supported and not p["accept_no_revision_bump"]:
        module.fail_json(msg="%s %s at %s has no --bump-revision/--mark-compacted (etcdutl 3.6+, 3.5.10+, etcdctl "
                             "3.4.27+ have them); without the bump Kubernetes informers can see revisions go "
                             "backwards. Use a newer etcdutl, or accept the risk with accept_no_revision_bump "
                             "(dra_gate_restore_accept_no_revision_bump: true)"
                         % (tool_name, tool_version or "(unknown version)", tool), **result)

    argv = etcd_cli.snapshot_restore_argv(tool, snapshot, data_dir, p["name"], cluster, p["initial_cluster_token"],
                                          urls, bump_revision=used, supports_bump=supported)
    result["argv"] = etcd_cli.argv_string(argv)
    now = datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)
    evidence_dir = p["evidence_dir"] or os.path.dirname(os.path.abspath(snapshot))
    evidence = os.path.join(evidence_dir, "%s.restore-%s-%s.json" % (
        os.path.basename(snapshot), p["name"], now.strftime(etcd_cli.timestamp_format())))
    result["evidence"] = evidence
    if module.check_mode:
        result["msg"] = "would restore %s into %s as member %s%s" % (
            snapshot, data_dir, p["name"], "" if verified else " (snapshot not on this member yet: not verified)")
        module.exit_json(**result)

    parent = os.path.dirname(os.path.abspath(data_dir))
    if not os.path.isdir(parent):
        os.makedirs(parent, 0o700)
    old_umask = os.umask(0o077)
    try:
        cli.restore(argv)
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg="restore of %s into %s failed: %s" % (snapshot, data_dir, exc), **result)
    finally:
        os.umask(old_umask)
    os.chmod(data_dir, 0o700)
    if not os.path.isdir(evidence_dir):
        os.makedirs(evidence_dir, 0o700)
    write_json_private(evidence, {
        "kind": "etcd-restore",
        "restored_at": now.strftime("%Y-%m-%dT%H:%M:%SZ"),
        "snapshot": {"path": snapshot, "sha256": expected, "size": digest["size"], "status": result["status"]},
        "member": {"name": p["name"], "initial_advertise_peer_urls": urls, "data_dir": data_dir,
                   "current_data_dir": p["current_data_dir"]},
        "initial_cluster": cluster,
        "initial_cluster_token": p["initial_cluster_token"],
        "tool": {"name": tool_name, "path": tool, "version": tool_version},
        "argv": argv,
        "revision_bump": bump,
    })
    result["msg"] = "restored %s into %s as member %s (%s)" % (
        snapshot, data_dir, p["name"],
        "revision bumped by %d, marked compacted" % used if used else
        "no revision bump: %s" % ("accepted by the operator" if bump["accepted_without"] else "bump_revision 0"))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
