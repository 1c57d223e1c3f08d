# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Matrix loading and validation: the bundled data loads; every malformed field gives a clear error."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import copy
import os
import re

import pytest
import yaml

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import matrix as compat_matrix
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.matrix import (
    MatrixError,
    build_matrix_set,
    load_matrix,
    select_release,
    validate_document,
)

MATRIX_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, os.pardir, os.pardir,
                          "data", "matrix")
RELEASE_FILE = "gpu-operator-26.7.0.yml"


def _raw(name):
    with open(os.path.join(MATRIX_DIR, name)) as handle:
        return yaml.safe_load(handle)


@pytest.fixture(scope="module")
def bundled():
    return load_matrix(MATRIX_DIR)


def test_bundled_matrix_loads(bundled):
    names = sorted(os.path.basename(f) for f in bundled["files"])
    assert names == ["common.yml", "gpu-operator-26.3.yml", "gpu-operator-26.7.0.yml"]
    kinds = sorted(d["kind"] for d in bundled["documents"])
    assert kinds == ["common", "release", "release"]


def test_every_row_has_a_source(bundled):
    for doc in bundled["documents"]:
        for row in doc["rows"]:
            assert row["source"] and all(s.strip() for s in row["source"]), row["id"]
            for old in row.get("superseded") or ():
                assert old["source"], row["id"]


def test_bundled_26_7_facts(bundled):
    selected = select_release(bundled, "26.7.0")
    rows = dict((r["id"], r) for r in selected["rows"])
    assert rows["kubernetes.validated_range"]["values"] == {"min": "1.33", "max": "1.37"}
    assert rows["kubernetes.validated_range"]["superseded"][0]["values"] == {"min": "1.33", "max": "1.36"}
    assert rows["containerd.validated_range"]["values"] == {"min": "2.0", "max": "2.3"}
    assert rows["containerd.validated_range"]["superseded"][0]["values"]["min"] == "1.8"
    branches = [(b["branch"], b["validated"]) for b in rows["driver.branch"]["values"]["branches"]]
    assert branches == [(610, "610.57.04"), (595, "595.91.07"), (580, "580.173.02"), (535, "535.309.01")]
    assert rows["driver.point_release"]["values"]["branches"] == rows["driver.branch"]["values"]["branches"]
    assert rows["dra.managed"]["values"]["kubernetes_min"] == "1.34.2"
    assert rows["dra.managed"]["values"]["driver_min_branch"] == 580
    assert rows["operator.components"]["values"]["device_plugin"] == "v0.20.0"
    assert rows["operator.components"]["values"]["dra_driver"] == "v0.5.0"
    assert rows["containerd.kubernetes_tested"]["values"]["table"]["1.37"] == ["2.4.0", "2.3.0"]
    assert rows["kubelet.skew"]["values"]["max_older_minors"] == 3
    assert rows["backend.single_per_node"]["values"] == {"resource_name": "nvidia.com/gpu"}
    assert rows["backend.single_per_node"]["severity"] == "block"
    assert rows["backend.dra_canary_pool"]["severity"] == "warn"
    assert rows["backend.extended_resource_bridge"]["severity"] == "info"
    assert rows["kubernetes.dra_api"]["values"] == {"group_version": "resource.k8s.io/v1", "requires_allocation_mode": "dra"}
    assert (rows["operator.cr_state"]["values"], rows["operator.cr_state"]["severity"]) == ({"ready_state": "ready"}, "warn")
    assert (rows["dra.stuck_claims"]["values"], rows["dra.stuck_claims"]["severity"]) == ({"max_deleting_allocated": 0}, "warn")
    assert (rows["dra.passthrough"]["severity"], rows["dra.passthrough"]["values"]["requires_acceptance"]) == ("block", True)
    accepted = rows["dra.passthrough.alpha_accepted"]
    assert (accepted["rule"], accepted["severity"]) == ("passthrough_accepted", "warn")
    assert accepted["values"] == {"stage": "alpha", "feature_gate": "PassthroughSupport", "default_enabled": False,
                                  "standard_production_path": False}
    assert "seeds/000_dec44a8f4647fff6.txt § Executive Summary" in accepted["source"]
    assert [r["version"] for r in selected["releases"]] == ["26.3.x", "26.6.x", "26.7.0"]
    assert selected["file"] == RELEASE_FILE


def test_bundled_26_3_records_what_sources_do_not_say(bundled):
    selected = select_release(bundled, "26.3.2")
    assert selected["release"] == "26.3"
    rows = dict((r["id"], r) for r in selected["rows"])
    assert rows["driver.branch"]["rule"] == "no_data"
    assert rows["dra.managed"]["values"] == {"available": False}
    assert rows["containerd.validated_range"]["values"] == {"min": "1.8", "max": "2.3"}
    assert rows["operator.lifecycle"]["values"]["status"] == "deprecated"


@pytest.mark.parametrize("version, release", [
    ("26.7.0", "26.7.0"), ("v26.7.0", "26.7.0"), ("26.7", "26.7.0"), ("26.3.0", "26.3"), ("26.3.5", "26.3"),
])
def test_select_release(bundled, version, release):
    assert select_release(bundled, version)["release"] == release


@pytest.mark.parametrize("version", ["26.7.1", "26.6.0", "25.10.0", "26"])
def test_select_release_unknown(bundled, version):
    with pytest.raises(MatrixError, match=r"no matrix release file covers GPU Operator .*files cover: 26.3, 26.7.0"):
        select_release(bundled, version)


def _mutated(mutate, name=RELEASE_FILE):
    doc = copy.deepcopy(_raw(name))
    mutate(doc)
    return doc


def _delete(path):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]
    return mutate


def _set(path, value):
    def mutate(doc):
        target = doc
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value
    return mutate


def _row_index(row_id):
    return [r["id"] for r in _raw(RELEASE_FILE)["rows"]].index(row_id)


BR = _row_index("driver.branch")
KR = _row_index("kubernetes.validated_range")
DRA = _row_index("dra.managed")
PTA = _row_index("dra.passthrough.alpha_accepted")

BAD_DOCS = [
    (_delete(["rows", 3, "source"]), "gpu-operator-26.7.0.yml: rows[3].source: required field missing"),
    (_set(["rows", 3, "source"], ""), "gpu-operator-26.7.0.yml: rows[3].source: expected a source string"),
    (_set(["rows", 3, "source"], [""]), "gpu-operator-26.7.0.yml: rows[3].source[0]: expected a non-empty string"),
    (_delete(["rows", 0, "id"]), "gpu-operator-26.7.0.yml: rows[0].id: required field missing"),
    (_set(["rows", 0, "id"], "Bad Id"), "rows[0].id: expected dotted lower-case words"),
    (_set(["rows", 0, "severity"], "fatal"), "rows[0].severity: expected one of block, warn, info, got 'fatal'"),
    (_set(["rows", 0, "rule"], "magic"), "rows[0].rule: unknown rule 'magic'"),
    (_set(["rows", 0, "colour"], "red"), "rows[0].colour: unknown field"),
    (_delete(["rows", 0, "values"]), "rows[0].values: required field missing"),
    (_set(["rows", KR, "values", "min"], 1.33), "rows[%d].values.min: expected a version as a quoted string" % KR),
    (_set(["rows", KR, "values", "max"], "one.two"), "rows[%d].values.max: not a version string" % KR),
    (_set(["rows", KR, "values"], {}), "rows[%d].values: version_range needs min, max or both" % KR),
    (_set(["rows", KR, "values"], {"min": "1.37", "max": "1.33"}), "min 1.37 is above max 1.33"),
    (_set(["rows", KR, "constrains"], "kernel_version"), "rows[%d].constrains: rule version_range constrains one of" % KR),
    (_set(["rows", BR, "values", "branches", 1, "validated"], "580.1"), "rows[%d].values.branches[1].validated: 580.1 is not in branch 595" % BR),
    (_delete(["rows", BR, "values", "branches", 0, "branch"]), "rows[%d].values.branches[0].branch: required field missing" % BR),
    (_set(["rows", BR, "values", "branches", 0, "branch"], "610"), "rows[%d].values.branches[0].branch: expected an integer" % BR),
    (_delete(["rows", DRA, "values", "kubernetes_min"]), "rows[%d].values.kubernetes_min: required field missing" % DRA),
    (_set(["rows", DRA, "values", "cdi_required"], "yes"), "rows[%d].values.cdi_required: expected true or false" % DRA),
    (_set(["rows", 1], copy.deepcopy(_raw(RELEASE_FILE)["rows"][0])), "rows[1].id: duplicate id 'operator.lifecycle' (also rows[0])"),
    (_set(["rows"], []), "gpu-operator-26.7.0.yml: rows: expected a non-empty list"),
    (_set(["rows"], {"a": 1}), "gpu-operator-26.7.0.yml: rows: expected a list, got dict"),
    (_delete(["schema"]), "gpu-operator-26.7.0.yml: schema: required field missing"),
    (_set(["schema"], "other/v9"), "schema: expected 'gpufleet.dra_gate/compat-matrix/v1'"),
    (_set(["kind"], "patch"), "kind: expected one of release, common"),
    (_set(["release"], 26.7), "release: expected a non-empty string, got float"),
    (_set(["release"], "26.7.x"), "release: expected YY.MM or YY.MM.PP"),
    (_set(["published"], 20260821), "published: expected a quoted date string"),
    (_set(["rows", 0, "superseded"], [{"values": {}}]), "rows[0].superseded[0].source: required field missing"),
    (_set(["rows", PTA, "values", "standard_production_path"], "no"),
     "rows[%d].values.standard_production_path: expected true or false" % PTA),
    (_delete(["rows", PTA, "values", "stage"]), "rows[%d].values.stage: required field missing" % PTA),
    (_set(["rows", PTA, "values", "expires"], "2027-01-01"), "rows[%d].values.expires: unknown field" % PTA),
]


@pytest.mark.parametrize("mutate, message", BAD_DOCS)
def test_bad_release_document(mutate, message):
    with pytest.raises(MatrixError) as info:
        validate_document(_mutated(mutate), RELEASE_FILE)
    assert message in str(info.value)


CRI = [r["id"] for r in _raw("common.yml")["rows"]].index("containerd.kubernetes_tested")
SKEW = [r["id"] for r in _raw("common.yml")["rows"]].index("kubelet.skew")
BACKEND = [r["id"] for r in _raw("common.yml")["rows"]].index("backend.single_per_node")
API = [r["id"] for r in _raw("common.yml")["rows"]].index("kubernetes.dra_api")
CR_STATE = [r["id"] for r in _raw("common.yml")["rows"]].index("operator.cr_state")
STUCK = [r["id"] for r in _raw("common.yml")["rows"]].index("dra.stuck_claims")


@pytest.mark.parametrize("mutate, message", [
    (_set(["rows", CRI, "values", "table", 1.37], ["2.3.0"]), "rows[%d].values.table.1.37: key must be a quoted Kubernetes minor" % CRI),
    (_set(["rows", CRI, "values", "table", "1.37"], []), "rows[%d].values.table.1.37: expected a non-empty list" % CRI),
    (_set(["rows", CRI, "values", "table", "1.37"], ["x"]), "rows[%d].values.table.1.37[0]: not a version string" % CRI),
    (_delete(["rows", SKEW, "values", "max_older_minors"]), "rows[%d].values.max_older_minors: required field missing" % SKEW),
    (_set(["rows", SKEW, "values", "max_older_minors"], -1), "rows[%d].values.max_older_minors: expected an integer >= 0" % SKEW),
    (_set(["releases", 0, "version"], "next"), "releases[0].version: expected YY.MM, YY.MM.PP or YY.MM.x"),
    (_delete(["releases", 1, "source"]), "common.yml: releases[1].source: required field missing"),
    (_set(["operator"], "gpu-operator"), "common.yml: operator: unknown field"),
    (_delete(["rows", BACKEND, "values", "resource_name"]), "rows[%d].values.resource_name: required field missing" % BACKEND),
    (_set(["rows", BACKEND, "values", "resource"], "x"), "rows[%d].values.resource: unknown field" % BACKEND),
    (_set(["rows", API, "values", "group_version"], "resource.k8s.io"), "rows[%d].values.group_version: expected group/version" % API),
    (_set(["rows", API, "values", "requires_allocation_mode"], "mig"), "rows[%d].values.requires_allocation_mode: expected one of" % API),
    (_set(["rows", CR_STATE, "values", "ready_state"], ""), "rows[%d].values.ready_state: expected a non-empty string" % CR_STATE),
    (_set(["rows", STUCK, "values", "max_deleting_allocated"], -1), "rows[%d].values.max_deleting_allocated: expected an integer >= 0" % STUCK),
])
def test_bad_common_document(mutate, message):
    with pytest.raises(MatrixError) as info:
        validate_document(_mutated(mutate, "common.yml"), "common.yml")
    assert message in str(info.value)


@pytest.mark.parametrize("doc, message", [
    (None, "x.yml: (document): expected a mapping at the top level, got null"),
    ([1, 2], "x.yml: (document): expected a mapping at the top level, got list"),
])
def test_bad_top_level(doc, message):
    with pytest.raises(MatrixError, match=r"^" + message.replace("(", r"\(").replace(")", r"\)")):
        validate_document(doc, "x.yml")


def test_load_file_and_errors(tmp_path):
    single = load_matrix(os.path.join(MATRIX_DIR, RELEASE_FILE))
    assert [d["kind"] for d in single["documents"]] == ["release"]
    with pytest.raises(MatrixError, match="matrix path does not exist"):
        load_matrix(str(tmp_path / "nope"))
    with pytest.raises(MatrixError, match="no matrix files"):
        load_matrix(str(tmp_path))
    (tmp_path / "broken.yml").write_text("rows: [\n")
    with pytest.raises(MatrixError, match="^broken.yml: not valid YAML"):
        load_matrix(str(tmp_path))


def test_duplicate_id_across_files():
    release = validate_document(_raw(RELEASE_FILE), RELEASE_FILE)
    common = copy.deepcopy(_raw("common.yml"))
    common["rows"].append(copy.deepcopy(_raw(RELEASE_FILE)["rows"][0]))
    common = validate_document(common, "common.yml")
    with pytest.raises(MatrixError, match="common.yml: rows id 'operator.lifecycle' is also defined in gpu-operator-26.7.0.yml"):
        select_release(build_matrix_set([release, common]), "26.7.0")


def test_select_release_rejects_non_matrix():
    with pytest.raises(MatrixError, match="expected a matrix set"):
        select_release({"rows": []}, "26.7.0")


def test_rules_are_documented():
    with open(os.path.join(MATRIX_DIR, os.pardir, os.pardir, "docs", "compat-matrix.md")) as handle:
        text = handle.read()
    for rule in compat_matrix.RULES:
        assert "`%s`" % rule in text, rule


# ---- when_not_assessed, defaults, the rule-kind table ---------------------------------------------

def test_when_not_assessed_defaults_to_the_severity(bundled):
    rows = dict((row["id"], row) for doc in bundled["documents"] for row in doc["rows"] if doc["name"] != "gpu-operator-26.3.yml")
    assert rows["driver.branch"]["when_not_assessed"] == "block"
    assert rows["kubelet.skew"]["when_not_assessed"] == "block"
    assert rows["operator.cr_state"]["when_not_assessed"] == "warn"
    assert rows["backend.extended_resource_bridge"]["when_not_assessed"] == "info"
    # The explicit exceptions (docs/compat-matrix.md § When a check cannot be assessed).
    assert rows["containerd.validated_range"]["when_not_assessed"] == "warn"
    assert rows["operator.upgrade_hops"]["when_not_assessed"] == "warn"
    for doc in bundled["documents"]:
        for row in doc["rows"]:
            assert row["when_not_assessed"] in ("block", "warn", "info"), row["id"]


def test_when_not_assessed_is_validated():
    with pytest.raises(MatrixError, match=r"rows\[0\].when_not_assessed: expected one of block, warn, info, got 'maybe'"):
        validate_document(_mutated(_set(["rows", 0, "when_not_assessed"], "maybe")), RELEASE_FILE)


def test_every_row_policy_is_documented(bundled):
    """docs/compat-matrix.md lists each bundled row's when_not_assessed (the table beside the matrix)."""
    with open(os.path.join(MATRIX_DIR, os.pardir, os.pardir, "docs", "compat-matrix.md")) as handle:
        text = handle.read()
    section = text.split("## When a check cannot be assessed", 1)[1].split("\n## ", 1)[0]
    for doc in bundled["documents"]:
        for row in doc["rows"]:
            if row["rule"] in ("components", "lifecycle", "no_data", "distribution_status"):
                continue  # never not assessed, or by the rule's own row (listed as a group)
            line = [ln for ln in section.splitlines() if ln.startswith("| `%s`" % row["id"])]
            assert line, row["id"]
            assert "| %s |" % row["when_not_assessed"] in line[0] or "| %s " % row["when_not_assessed"] in line[0], (
                row["id"], line[0])


def test_default_target_release_is_data(bundled):
    assert compat_matrix.matrix_defaults(bundled) == {"target_operator_version": "26.7.0"}
    assert compat_matrix.default_target_operator_version(bundled) == "26.7.0"
    single = load_matrix(os.path.join(MATRIX_DIR, "gpu-operator-26.3.yml"))
    assert compat_matrix.default_target_operator_version(single) == "26.3"
    both = build_matrix_set([d for d in bundled["documents"] if d["kind"] == "release"])
    assert compat_matrix.default_target_operator_version(both) is None


@pytest.mark.parametrize("defaults, message", [
    ({"target_operator_version": "26.7.x"}, "common.yml: defaults.target_operator_version: expected a quoted operator release"),
    ({"target_operator_version": 26.7}, "defaults.target_operator_version: expected a non-empty string"),
    ({"operator": "26.7.0"}, "common.yml: defaults.operator: unknown field"),
    (["26.7.0"], "common.yml: defaults: expected a mapping"),
])
def test_bad_defaults(defaults, message):
    with pytest.raises(MatrixError) as info:
        validate_document(_mutated(_set(["defaults"], defaults), "common.yml"), "common.yml")
    assert message in str(info.value)


def test_two_common_files_disagreeing_on_a_default(bundled):
    other = copy.deepcopy(_raw("common.yml"))
    other["rows"] = []
    del other["releases"]
    other["defaults"] = {"target_operator_version": "26.3.2"}
    docs = list(bundled["documents"]) + [validate_document(other, "local.yml")]
    with pytest.raises(MatrixError, match="local.yml: defaults.target_operator_version '26.3.2' differs from '26.7.0'"):
        compat_matrix.matrix_defaults(build_matrix_set(docs))


def _role_literals():
    """(file, variable, literal) of every target operator version default the roles and playbooks repeat."""
    root = os.path.join(MATRIX_DIR, os.pardir, os.pardir)
    found = []
    for role in sorted(os.listdir(os.path.join(root, "roles"))):
        specs = os.path.join(root, "roles", role, "meta", "argument_specs.yml")
        if os.path.exists(specs):
            with open(specs) as handle:
                doc = yaml.safe_load(handle) or {}
            for entry in (doc.get("argument_specs") or {}).values():
                for name, option in (entry.get("options") or {}).items():
                    if name.endswith("target_operator_version") and option.get("default"):
                        found.append((specs, name, option["default"]))
        defaults = os.path.join(root, "roles", role, "defaults", "main.yml")
        if os.path.exists(defaults):
            with open(defaults) as handle:
                doc = yaml.safe_load(handle) or {}
            for name, value in doc.items():
                if name.endswith("target_operator_version") and isinstance(value, str):
                    for literal in re.findall(r"default\('([^']*)'\)", value) or ([] if "{{" in value else [value]):
                        if literal:
                            found.append((defaults, name, literal))
    return found


def test_role_defaults_equal_the_data_default(bundled):
    """Roles may repeat the default target release as a literal (argument specs need one): it must be the data's."""
    default = compat_matrix.default_target_operator_version(bundled)
    for path, name, literal in _role_literals():
        assert literal == default, "%s: %s default %r differs from data/matrix/common.yml defaults %r" % (
            path, name, literal, default)


def test_rule_kind_table():
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat import rules as compat_rules
    from ansible_collections.gpufleet.dra_gate.plugins.module_utils.compat.rule_kind import RuleKind
    assert compat_matrix.RULES is compat_rules.RULE_KINDS
    assert len(compat_rules.ORDERED_KINDS) == len(compat_rules.RULE_KINDS)
    for name, kind in compat_rules.RULE_KINDS.items():
        assert isinstance(kind, RuleKind) and kind.name == name
    assert [k.name for k in compat_rules.NODE_KINDS] == [
        "version_range", "kubelet_skew", "containerd_cri", "driver_branch", "driver_point_release", "dra_floor",
        "passthrough"]
