# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""extensions/awx/controller_objects.yml: what tests/tools/write_awx.py writes from the roles' argument specs
(never edited by hand), every survey valid by AWX's survey rules (the checks of AWX's
JobTemplateSurveySpec._validate_spec_data, and the UI's: a choice default among the choices, a default within
min/max), every role option that reads a dra_gate_* setting present in its phase's job template with the
argument spec's type, choices and required, no secret in a survey, and the workflow the gate's order with the
approval between the canary and production."""

from __future__ import annotations

import os
import re
import sys

import pytest
import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.join(REPO, "tests", "tools"))
import write_awx  # noqa: E402  pylint: disable=wrong-import-position

# AWX's question types and the JSON type of their default (JobTemplateSurveySpec.ALLOWED_TYPES)
ALLOWED = {"text": str, "textarea": str, "password": str, "multiplechoice": str, "multiselect": str,
           "integer": int, "float": (float, int)}
VARIABLE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
SECRET = re.compile(r"kubeconfig|token|password|secret|kube_context")


@pytest.fixture(scope="module")
def objects():
    with open(write_awx.OUTPUT, encoding="utf-8") as handle:
        text = handle.read()
    assert text == write_awx.render(), "extensions/awx/controller_objects.yml is stale: run tests/tools/write_awx.py"
    return yaml.safe_load(text)


def survey_problems(survey: dict) -> list:
    problems = []
    for field, kind in (("name", str), ("description", str), ("spec", list)):
        if not isinstance(survey.get(field), kind):
            problems.append("%s: expected %s" % (field, kind.__name__))
    if problems:
        return problems
    if not survey["spec"]:
        problems.append("'spec' doesn't contain any items")
    seen = set()
    for index, item in enumerate(survey["spec"]):
        where = "spec[%d]" % index
        for field in ("type", "question_name", "variable", "required"):
            if field not in item:
                problems.append("%s: '%s' missing" % (where, field))
            elif not isinstance(item[field], bool if field == "required" else str):
                problems.append("%s: '%s' of the wrong type" % (where, field))
        if item.get("type") not in ALLOWED:
            problems.append("%s: type %r is no AWX question type" % (where, item.get("type")))
            continue
        if not VARIABLE.match(item.get("variable", "")):
            problems.append("%s: variable %r is no variable name" % (where, item.get("variable")))
        if item["variable"] in seen:
            problems.append("%s: variable %s twice" % (where, item["variable"]))
        seen.add(item["variable"])
        if "default" in item and (not isinstance(item["default"], ALLOWED[item["type"]])
                                  or isinstance(item["default"], bool)):
            problems.append("%s: default %r is not a %s" % (where, item["default"], item["type"]))
        for key in ("min", "max"):
            if key in item and item[key] is not None and (not isinstance(item[key], int) or isinstance(item[key], bool)):
                problems.append("%s: %s is not an integer" % (where, key))
        if item["type"] in ("multiplechoice", "multiselect"):
            if not item.get("choices") or not all(isinstance(c, str) for c in item["choices"]):
                problems.append("%s: %s needs choices (strings)" % (where, item["type"]))
            elif item.get("default") not in (None, "") and item["default"] not in item["choices"]:
                problems.append("%s: default %r is not one of the choices" % (where, item["default"]))
        default = item.get("default")
        if default not in (None, "") and item["type"] in ("text", "textarea", "password"):
            if len(default) < item.get("min", 0) or ("max" in item and len(default) > item["max"]):
                problems.append("%s: the default's length is outside min/max" % where)
        if isinstance(default, (int, float)) and not isinstance(default, bool) and item["type"] in ("integer", "float"):
            if ("min" in item and default < item["min"]) or ("max" in item and default > item["max"]):
                problems.append("%s: the default is outside min/max" % where)
        if item["type"] == "password" and default not in (None, ""):
            problems.append("%s: a password question has a default" % where)
        if item.get("required") and item["type"] == "text" and item.get("min", 0) < 1:
            problems.append("%s: a required text question accepts an empty answer" % where)
    return problems


def test_the_survey_rules_catch_what_awx_refuses():
    item = {"question_name": "q", "variable": "v", "required": False, "type": "integer", "default": 3, "min": 0, "max": 5}
    good = {"name": "n", "description": "d", "spec": [item]}
    assert survey_problems(good) == []
    for change, problem in (
            (lambda s: s.update(spec=[]), "doesn't contain any items"),
            (lambda s: s["spec"][0].update(type="number"), "no AWX question type"),
            (lambda s: s["spec"][0].update(default="3"), "is not a integer"),
            (lambda s: s["spec"][0].update(default=9), "outside min/max"),
            (lambda s: s["spec"][0].update(type="multiplechoice", default="c", choices=["a", "b"]), "not one of"),
            (lambda s: s["spec"].append(dict(s["spec"][0])), "twice"),
            (lambda s: s["spec"][0].update(variable="not-a-var"), "no variable name"),
            (lambda s: s["spec"][0].pop("required"), "'required' missing")):
        survey = yaml.safe_load(yaml.safe_dump(good))
        change(survey)
        assert any(problem in p for p in survey_problems(survey)), (problem, survey_problems(survey))


def test_every_survey_is_valid_by_awx_rules(objects):
    surveys = [t["survey_spec"] for t in objects["controller_templates"]] + \
        [w["survey_spec"] for w in objects["controller_workflows"]]
    for survey in surveys:
        assert survey_problems(survey) == [], (survey["name"], survey_problems(survey))


def test_no_secret_is_asked_in_a_survey(objects):
    for item in objects["controller_templates"]:
        for question in item["survey_spec"]["spec"]:
            assert not SECRET.search(question["variable"]), question["variable"]
        for name in item["extra_vars"]:
            assert not SECRET.search(name), name
    injected = {var for ct in objects["controller_credential_types"] for var in ct["injectors"]["extra_vars"]}
    assert {"dra_gate_kubeconfig", "dra_gate_prometheus_token"} <= injected
    for ct in objects["controller_credential_types"]:
        for field in ct["inputs"]["fields"]:
            if field["id"] in ("kubeconfig", "token"):
                assert field["secret"] is True


@pytest.mark.parametrize("phase", list(write_awx.PHASES))
def test_every_role_option_is_in_its_phase_template_with_its_type(objects, phase):
    template = [t for t in objects["controller_templates"] if t["name"] == "dra_gate %s" % phase][0]
    survey = {q["variable"]: q for q in template["survey_spec"]["spec"]}
    injected = {var: ct["name"] for ct in objects["controller_credential_types"]
                for var in ct["injectors"]["extra_vars"]}
    playbook = write_awx.PHASES[phase][0]
    roles = write_awx.roles_of(playbook)
    assert roles or phase == "decide", phase
    checked = 0
    # the settings the playbook reads itself (play keywords, a playbook without a role)
    for setting, spec in write_awx.load("meta", "settings.yml")["settings"].items():
        if playbook in (spec.get("read_by") or []):
            checked += 1
            if setting == write_awx.SLICE_COUNT and phase not in write_awx.SLICEABLE:
                # the decision refuses a sliced job: its template never offers the count (job_slice_count stays 1)
                assert setting not in survey and setting not in template["extra_vars"], (phase, setting)
                assert template["job_slice_count"] == 1, phase
                continue
            assert setting in survey or setting in template["extra_vars"] or setting in injected, (phase, setting)
    for role in roles:
        for setting, option in write_awx.role_options(role).items():
            checked += 1
            where = "%s: roles/%s option %s (%s)" % (phase, role, option["variable"], setting)
            if setting in injected:
                assert injected[setting] in template["credentials"], where
                continue
            kind = option.get("type", "str")
            if kind in write_awx.SURVEY_TYPES:
                assert setting in survey, where
                question = survey[setting]
                if option.get("choices"):
                    assert question["type"] == "multiplechoice", where
                    assert question["choices"] == [str(c) for c in option["choices"]], where
                else:
                    assert question["type"] == write_awx.SURVEY_TYPES[kind], where
                assert question["required"] is bool(option.get("required")), where
            else:
                assert setting in template["extra_vars"] and setting not in survey, where
    assert checked, phase


def test_the_workflow_is_the_gate_in_order_with_an_approval_before_production(objects):
    (flow,) = objects["controller_workflows"]
    nodes = {n["identifier"]: n for n in flow["workflow_nodes"]}
    assert len(nodes) == len(flow["workflow_nodes"])
    names = {t["name"] for t in objects["controller_templates"]}
    order, node = [], flow["workflow_nodes"][0]
    while node:
        order.append(node["identifier"])
        links = [link["identifier"] for key in ("success_nodes", "always_nodes", "failure_nodes")
                 for link in node["related"].get(key, [])]
        assert all(link in nodes for link in links), node
        node = nodes[links[0]] if links else None
    assert order == [n["identifier"] for n in flow["workflow_nodes"]]
    phases = [nodes[i]["unified_job_template"]["name"].split()[1] if "unified_job_template" in nodes[i] else "approval"
              for i in order]
    assert phases == ["preflight", "snapshot", "upgrade", "approval", "preflight", "snapshot", "upgrade", "preflight",
                      "snapshot", "dra_canary", "dra_canary", "drain", "rollback", "decide"]
    for identifier in order:
        if "unified_job_template" in nodes[identifier]:
            assert nodes[identifier]["unified_job_template"]["name"] in names, identifier
    assert nodes["production_upgrade"]["extra_data"]["dra_gate_upgrade_scope"] == "production"
    assert nodes["approve_production"]["approval_node"]["timeout"] > 0
    # each cluster's run id is the same on each of its nodes; the decision reads all three
    runs = {nodes[i]["inventory"]: set() for i in order if "inventory" in nodes[i]}
    for i in order:
        if "dra_gate_run_id" in (nodes[i].get("extra_data") or {}):
            runs[nodes[i]["inventory"]].add(nodes[i]["extra_data"]["dra_gate_run_id"])
    assert all(len(ids) == 1 for ids in runs.values()), runs
    decided = {r["run_id"] for r in nodes["decide"]["extra_data"]["dra_gate_decision_runs"]}
    assert decided == set().union(*runs.values())


def test_only_the_preflight_template_carries_the_slice_count_and_no_survey_asks_a_slice(objects):
    """AWX job slicing (docs/awx.md, "Sliced runs"): the slice's and the sliced job's identities come from AWX
    (awx_job_id, awx_workflow_job_id), never a survey; the count sits beside job_slice_count on the preflight's
    template only, both 1 until the user raises both."""
    for template in objects["controller_templates"]:
        asked = {q["variable"] for q in template["survey_spec"]["spec"]}
        assert not asked & {"dra_gate_job_slice", "dra_gate_job_slice_group", "dra_gate_job_slice_count"}, template["name"]
        assert template["job_slice_count"] == 1
        sliced = template["name"] == "dra_gate preflight"
        assert ("dra_gate_job_slice_count" in template["extra_vars"]) is sliced, template["name"]
        if sliced:
            assert template["extra_vars"]["dra_gate_job_slice_count"] == template["job_slice_count"]
