#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: etcd_snapshot
short_description: Take a verified etcd snapshot from one live member, or re-verify a snapshot file
version_added: 0.2.0
description:
  - With O(state=present), reads the member's ID and revision with C(etcdctl endpoint status -w json),
    saves a snapshot from exactly one live member with C(etcdctl snapshot save) into O(dest_dir) as
    C(<prefix>-<UTC timestamp>-rev<revision>.db), mode 0600, and verifies it before it gets its
    final name. Older snapshots of the same prefix are pruned to O(retention) only after the new one
    verified.
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
      - C(present) takes a new snapshot; C(verify) re-verifies O(path).
    type: str
    choices: [present, verify]
    default: present
  endpoint:
    description:
      - The one etcd client URL to take the snapshot from (for example C(https://127.0.0.1:2379)).
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
    description: The snapshot file to verify. Required with O(state=verify).
    type: path
  sha256:
    description: Expected sha256 of O(path) (hex). When given with O(state=verify), a different file fails.
    type: str
  etcdctl:
    description: Path of C(etcdctl); default is the one on C(PATH).
    type: path
  etcdutl:
    description:
      - Path of C(etcdutl); default is the one on C(PATH). Without etcdutl, C(etcdctl) verifies
        (etcdctl 3.6+ has no C(snapshot status), so etcdutl is needed there).
    type: path
  timeout:
    description: Dial and command timeout in seconds for C(endpoint status), and the dial timeout of C(snapshot save).
    type: int
    default: 10
attributes:
  check_mode:
    support: full
    description: >-
      Reads the member's status and returns the path it would write (and, with O(state=verify),
      verifies as usual); writes, renames and removes nothing.
  diff_mode:
    support: none
    description: Returns no diff.
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
  description: The parsed C(endpoint status) (member, cluster and leader IDs, revision, raft term, version, db size).
  returned: state=present
  type: dict
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
  description: Snapshots removed by O(retention) (in check mode, those that would be removed).
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
    verify:
      description: The command that re-checks the snapshot's contents, for humans (never run through a shell).
      type: str
"""

import datetime
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils import etcd_cli

KUBEADM_TLS = {
    "cacert": "/etc/kubernetes/pki/etcd/ca.crt",
    "cert": "/etc/kubernetes/pki/etcd/server.crt",
    "key": "/etc/kubernetes/pki/etcd/server.key",
}


def argument_spec():
    return dict(
        state=dict(type="str", choices=["present", "verify"], default="present"),
        endpoint=dict(type="raw"),
        cacert=dict(type="path"),
        cert=dict(type="path"),
        key=dict(type="path", no_log=False),
        dest_dir=dict(type="path"),
        prefix=dict(type="str", default="etcd-snapshot"),
        retention=dict(type="int", default=0),
        max_age=dict(type="str", default="0"),
        path=dict(type="path"),
        sha256=dict(type="str"),
        etcdctl=dict(type="path"),
        etcdutl=dict(type="path"),
        timeout=dict(type="int", default=10),
    )


def utcnow():
    return datetime.datetime.now(datetime.timezone.utc).replace(microsecond=0)


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

    def run(argv, environ):
        return module.run_command(argv, environ_update=environ)

    return etcd_cli.EtcdCli(run, etcdctl=etcdctl, etcdutl=etcdutl)


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


def verify_file(cli, path, expected_sha256=None):
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
        status, argv = cli.snapshot_status(path)
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
        digest, status, argv = verify_file(cli, path, module.params["sha256"])
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg=str(exc), **result)
    result.update(sha256=digest["sha256"], size=digest["size"], status=status, tool=cli.offline_tool[0],
                  artifact=artifact(path, digest, path, argv))
    check_age(module, path, file_time(path), max_age, utcnow(), result)
    result["msg"] = "snapshot %s verified: revision %d, %d keys" % (path, status["revision"], status["totalKey"])
    module.exit_json(**result)


def prune(dest_dir, prefix, keep, new_name):
    names = [n for n in os.listdir(dest_dir) if os.path.isfile(os.path.join(dest_dir, n))]
    if new_name not in names:  # check mode: count the snapshot that would be written
        names.append(new_name)
    return [os.path.join(dest_dir, n) for n in etcd_cli.prune_candidates(names, prefix, keep, protect=[new_name])]


def run_present(module, cli, max_age):
    params = module.params
    try:
        endpoint = etcd_cli.check_single_endpoint(params["endpoint"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    try:
        etcd_cli.check_prefix(params["prefix"])
    except ValueError as exc:
        module.fail_json(msg=str(exc))
    if params["retention"] < 0:
        module.fail_json(msg="retention must be >= 0, got %d" % params["retention"])
    dest_dir = params["dest_dir"]
    tls = tls_files(module, endpoint)
    started = utcnow()
    try:
        member = cli.endpoint_status(endpoint, tls["cacert"], tls["cert"], tls["key"], params["timeout"])
    except etcd_cli.EtcdCliError as exc:
        module.fail_json(msg="cannot read the status of %s: %s" % (endpoint, exc))
    name = etcd_cli.snapshot_filename(params["prefix"], started, member["revision"])
    path = os.path.join(dest_dir, name)
    result = {"changed": True, "path": path, "member_id": member["member_id"],
              "revision_at_save": member["revision"], "endpoint_status": member, "pruned": []}
    if os.path.exists(path):
        module.fail_json(msg="%s exists already; nothing is overwritten (run again in a second)" % path, **result)
    if module.check_mode:
        if os.path.isdir(dest_dir):
            result["pruned"] = prune(dest_dir, params["prefix"], params["retention"], name)
        result["msg"] = "would save a snapshot of %s (member %s, revision %d) to %s" % (
            endpoint, member["member_id"], member["revision"], path)
        module.exit_json(**result)

    if not os.path.isdir(dest_dir):
        os.makedirs(dest_dir, 0o700)
        os.chmod(dest_dir, 0o700)
    partial = os.path.join(dest_dir, ".%s.partial" % name)
    for stale in (partial, partial + ".part"):
        if os.path.exists(stale):
            os.unlink(stale)
    old_umask = os.umask(0o077)
    try:
        cli.snapshot_save(endpoint, partial, tls["cacert"], tls["cert"], tls["key"], params["timeout"])
    except etcd_cli.EtcdCliError as exc:
        for stale in (partial, partial + ".part"):
            if os.path.exists(stale):
                os.unlink(stale)
        module.fail_json(msg="snapshot of %s failed: %s" % (endpoint, exc), **result)
    finally:
        os.umask(old_umask)
    os.chmod(partial, 0o600)
    try:
        digest, status, argv = verify_file(cli, partial)
    except etcd_cli.EtcdCliError as exc:
        corrupt = path + ".corrupt"
        os.rename(partial, corrupt)
        result["path"] = corrupt
        module.fail_json(msg="the new snapshot failed verification and was kept as %s: %s" % (corrupt, exc), **result)
    os.rename(partial, path)
    if status["revision"] < member["revision"]:
        # snapshot status reports the newest revision still in the key bucket: 0 for an empty store,
        # lower than the store's revision when the newest writes were deletions compacted away.
        module.warn("snapshot %s has revision %d, below the member's revision %d before the save (empty store, "
                    "or the newest writes were compacted deletions)" % (path, status["revision"], member["revision"]))
    argv = [a if a != partial else path for a in argv]
    result.update(sha256=digest["sha256"], size=digest["size"], status=status, tool=cli.offline_tool[0],
                  artifact=artifact(path, digest, endpoint, argv))
    check_age(module, path, started, max_age, utcnow(), result)
    pruned = prune(dest_dir, params["prefix"], params["retention"], name)
    for old in pruned:
        os.unlink(old)
    result["pruned"] = pruned
    result["msg"] = "saved and verified %s from member %s: revision %d, %d keys, %d bytes" % (
        path, member["member_id"], status["revision"], status["totalKey"], digest["size"])
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=argument_spec(),
        required_if=[("state", "present", ("endpoint", "dest_dir")), ("state", "verify", ("path",))],
        supports_check_mode=True,
    )
    scrub_environment()
    try:
        max_age = etcd_cli.parse_duration(module.params["max_age"])
    except ValueError as exc:
        module.fail_json(msg="max_age: %s" % exc)
    cli = make_cli(module)
    if module.params["state"] == "verify":
        run_verify(module, cli, max_age)
    else:
        run_present(module, cli, max_age)


if __name__ == "__main__":
    main()
