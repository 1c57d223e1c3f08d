#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_restore
short_description: Restore one etcd member's data directory from a verified snapshot, crash-safe
version_added: 0.2.0
description:
  - Verifies the snapshot again (sha256 equal to O(sha256), the sha256 integrity trailer, C(snapshot
    status -w json)), then runs C(etcdutl snapshot restore) (C(etcdctl snapshot restore) where there is
    no etcdutl) with this member's O(name), the whole O(initial_cluster), O(initial_cluster_token) and the
    member's O(initial_advertise_peer_urls) into a B(staging) directory next to O(data_dir) (same parent,
    so the same filesystem; C(.<data_dir name>.restore-staging-<random>), 0700). Only when the restore
    completed is the marker C(.dra_gate-restore.json) (0600; snapshot sha256, member name, initial cluster,
    token, tool and version) written into it and the directory renamed to O(data_dir); O(data_dir) never
    holds a partial restore.
  - A rerun with the same snapshot and the same member parameters finds the marker and reports
    C(changed=false); a O(data_dir) holding another restore, or anything else, is refused.
  - A failed or timed-out restore (its process group is killed at O(timeout)) removes the staging
    directory, leaves O(data_dir) as it was, and writes a failure record
    C(<data_dir>.restore-failed-<UTC time>.json) (0600) next to O(data_dir). Staging directories left by a
    restore that was itself killed are removed by the next run.
  - The etcd major.minor of the restore tool must equal the one recorded when the snapshot was taken
    (O(saved_version), else the C(etcd_version) in C(<snapshot>.meta.json) that M(gpufleet.dra_gate.etcd_snapshot)
    writes); a snapshot without a recorded version, a tool that prints none, or a mismatch is refused
    unless O(allow_version_mismatch=true), which is recorded.
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
      - The new data directory. Refused when it is (or is inside) O(current_data_dir), or when it exists and is
        neither empty nor a completed restore of the same snapshot with the same parameters (that one gives
        C(changed=false)).
    type: path
    required: true
  saved_version:
    description:
      - The etcd version recorded when the snapshot was taken (for example C(3.5.1)); only its major.minor is
        compared with the restore tool's. Default is C(etcd_version) from C(<snapshot>.meta.json).
    type: str
  allow_version_mismatch:
    description:
      - Restore although the restore tool's etcd major.minor differs from the recorded one, or either is unknown.
        Recorded in the evidence, the marker and RV(version_check).
    type: bool
    default: false
  timeout:
    description:
      - Seconds. The deadline of C(snapshot restore); the tool's whole process group is killed then and the
        restore fails (staging removed, failure record written). C(version), C(--help) and C(snapshot status)
        get the same deadline.
    type: int
    default: 600
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
      Verifies the file when it is present and decides the flags and the version check; writes no data
      directory, marker, failure record or evidence and returns the argv it would run (with the final
      O(data_dir) in place of the staging directory). A snapshot not yet copied to the member is reported, not verified.
  diff_mode:
    support: full
    description: The data directory's state before and after (absent, empty, or restored from which snapshot).
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
    timeout: 900
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
  returned: when a restore ran or would run
  type: str
marker:
  description: The marker in O(data_dir) (the one found, or the one written).
  returned: when O(data_dir) holds a completed restore
  type: dict
version_check:
  description: >-
    C(recorded) (the version at save time), C(recorded_from) (C(saved_version), the metadata file, or null),
    C(tool) (the restore tool's version), C(match) (major.minor equal), C(overridden) (restored anyway by
    O(allow_version_mismatch)).
  returned: when a restore ran or would run
  type: dict
failure_record:
  description: Path of the failure record written next to O(data_dir) when the restore failed.
  returned: on a failed restore
  type: str
removed_staging:
  description: Staging directories of earlier, interrupted restores that were removed.
  returned: when a restore ran
  type: list
  elements: str
"""

import json
import os
import shutil
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import etcd_cli
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files

STAGING_INFIX = ".restore-staging-"


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
        saved_version=dict(type="str"),
        allow_version_mismatch=dict(type="bool", default=False),
        evidence_dir=dict(type="path"),
        etcdctl=dict(type="path"),
        etcdutl=dict(type="path"),
        timeout=dict(type="int", default=600),
    )


def dump(data):
    return json.dumps(data, indent=2, sort_keys=True) + "\n"


def inside(path, parent):
    path, parent = os.path.realpath(path), os.path.realpath(parent)
    return path == parent or path.startswith(parent.rstrip(os.sep) + os.sep)


def staging_prefix(data_dir):
    return "." + os.path.basename(os.path.normpath(data_dir)) + STAGING_INFIX


def stale_staging(data_dir):
    """Staging directories that an interrupted restore into ``data_dir`` left behind."""
    parent = os.path.dirname(os.path.abspath(data_dir))
    prefix = staging_prefix(data_dir)
    try:
        names = os.listdir(parent)
    except OSError:
        return []
    return sorted(os.path.join(parent, n) for n in names
                  if n.startswith(prefix) and os.path.isdir(os.path.join(parent, n))
                  and not os.path.islink(os.path.join(parent, n)))


def describe_dir(path):
    if not os.path.lexists(path):
        return "absent\n"
    if os.path.isdir(path) and not os.listdir(path):
        return "empty directory\n"
    try:
        marker = etcd_cli.read_restore_marker(path)
    except etcd_cli.EtcdCliError:
        marker = None
    if marker:
        return "restored from %s as member %s\n" % (marker.get("snapshot_sha256"), marker.get("member"))
    return "holds other data\n"


def version_check(p, snapshot, tool_version):
    recorded, source = p["saved_version"], "saved_version" if p["saved_version"] else None
    if not recorded:
        try:
            metadata = etcd_cli.read_metadata(snapshot) if os.path.isfile(snapshot) else None
        except etcd_cli.EtcdCliError:
            metadata = None
        if metadata and metadata.get("etcd_version"):
            recorded, source = str(metadata["etcd_version"]), etcd_cli.metadata_path(snapshot)
    want, have = etcd_cli.major_minor(recorded), etcd_cli.major_minor(tool_version)
    match = bool(want and have and want == have)
    return {"recorded": recorded, "recorded_from": source, "tool": tool_version, "match": match,
            "overridden": bool(not match and p["allow_version_mismatch"])}


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    p = module.params
    for name in list(os.environ):
        if name.startswith(("ETCDCTL_", "ETCDUTL_")):
            del os.environ[name]
    expected = p["sha256"].strip().lower()
    if len(expected) != 64 or any(c not in "0123456789abcdef" for c in expected):
        module.fail_json(msg="sha256 must be 64 hex digits, got %r" % p["sha256"])
    if p["timeout"] <= 0:
        module.fail_json(msg="timeout must be a positive number of seconds, got %d" % p["timeout"])
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

    data_dir = os.path.normpath(p["data_dir"])
    if p["current_data_dir"] and (inside(data_dir, p["current_data_dir"]) or inside(p["current_data_dir"], data_dir)):
        module.fail_json(msg="data_dir %s overlaps the current data directory %s; restore into a new directory"
                         % (data_dir, p["current_data_dir"]))
    wanted = {"snapshot_sha256": expected, "member": p["name"], "initial_cluster": cluster,
              "initial_cluster_token": p["initial_cluster_token"], "initial_advertise_peer_urls": urls}
    result = {"changed": True, "data_dir": data_dir}
    if os.path.lexists(data_dir):
        if os.path.islink(data_dir) or not os.path.isdir(data_dir):
            module.fail_json(msg="data_dir %s exists and is not a directory; nothing restored" % data_dir, **result)
        if os.listdir(data_dir):
            try:
                marker = etcd_cli.read_restore_marker(data_dir)
            except etcd_cli.EtcdCliError as exc:
                module.fail_json(msg="data_dir %s is not empty and its marker is unreadable: %s" % (data_dir, exc),
                                 **result)
            if marker is None:
                module.fail_json(msg="data_dir %s exists and is not empty; a restore never writes over an existing "
                                     "data directory" % data_dir, **result)
            differs = sorted(k for k, v in wanted.items() if marker.get(k) != v)
            if differs:
                module.fail_json(msg="data_dir %s holds another restore (snapshot %s, member %s; differs in %s); "
                                     "nothing restored" % (data_dir, marker.get("snapshot_sha256"), marker.get("member"),
                                                           ", ".join(differs)), marker=marker, **result)
            result.update(changed=False, marker=marker, tool=marker.get("tool"), tool_version=marker.get("tool_version"),
                          argv=etcd_cli.argv_string(marker.get("argv") or []),
                          revision_bump=marker.get("revision_bump"), version_check=marker.get("version_check"),
                          msg="data_dir %s already holds the restore of %s as member %s" % (data_dir, expected, p["name"]))
            module.exit_json(**result)

    etcdctl = p["etcdctl"] or module.get_bin_path("etcdctl")
    etcdutl = p["etcdutl"] or module.get_bin_path("etcdutl")
    cli = etcd_cli.EtcdCli.with_deadline(p["timeout"], etcdctl, etcdutl)
    try:
        tool_name, tool = cli.offline_tool
        tool_version = cli.tool_version()[1]
        supported = etcd_cli.supports_revision_bump(cli.restore_help())
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg=str(exc))

    snapshot = p["snapshot"]
    result.update(tool=tool_name, tool_version=tool_version)
    versions = version_check(p, snapshot, tool_version)
    result["version_check"] = versions
    if not versions["match"] and not versions["overridden"]:
        if not versions["recorded"]:
            why = "no etcd version is recorded for %s (no saved_version, no etcd_version in %s)" % (
                snapshot, etcd_cli.metadata_path(snapshot))
        elif not tool_version:
            why = "%s at %s printed no version" % (tool_name, tool)
        else:
            why = "%s %s is etcd %s, the snapshot was taken from etcd %s (%s)" % (
                tool_name, tool, etcd_cli.major_minor(tool_version), versions["recorded"], versions["recorded_from"])
        module.fail_json(msg="restore refused: %s; restore is supported within the same major.minor. Use a %s of that "
                             "version, or override with allow_version_mismatch (dra_gate_restore_allow_version_mismatch:"
                             " true), which is recorded" % (why, tool_name), **result)

    verified = os.path.isfile(snapshot)
    digest = None
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

    def restore_argv(target):
        return etcd_cli.snapshot_restore_argv(tool, snapshot, target, p["name"], cluster, p["initial_cluster_token"],
                                              urls, bump_revision=used, supports_bump=supported)

    result["argv"] = etcd_cli.argv_string(restore_argv(data_dir))
    now = int(time.time())  # whole seconds: the evidence file's name and restored_at are the same instant
    stamp = clock.name_stamp(now)
    evidence_dir = p["evidence_dir"] or os.path.dirname(os.path.abspath(snapshot))
    evidence = os.path.join(evidence_dir, "%s.restore-%s-%s.json" % (os.path.basename(snapshot), p["name"], stamp))
    result["evidence"] = evidence
    result["diff"] = {"before": describe_dir(data_dir),
                      "after": "restored from %s as member %s\n" % (expected, p["name"])}
    if module.check_mode:
        result["msg"] = "would restore %s into %s (through a staging directory beside it) as member %s%s" % (
            snapshot, data_dir, p["name"], "" if verified else " (snapshot not on this member yet: not verified)")
        module.exit_json(**result)

    parent = os.path.dirname(os.path.abspath(data_dir))
    removed = []
    try:
        private_files.ensure_private_dir(parent)
        for stale in stale_staging(data_dir):
            shutil.rmtree(stale)
            removed.append(stale)
        staging = tempfile.mkdtemp(prefix=staging_prefix(data_dir), dir=parent)
        os.chmod(staging, 0o700)
    except (OSError, private_files.PrivateFileError) as exc:
        module.fail_json(msg="cannot prepare a staging directory beside %s: %s" % (data_dir, exc), **result)
    result["removed_staging"] = removed
    staged = os.path.join(staging, "data")
    argv = restore_argv(staged)
    record = {
        "kind": "etcd-restore",
        "restored_at": clock.rfc3339(now),
        "snapshot": {"path": snapshot, "sha256": expected, "size": digest["size"], "status": result["status"]},
        "member": {"name": p["name"], "initial_advertise_peer_urls": urls, "data_dir": data_dir,
                   "current_data_dir": p["current_data_dir"]},
        "initial_cluster": cluster,
        "initial_cluster_token": p["initial_cluster_token"],
        "tool": {"name": tool_name, "path": tool, "version": tool_version},
        "argv": argv,
        "revision_bump": bump,
        "version_check": versions,
    }
    old_umask = os.umask(0o077)
    try:
        cli.restore(argv)
        if not os.path.isdir(os.path.join(staged, "member")):
            raise etcd_cli.EtcdCliError("%s snapshot restore exited 0 but wrote no member directory into %s"
                                        % (tool_name, staged))
        # What was verified is what the tool read: the same file, unchanged from the check to the end
        # of the restore; otherwise the restored data is discarded before it is renamed into place.
        after = etcd_cli.file_digest(snapshot)
        if after["sha256"] != expected or after["size"] != digest["size"]:
            raise etcd_cli.EtcdCliError("snapshot %s changed while it was restored (sha256 %s, the confirmed %s): the "
                                        "restored data was discarded" % (snapshot, after["sha256"], expected))
        os.chmod(staged, 0o700)
        marker = dict(wanted, restored_at=record["restored_at"], tool=tool_name, tool_version=tool_version, argv=argv,
                      revision_bump=bump, version_check=versions, snapshot=snapshot)
        private_files.write_private(os.path.join(staged, etcd_cli.RESTORE_MARKER), dump(marker))
        private_files.fsync_dir(staged)
        if os.path.isdir(data_dir) and not os.listdir(data_dir):
            os.rmdir(data_dir)
        os.rename(staged, data_dir)
        private_files.fsync_dir(parent)
        os.rmdir(staging)
    except (etcd_cli.EtcdCliError, OSError, private_files.PrivateFileError) as exc:
        shutil.rmtree(staging, ignore_errors=True)
        failure = os.path.join(parent, "%s.restore-failed-%s.json" % (os.path.basename(data_dir), stamp))
        record.update(kind="etcd-restore-failure", error=str(exc), timed_out=bool(getattr(exc, "timed_out", False)),
                      staging_removed=not os.path.exists(staging))
        try:
            private_files.write_private(failure, dump(record))
            result["failure_record"] = failure
        except (private_files.PrivateFileError, OSError) as write_exc:
            module.warn("cannot write the failure record %s: %s" % (failure, write_exc))
        module.fail_json(msg="restore of %s into %s failed; %s is left as it was (staging removed): %s" % (
            snapshot, data_dir, data_dir, exc), **result)
    finally:
        os.umask(old_umask)
    result["marker"] = marker
    try:
        private_files.ensure_private_dir(evidence_dir)
        private_files.write_private(evidence, dump(record))
    except (private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="restored %s into %s, but the evidence %s cannot be written: %s"
                         % (snapshot, data_dir, evidence, exc), **result)
    result["msg"] = "restored %s into %s as member %s (%s%s)" % (
        snapshot, data_dir, p["name"],
        "revision bumped by %d, marked compacted" % used if used else
        "no revision bump: %s" % ("accepted by the operator" if bump["accepted_without"] else "bump_revision 0"),
        "; etcd version mismatch overridden" if versions["overridden"] else "")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
