# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Write extensions/awx/controller_objects.yml: the AWX / Automation Platform objects of the gate - a
credential type per secret, a job template per phase with its survey, and the gate's workflow with the
approval between the canary and production - generated from the roles' meta/argument_specs.yml, their
defaults (which dra_gate_* setting each role variable reads) and meta/settings.yml, never written twice.
The file holds the variables infra.controller_configuration reads (controller_credential_types,
controller_templates, controller_workflows; awx.awx's modules take the same fields). docs/awx.md says
how to load it; tests/unit/test_awx_objects.py keeps it equal to what this script writes and checks every
survey against AWX's survey rules. Run:
``.venv/bin/python tests/tools/write_awx.py``."""

from __future__ import annotations

import os
import re
import sys

import yaml

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
OUTPUT = os.path.join(REPO, "extensions", "awx", "controller_objects.yml")
PREFIX = "gpufleet.dra_gate"
NAME = "dra_gate"
ROLE_DEFAULT = re.compile(r"^\{\{\s*(?P<setting>dra_gate_\w+)\s*\|\s*default\(")
ROLE_REF = re.compile(r"gpufleet\.dra_gate\.([a-z_]+)")

# phase -> (playbook, what it does); the order is the gate's (README, "Using it against your fleet")
PHASES = {
    "preflight": ("playbooks/preflight.yml", "Phase 1: node and cluster facts against the compatibility matrix"),
    "snapshot": ("playbooks/snapshot.yml", "Phase 2: the rollback artifacts (etcd, Helm, cluster state, node files)"),
    "upgrade": ("playbooks/upgrade_operator.yml", "Phase 3, decision 1: the GPU Operator to 26.7, Device Plugin "
                "behaviour unchanged (canary first; production only with the canary's passing evidence)"),
    "dra_canary": ("playbooks/dra_canary.yml", "Phase 4 and 5, decision 2: the DRA canary build, then the "
                   "acceptance tests"),
    "drain": ("playbooks/drain_waves.yml", "Phase 6: drain waves (cordon, evict, maintenance, uncordon, reschedule)"),
    "rollback": ("playbooks/rollback.yml", "The scripted rollback from the run's artifacts, timed to the control suite"),
    "decide": ("playbooks/decide.yml", "The gate decision over the runs' evidence, with its reports"),
}

# Secrets never go into a survey (nor a survey default): each comes from a credential whose type injects it.
CREDENTIAL_TYPES = [
    {"name": "%s Kubernetes API" % NAME, "kind": "cloud",
     "description": "The kubeconfig (and context) of one cluster of the gate, written to a private file for the job.",
     "inputs": {"fields": [
         {"id": "kubeconfig", "type": "string", "label": "Kubeconfig", "secret": True, "multiline": True},
         {"id": "context", "type": "string", "label": "Context (empty: the kubeconfig's current context)"}],
         "required": ["kubeconfig"]},
     "injectors": {"file": {"template.kubeconfig": "{{ kubeconfig }}"},
                   "extra_vars": {"dra_gate_kubeconfig": "{{ tower.filename.kubeconfig }}",
                                  "dra_gate_kube_context": "{{ context }}"}}},
    {"name": "%s Prometheus" % NAME, "kind": "cloud",
     "description": "The Prometheus the acceptance tests read the kubelet's DRA histogram and DCGM metrics from.",
     "inputs": {"fields": [
         {"id": "url", "type": "string", "label": "Prometheus URL"},
         {"id": "token", "type": "string", "label": "Bearer token", "secret": True},
         {"id": "validate_certs", "type": "boolean", "label": "Validate TLS certificates"}],
         "required": ["url"]},
     "injectors": {"extra_vars": {"dra_gate_prometheus_url": "{{ url }}", "dra_gate_prometheus_token": "{{ token }}",
                                  "dra_gate_prometheus_validate_certs": "{{ validate_certs }}"}}},
]
# setting -> the credential type that injects it
FROM_CREDENTIAL = {var: ct["name"] for ct in CREDENTIAL_TYPES for var in ct["injectors"]["extra_vars"]}
# survey question type per argument-spec type; the others (bool, list, dict, raw) are typed YAML, so they go
# into the template's extra_vars (editable at launch): a survey answer is a string or a number, and a string
# "false" is no boolean in a role's conditions
SURVEY_TYPES = {"str": "text", "path": "text", "int": "integer", "float": "float"}
TEXT_MAX = 1024
# AWX job slicing (docs/awx.md, "Sliced runs"): AWX gives each slice awx_job_id and awx_workflow_job_id (the phases'
# defaults for the slice's and the sliced job's identity), never a survey question; the slice count is the job
# template's job_slice_count, written beside it in extra_vars (1; raise both together) and only for the preflight,
# the one phase that runs sliced - every other phase and the decision refuse a count above 1.
SLICE_IDENTITY = ("dra_gate_job_slice", "dra_gate_job_slice_group")
SLICE_COUNT = "dra_gate_job_slice_count"
SLICEABLE = ("preflight",)


def load(*parts):
    with open(os.path.join(REPO, *parts), encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def roles_of(playbook: str) -> list:
    """The roles a playbook runs: every gpufleet.dra_gate.<role> it names, and those its roles' tasks name."""
    found, todo = set(), []
    with open(os.path.join(REPO, playbook), encoding="utf-8") as handle:
        todo += ROLE_REF.findall(handle.read())
    while todo:
        role = todo.pop()
        tasks = os.path.join(REPO, "roles", role, "tasks")
        if role in found or not os.path.isdir(tasks):
            continue
        found.add(role)
        for name in sorted(os.listdir(tasks)):
            with open(os.path.join(tasks, name), encoding="utf-8") as handle:
                todo += ROLE_REF.findall(handle.read())
    return sorted(found)


def role_options(role: str) -> dict:
    """setting -> the main entry point's option that reads it (the role variable's default names the setting)."""
    spec_path = os.path.join(REPO, "roles", role, "meta", "argument_specs.yml")
    defaults_path = os.path.join(REPO, "roles", role, "defaults", "main.yml")
    if not os.path.isfile(spec_path) or not os.path.isfile(defaults_path):
        return {}
    options = (load("roles", role, "meta", "argument_specs.yml")["argument_specs"].get("main") or {}).get("options") or {}
    defaults = load("roles", role, "defaults", "main.yml") or {}
    out = {}
    for variable, value in defaults.items():
        match = ROLE_DEFAULT.match(value) if isinstance(value, str) else None
        if match and variable in options:
            out[match.group("setting")] = dict(options[variable], variable=variable)
    return out


def question(setting: str, spec: dict, required: bool) -> dict:
    kind = SURVEY_TYPES[spec["type"]]
    item = {"question_name": setting[len("dra_gate_"):].replace("_", " "), "question_description": spec.get(
        "description", ""), "variable": setting, "required": required}
    default = spec.get("default")
    if spec.get("choices"):
        item.update(type="multiplechoice", choices=[str(c) for c in spec["choices"]])
        if default is not None:
            item["default"] = str(default)
    elif kind == "text":
        item.update(type="text", min=1 if required else 0, max=TEXT_MAX)
        item["default"] = "" if default is None else str(default)
    else:
        item["type"] = kind
        if default is not None and default != "":
            item["default"] = int(default) if kind == "integer" else float(default)
    return item


def template(phase: str, settings: dict) -> dict:
    playbook, description = PHASES[phase]
    roles = roles_of(playbook)
    readers = {"roles/%s" % r for r in roles} | {playbook}
    mine = sorted(s for s, spec in settings.items() if readers & set(spec.get("read_by") or []))
    required = set()
    for role in roles:
        for setting, option in role_options(role).items():
            if option.get("required"):
                required.add(setting)
    survey, extra, credentials = [], {}, set()
    for setting in mine:
        spec = settings[setting]
        if setting in SLICE_IDENTITY or (setting == SLICE_COUNT and phase not in SLICEABLE):
            continue
        if setting == SLICE_COUNT:
            extra[setting] = spec.get("default")
        elif setting in FROM_CREDENTIAL:
            credentials.add(FROM_CREDENTIAL[setting])
        elif spec["type"] in SURVEY_TYPES:
            survey.append(question(setting, spec, setting in required))
        else:
            extra[setting] = spec.get("default")
    return {
        "name": "%s %s" % (NAME, phase), "description": description, "job_type": "run",
        "project": NAME, "playbook": playbook, "inventory": "%s production" % NAME,
        "execution_environment": NAME, "credentials": sorted(credentials),
        "ask_inventory_on_launch": True, "ask_limit_on_launch": True, "ask_variables_on_launch": True,
        "ask_tags_on_launch": True, "allow_simultaneous": False, "job_slice_count": 1,
        "extra_vars": extra, "survey_enabled": bool(survey),
        "survey_spec": {"name": "%s %s" % (NAME, phase), "description": description, "spec": survey},
        "labels": [NAME, phase],
    }


# the workflow: node identifier -> (job template phase, inventory, extra data); then the links
WORKFLOW = [
    ("canary_preflight", "preflight", "upgrade canary", {"dra_gate_run_id": "canary-{{ dra_gate_gate_id }}"}),
    ("canary_snapshot", "snapshot", "upgrade canary", {"dra_gate_run_id": "canary-{{ dra_gate_gate_id }}"}),
    ("canary_upgrade", "upgrade", "upgrade canary",
     {"dra_gate_run_id": "canary-{{ dra_gate_gate_id }}", "dra_gate_upgrade_scope": "canary"}),
    ("approve_production", None, None, None),
    ("production_preflight", "preflight", "production", {"dra_gate_run_id": "prod-{{ dra_gate_gate_id }}"}),
    ("production_snapshot", "snapshot", "production", {"dra_gate_run_id": "prod-{{ dra_gate_gate_id }}"}),
    ("production_upgrade", "upgrade", "production",
     {"dra_gate_run_id": "prod-{{ dra_gate_gate_id }}", "dra_gate_upgrade_scope": "production",
      "dra_gate_canary_run_id": "canary-{{ dra_gate_gate_id }}"}),
    ("dra_preflight", "preflight", "DRA canary", {"dra_gate_run_id": "dra-{{ dra_gate_gate_id }}",
                                                  "dra_gate_target_allocation_mode": "dra"}),
    ("dra_snapshot", "snapshot", "DRA canary", {"dra_gate_run_id": "dra-{{ dra_gate_gate_id }}"}),
    ("dra_canary_build", "dra_canary", "DRA canary", {"dra_gate_run_id": "dra-{{ dra_gate_gate_id }}",
                                                      "dra_gate_canary_acceptance": False}),
    ("dra_acceptance", "dra_canary", "DRA canary", {"dra_gate_run_id": "dra-{{ dra_gate_gate_id }}"}),
    ("drain_waves", "drain", "production", {"dra_gate_run_id": "prod-{{ dra_gate_gate_id }}"}),
    ("rollback_rehearsal", "rollback", "production", {"dra_gate_run_id": "prod-{{ dra_gate_gate_id }}",
                                                      "dra_gate_rollback_reason": "rehearsal"}),
    ("decide", "decide", "production", {
        "dra_gate_decision_id": "gate-{{ dra_gate_gate_id }}",
        "dra_gate_decision_policy": "{{ playbook_dir }}/../inventories/gate_policy.yml",
        "dra_gate_decision_runs": [{"evidence_root": "{{ dra_gate_evidence_root }}", "run_id": "%s-{{ dra_gate_gate_id }}"
                                    % run} for run in ("canary", "prod", "dra")]}),
]


def workflow() -> dict:
    nodes = []
    for number, (identifier, phase, inventory, data) in enumerate(WORKFLOW):
        after = [WORKFLOW[number + 1][0]] if number + 1 < len(WORKFLOW) else []
        if phase is None:
            node = {"identifier": identifier, "approval_node": {
                "name": "%s: promote the operator upgrade to production" % NAME,
                "description": "The canary's upgrade evidence (canary-<gate id>) passed; approve to upgrade production.",
                "timeout": 86400}}
        else:
            node = {"identifier": identifier, "unified_job_template": {"name": "%s %s" % (NAME, phase),
                                                                       "type": "job_template"},
                    "inventory": "%s %s" % (NAME, inventory), "extra_data": data}
        # the rollback rehearsal and the decision run whatever came before: a failed phase is evidence too
        key = "always_nodes" if identifier in ("drain_waves", "rollback_rehearsal") else "success_nodes"
        node["related"] = {key: [{"identifier": i} for i in after]}
        nodes.append(node)
    return {
        "name": "%s gate" % NAME, "description": "The whole gate: decision 1 (the operator upgrade, canary then "
        "production behind an approval), decision 2 (the DRA canary and its acceptance), drain waves, the rollback "
        "rehearsal, the decision.", "allow_simultaneous": False, "ask_variables_on_launch": False,
        "survey_enabled": True, "survey_spec": {"name": "%s gate" % NAME, "description": "The gate run.", "spec": [
            {"question_name": "gate id", "question_description": "Names this gate's three runs (canary-<id>, prod-<id>, "
             "dra-<id>) and its decision (gate-<id>): letters, digits, ._-", "variable": "dra_gate_gate_id",
             "type": "text", "required": True, "min": 1, "max": 100, "default": ""}]},
        "workflow_nodes": nodes,
    }


def objects() -> dict:
    settings = load("meta", "settings.yml")["settings"]
    return {"controller_credential_types": CREDENTIAL_TYPES,
            "controller_templates": [template(phase, settings) for phase in PHASES],
            "controller_workflows": [workflow()]}


class _Dumper(yaml.SafeDumper):
    """Block sequences indented under their key, as yamllint (ansible-lint's yaml rule) wants them."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def render() -> str:
    head = ("---\n# Generated by tests/tools/write_awx.py from roles/*/meta/argument_specs.yml, roles/*/defaults and "
            "meta/settings.yml:\n# do not edit (docs/awx.md says how to load it into AWX or Automation Platform).\n")
    return head + yaml.dump(objects(), Dumper=_Dumper, sort_keys=False, width=120, allow_unicode=True)


def main() -> int:
    os.makedirs(os.path.dirname(OUTPUT), exist_ok=True)
    with open(OUTPUT, "w", encoding="utf-8") as handle:
        handle.write(render())
    print(OUTPUT)
    return 0


if __name__ == "__main__":
    sys.exit(main())
