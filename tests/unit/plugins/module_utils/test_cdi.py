# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for CDI spec parsing and validation."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.cdi import (
    DEFAULT_SPEC_DIRS,
    KNOWN_CDI_VERSIONS,
    is_cdi_spec_filename,
    minimum_required_version,
    parse_cdi_spec,
    validate_kind,
)

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cdi")


def _parse(name):
    path = os.path.join(FIXTURES, name)
    with open(path, "r", encoding="utf-8") as handle:
        return parse_cdi_spec(handle.read(), path)


def test_constants():
    assert KNOWN_CDI_VERSIONS[0] == "0.1.0"
    assert "0.8.0" in KNOWN_CDI_VERSIONS and "1.0.0" in KNOWN_CDI_VERSIONS
    assert KNOWN_CDI_VERSIONS[-1] == "1.1.0"
    assert len(KNOWN_CDI_VERSIONS) == 10
    assert DEFAULT_SPEC_DIRS == ["/etc/cdi", "/var/run/cdi"]


def test_nvidia_ctk_spec():
    res = _parse("nvidia-ctk-0.5.0.yaml")
    assert res["error"] is None
    assert res["cdi_version"] == "0.5.0"
    assert res["kind"] == "nvidia.com/gpu"
    assert res["devices"] == ["0", "GPU-520e01f2-cf30-6396-abef-e8e9a5233b0e", "all"]
    assert res["path"].endswith("nvidia-ctk-0.5.0.yaml")
    assert sorted(res) == ["cdi_version", "devices", "error", "kind", "path"]


def test_mig_spec():
    res = _parse("nvidia-ctk-mig.yaml")
    assert res["error"] is None
    assert res["kind"] == "nvidia.com/mig"
    assert res["devices"][:2] == ["0:0", "0:1"]
    assert "all" in res["devices"]


@pytest.mark.parametrize("name,version", [
    ("minimal.json", "0.3.0"), ("spec-example.json", "0.6.0"), ("spec-example.yaml", "0.6.0"),
])
def test_schema_testdata(name, version):
    res = _parse(name)
    assert res == {"path": os.path.join(FIXTURES, name), "cdi_version": version,
                   "kind": "vendor.com/device", "devices": ["myDevice"], "error": None}


def test_invalid_yaml():
    res = _parse("broken/invalid-yaml.yaml.broken")
    assert res["error"].startswith("invalid YAML/JSON: ")
    assert "line 6" in res["error"]  # PyYAML's mark (1-based) of the bad line
    assert res["cdi_version"] is None and res["devices"] == []


def test_invalid_json():
    res = _parse("broken/invalid.json")
    assert res["error"].startswith("invalid YAML/JSON")


def test_unknown_version():
    res = _parse("broken/unknown-version.yaml")
    assert res["cdi_version"] == "9.9.9"
    assert res["kind"] == "nvidia.com/gpu"
    assert res["devices"] == ["0"]
    assert "unknown cdiVersion '9.9.9'" in res["error"]


def test_missing_kind():
    res = _parse("broken/missing-kind.yaml")
    assert res["kind"] is None
    assert res["cdi_version"] == "0.5.0"
    assert res["devices"] == ["0"]
    assert res["error"] == "missing kind"


def test_devices_not_list():
    res = _parse("broken/devices-not-list.yaml")
    assert res["devices"] == []
    assert "devices is not a list" in res["error"]


SPEC = 'cdiVersion: "%s"\nkind: %s\ndevices:\n%s'
DEV = "- name: %s\n  containerEdits:\n    deviceNodes:\n    - path: /dev/x\n"


@pytest.mark.parametrize("text,fragment", [
    ("", "empty spec"),
    ("- a\n", "not a mapping"),
    ("kind: a.com/b\ndevices:\n- name: x\n", "missing cdiVersion"),
    ("cdiVersion: 0.5\nkind: a.com/b\ndevices:\n- name: x\n", "must be a string"),
    (SPEC % ("0.5.0", "nvidia.com", DEV % "x"), "vendor/class"),
    (SPEC % ("0.5.0", "nvidia.com/gpu/x", DEV % "x"), "invalid character '/'"),
    (SPEC % ("0.5.0", "1vendor.com/gpu", DEV % "x"), "should start with a letter"),
    (SPEC % ("0.5.0", "nvidia.com/" + "g" * 64, DEV % "x"), "longer than 63"),
    (SPEC % ("0.5.0", "nvidia.com/gpu-", DEV % "x"), "should end with a letter or digit"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\n", "missing devices"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices: []\n", "no devices"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- containerEdits: {}\n", "has no name"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: x\n- name: x\n", "multiple devices"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: 'a b'\n", "invalid character"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: x\nextra: 1\n", "unknown top-level"),
    ("cdiVersion: 0.5.0\nkind: a.com/b\ndevices:\n- name: x\n  foo: 1\n", "unknown field"),
    ("cdiVersion: 0.3.0\nkind: a.com/b\ndevices:\n- name: '0'\n", "needs at least 0.5.0"),
    ("cdiVersion: 0.5.0\nkind: a.com/b.c\ndevices:\n- name: x\n", "needs at least 0.6.0"),
])
def test_errors(text, fragment):
    res = parse_cdi_spec(text, "/etc/cdi/x.yaml")
    assert res["error"] is not None
    assert fragment in res["error"]


def test_v_prefixed_version_accepted():
    res = parse_cdi_spec("cdiVersion: v0.6.0\nkind: a.com/b\ndevices:\n- name: x\n", "p")
    assert res["error"] is None and res["cdi_version"] == "v0.6.0"


def test_1_1_0_net_devices():
    text = ('{"cdiVersion": "1.1.0", "kind": "a.com/nic", "devices": [{"name": "n0", '
            '"containerEdits": {"netDevices": [{"hostInterfaceName": "eth1", "name": "net1"}]}}]}')
    assert parse_cdi_spec(text, "p")["error"] is None
    assert minimum_required_version(__import__("json").loads(text))[0] == "1.1.0"


def test_validate_kind():
    assert validate_kind("nvidia.com/gpu") is None
    assert validate_kind("foo.bar.baz/foo-bar123.B_az") is None
    assert validate_kind("foo") is not None
    assert validate_kind("vendor.com/foo/") is not None
    assert validate_kind(5) is not None


@pytest.mark.parametrize("name,default,strict", [
    ("nvidia.yaml", True, True), ("/etc/cdi/nvidia.json", True, True), ("nvidia.yml", True, False),
    ("nvidia.yaml.bak", False, False), ("README.md", False, False), (".yaml", False, False),
    ("NVIDIA.YAML", False, False),
])
def test_is_cdi_spec_filename(name, default, strict):
    assert is_cdi_spec_filename(name) is default
    assert is_cdi_spec_filename(name, loaded_by_cdi_only=True) is strict


def test_node_side_import_does_not_import_yaml():
    """The node module imports cdi for the file-name checks only: PyYAML (about 60 ms to import, absent
    on most nodes) is imported only when a spec is parsed, on the controller."""
    import subprocess
    import sys
    code = ("import sys; from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import cdi, gpu_node; "
            "print('yaml' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, universal_newlines=True, check=True,
                         env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    assert out.stdout.strip() == "False"


def test_controller_default_dirs_are_the_cdi_defaults():
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node.config import DEFAULT_SPEC_DIRS as CONTROLLER
    assert list(CONTROLLER) == DEFAULT_SPEC_DIRS
