# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""operator_charts: the chart mapping (every valid and invalid form), the directory and archive
digests, the hop plan (missing charts, skipped majors, mismatches, normalisation) and its agreement
with compat_check's upgrade_hops rule."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import hashlib
import os
import shutil
import subprocess

import pytest

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_charts as oc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.evaluate import evaluate
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import load_matrix, select_release

MATRIX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, os.pardir,
                          "data", "matrix")
RELEASES = ["26.3.x", "26.6.x", "26.7.0"]
HEX_A = "a" * 64
HEX_B = "b" * 64
IMAGE = "nvcr.io/nvidia/k8s-device-plugin@sha256:" + "c" * 64
COMPAT_PATH = [{"from": "26.3.1", "to": "26.6.x", "kind": "next_major"},
               {"from": "26.6.x", "to": "26.7.0", "kind": "next_major"}]


def error_of(charts, name=oc.CHARTS_NAME):
    with pytest.raises(oc.ChartsError) as info:
        oc.parse_charts(charts, name)
    return str(info.value)


def make_chart(root, name="gpu-operator", files=None):
    """A small operator-shaped chart directory; returns its path."""
    path = os.path.join(str(root), name)
    contents = {
        "Chart.yaml": "apiVersion: v2\nname: gpu-operator\nversion: v26.6.2\n",
        "values.yaml": "devicePlugin:\n  enabled: true\n",
        "crds/nvidia.com_clusterpolicies.yaml": "kind: CustomResourceDefinition\n",
        "templates/operator.yaml": "kind: Deployment\n",
        ".helmignore": ".git/\n",
    }
    contents.update(files or {})
    for rel, text in contents.items():
        full = os.path.join(path, rel)
        if not os.path.isdir(os.path.dirname(full)):
            os.makedirs(os.path.dirname(full))
        with open(full, "w") as handle:
            handle.write(text)
    return path


def make_archive(root, name="gpu-operator-v26.6.2.tgz", data=b"\x1f\x8b not really a chart"):
    path = os.path.join(str(root), name)
    with open(path, "wb") as handle:
        handle.write(data)
    return path, hashlib.sha256(data).hexdigest()


# ---- the mapping: valid forms ------------------------------------------------------------------

def test_valid_forms_normalised():
    charts = oc.parse_charts({
        "v26.6.2": {"path": "/srv/charts/gpu-operator-v26.6.2.tgz", "sha256": HEX_A.upper(), "images": {"devicePlugin": IMAGE}},
        "26.7.0": {"oci": "oci://registry.example.com:5000/nvidia/gpu-operator", "sha256": HEX_B},
        "26.7.1": {"url": "https://charts.example.com/nvidia/gpu-operator-v26.7.1.tgz?x=1", "sha256": "sha256:" + HEX_A,
                   "chart_version": "v26.7.1"},
        "26.3.1": {"path": "/srv/charts/gpu-operator-26.3.1/", "sha256": HEX_B},
    })
    assert sorted(charts) == ["26.3.1", "26.6.2", "26.7.0", "26.7.1"]
    assert charts["26.6.2"]["sha256"] == HEX_A and charts["26.6.2"]["chart_version"] == "v26.6.2"
    assert charts["26.6.2"]["images"] == {"devicePlugin": IMAGE} and charts["26.6.2"]["source_key"] == "path"
    assert charts["26.7.0"]["sha256"] == "sha256:" + HEX_B  # the OCI manifest digest form
    assert charts["26.7.1"]["sha256"] == HEX_A and charts["26.7.1"]["chart_version"] == "v26.7.1"
    assert charts["26.3.1"]["source"] == "/srv/charts/gpu-operator-26.3.1"
    assert oc.parse_charts(None) == {} and oc.parse_charts({}) == {}


@pytest.mark.parametrize("text, name", [
    ("v26.3.1", "26.3.1"), ("26.3.1", "26.3.1"), (" 26.3.1 ", "26.3.1"), ("26.6.x", "26.6.x"), ("26.6", "26.6.x"),
    ("26.6.X", "26.6.x"), ("26.6.*", "26.6.x"), ("26.7.0-rc.1", "26.7.0-rc.1"), ("26", None), ("x", None), (None, None),
])
def test_release_name(text, name):
    assert oc.release_name(text) == name


# ---- the mapping: every invalid form -----------------------------------------------------------

@pytest.mark.parametrize("charts, fragment", [
    (["26.6.2"], "dra_gate_operator_charts: expected a dict of operator version -> chart, got list"),
    ({26.6: {"path": "/c.tgz", "sha256": HEX_A}}, "dra_gate_operator_charts[26.6]: versions must be quoted strings"),
    ({"26.6": {"path": "/c.tgz", "sha256": HEX_A}}, "[\"26.6\"]: expected an operator release YY.MM.PP"),
    ({"26.6.x": {"path": "/c.tgz", "sha256": HEX_A}}, "[\"26.6.x\"]: expected an operator release YY.MM.PP"),
    ({"26.6.2.1": {"path": "/c.tgz", "sha256": HEX_A}}, "[\"26.6.2.1\"]: expected an operator release"),
    ({"latest": {"path": "/c.tgz", "sha256": HEX_A}}, "[\"latest\"]: expected an operator release"),
    ({"26.6.2": "/c.tgz"}, "[\"26.6.2\"]: expected a dict with one of path/oci/url and sha256, got str"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "digest": "x"}}, "[\"26.6.2\"]: unknown key(s) digest"),
    ({"26.6.2": {"sha256": HEX_A}}, "[\"26.6.2\"]: expected exactly one of path, oci, url, got none"),
    ({"26.6.2": {"path": "/c.tgz", "url": "https://x/c.tgz", "sha256": HEX_A}},
     "expected exactly one of path, oci, url, got path, url"),
    ({"26.6.2": {"path": "/c.tgz"}}, "[\"26.6.2\"].sha256: required (the archive's sha256, or the directory digest"),
    ({"26.6.2": {"oci": "oci://r/x/gpu-operator"}}, "[\"26.6.2\"].sha256: required (the chart's OCI manifest digest"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": "abc123"}},
     "dra_gate_operator_charts[\"26.6.2\"].sha256: expected 64 hex characters, got 'abc123'"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": "g" * 64}}, ".sha256: expected 64 hex characters, got 'ggg"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": 12}}, ".sha256: expected 64 hex characters, got int 12"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": "md5:" + HEX_A}}, ".sha256: expected 64 hex characters"),
    ({"26.6.2": {"oci": "oci://r/x/gpu-operator", "sha256": "sha256:12"}},
     ".sha256: expected 64 hex characters (sha256:<64 hex>, the manifest digest)"),
    ({"26.6.2": {"path": "charts/c.tgz", "sha256": HEX_A}}, "[\"26.6.2\"].path: expected an absolute path"),
    ({"26.6.2": {"path": "", "sha256": HEX_A}}, ".path: expected a non-empty string"),
    ({"26.6.2": {"path": ["/c.tgz"], "sha256": HEX_A}}, ".path: expected a non-empty string, got list"),
    ({"26.6.2": {"path": "/c.tgz ", "sha256": HEX_A}}, ".path: '/c.tgz ' has leading or trailing white space"),
    ({"26.6.2": {"oci": "https://r/x/gpu-operator", "sha256": HEX_A}}, ".oci: expected oci://<registry>/<repository>/<chart>"),
    ({"26.6.2": {"oci": "oci://registry-only", "sha256": HEX_A}}, ".oci: expected oci://<registry>/<repository>/<chart>"),
    ({"26.6.2": {"oci": "oci://r/x/gpu-operator:v26.6.2", "sha256": HEX_A}}, ".oci: 'oci://r/x/gpu-operator:v26.6.2' names a tag"),
    ({"26.6.2": {"oci": "oci://r/x/gpu-operator@sha256:" + HEX_A, "sha256": HEX_A}}, "names a tag or digest"),
    ({"26.6.2": {"url": "http://charts.example.com/c.tgz", "sha256": HEX_A}}, ".url: expected an https:// URL"),
    ({"26.6.2": {"url": "https://charts.example.com/index.yaml", "sha256": HEX_A}}, ".url: 'https://charts.example.com/index.yaml' does not name a .tgz"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "images": ["x"]}}, ".images: expected a dict of operand name"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "images": {"devicePlugin": "nvcr.io/x:v0.20.0"}}},
     ".images[\"devicePlugin\"]: expected an image pinned by digest"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "images": {"devicePlugin": "nvcr.io/x@sha256:" + "C" * 64}}},
     ".images[\"devicePlugin\"]: expected an image pinned by digest"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "images": {"": IMAGE}}}, ".images: operand names must be non-empty"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A, "chart_version": "v26.7.0"}},
     ".chart_version: expected the chart's version string for release 26.6.2 (such as 'v26.6.2'), got str 'v26.7.0'"),
    ({"26.6.2": {"path": "/c.tgz", "sha256": HEX_A}, "v26.6.2": {"path": "/d.tgz", "sha256": HEX_B}},
     "dra_gate_operator_charts[\"v26.6.2\"]: the same release as dra_gate_operator_charts[\"26.6.2\"] (26.6.2)"),
])
def test_invalid_forms(charts, fragment):
    assert fragment in error_of(charts)


def test_every_error_at_once_and_the_name_given():
    message = error_of({"26.6.2": {"path": "/c.tgz", "sha256": "x"}, "26.7.0": {"url": "ftp://x/c.tgz", "sha256": HEX_A}},
                       name="site_charts")
    assert 'site_charts["26.6.2"].sha256' in message and 'site_charts["26.7.0"].url' in message


# ---- digests -----------------------------------------------------------------------------------

def test_directory_digest_stable_and_sensitive(tmp_path):
    first = make_chart(tmp_path / "a")
    second = make_chart(tmp_path / "b")
    digest = oc.directory_digest(first)
    assert len(digest) == 64 and digest == oc.directory_digest(second)
    # modes, mtimes and empty directories do not count
    os.chmod(os.path.join(second, "values.yaml"), 0o755)
    os.utime(os.path.join(second, "Chart.yaml"), (1, 1))
    os.makedirs(os.path.join(second, "charts", "empty"))
    assert oc.directory_digest(second) == digest
    # one changed byte, an added file, a renamed file: each differs
    with open(os.path.join(second, "values.yaml"), "w") as handle:
        handle.write("devicePlugin:\n  enabled: false\n")
    changed = oc.directory_digest(second)
    assert changed != digest
    third = make_chart(tmp_path / "c", files={"templates/extra.yaml": ""})
    assert oc.directory_digest(third) not in (digest, changed)
    fourth = make_chart(tmp_path / "d")
    os.rename(os.path.join(fourth, "templates", "operator.yaml"), os.path.join(fourth, "templates", "operator2.yaml"))
    assert oc.directory_digest(fourth) != digest


def test_directory_digest_is_the_documented_rule(tmp_path):
    path = make_chart(tmp_path, files={"templates/Zeta.yaml": "z", "templates/alpha.yaml": "a", "crds/b c.yaml": "sp"})
    lines = []
    for rel in sorted(["Chart.yaml", "values.yaml", "crds/nvidia.com_clusterpolicies.yaml", "templates/operator.yaml",
                       ".helmignore", "templates/Zeta.yaml", "templates/alpha.yaml", "crds/b c.yaml"],
                      key=lambda r: r.encode("utf-8")):
        with open(os.path.join(path, rel), "rb") as handle:
            lines.append("%s  %s\n" % (hashlib.sha256(handle.read()).hexdigest(), rel))
    assert oc.directory_digest(path) == hashlib.sha256("".join(lines).encode("utf-8")).hexdigest()


@pytest.mark.skipif(not all(shutil.which(t) for t in ("find", "sort", "xargs", "sha256sum")), reason="needs coreutils")
def test_directory_digest_equals_the_shell_one_liner(tmp_path):
    path = make_chart(tmp_path, files={"templates/Zeta.yaml": "z", "templates/_helpers.tpl": "h", "crds/b c.yaml": "sp"})
    out = subprocess.check_output(
        "find . -type f -printf '%P\\0' | LC_ALL=C sort -z | xargs -0 sha256sum | sha256sum", shell=True, cwd=path)
    assert out.decode("ascii").split()[0] == oc.directory_digest(path)


def test_directory_refuses_links_and_special_files(tmp_path):
    path = make_chart(tmp_path / "a")
    os.symlink(os.path.join(path, "values.yaml"), os.path.join(path, "templates", "link.yaml"))
    with pytest.raises(oc.ChartsError, match=r"templates/link.yaml is a symlink; symlinks are refused"):
        oc.directory_digest(path)
    other = make_chart(tmp_path / "b")
    os.symlink("/etc", os.path.join(other, "charts"))
    with pytest.raises(oc.ChartsError, match=r"charts is a symlink"):
        oc.directory_digest(other)
    fifo = make_chart(tmp_path / "c")
    os.mkfifo(os.path.join(fifo, "templates", "pipe"))
    with pytest.raises(oc.ChartsError, match=r"templates/pipe is not a regular file or directory"):
        oc.directory_digest(fifo)
    named = make_chart(tmp_path / "d", files={"templates/a\nb.yaml": "x"})
    with pytest.raises(oc.ChartsError, match=r"newline or backslash"):
        oc.directory_digest(named)
    many = make_chart(tmp_path / "e")
    with pytest.raises(oc.ChartsError, match=r"more than 3 files"):
        oc.directory_digest(many, max_files=3)


def test_local_digest_kinds_and_refusals(tmp_path):
    archive, sha = make_archive(tmp_path)
    assert oc.local_digest(archive) == ("archive", sha)
    assert oc.file_digest(archive) == sha
    chart = make_chart(tmp_path)
    assert oc.local_digest(chart) == ("directory", oc.directory_digest(chart))
    os.symlink(archive, str(tmp_path / "current.tgz"))
    with pytest.raises(oc.ChartsError, match=r"current.tgz: is a symlink"):
        oc.local_digest(str(tmp_path / "current.tgz"))
    os.makedirs(str(tmp_path / "not-a-chart"))
    with pytest.raises(oc.ChartsError, match=r"not a chart directory \(no Chart.yaml file\)"):
        oc.local_digest(str(tmp_path / "not-a-chart"))
    wrong, _sha = make_archive(tmp_path, name="gpu-operator.zip")
    with pytest.raises(oc.ChartsError, match=r"must end in .tgz or .tar.gz"):
        oc.local_digest(wrong)
    with pytest.raises(oc.ChartsError, match=r"missing.tgz: No such file"):
        oc.local_digest(str(tmp_path / "missing.tgz"))


def test_cli_prints_the_digest(tmp_path, capsys):
    chart = make_chart(tmp_path)
    assert oc.main([chart]) == 0
    assert capsys.readouterr().out == "%s  %s (directory)\n" % (oc.directory_digest(chart), chart)
    assert oc.main([str(tmp_path / "nope.tgz")]) == 1
    assert oc.main([]) == 2


# ---- the hop plan ------------------------------------------------------------------------------

def local_charts(tmp_path):
    archive, archive_sha = make_archive(tmp_path)
    chart = make_chart(tmp_path, name="gpu-operator-26.7.0")
    return {
        "v26.6.2": {"path": archive, "sha256": archive_sha, "images": {"devicePlugin": IMAGE}},
        "26.7.0": {"path": chart, "sha256": oc.directory_digest(chart)},
    }


def test_plan_verifies_local_charts(tmp_path):
    result = oc.plan(local_charts(tmp_path), upgrade_path=COMPAT_PATH, target="26.7.0")
    assert result["verified"] is True and result["current"] == "26.3.1" and result["target"] == "26.7.0"
    first, second = result["hops"]
    assert (first["from"], first["to"], first["planned_to"], first["kind"]) == ("26.3.1", "26.6.2", "26.6.x", "next_major")
    assert first["chart"]["kind"] == "archive" and first["chart"]["verified"] is True
    assert first["chart"]["chart_version"] == "v26.6.2" and first["chart"]["images"] == {"devicePlugin": IMAGE}
    assert (second["from"], second["to"]) == ("26.6.2", "26.7.0")
    assert second["chart"]["kind"] == "directory" and second["chart"]["verified"] is True


def test_remote_charts_are_pinned_not_verified():
    charts = {"26.6.2": {"oci": "oci://registry.example.com/nvidia/gpu-operator", "sha256": HEX_A},
              "26.7.0": {"url": "https://charts.example.com/gpu-operator-v26.7.0.tgz", "sha256": HEX_B}}
    result = oc.plan(charts, upgrade_path=COMPAT_PATH)
    assert result["verified"] is False
    assert [(h["chart"]["kind"], h["chart"]["verified"], h["chart"]["sha256"]) for h in result["hops"]] == [
        ("oci", False, "sha256:" + HEX_A), ("url", False, HEX_B)]


def test_sha256_mismatch_refused_naming_both(tmp_path):
    charts = local_charts(tmp_path)
    charts["v26.6.2"]["sha256"] = HEX_A
    chart = charts["26.7.0"]["path"]
    with open(os.path.join(chart, "values.yaml"), "a") as handle:
        handle.write("# edited\n")
    with pytest.raises(oc.ChartsError) as info:
        oc.plan(charts, upgrade_path=COMPAT_PATH)
    message = str(info.value)
    assert "hop 26.3.1 -> 26.6.2: chart v26.6.2 (archive" in message and "expected %s, actual " % HEX_A in message
    assert "hop 26.6.2 -> 26.7.0: chart 26.7.0 (directory %s): sha256 mismatch" % chart in message
    assert message.endswith("nothing was changed")


def test_missing_local_file_refused(tmp_path):
    charts = {"26.6.2": {"path": str(tmp_path / "gone.tgz"), "sha256": HEX_A},
              "26.7.0": {"oci": "oci://r.example/nvidia/gpu-operator", "sha256": HEX_B}}
    with pytest.raises(oc.ChartsError, match=r"hop 26.3.1 -> 26.6.2: .*gone.tgz: No such file"):
        oc.plan(charts, upgrade_path=COMPAT_PATH)


def test_every_missing_hop_named_in_one_error():
    with pytest.raises(oc.ChartsError) as info:
        oc.plan({"26.3.2": {"oci": "oci://r.example/nvidia/gpu-operator", "sha256": HEX_A}}, upgrade_path=COMPAT_PATH)
    message = str(info.value)
    assert message.startswith("dra_gate_operator_charts has no chart for 2 hop(s) of the upgrade path: ")
    assert "26.3.1 -> 26.6.x (next_major; needs a chart of a 26.6 release)" in message
    assert "26.6.x -> 26.7.0 (next_major; needs a chart for 26.7.0)" in message
    assert "mapped releases: 26.3.2" in message


def test_one_missing_hop_named_and_the_other_not():
    charts = {"26.6.2": {"oci": "oci://r.example/nvidia/gpu-operator", "sha256": HEX_A}}
    with pytest.raises(oc.ChartsError) as info:
        oc.plan(charts, upgrade_path=COMPAT_PATH)
    assert "for 1 hop(s)" in str(info.value) and "26.6.2 -> 26.7.0 (next_major; needs a chart for 26.7.0)" in str(info.value)


def test_skipped_major_refused_naming_the_hops():
    charts = {"26.6.2": {"oci": "oci://r/n/gpu-operator", "sha256": HEX_A}, "26.7.0": {"oci": "oci://r/n/gpu-operator", "sha256": HEX_B}}
    with pytest.raises(oc.ChartsError) as info:
        oc.plan(charts, upgrade_path=COMPAT_PATH, max_hops=1)
    assert str(info.value).startswith("26.3.1 -> 26.7.0 needs 2 hops (26.3.1 -> 26.6.x -> 26.7.0), more than max_hops 1")
    with pytest.raises(oc.ChartsError, match=r"needs 2 hops \(26.3.1 -> 26.6.x -> 26.7.0\)"):
        oc.plan(charts, current="26.3.1", target="26.7.0", releases=RELEASES, max_hops=1)
    # the same major, or the next one, is a direct upgrade
    assert len(oc.plan(charts, current="26.6.1", target="26.7.0", releases=RELEASES, max_hops=1)["hops"]) == 1
    # a direct jump given as a path is refused against the releases
    direct = [{"from": "26.3.1", "to": "26.7.0", "kind": "next_major"}]
    skipped = r"upgrade_path\[0\]: 26.3.1 -> 26.7.0 skips the 26.6 major\(s\) of releases; the supported path goes through 26.6.x"
    with pytest.raises(oc.ChartsError, match=skipped):
        oc.plan(charts, upgrade_path=direct, releases=RELEASES)
    with pytest.raises(oc.ChartsError, match=r"max_hops: expected a whole number 1 or more, got 0"):
        oc.plan(charts, upgrade_path=COMPAT_PATH, max_hops=0)


def test_version_normalisation_everywhere():
    charts = {"v26.6.2": {"oci": "oci://r/n/gpu-operator", "sha256": HEX_A},
              "v26.7.0": {"oci": "oci://r/n/gpu-operator", "sha256": HEX_B}}
    path = [{"from": "v26.3.1", "to": "26.6.x", "kind": "next_major"}, {"from": "26.6.X", "to": "26.7.0", "kind": "next_major"}]
    result = oc.plan(charts, upgrade_path=path, current="26.3.1", target="v26.7.0", releases=["v26.3.1", "26.6", "26.7.0"])
    assert [(h["from"], h["to"]) for h in result["hops"]] == [("26.3.1", "26.6.2"), ("26.6.2", "26.7.0")]
    assert result["hops"][1]["chart"]["key"] == "v26.7.0" and result["hops"][1]["chart"]["version"] == "26.7.0"
    planned = oc.plan(charts, current="v26.3.1", target="26.7.0", releases=RELEASES)
    assert [h["to"] for h in planned["hops"]] == ["26.6.2", "26.7.0"]


def test_a_major_takes_its_newest_release():
    charts = dict((v, {"oci": "oci://r/n/gpu-operator", "sha256": HEX_A})
                  for v in ("26.6.0", "26.6.3", "v26.6.10", "26.6.11-rc.1", "26.7.0"))
    result = oc.plan(charts, upgrade_path=COMPAT_PATH)
    assert result["hops"][0]["to"] == "26.6.10" and result["hops"][1]["from"] == "26.6.10"


def test_no_hop():
    assert oc.plan({}, upgrade_path=[]) == {"hops": [], "verified": True, "current": None, "target": None}
    assert oc.plan({}, current="26.7.0", target="v26.7.0", releases=RELEASES)["hops"] == []
    assert oc.plan({}, upgrade_path=[], current="26.7.0", target="26.7.0")["current"] == "26.7.0"


@pytest.mark.parametrize("path, extra, fragment", [
    (None, {}, "upgrade_path is null: compat_check plans no path"),
    ("26.7.0", {}, "upgrade_path: expected a list of {from, to, kind}"),
    (["26.7.0"], {}, "upgrade_path[0]: expected a dict with from, to and kind, got str"),
    ([{"from": "26.3.1", "to": "latest", "kind": "next_major"}], {}, "upgrade_path[0].to: expected an operator version"),
    ([{"from": "26.3.1", "to": "26.6.x", "kind": "major"}], {}, "upgrade_path[0].kind: expected one of same_major, next_major, got 'major'"),
    ([{"from": "26.3.x", "to": "26.6.x", "kind": "next_major"}], {}, "upgrade_path[0].from: the first hop starts at the current release"),
    ([COMPAT_PATH[0], {"from": "26.6.3", "to": "26.7.0", "kind": "next_major"}], {},
     "upgrade_path[1].from: 26.6.3 does not continue the previous hop, which ends at 26.6.x"),
    ([{"from": "26.6.1", "to": "26.6.3", "kind": "next_major"}], {}, "upgrade_path[0]: 26.6.1 -> 26.6.3 is same_major, not next_major"),
    ([{"from": "26.3.1", "to": "26.6.x", "kind": "same_major"}], {}, "26.3.1 -> 26.6.x is next_major, not same_major"),
    ([{"from": "26.6.3", "to": "26.6.1", "kind": "same_major"}], {}, "26.6.3 -> 26.6.1 is not an upgrade"),
    ([{"from": "26.7.0", "to": "26.6.x", "kind": "next_major"}], {}, "26.7.0 -> 26.6.x is not an upgrade"),
    (COMPAT_PATH, {"current": "26.3.2"}, "upgrade_path starts at 26.3.1, not at current_version 26.3.2"),
    (COMPAT_PATH, {"target": "26.7.1"}, "upgrade_path ends at 26.7.0, not at target_version 26.7.1"),
    (COMPAT_PATH[:1], {"target": "26.6.0"}, "upgrade_path ends at 26.6.x, not at target_version 26.6.0"),
    ([], {"current": "26.7.0", "target": "26.3.2"}, "upgrade_path is empty but current_version 26.7.0 is not target_version 26.3.2"),
    (COMPAT_PATH, {"releases": ["26.6.x", 26.7]}, "releases[1]: expected an operator version"),
])
def test_bad_paths(path, extra, fragment):
    with pytest.raises(oc.ChartsError) as info:
        oc.check_path(path, **extra)
    assert fragment in str(info.value)


@pytest.mark.parametrize("kwargs, fragment", [
    ({}, "upgrade_path is missing or null"),
    ({"current": "26.3.1"}, "otherwise give current_version, target_version and releases"),
    ({"current": "26.3.1", "target": "26.7.0"}, "releases: expected the list of known operator releases"),
    ({"current": "26.3", "target": "26.7.0", "releases": RELEASES}, "current_version: expected an operator release"),
    ({"current": "26.3.1", "target": "26.7.x", "releases": RELEASES}, "target_version: expected an operator release"),
    ({"current": "26.7.0", "target": "26.6.2", "releases": RELEASES}, "target_version 26.6.2 is older than current_version 26.7.0"),
    ({"current": "25.10.1", "target": "26.7.0", "releases": RELEASES},
     "releases: [\"26.3.x\", \"26.6.x\", \"26.7.0\"] do(es) not include the 25.10 major"),
    ({"current": "26.3.1", "target": "26.7.0", "releases": ["26.3.x", None]}, "releases[1]: expected an operator version"),
])
def test_bad_plan_inputs(kwargs, fragment):
    with pytest.raises(oc.ChartsError) as info:
        oc.plan({}, **kwargs)
    assert fragment in str(info.value)


def test_mapping_errors_come_first():
    with pytest.raises(oc.ChartsError, match=r"dra_gate_operator_charts\[\"26.6.2\"\].sha256"):
        oc.plan({"26.6.2": {"path": "/c.tgz", "sha256": "x"}}, upgrade_path=None)


@pytest.mark.parametrize("current, target, releases", [
    ("26.3.1", "26.7.0", None),
    ("26.3.1", "26.7.0", ["26.3", "26.6", "26.7"]),
    ("26.3.1", "26.7.0", ["26.3.x", "26.7.0"]),
    ("26.6.2", "26.7.0", None),
    ("v26.6.2", "26.7.0", None),
    ("26.3.0", "26.3.2", None),
    ("26.7.0", "26.7.0", None),
])
def test_plan_hops_is_compat_checks_rule(current, target, releases):
    """The same path as compat_check's upgrade_hops rule (normalised), for the same releases."""
    matrix = load_matrix(MATRIX_DIR)
    cluster = {"kubernetes_version": "1.37.0", "operator_version": current, "cluster_policy": True, "gpu_cluster": False,
               "distribution": "upstream"}
    compat = evaluate({}, cluster=cluster, target={"operator_version": target}, matrix=matrix, releases=releases)
    expected = [dict(hop, **{"from": oc.release_name(hop["from"]), "to": oc.release_name(hop["to"])})
                for hop in compat["upgrade_path"]]
    known = releases
    if known is None:  # the releases compat_check took from the matrix
        known = [entry["version"] for entry in select_release(matrix, target)["releases"]]
    assert oc.plan_hops(current, target, known) == expected
    assert oc.check_path(compat["upgrade_path"], current=current, target=target, releases=known) == expected


# ---- the chart at its point of use --------------------------------------------------------------

def test_verified_copy_of_a_directory_is_byte_for_byte_and_has_the_planned_digest(tmp_path):
    chart = make_chart(str(tmp_path / "src"))
    digest = oc.directory_digest(chart)
    dest = tmp_path / "private"
    dest.mkdir(mode=0o700)
    used = oc.verified_copy(chart, digest, str(dest))
    assert used["verified"] is True and used["kind"] == "directory" and used["sha256"] == digest
    assert used["path"] == os.path.join(str(dest), os.path.basename(chart))
    assert oc.directory_digest(used["path"]) == digest
    for rel, full in oc.directory_files(chart):
        copied = os.path.join(used["path"], os.fsdecode(rel))
        with open(full, "rb") as a, open(copied, "rb") as b:
            assert a.read() == b.read()
        assert os.stat(copied).st_mode & 0o077 == 0


def test_verified_copy_of_an_archive(tmp_path):
    archive = tmp_path / "gpu-operator-v26.7.0.tgz"
    archive.write_bytes(b"\x1f\x8b not really a tarball, bytes are bytes")
    dest = tmp_path / "private"
    dest.mkdir(mode=0o700)
    used = oc.verified_copy(str(archive), "sha256:" + oc.file_digest(str(archive)).upper(), str(dest))
    assert used["kind"] == "archive" and used["sha256"] == oc.file_digest(str(archive))
    assert open(used["path"], "rb").read() == archive.read_bytes()


def test_a_chart_changed_after_the_plan_is_refused_at_use_naming_both_digests(tmp_path):
    chart = make_chart(str(tmp_path / "src"))
    planned = oc.directory_digest(chart)
    with open(os.path.join(chart, "crds", "extra.yaml"), "w") as handle:
        handle.write("kind: CustomResourceDefinition\n")
    actual = oc.directory_digest(chart)
    with pytest.raises(oc.ChartsError) as info:
        with oc.ChartAtUse(chart, planned):
            pass
    text = str(info.value)
    assert chart in text and planned in text and actual in text and "nothing was applied" in text
    assert info.value.actual == actual
    assert oc.used_chart({"source": chart, "sha256": planned}, info.value) == {
        "source": chart, "kind": None, "sha256": actual, "expected_sha256": planned, "verified": False}


def test_chart_at_use_removes_its_copy_and_reads_nothing_of_the_source_afterwards(tmp_path):
    chart = make_chart(str(tmp_path / "src"))
    digest = oc.directory_digest(chart)
    with oc.ChartAtUse(chart, digest) as used:
        copy_dir = os.path.dirname(used["path"])
        assert os.stat(copy_dir).st_mode & 0o777 == 0o700
        shutil.rmtree(chart)  # the source gone (or changed) after the check: the copy is what is used
        assert oc.directory_digest(used["path"]) == digest
    assert not os.path.exists(copy_dir)
    assert oc.used_chart(used) == {"source": chart, "kind": "directory", "sha256": digest, "verified": True}


@pytest.mark.parametrize("chart, sha, fragment", [
    ("oci://registry.example.com/nvidia/gpu-operator", HEX_A, "only a chart on the controller"),
    ("/nonexistent/chart", HEX_A, "cannot read"),
    ("/etc/hostname", HEX_A, "must end in .tgz"),
    ("/tmp", "12", "chart_sha256: expected 64 hex"),
])
def test_chart_at_use_refusals(chart, sha, fragment):
    with pytest.raises(oc.ChartsError) as info:
        with oc.ChartAtUse(chart, sha):
            pass
    assert fragment in str(info.value)


def test_chart_at_use_without_a_digest_reports_unverified(tmp_path):
    with oc.ChartAtUse(str(tmp_path), None) as used:
        assert used == {"source": str(tmp_path), "path": str(tmp_path), "kind": None, "sha256": None, "verified": False}
