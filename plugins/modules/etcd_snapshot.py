#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_snapshot
short_description: Take a verified etcd snapshot from a healthy, current member, or re-verify or copy one
version_added: 0.2.0
description:
  - With O(state=present), first chooses the member from C(etcdctl endpoint status -w json) on O(endpoint)
    (which member it is), C(etcdctl member list -w json) and C(etcdctl endpoint status --cluster -w json)
    (every member's health, leader, raft term and raft index). A member is refused when it does not
    answer, reports errors (alarms), is a learner, knows no leader or another one than the others, is in
    another raft term than the leader, or lags the leader by more than O(max_raft_lag) raft entries
    (the leader's raft index minus the member's applied index). The module fails when the leader does
    not answer or fewer than a majority of the voting members are healthy. The snapshot comes from the
    O(endpoint)'s member when it passes, else from the passing follower with the least lag, else from the
    leader; the choice and every member's status are returned in RV(member_selection) and recorded.
  - Then saves the snapshot from that member with C(etcdctl snapshot save) (C(--dial-timeout) O(timeout),
    C(--command-timeout) O(save_timeout)) into O(dest_dir) as
    C(<prefix>-<UTC timestamp>-rev<revision>.db), mode 0600, and verifies it before it gets its
    final name. Beside it, C(<name>.meta.json) (0600) records the member selection, the member's etcd
    version (its major.minor is what M(gpufleet.dra_gate.etcd_restore) checks), the tools' versions and
    the verification; the manifest C(dra_gate-etcd-snapshots.json) in O(dest_dir) (0600, updated under a
    lock) lists every snapshot this module took there.
  - Older snapshots of the same prefix are pruned to O(retention) only after the new one verified, and
    only those the manifest records (with their recorded size and inode); other files that match the
    name pattern are never removed.
  - With O(state=copy), copies the snapshot O(path) (and its C(.meta.json) when present) to O(dest) mode 0600
    from the first byte (a temporary file in the destination directory, fsync, link; an existing
    O(dest) is never replaced) and checks the copy's sha256 against O(sha256) and its integrity trailer;
    no etcd tool is needed. The snapshot phase uses it on the controller for the fetched copy.
  - Every command runs with a deadline (derived from O(timeout) for the status and list calls, O(save_timeout)
    plus 10 seconds for C(snapshot save), O(save_timeout) for C(snapshot status)); on expiry its whole
    process group is killed and the module fails naming the command and the deadline.
  - With O(state=verify), re-verifies an existing snapshot file (for example before a restore, or
    from an artifact index); nothing is written.
  - Verification is, in this order, the sha256 integrity trailer that C(etcdctl snapshot save)
    appends and C(snapshot restore) checks (a truncated or corrupted file fails here; C(snapshot
    status) alone accepts some damaged files), then C(etcdutl snapshot status -w json) where etcdutl
    exists, else C(etcdctl snapshot status -w json) (hash, revision, totalKey, totalSize), then
    the file's sha256 (against O(sha256) when given) and age (against O(max_age)). A snapshot
    revision below the revision the member reported before the save gives a warning, not a failure
    (C(snapshot status) reports the newest revision left in the key data, 0 for an empty store).
  - A snapshot that fails verification right after the save is kept for inspection but renamed to
    C(<name>.corrupt), so it never looks like a usable snapshot, and the module fails naming it.
  - Runs on the etcd member with the Python standard library only; the commands run with
    C(ETCDCTL_API=3) and C(LC_ALL=C), and C(ETCDCTL_*)/C(ETCDUTL_*) variables of the remote
    environment are dropped so that they cannot change the endpoint or the TLS files.
author:
  - gpufleet maintainers (@gpufleet)
options:
  state:
    description:
      - C(present) takes a new snapshot; C(verify) re-verifies O(path); C(copy) copies O(path) to O(dest).
    type: str
    choices: [present, verify, copy]
    default: present
  endpoint:
    description:
      - The one etcd client URL the module asks for the cluster's members (for example
        C(https://127.0.0.1:2379)); its member is the preferred source of the snapshot. When that member
        is refused, the snapshot is taken through the chosen member's first client URL from the member list.
      - A list, or a string with several comma-separated endpoints, is refused (etcd takes a
        snapshot from one selected member).
      - Required with O(state=present).
    type: raw
  cacert:
    description:
      - CA bundle that verifies the member's certificate.
      - When not given and the endpoint is C(https), the kubeadm file C(/etc/kubernetes/pki/etcd/ca.crt)
        is used if it exists. A given path that does not exist fails the module.
    type: path
  cert:
    description:
      - Client certificate. When not given and the endpoint is C(https), the kubeadm file
        C(/etc/kubernetes/pki/etcd/server.crt) is used if it exists.
    type: path
  key:
    description:
      - Client key (its path only; the file is never read by this module). When not given and the
        endpoint is C(https), the kubeadm file C(/etc/kubernetes/pki/etcd/server.key) is used if it exists.
    type: path
  dest_dir:
    description:
      - Directory for the snapshots; created with mode 0700 when absent (an existing directory's
        mode is left as it is). Required with O(state=present).
    type: path
  prefix:
    description: File name prefix; also selects which files O(retention) prunes.
    type: str
    default: etcd-snapshot
  retention:
    description:
      - Keep this many snapshots of O(prefix) in O(dest_dir), the new one included, newest by the
        timestamp in the name; older ones are removed only after the new snapshot verified.
      - C(0) keeps all.
    type: int
    default: 0
  max_age:
    description:
      - A snapshot older than this fails. Seconds, or a number with C(s), C(m), C(h) or C(d).
      - The age is counted from the UTC timestamp in the file name (its modification time when the
        name has none). With O(state=present) it bounds the time from the start of the save.
      - C(0) or empty means no limit.
    type: str
    default: "0"
  path:
    description: The snapshot file to verify or copy. Required with O(state=verify) and O(state=copy).
    type: path
  dest:
    description: The file to copy O(path) to with O(state=copy); its directory is created 0700 when absent.
    type: path
  sha256:
    description:
      - Expected sha256 of O(path) (hex). When given with O(state=verify), a different file fails.
      - Required with O(state=copy).
    type: str
  max_raft_lag:
    description:
      - The most raft entries a member may lag the leader (leader's raft index minus the member's applied
        index) and still be snapshotted. A partitioned member falls behind (and loses its leader); a
        healthy follower lags by a handful of entries.
    type: int
    default: 1000
  etcdctl:
    description: Path of C(etcdctl); default is the one on C(PATH).
    type: path
  etcdutl:
    description:
      - Path of C(etcdutl); default is the one on C(PATH). Without etcdutl, C(etcdctl) verifies
        (etcdctl 3.6+ has no C(snapshot status), so etcdutl is needed there).
    type: path
  timeout:
    description:
      - Seconds. The C(--dial-timeout) and C(--command-timeout) of C(endpoint status) and C(member list), and the
        C(--dial-timeout) of C(snapshot save). Such a call is killed at 2 x O(timeout) + 5 seconds, the
        cluster-wide C(endpoint status --cluster) (which asks the members one after the other) at
        (members + 2) x O(timeout) + 5 seconds, C(version) at O(timeout).
    type: int
    default: 10
  save_timeout:
    description:
      - Seconds. The C(--command-timeout) of C(snapshot save) (the whole transfer) and the deadline of
        C(snapshot status); the C(snapshot save) process is killed at O(save_timeout) + 10 seconds.
        A large database over a slow link needs more.
    type: int
    default: 600
attributes:
  check_mode:
    support: full
    description: >-
      Reads the members' status, chooses the member and returns the path it would write and the
      snapshots retention would prune (and, with O(state=verify), verifies as usual); writes, renames
      and removes nothing.
  diff_mode:
    support: full
    description: With O(state=present), the recorded snapshots of O(dest_dir) before and after (new one, pruned ones).
notes:
  - The snapshot holds the whole cluster state, Secrets included; it is written mode 0600 into a
    0700 directory and its contents are never printed. Error messages quote only the tools' error lines.
  - On managed control planes (EKS, GKE, AKS) there is no etcd to reach; use the provider's backup.
seealso:
  - module: gpufleet.dra_gate.etcd_restore
  - name: etcd disaster recovery
    description: Snapshot and restore in the etcd operations guide.
    link: https://etcd.io/docs/v3.6/op-guide/recovery/
"""

EXAMPLES = r"""
- name: Snapshot the first etcd member (kubeadm certificates)
  gpufleet.dra_gate.etcd_snapshot:
    endpoint: https://127.0.0.1:2379
    dest_dir: /var/backups/etcd
    retention: 5
  register: snap

- name: Snapshot a healthy member; refuse members more than 500 raft entries behind
  gpufleet.dra_gate.etcd_snapshot:
    endpoint: https://127.0.0.1:2379
    dest_dir: /var/backups/etcd
    max_raft_lag: 500
    save_timeout: 1200

- name: Verify it again before a restore
  gpufleet.dra_gate.etcd_snapshot:
    state: verify
    path: "{{ snap.path }}"
    sha256: "{{ snap.sha256 }}"
    max_age: 1h
"""

RETURN = r"""
path:
  description: The snapshot file (with O(state=present) in check mode, the path it would write).
  returned: always
  type: str
  sample: /var/backups/etcd/etcd-snapshot-20261130T085800Z-rev4711.db
sha256:
  description: sha256 of the file (hex).
  returned: when a file was written or verified
  type: str
size:
  description: Size of the file in bytes.
  returned: when a file was written or verified
  type: int
member_id:
  description: ID of the member the snapshot came from, hex as C(etcdctl member list) prints it.
  returned: state=present
  type: str
  sample: 7a70ad1d7c4c1ee6
revision_at_save:
  description: The member's revision from C(endpoint status) just before the save.
  returned: state=present
  type: int
endpoint_status:
  description: The parsed C(endpoint status) of the chosen member (member, cluster and leader IDs, revision, raft term and index, version, db size).
  returned: state=present
  type: dict
member_selection:
  description: Which member the snapshot came from and why, with every member's status.
  returned: state=present, also when no member may be snapshotted
  type: dict
  contains:
    chosen:
      description: The chosen member's row (as in RV(member_selection.members)); null when none passed.
      type: dict
    reason:
      description: "Why this member, for example C(the configured endpoint's member: healthy, lag 0 <= 1000)."
      type: str
    leader:
      description: The leader's member ID (hex).
      type: str
    max_lag:
      description: The O(max_raft_lag) applied.
      type: int
    endpoint:
      description: The client URL the snapshot was saved through.
      type: str
    members:
      description: >-
        One row per member: C(member_id), C(name), C(endpoint), C(client_urls), C(answered), C(is_leader),
        C(lag), C(raft_index), C(raft_applied_index), C(raft_term), C(revision), C(version), C(errors),
        C(healthy), C(problems) (why it is refused; empty when healthy).
      type: list
      elements: dict
metadata:
  description: Path of the metadata file written beside the snapshot (C(<path>.meta.json)).
  returned: state=present and state=copy, when written
  type: str
etcd_version:
  description: The chosen member's etcd server version (from C(endpoint status)); its major.minor must match the restore tool's.
  returned: state=present
  type: str
manifest:
  description: Path of the manifest of the snapshots this module took into O(dest_dir).
  returned: state=present
  type: str
prune_skipped:
  description: Recorded snapshots that retention left alone because the file is not the recorded one, with the reason.
  returned: state=present
  type: list
  elements: dict
status:
  description: C(snapshot status -w json) of the file.
  returned: when a file was written or verified
  type: dict
  contains:
    hash:
      description: Hash of the snapshot's key-value data (uint32).
      type: int
    revision:
      description: The snapshot's revision.
      type: int
    totalKey:
      description: Number of keys.
      type: int
    totalSize:
      description: Database size in bytes.
      type: int
tool:
  description: The tool that verified (C(etcdutl) or C(etcdctl)).
  returned: when a file was written or verified
  type: str
age_seconds:
  description: Age of the snapshot in seconds.
  returned: when a file was written or verified
  type: int
pruned:
  description: Recorded snapshots removed by O(retention) (in check mode, those that would be removed).
  returned: state=present
  type: list
  elements: str
artifact:
  description: An entry for the gate run's artifact index.
  returned: when a file was written or verified
  type: dict
  contains:
    path:
      description: The file.
      type: str
    kind:
      description: C(etcd-snapshot).
      type: str
    sha256:
      description: sha256 of the file.
      type: str
    size:
      description: Size in bytes.
      type: int
    source:
      description: The member endpoint it was taken from (with O(state=verify), the file itself).
      type: str
    member_id:
      description: The member it was taken from (O(state=present)).
      type: str
    member_name:
      description: That member's name (O(state=present)).
      type: str
    etcd_version:
      description: That member's etcd version at save time (O(state=present)).
      type: str
    member_selection:
      description: RV(member_selection) without the per-member rows' C(client_urls) (O(state=present)).
      type: dict
    verify:
      description: The command that re-checks the snapshot's contents, for humans (never run through a shell).
      type: str
"""

import datetime
import json
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import etcd_cli
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence import private_files

KUBEADM_TLS = {
    "cacert": "/etc/kubernetes/pki/etcd/ca.crt",
    "cert": "/etc/kubernetes/pki/etcd/server.crt",
    "key": "/etc/kubernetes/pki/etcd/server.key",
}
# How much longer than --command-timeout the snapshot save process may run before it is killed.
SAVE_GRACE = 10


def argument_spec():
    return dict(
        state=dict(type="str", choices=["present", "verify", "copy"], default="present"),
        endpoint=dict(type="raw"),
        cacert=dict(type="path"),
        cert=dict(type="path"),
        key=dict(type="path", no_log=False),
        dest_dir=dict(type="path"),
        prefix=dict(type="str", default="etcd-snapshot"),
        retention=dict(type="int", default=0),
        max_age=dict(type="str", default="0"),
        path=dict(type="path"),
        dest=dict(type="path"),
        sha256=dict(type="str"),
        max_raft_lag=dict(type="int", default=etcd_cli.DEFAULT_MAX_RAFT_LAG),
        etcdctl=dict(type="path"),
        etcdutl=dict(type="path"),
        timeout=dict(type="int", default=10),
        save_timeout=dict(type="int", default=600),
    )


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


def iso(when):
    return clock.to_datetime(when)


def scrub_environment():
    """Drop ETCDCTL_*/ETCDUTL_* from this process's environment (children inherit it)."""
    for name in list(os.environ):
        if name.startswith(("ETCDCTL_", "ETCDUTL_")):
            del os.environ[name]


def make_cli(module):
    etcdctl = module.params["etcdctl"] or module.get_bin_path("etcdctl")
    etcdutl = module.params["etcdutl"] or module.get_bin_path("etcdutl")
    for option, value in (("etcdctl", module.params["etcdctl"]), ("etcdutl", module.params["etcdutl"])):
        if value and not (os.path.isfile(value) and os.access(value, os.X_OK)):
            module.fail_json(msg="%s %s is not an executable file" % (option, value))
    return etcd_cli.EtcdCli.with_deadline(module.params["timeout"], etcdctl=etcdctl, etcdutl=etcdutl)


def tls_files(module, endpoint):
    """cacert/cert/key as given, else the kubeadm files that exist (https endpoints only)."""
    result = {}
    for option, default in KUBEADM_TLS.items():
        value = module.params[option]
        if value:
            if not os.path.isfile(value):
                module.fail_json(msg="%s %s does not exist or is not a file" % (option, value))
            result[option] = value
        elif endpoint.startswith("https://") and os.path.isfile(default):
            result[option] = default
        else:
            result[option] = None
    return result


def file_time(path):
    stamp = etcd_cli.snapshot_timestamp(path)
    if stamp:
        when = datetime.datetime.strptime(stamp, etcd_cli.timestamp_format())
        return when.replace(tzinfo=datetime.timezone.utc)
    return datetime.datetime.fromtimestamp(os.stat(path).st_mtime, datetime.timezone.utc)


def check_sha256(value, option="sha256"):
    text = (value or "").strip().lower()
    if len(text) != 64 or any(c not in "0123456789abcdef" for c in text):
        raise ValueError("%s must be 64 hex digits, got %r" % (option, value))
    return text


def verify_file(cli, path, expected_sha256=None, timeout=None):
    """(digest, status, argv) of a snapshot file, or raise EtcdCliError naming the file."""
    if not os.path.isfile(path):
        raise etcd_cli.EtcdCliError("snapshot %s does not exist or is not a file" % path)
    digest = etcd_cli.file_digest(path)
    if expected_sha256 and digest["sha256"] != expected_sha256.strip().lower():
        raise etcd_cli.EtcdCliError("snapshot %s has sha256 %s, expected %s: it is not the recorded file "
                                    "(changed, truncated or replaced)" % (path, digest["sha256"], expected_sha256))
    problem = etcd_cli.trailer_problem(digest)
    if problem:
        raise etcd_cli.EtcdCliError("snapshot %s is refused: %s" % (path, problem))
    try:
        status, argv = cli.snapshot_status(path, timeout=timeout)
    except etcd_cli.EtcdCliError as exc:
        raise etcd_cli.EtcdCliError("snapshot %s is refused: %s" % (path, exc))
    return digest, status, argv


def check_age(module, path, when, max_age, now, result):
    age = max(int((now - when).total_seconds()), 0)
    result["age_seconds"] = age
    if max_age and age > max_age:
        module.fail_json(msg="snapshot %s is %d s old, older than max_age %d s" % (path, age, max_age), **result)


def artifact(path, digest, source, argv):
    return {"path": path, "kind": "etcd-snapshot", "sha256": digest["sha256"], "size": digest["size"],
            "source": source, "verify": etcd_cli.argv_string(argv)}


def run_verify(module, cli, max_age):
    path = module.params["path"]
    result = {"changed": False, "path": path}
    try:
        digest, status, argv = verify_file(cli, path, module.params["sha256"], module.params["save_timeout"])
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg=str(exc), **result)
    result.update(sha256=digest["sha256"], size=digest["size"], status=status, tool=cli.offline_tool[0],
                  artifact=artifact(path, digest, path, argv))
    check_age(module, path, file_time(path), max_age, utcnow(), result)
    result["msg"] = "snapshot %s verified: revision %d, %d keys" % (path, status["revision"], status["totalKey"])
    module.exit_json(**result)


def run_copy(module):
    """Copy a snapshot (and its metadata) privately and check the copy; no etcd tool needed."""
    params = module.params
    src, dest = params["path"], params["dest"]
    result = {"changed": True, "path": dest, "source": src}
    try:
        expected = check_sha256(params["sha256"])
    except ValueError as exc:
        module.fail_json(msg=str(exc), **result)
    if not os.path.isfile(src):
        module.fail_json(msg="snapshot %s does not exist or is not a file" % src, **result)
    digest = etcd_cli.file_digest(src)
    if digest["sha256"] != expected:
        module.fail_json(msg="snapshot %s has sha256 %s, expected %s; nothing copied" % (src, digest["sha256"], expected),
                         **result)
    problem = etcd_cli.trailer_problem(digest)
    if problem:
        module.fail_json(msg="snapshot %s is refused: %s; nothing copied" % (src, problem), **result)
    result.update(sha256=digest["sha256"], size=digest["size"])
    if os.path.lexists(dest):
        if os.path.isfile(dest) and etcd_cli.file_digest(dest)["sha256"] == expected:
            result.update(changed=False, msg="%s is already this snapshot" % dest)
            module.exit_json(**result)
        module.fail_json(msg="%s exists and is another file; a snapshot copy never replaces one" % dest, **result)
    src_meta = etcd_cli.metadata_path(src)
    if module.check_mode:
        result["msg"] = "would copy %s to %s (0600)" % (src, dest)
        module.exit_json(**result)
    try:
        private_files.ensure_private_dir(os.path.dirname(os.path.abspath(dest)))
        if os.path.isfile(src_meta):
            private_files.copy_private(src_meta, etcd_cli.metadata_path(dest))
            result["metadata"] = etcd_cli.metadata_path(dest)
        private_files.copy_private(src, dest)
    except (private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="cannot copy %s to %s: %s" % (src, dest, exc), **result)
    copied = etcd_cli.file_digest(dest)
    if copied["sha256"] != expected:
        os.unlink(dest)
        module.fail_json(msg="the copy %s has sha256 %s, not %s: removed" % (dest, copied["sha256"], expected), **result)
    result["msg"] = "copied %s to %s (0600, sha256 checked)" % (src, dest)
    module.exit_json(**result)


def choose_member(module, cli, endpoint, tls):
    """(selection, configured endpoint's status) from the whole cluster's status; fails the module
    (with every member's status) when no member may be snapshotted."""
    params = module.params
    args = (endpoint, tls["cacert"], tls["cert"], tls["key"], params["timeout"])
    # etcdctl applies --dial-timeout and --command-timeout per endpoint, one member after the other.
    deadline = 2 * params["timeout"] + 5
    try:
        own = cli.endpoint_status(*args, deadline=deadline)
        members = cli.member_list(*args, deadline=deadline)
        statuses, failures = cli.cluster_status(*args, deadline=(2 + len(members)) * params["timeout"] + 5)
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg="cannot read the status of %s: %s" % (endpoint, exc))
    try:
        selection = etcd_cli.select_member(members, statuses, failures, preferred_member_id=own["member_id"],
                                           max_lag=params["max_raft_lag"])
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg="snapshot refused: %s" % exc,
                         member_selection=dict(getattr(exc, "selection", {}), endpoint=None))
    chosen = selection["chosen"]
    if chosen["member_id"] == own["member_id"]:
        selection["endpoint"] = endpoint
    else:
        selection["endpoint"] = chosen["endpoint"]
    if chosen["member_id"] == own["member_id"]:
        return selection, own
    return selection, next(s for s in statuses if s["member_id"] == chosen["member_id"])


def recorded(dest_dir):
    try:
        manifest = etcd_cli.read_manifest(dest_dir) if os.path.isdir(dest_dir) else {"snapshots": []}
    except etcd_cli.EtcdCliError:
        return []
    return sorted(e.get("name", "") for e in manifest["snapshots"] if isinstance(e, dict))


def run_present(module, cli, max_age):
    params = module.params
    try:
        endpoint = etcd_cli.check_single_endpoint(params["endpoint"])
        etcd_cli.check_prefix(params["prefix"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    for option in ("retention", "max_raft_lag"):
        if params[option] < 0:
            module.fail_json(msg="%s must be >= 0, got %d" % (option, params[option]))
    for option in ("timeout", "save_timeout"):
        if params[option] <= 0:
            module.fail_json(msg="%s must be a positive number of seconds, got %d" % (option, params[option]))
    dest_dir = params["dest_dir"]
    if os.path.isdir(dest_dir):
        try:
            etcd_cli.read_manifest(dest_dir)
        except etcd_cli.EtcdCliError as exc:
            module.fail_json(msg=str(exc))
    tls = tls_files(module, endpoint)
    started = utcnow()
    selection, member = choose_member(module, cli, endpoint, tls)
    source = selection["endpoint"]
    name = etcd_cli.snapshot_filename(params["prefix"], started, member["revision"])
    path = os.path.join(dest_dir, name)
    result = {"changed": True, "path": path, "member_id": member["member_id"],
              "revision_at_save": member["revision"], "endpoint_status": member, "pruned": [], "prune_skipped": [],
              "member_selection": selection, "etcd_version": member.get("version"),
              "manifest": os.path.join(dest_dir, etcd_cli.MANIFEST_NAME)}
    before = recorded(dest_dir)
    if os.path.exists(path):
        module.fail_json(msg="%s exists already; nothing is overwritten (run again in a second)" % path, **result)
    if module.check_mode:
        if os.path.isdir(dest_dir):
            result["pruned"], result["prune_skipped"] = etcd_cli.record_and_prune(
                dest_dir, {"name": name, "size": 0}, params["prefix"], params["retention"], dry_run=True)
        result["diff"] = {"before": "\n".join(before) + "\n",
                          "after": "\n".join(sorted(set(before + [name]) - set(os.path.basename(p) for p in result["pruned"])))
                          + "\n"}
        result["msg"] = "would save a snapshot of %s (member %s, revision %d) to %s: %s" % (
            source, member["member_id"], member["revision"], path, selection["reason"])
        module.exit_json(**result)

    try:
        private_files.ensure_private_dir(dest_dir)
    except private_files.PrivateFileError as exc:
        module.fail_json(msg=str(exc), **result)
    partial = os.path.join(dest_dir, ".%s.partial" % name)
    for stale in (partial, partial + ".part"):
        if os.path.exists(stale):
            os.unlink(stale)
    old_umask = os.umask(0o077)
    try:
        cli.snapshot_save(source, partial, tls["cacert"], tls["cert"], tls["key"], params["timeout"],
                          command_timeout=params["save_timeout"], deadline=params["save_timeout"] + SAVE_GRACE)
    except etcd_cli.EtcdCliError as exc:
        for stale in (partial, partial + ".part"):
            if os.path.exists(stale):
                os.unlink(stale)
        module.fail_json(msg="snapshot of %s failed: %s" % (source, exc), **result)
    finally:
        os.umask(old_umask)
    os.chmod(partial, 0o600)
    try:
        digest, status, argv = verify_file(cli, partial, timeout=params["save_timeout"])
    except etcd_cli.EtcdCliError as exc:
        corrupt = path + ".corrupt"
        os.rename(partial, corrupt)
        result["path"] = corrupt
        module.fail_json(msg="the new snapshot failed verification and was kept as %s: %s" % (corrupt, exc), **result)
    if status["revision"] < member["revision"]:
        # snapshot status reports the newest revision still in the key bucket: 0 for an empty store,
        # lower than the store's revision when the newest writes were deletions compacted away.
        module.warn("snapshot %s has revision %d, below the member's revision %d before the save (empty store, "
                    "or the newest writes were compacted deletions)" % (path, status["revision"], member["revision"]))
    argv = [a if a != partial else path for a in argv]
    try:
        tool_versions = {"etcdctl": cli.tool_version(tool="etcdctl")[1]}
        if cli.etcdutl:
            tool_versions["etcdutl"] = cli.tool_version()[1]
    except etcd_cli.EtcdCliError:
        tool_versions = {}
    compact = dict(selection, members=[dict((k, v) for k, v in row.items() if k != "client_urls")
                                       for row in selection["members"]])
    entry = artifact(path, digest, source, argv)
    entry.update(member_id=member["member_id"], member_name=selection["chosen"]["name"],
                 etcd_version=member.get("version"), member_selection=compact)
    metadata = {"kind": "gpufleet.dra_gate/etcd-snapshot", "name": name, "sha256": digest["sha256"],
                "size": digest["size"], "taken_at": iso(started), "endpoint": source,
                "member_id": member["member_id"], "member_name": selection["chosen"]["name"],
                "etcd_version": member.get("version"), "etcd_major_minor": etcd_cli.major_minor(member.get("version")),
                "tool_versions": tool_versions, "revision_at_save": member["revision"], "status": status,
                "member_selection": compact, "verify": entry["verify"]}
    try:
        private_files.write_private(etcd_cli.metadata_path(path), json.dumps(metadata, indent=2, sort_keys=True) + "\n",
                                    replace=True)
        private_files.fsync_dir(dest_dir)
        os.rename(partial, path)
        private_files.fsync_dir(dest_dir)
    except (private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="cannot give the snapshot its name %s: %s" % (path, exc), **result)
    result.update(sha256=digest["sha256"], size=digest["size"], status=status, tool=cli.offline_tool[0],
                  artifact=entry, metadata=etcd_cli.metadata_path(path))
    check_age(module, path, started, max_age, utcnow(), result)
    try:
        pruned, skipped = etcd_cli.record_and_prune(
            dest_dir, etcd_cli.manifest_entry(path, digest, iso(started), status["revision"], member["member_id"]),
            params["prefix"], params["retention"])
    except (etcd_cli.EtcdCliError, private_files.PrivateFileError, OSError) as exc:
        module.fail_json(msg="snapshot %s saved and verified, but the manifest or retention failed: %s" % (path, exc),
                         **result)
    result["pruned"], result["prune_skipped"] = pruned, skipped
    result["diff"] = {"before": "\n".join(before) + "\n", "after": "\n".join(recorded(dest_dir)) + "\n"}
    result["msg"] = "saved and verified %s from member %s (%s): revision %d, %d keys, %d bytes; %s" % (
        path, selection["chosen"]["name"] or member["member_id"], source, status["revision"], status["totalKey"],
        digest["size"], selection["reason"])
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "present", ("endpoint", "dest_dir")), ("state", "verify", ("path",)),
                     ("state", "copy", ("path", "dest", "sha256"))],
        supports_check_mode=True,
    )
    scrub_environment()
    try:
        max_age = etcd_cli.parse_duration(module.params["max_age"])
    except ValueError as exc:
        module.fail_json(msg="max_age: %s" % exc)
    if module.params["state"] == "copy":
        run_copy(module)
    cli = make_cli(module)
    if module.params["state"] == "verify":
        run_verify(module, cli, max_age)
    else:
        run_present(module, cli, max_age)


if __name__ == "__main__":
    main()
