# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for containerd version/config parsing, with real Debian 12 containerd 1.6.20 outputs."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import builtins
import os
import shutil
import subprocess

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as ctd
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.containerd import (
    CONTAINERD_VERSION_ARGV,
    analyse_config,
    load_toml,
    merge_configs,
    parse_containerd_version,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "containerd")


def _read(name):
    with open(os.path.join(FIXTURES, name), "r", encoding="utf-8") as handle:
        return handle.read()


def _toml(name):
    data, err = load_toml(_read(name))
    assert err is None, err
    return data


def test_argv():
    assert CONTAINERD_VERSION_ARGV == ["containerd", "--version"]


@pytest.mark.parametrize("stdout,expected", [
    ("containerd github.com/containerd/containerd/v2 v2.3.1 abcdef0\n", "2.3.1"),
    ("containerd github.com/containerd/containerd v1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", "1.7.27"),
    ("containerd github.com/containerd/containerd 1.6.20~ds1 1.6.20~ds1-1+b1\n", "1.6.20~ds1"),
    ("containerd containerd.io 1.7.27 05044ec0a9a75232cad458027ca83437aae3f4da\n", "1.7.27"),
    ("containerd github.com/containerd/containerd 1.6.36-0ubuntu1~22.04.1\n", "1.6.36-0ubuntu1~22.04.1"),
    ("containerd github.com/containerd/containerd/v2 v2.3.0-rc.1 0123abc\n", "2.3.0-rc.1"),
    ("", None),
    (None, None),
    ("bash: containerd: command not found\n", None),
    ("containerd\n", None),
    ("garbage garbage garbage garbage\n", None),
    (b"containerd github.com/containerd/containerd/v2 v2.1.4 75cb2b7\n", "2.1.4"),
])
def test_parse_version(stdout, expected):
    assert parse_containerd_version(stdout) == expected


def test_parse_version_real_debian_fixture():
    assert parse_containerd_version(_read("debian12-1.6.20-version.txt")) == "1.6.20~ds1"


def test_load_toml_syntax_error():
    data, err = load_toml(_read("broken-syntax.toml"))
    assert data is None
    assert err.startswith("TOML syntax error: ")
    assert "line 6" in err


def test_load_toml_without_parser(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name in ("tomllib", "tomli"):
            raise ImportError(name)
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    assert load_toml("version = 2\n") == (None, "no TOML parser on this Python (tomllib needs 3.11; install tomli)")


def test_module_does_not_import_toml_at_import_time():
    with open(ctd.__file__, "r", encoding="utf-8") as handle:
        source = handle.read()
    top = [line for line in source.splitlines() if line.startswith(("import ", "from "))]
    assert not [line for line in top if "toml" in line]


def test_real_debian_1_6_default_config():
    cfg = _toml("debian12-1.6.20-config-default.toml")
    res = analyse_config(cfg, "1.6.20~ds1")
    assert res["config_version"] == 2
    assert res["cdi_enabled"] is False
    assert res["cdi_enabled_source"] == "unsupported"
    assert res["cdi_spec_dirs"] == []
    assert res["nvidia_runtime"] is False and res["nvidia_runtime_names"] == []
    assert res["default_runtime_name"] == "runc"
    assert res["imports"] == []
    # Same file, binary version unknown: containerd 1.7 default for a v2 config.
    res = analyse_config(cfg)
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (False, "default")
    assert res["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert any("version unknown" in n for n in res["notes"])
    # containerd 2.x migrates a v2 config and defaults enable_cdi to true.
    res = analyse_config(cfg, "2.3.1")
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (True, "default")


def test_real_debian_etc_config():
    res = analyse_config(_toml("debian12-1.6.20-etc-config.toml"), "1.6.20~ds1")
    assert res["config_version"] == 2 and res["cdi_enabled_source"] == "unsupported"


def test_1_7_v2_nvidia_cdi():
    cfg = _toml("containerd-1.7-v2-nvidia-cdi.toml")
    res = analyse_config(cfg, "1.7.27")
    assert res["config_version"] == 2
    assert res["cri_table"] == 'plugins."io.containerd.grpc.v1.cri"'
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (True, "config")
    assert res["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]
    assert res["nvidia_runtime"] is True
    assert res["nvidia_runtime_names"] == ["nvidia"]
    assert res["default_runtime_name"] == "nvidia"
    # The same file on containerd 1.6: CDI keys are ignored there.
    res = analyse_config(cfg, "1.6.20~ds1")
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (False, "unsupported")
    assert res["nvidia_runtime"] is True


def test_2x_v3_with_dropin():
    base = _toml("containerd-2.x-v3-imports.toml")
    res = analyse_config(base, "2.3.1")
    assert res["config_version"] == 3
    assert res["cri_table"] == 'plugins."io.containerd.cri.v1.runtime"'
    assert res["imports"] == ["conf.d/v3-*.toml"]
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (True, "config")
    assert res["nvidia_runtime"] is False
    merged = merge_configs(base, _toml("conf.d/v3-99-nvidia.toml"), "2.3.1")
    res = analyse_config(merged, "2.3.1")
    assert res["nvidia_runtime_names"] == ["nvidia"]
    assert res["default_runtime_name"] == "nvidia"
    # deep merge (containerd 2.x): base settings survive
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (True, "config")
    runtimes = merged["plugins"]["io.containerd.cri.v1.runtime"]["containerd"]["runtimes"]
    assert sorted(runtimes) == ["nvidia", "runc"]
    # config v3 on containerd 1.7: not loadable
    res = analyse_config(base, "1.7.27")
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (None, "unknown")


def test_v3_cdi_implicit_default():
    cfg = _toml("containerd-2.x-v3-cdi-implicit.toml")
    for version in ("2.0.5", None):
        res = analyse_config(cfg, version)
        assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (True, "default")
        assert res["cdi_spec_dirs"] == ["/etc/cdi", "/var/run/cdi"]


def test_v1_no_version():
    cfg = _toml("containerd-v1-no-version.toml")
    res = analyse_config(cfg, "1.7.27")
    assert res["config_version"] == 1
    assert res["cri_table"] == 'plugins."cri"'
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (False, "default")
    res = analyse_config(cfg, "2.3.1")
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (None, "unknown")


def test_explicit_disable_and_dirs():
    cfg = {"version": 3, "plugins": {"io.containerd.cri.v1.runtime": {
        "enable_cdi": False, "cdi_spec_dirs": ["/opt/cdi"],
        "containerd": {"runtimes": {"custom": {"options": {"BinaryName": "/usr/local/nvidia/toolkit/nvidia-container-runtime"}}}}}}}
    res = analyse_config(cfg, "2.3.1")
    assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (False, "config")
    assert res["cdi_spec_dirs"] == ["/opt/cdi"]
    assert res["nvidia_runtime_names"] == ["custom"]


def test_analyse_garbage():
    res = analyse_config(None)
    assert res["config_version"] == 1 and res["nvidia_runtime"] is False
    res = analyse_config({"version": "two"})
    assert res["config_version"] is None and res["cdi_enabled"] is None


def test_merge_1x_replaces_plugin_tables_like_real_containerd_1_6():
    base = _toml("v2-importer-main.toml")
    dropin = _toml("conf.d/v2-10-nvidia.toml")
    merged = merge_configs(base, dropin, "1.6.20~ds1")
    cri = merged["plugins"]["io.containerd.grpc.v1.cri"]
    assert "sandbox_image" not in cri
    assert sorted(cri["containerd"]["runtimes"]) == ["nvidia"]
    # The real 1.6.20 `config dump` of the same two files agrees.
    dumped = _toml("debian12-1.6.20-config-dump-merged.toml")
    dcri = dumped["plugins"]["io.containerd.grpc.v1.cri"]
    assert sorted(dcri["containerd"]["runtimes"]) == ["nvidia"]
    assert dcri["sandbox_image"] == "registry.k8s.io/pause:3.6"  # the built-in default, not "base-sandbox"
    assert dcri["containerd"]["default_runtime_name"] == "nvidia"
    res = analyse_config(dumped, "1.6.20~ds1")
    assert res["nvidia_runtime_names"] == ["nvidia"]
    assert res["imports"] == ["v2-importer-main.toml", "conf.d/v2-10-nvidia.toml"]


def test_merge_generic():
    base = {"version": 2, "imports": ["a"], "plugins": {"p": {"x": 1, "t": {"y": 2}}}, "grpc": {"a": 1}}
    dropin = {"imports": ["a", "b"], "plugins": {"p": {"t": {"z": 3}}, "q": {"k": 1}}, "grpc": {"b": 2}}
    merged = merge_configs(base, dropin)
    assert merged == {"version": 2, "imports": ["a", "b"], "plugins": {"p": {"x": 1, "t": {"y": 2, "z": 3}}, "q": {"k": 1}},
                      "grpc": {"a": 1, "b": 2}}
    assert base["plugins"]["p"]["t"] == {"y": 2}  # inputs untouched
    assert merge_configs(base, dropin, "1.7.27")["plugins"]["p"] == {"t": {"z": 3}}


def _run(argv):
    binary = shutil.which(argv[0])
    if binary is None:
        pytest.skip("containerd binary not installed here (apt-get install containerd to run this)")
    return subprocess.run([binary] + argv[1:], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          universal_newlines=True, timeout=60, check=True).stdout


def test_real_binary_version():
    out = _run(CONTAINERD_VERSION_ARGV)
    version = parse_containerd_version(out)
    assert version is not None
    assert ctd.version_tuple(version) is not None


def test_real_binary_config_default():
    version = parse_containerd_version(_run(CONTAINERD_VERSION_ARGV))
    cfg, err = load_toml(_run(ctd.CONTAINERD_CONFIG_DEFAULT_ARGV))
    assert err is None
    res = analyse_config(cfg, version)
    major_minor = ctd.version_tuple(version)
    assert res["config_version"] == (3 if major_minor[0] >= 2 else 2)
    if major_minor < (1, 7):
        assert (res["cdi_enabled"], res["cdi_enabled_source"]) == (False, "unsupported")
    else:
        assert res["cdi_enabled"] is (major_minor[0] >= 2)
    assert res["nvidia_runtime"] is False
