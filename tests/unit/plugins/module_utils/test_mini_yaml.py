# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Tests for the mini_yaml subset loader; PyYAML is the reference (tests only)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import math
import os

import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.mini_yaml import YAMLSubsetError, load

FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "cdi")
YAML_FIXTURES = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.y*ml"), recursive=True))
JSON_FIXTURES = sorted(glob.glob(os.path.join(FIXTURES, "**", "*.json"), recursive=True))


def _read(path):
    with open(path, "r", encoding="utf-8") as handle:
        return handle.read()


def test_fixture_globs_found_files():
    assert len(YAML_FIXTURES) >= 6
    assert len(JSON_FIXTURES) >= 3


@pytest.mark.parametrize("path", YAML_FIXTURES + JSON_FIXTURES, ids=os.path.basename)
def test_fixture_matches_pyyaml(path):
    text = _read(path)
    try:
        expected = yaml.safe_load(text)
    except yaml.YAMLError:
        with pytest.raises(YAMLSubsetError) as exc:
            load(text)
        assert exc.value.line is not None
        return
    assert load(text) == expected


SAME_AS_PYYAML = [
    "a: 1\nb: [1, 2, {c: d}]\n",
    "---\ncdiVersion: 0.5.0\nkind: nvidia.com/gpu\n",
    "k:\n- a\n- b: 1\n  c: 2\n- - x\n  - y\n",
    "s: 'it''s'\nd: \"a\\tb\\u00e9\\x41\\\\ \\\"q\\\"\"\n",
    "lit: |\n  line1\n  line2\n\n  line3\n\nnext: 1\n",
    "fold: >\n  a\n  b\n\n  c\n   d\n  e\nx: y\n",
    "strip: |-\n  a\n\nkeep: |+\n  b\n\n\n",
    "ind: |2\n   a\n  b\n",
    "plain: this is\n  multi line\n\n  para\nz: 1\n",
    "q: \"multi\n  line\n\n  x\"\nq2: 'a\n  b'\n",
    "f: {a: 1, b: [x, y], 'c': \"d\"}\ng: []\nh: {}\n",
    "f: [\n  a,\n  b, # c\n  {x: y},\n]\n",
    "empty:\nn: ~\nt: true\nf: False\ni: -12\nh: 0x1F\nfl: 1.5\nv: 0.5.0\ninf: .inf\nu: 'x'\n",
    "- a\n- b\n",
    "url: http://x:80/a\nc: a#b\nd: a #comment\n",
    "key with spaces: v\n\"quoted key\": v2\n1: int key\n",
    "a:\n  b:\n    c: 1\n  d: 2\ne: 3\n",
    "items:\n  - name: x\n    val: 1\n  -   name: y\n",
    "[1, 2]\n",
    "top\n",
    "",
    "# only comment\n",
    "a: 1\n...\n",
    "- |\n  lit\n- >\n  fol\n  ded\n",
    "emptyblock: |\nx: 1\n",
    "seq_of_empty:\n-\n- ''\n- \"\"\n",
    "--- {a: [1, {b: c}]}\n",
    "win: 1\r\nline: 2\r\n",
    "\ufeffbom: 1\n",
    "name: \"755\"\nnum: 755\nneg: -1.5e+3\n",
]


@pytest.mark.parametrize("text", SAME_AS_PYYAML)
def test_same_as_pyyaml(text):
    assert load(text) == yaml.safe_load(text)


def test_nan():
    assert math.isnan(load("x: .nan\n")["x"])


@pytest.mark.parametrize("text,expected", [
    # YAML 1.2 core schema, where PyYAML (YAML 1.1) differs.
    ("v: yes\n", {"v": "yes"}),
    ("v: off\n", {"v": "off"}),
    ("v: 0o17\n", {"v": 15}),
    ("v: 0755\n", {"v": 755}),
    ("v: 1e3\n", {"v": 1000.0}),
    ("v: 1_000\n", {"v": "1_000"}),
    ("v: 2026-08-01\n", {"v": "2026-08-01"}),
    ("v: 0.5.0\n", {"v": "0.5.0"}),
    ("v: 1.0\n", {"v": 1.0}),
])
def test_yaml_1_2_core_resolution(text, expected):
    assert load(text) == expected


def test_json_first():
    text = json.dumps({"cdiVersion": "1.1.0", "devices": [{"name": "0"}], "n": None})
    assert load(text) == {"cdiVersion": "1.1.0", "devices": [{"name": "0"}], "n": None}
    assert load(text.encode("utf-8")) == load(text)


@pytest.mark.parametrize("text,line,fragment", [
    ("a: &x 1\n", 1, "anchors"),
    ("a: 1\nb: *x\n", 2, "aliases"),
    ("a: !!str 1\n", 1, "tags"),
    ("a: 1\n---\nb: 2\n", 2, "multiple documents"),
    ("a: 1\na: 2\n", 2, "duplicate"),
    ("? a\n: b\n", 1, "complex"),
    ("a: b: c\n", 1, "mapping values"),
    ("a:\n\tb: 1\n", 2, "tab"),
    ("a: [1, 2\n", 1, "flow sequence"),
    ("a: \"x\n", 1, "unterminated"),
    ("%YAML 1.2\n---\na: 1\n", 1, "directives"),
    ("a: 1\n  b: 2\n", 2, "mapping values"),
    ("- a\nb: 1\n", 2, "unexpected content"),
    ("a: \"\\q\"\n", 1, "escape"),
    ("a: {[1]: 2}\n", 1, "keys"),
    ("x: - y\n", 1, "sequence entry"),
])
def test_errors_are_clear(text, line, fragment):
    with pytest.raises(YAMLSubsetError) as exc:
        load(text)
    assert exc.value.line == line
    assert fragment in exc.value.message
    assert str(exc.value).startswith("line %d: " % line)


def test_error_is_value_error():
    assert issubclass(YAMLSubsetError, ValueError)


def test_not_utf8():
    with pytest.raises(YAMLSubsetError):
        load(b"a: \xff\xfe\n")


@pytest.mark.parametrize("text", [
    "a:\n  - b\n  c: d\n", "[", "{a: 1", "- a\n  - b\n - c\n", "a:\n    b: 1\n  c: 2\n",
    "'unterminated", "\"a\\", "a: |x\n", "[a, b]]\n", "{a: 1}}\n", "a: 1 # c\n  b\n",
])
def test_garbage_never_tracebacks(text):
    try:
        load(text)
    except YAMLSubsetError:
        pass
