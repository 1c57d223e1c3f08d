# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""containerd_cdi: the CDI change per containerd version on fixtures (tests/fixtures/containerd/),
the canonical dump reader, and the module run on recorded trees (check mode, write, backup, rerun)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import difflib
import json
import os
import shutil
import stat
import subprocess
import sys
import tomllib

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd as ctd
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.node import containerd_cdi as cdi

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(REPO, "tests", "fixtures", "containerd")
DIRS = ["/etc/cdi", "/var/run/cdi"]
SECRETS = ("S3cr3t-PASSWORD-do-not-print", "cm9ib3QkZmxlZXQ6UzNjcjN0LVBBU1NXT1JELWRvLW5vdC1wcmludA==",
           "IDTOKEN-do-not-print", "robot$fleet")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


def imports_of(path, text, root="/"):
    return [(node, open(real).read()) for node, real in cdi.expand_imports(cdi.import_patterns(text), path, root)]


def compute(name, version):
    path = os.path.join(FIXTURES, name)
    text = fixture(name)
    imports = imports_of(path, text)
    return path, text, imports, cdi.compute(version, path, text, imports, DIRS)


def changed_lines(before, after):
    """(removed, added) lines of a diff."""
    diff = list(difflib.ndiff(before.splitlines(True), after.splitlines(True)))
    return [d[2:] for d in diff if d.startswith("- ")], [d[2:] for d in diff if d.startswith("+ ")]


@pytest.mark.parametrize("version", ["1.6.20~ds1", "1.6.36-0ubuntu1~22.04.1", "1.5.13"])
def test_containerd_16_is_refused_naming_the_version(version):
    with pytest.raises(cdi.CdiError, match="containerd %s has no CDI support" % version.replace("+", r"\+")):
        compute("debian12-1.6.20-etc-config.toml", version)


def test_unknown_version_is_refused():
    with pytest.raises(cdi.CdiError, match="not understood"):
        cdi.compute("garbage", "/etc/containerd/config.toml", "version = 2\n", [], DIRS)


def test_17_real_v2_file_edited_in_place_keeping_every_other_byte():
    path, text, imports, change = compute("debian12-1.6.20-config-default.toml", "1.7.27")
    assert change["method"] == "edit" and change["target"] == path and change["config_version"] == 2
    removed, added = changed_lines(text, change["after"])
    assert removed == []
    assert added == ['    enable_cdi = true\n', '    cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n']
    parsed = tomllib.loads(change["after"])
    cri = parsed["plugins"][ctd.CRI_TABLE_V2]
    assert cri["enable_cdi"] is True and cri["cdi_spec_dirs"] == DIRS
    assert tomllib.loads(text)["plugins"][ctd.CRI_TABLE_V2]["containerd"] == cri["containerd"]


def test_17_with_nvidia_and_credentials_never_prints_them():
    path, text, imports, change = compute("containerd-1.7-v2-registry-auth.toml", "1.7.27")
    assert change["method"] == "edit" and change["target"] == path
    removed, added = changed_lines(text, change["after"])
    assert removed == [] and len(added) == 2
    nvidia = [line for line in text.splitlines() if "nvidia" in line]
    assert nvidia == [line for line in change["after"].splitlines() if "nvidia" in line]
    redacted = cdi.redact_text(change["after"])
    for secret in SECRETS:
        assert secret in change["after"] and secret not in redacted
    assert 'password = "<redacted>"' in redacted and tomllib.loads(redacted)
    analysed = ctd.analyse_config(tomllib.loads(change["after"]), "1.7.27")
    assert analysed["cdi_enabled"] is True and analysed["nvidia_runtime_names"] == ["nvidia"]


def test_credentials_not_in_a_refusal_message():
    text = fixture("containerd-1.7-v2-registry-auth.toml").replace('identitytoken = "IDTOKEN-do-not-print"',
                                                                   'identitytoken = "IDTOKEN-do-not-print" = broken')
    with pytest.raises(cdi.CdiError) as info:
        cdi.compute("1.7.27", "/etc/containerd/config.toml", text, [], DIRS)
    assert "TOML syntax error" in str(info.value)
    assert not any(secret in str(info.value) for secret in SECRETS)


def test_17_already_right_is_no_change():
    assert compute("containerd-1.7-v2-nvidia-cdi.toml", "1.7.27")[3]["method"] == "none"


def test_17_edits_the_import_that_carries_the_cri_table():
    path, text, imports, change = compute("containerd-1.7-v2-imports-main.toml", "1.7.27")
    dropin = os.path.join(FIXTURES, "conf.d", "v2cri-10-cri.toml")
    assert change["method"] == "edit" and change["target"] == dropin and "carries the effective CRI table" in change["reason"]
    removed, added = changed_lines(dict(imports)[dropin], change["after"])
    assert removed == ["  enable_cdi = false\n"]
    assert sorted(added) == ['  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n', "  enable_cdi = true\n"]
    merged = cdi.merged_config("1.7.27", text, [(dropin, change["after"])])
    cri = merged["plugins"][ctd.CRI_TABLE_V2]
    assert cri["enable_cdi"] is True and cri["sandbox_image"] == "registry.k8s.io/pause:3.9" and "nvidia" in cri["containerd"]["runtimes"]


def test_17_importer_with_runtime_only_dropin_edits_that_dropin():
    # containerd 1.x: the nvidia drop-in replaces the CRI table (recorded with the real 1.6 binary)
    path, text, imports, change = compute("v2-importer-main.toml", "1.7.27")
    assert change["target"].endswith("conf.d/v2-10-nvidia.toml") and change["method"] == "edit"
    assert change["after"].startswith(dict(imports)[change["target"]])


def test_2x_edits_in_place_without_imports():
    path, text, imports, change = compute("containerd-2.x-v3-nvidia-no-imports.toml", "2.1.4")
    assert change["method"] == "edit" and change["config_version"] == 3 and change["cri_table"] == ctd.CRI_TABLE_V3
    removed, added = changed_lines(text, change["after"])
    assert removed == ["  enable_cdi = false\n", "  cdi_spec_dirs = [\n", "    '/etc/cdi',\n", "  ]\n"]
    assert added == ["  enable_cdi = true\n", '  cdi_spec_dirs = ["/etc/cdi", "/var/run/cdi"]\n']
    assert ctd.analyse_config(tomllib.loads(change["after"]), "2.1.4")["nvidia_runtime_names"] == ["nvidia"]


def tree(tmp_path, main, dropins=()):
    root = tmp_path / "node"
    (root / "etc/containerd/conf.d").mkdir(parents=True)
    shutil.copy(os.path.join(FIXTURES, main), str(root / "etc/containerd/config.toml"))
    for name, text in dropins:
        (root / "etc/containerd/conf.d" / name).write_text(text)
    return str(root)


def test_2x_dropin_under_the_imports_glob_then_idempotent(tmp_path):
    root = tree(tmp_path, "containerd-2.x-v3-dropin-main.toml")
    config = "/etc/containerd/config.toml"
    text = open(os.path.join(root, config.lstrip("/"))).read()
    change = cdi.compute("2.1.4", config, text, imports_of(config, text, root), DIRS)
    assert change["method"] == "dropin" and change["target"] == "/etc/containerd/conf.d/99-gpufleet-cdi.toml"
    assert change["before"] is None
    dropin = tomllib.loads(change["after"])
    assert dropin == {"version": 3, "plugins": {ctd.CRI_TABLE_V3: {"enable_cdi": True, "cdi_spec_dirs": DIRS}}}
    with open(os.path.join(root, change["target"].lstrip("/")), "w") as handle:
        handle.write(change["after"])
    imports = imports_of(config, text, root)
    merged = cdi.merged_config("2.1.4", text, imports)
    assert merged["plugins"][ctd.CRI_TABLE_V3]["enable_cdi"] is True
    assert "nvidia" in merged["plugins"][ctd.CRI_TABLE_V3]["containerd"]["runtimes"]
    assert cdi.compute("2.1.4", config, text, imports, DIRS)["method"] == "none"


def test_2x_refused_when_a_later_import_switches_cdi_off(tmp_path):
    override = "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n"
    root = tree(tmp_path, "containerd-2.x-v3-dropin-main.toml", [("zz-override.toml", override)])
    config = "/etc/containerd/config.toml"
    text = open(os.path.join(root, config.lstrip("/"))).read()
    with pytest.raises(cdi.CdiError, match="another file overrides"):
        cdi.compute("2.1.4", config, text, imports_of(config, text, root), DIRS)


def test_2x_relative_glob_names_the_dropin_after_the_pattern():
    path, text, imports, change = compute("containerd-2.x-v3-imports.toml", "2.1.4")
    assert change["method"] == "none"  # already on with the default dirs
    assert cdi.dropin_name("/etc/containerd/conf.d/v3-*.toml") == "/etc/containerd/conf.d/v3-99-gpufleet-cdi.toml"
    assert cdi.dropin_name("/etc/containerd/*/x.toml") is None and cdi.dropin_name("/etc/a/[ab]*.toml") is None


def test_syntax_error_refused_before_anything():
    with pytest.raises(cdi.CdiError, match="TOML syntax error"):
        compute("broken-syntax.toml", "1.7.27")


@pytest.mark.parametrize("line, keys", [
    ('[plugins."io.containerd.grpc.v1.cri"]', ["plugins", "io.containerd.grpc.v1.cri"]),
    ("  [ plugins . 'io.containerd.cri.v1.runtime' ]  # c", ["plugins", "io.containerd.cri.v1.runtime"]),
    ("[[array]]", None), ("key = 1", None), ('[a."b]', None),
])
def test_header_keys(line, keys):
    assert cdi.header_keys(line) == keys


def test_spec_dirs_checked():
    with pytest.raises(cdi.CdiError, match="spec_dirs must be a non-empty list of absolute directories"):
        cdi.plan("1.7.27", "/c.toml", "version = 2\n", [], ["etc/cdi"])


def test_dump_reader_without_toml_parser_reads_the_real_dump(monkeypatch):
    text = fixture("debian12-1.6.20-config-dump-merged.toml")
    parsed, how = cdi.read_dump(text)
    assert how == "toml"
    monkeypatch.setattr(ctd, "load_toml", lambda text: (None, ctd.NO_TOML_MESSAGE))
    canonical, how = cdi.read_dump(text)
    assert how == "canonical"
    cri, ccri = parsed["plugins"][ctd.CRI_TABLE_V2], canonical["plugins"][ctd.CRI_TABLE_V2]
    for key in ("sandbox_image", "enable_selinux", "max_concurrent_downloads"):
        assert ccri.get(key) == cri.get(key), key
    ok, problems, summary = cdi.verify_dump(canonical, {"enable_cdi": True})
    assert not ok and problems[0].startswith('plugins."io.containerd.grpc.v1.cri".enable_cdi is null')
    assert summary["nvidia_runtime_names"] == ["nvidia"]


# --- the module, run as ansible runs it (args file), on recorded trees ------------------------------

def run_module(name, args, tmp_path, check=False, diff=False):
    args = dict(args, _ansible_check_mode=check, _ansible_diff=diff)
    path = tmp_path / "args.json"
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": args}))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, ".cache", "collections"))
    proc = subprocess.run([sys.executable, os.path.join(REPO, "plugins", "modules", name + ".py"), str(path)],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, env=env, timeout=60, check=False)
    return json.loads(proc.stdout)


def test_module_check_mode_then_write_with_backup_then_unchanged(tmp_path):
    root = tree(tmp_path, "containerd-1.7-v2-registry-auth.toml")
    config = os.path.join(root, "etc/containerd/config.toml")
    before = open(config, "rb").read()
    args = dict(root=root, containerd_version="1.7.27")
    result = run_module("containerd_cdi", args, tmp_path, check=True, diff=True)
    assert result["changed"] and result["method"] == "edit" and result["backup"] is None
    assert open(config, "rb").read() == before and not os.path.exists(os.path.join(root, "var"))
    text = json.dumps(result)
    assert not any(secret in text for secret in SECRETS) and "<redacted>" in result["diff"]["before"]
    assert result["started_at"].endswith("Z") and result["duration_seconds"] >= 0

    result = run_module("containerd_cdi", args, tmp_path)
    assert result["changed"] and not any(secret in json.dumps(result) for secret in SECRETS)
    backup = os.path.join(root, result["backup"]["path"].lstrip("/"))
    assert open(backup, "rb").read() == before and stat.S_IMODE(os.stat(backup).st_mode) == 0o600
    assert result["artifact"]["path"] == backup and result["artifact"]["sha256"] == result["backup"]["sha256"]
    assert result["restore"] == {"target": "/etc/containerd/config.toml", "backup": result["backup"]["path"],
                                 "sha256": result["backup"]["sha256"]}
    assert tomllib.loads(open(config).read())["plugins"][ctd.CRI_TABLE_V2]["enable_cdi"] is True

    again = run_module("containerd_cdi", args, tmp_path)
    assert not again["changed"] and again["method"] == "none" and again["backup"] is None

    restored = run_module("containerd_runtime", dict(root=root, state="restored", restore=result["restore"]), tmp_path)
    assert restored["changed"] and restored["restored"]["action"] == "copied" and open(config, "rb").read() == before


def test_module_refuses_16_and_bad_input(tmp_path):
    root = tree(tmp_path, "debian12-1.6.20-etc-config.toml")
    result = run_module("containerd_cdi", dict(root=root, containerd_version="1.6.20~ds1"), tmp_path)
    assert result["failed"] and "containerd 1.6.20~ds1 has no CDI support" in result["msg"]
    assert not os.path.exists(os.path.join(root, "var"))
    result = run_module("containerd_cdi", dict(root=root), tmp_path)
    assert result["failed"] and "containerd_version is required with root=" in result["msg"]
    result = run_module("containerd_cdi", dict(root=root, containerd_version="2.1.4", spec_dirs=["cdi"]), tmp_path)
    assert result["failed"] and "spec_dirs must be a non-empty list of absolute directories" in result["msg"]


def test_module_new_dropin_restore_removes_it(tmp_path):
    root = tree(tmp_path, "containerd-2.x-v3-dropin-main.toml")
    result = run_module("containerd_cdi", dict(root=root, containerd_version="2.1.4"), tmp_path)
    dropin = os.path.join(root, "etc/containerd/conf.d/99-gpufleet-cdi.toml")
    assert result["method"] == "dropin" and os.path.exists(dropin) and result["restore"]["backup"] is None
    assert result["artifact"] is None
    restored = run_module("containerd_runtime", dict(root=root, state="restored", restore=result["restore"]), tmp_path)
    assert restored["restored"]["action"] == "removed" and not os.path.exists(dropin)


def test_config_version_1_refused():
    with pytest.raises(cdi.CdiError, match="config version 1"):
        compute("containerd-v1-no-version.toml", "1.7.27")


def test_2x_with_a_version_2_file_edits_its_v2_table():
    path, text, imports, change = compute("debian12-1.6.20-config-default.toml", "2.1.4")
    assert change["method"] == "edit" and change["cri_table"] == ctd.CRI_TABLE_V2 and change["config_version"] == 2
    assert "migrates this config version 2 file" in change["reason"]
    assert tomllib.loads(change["after"])["plugins"][ctd.CRI_TABLE_V2]["enable_cdi"] is True


def test_dotted_credential_keys_redacted():
    text = 'plugins."io.containerd.grpc.v1.cri".registry.configs."r.example".auth.password = "hunter2"\n'
    assert "hunter2" not in cdi.redact_text(text) and cdi.redact_text(text).endswith('password = "<redacted>"\n')


def test_2x_dropin_wins_over_an_earlier_import(tmp_path):
    earlier = "version = 3\n[plugins.'io.containerd.cri.v1.runtime']\n  enable_cdi = false\n"
    root = tree(tmp_path, "containerd-2.x-v3-dropin-main.toml", [("10-off.toml", earlier)])
    config = "/etc/containerd/config.toml"
    text = open(os.path.join(root, config.lstrip("/"))).read()
    change = cdi.compute("2.1.4", config, text, imports_of(config, text, root), DIRS)
    assert change["method"] == "dropin" and change["target"].endswith("/99-gpufleet-cdi.toml")
