# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""claim_lifecycle runs through ansible-playbook against a lab (kubelab.testing.Lab with ``core`` and ``custom``
kubernetes clients), shared by the DRA contract tests (test_dra_acceptance.py, test_dra_scale.py): the play,
its result, the records it streamed, the lab's truth of the run and what the run left in the namespace."""

from __future__ import annotations

import json
import os

import yaml

from kubelab.controllers.dra import truth_list

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
RUN_LABEL = "gpufleet.io/dra-acceptance-run"


def playbook_text(args: dict, out: str) -> str:
    return yaml.safe_dump([{
        "name": "claim lifecycles", "hosts": "localhost", "gather_facts": False,
        "tasks": [
            {"name": "Run", "gpufleet.dra_gate.claim_lifecycle": args, "register": "result", "ignore_errors": True},
            {"name": "Keep the result", "ansible.builtin.copy": {"content": "{{ result | to_json }}", "dest": out,
                                                                 "mode": "0600"}}]}])


def lifecycles(lab, tmp_path, run_id, namespace, timeout=500, **args):
    """Run claim_lifecycle (``args`` over the tests' defaults) through ansible-playbook; its result, failed or not."""
    evidence = tmp_path / "evidence"
    evidence.mkdir(mode=0o700, exist_ok=True)
    base = {"kubeconfig": lab.kubeconfig, "run_id": run_id, "namespace": namespace, "evidence_dir": str(evidence),
            "delete_grace_seconds": 0, "lifecycle_timeout": 30, "cleanup_timeout": 30, "progress_every": 0}
    base.update(args)
    out = str(tmp_path / ("result-%s.json" % run_id))
    proc = lab.run_playbook(playbook_text(base, out), tmp_path, name="play-%s.yml" % run_id, timeout=timeout,
                            ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    assert os.path.exists(out), proc.stdout[-4000:] + proc.stderr[-2000:]
    with open(out) as handle:
        result = json.load(handle)
    result["_stdout"] = proc.stdout
    return result


def records(result):
    with open(result["records_path"]) as handle:
        return [json.loads(line) for line in handle]


def truth_of(lab, namespace, run_id):
    prefix = "dra-gate-%s-" % run_id
    return [t for t in truth_list(lab.server)
            if t["namespace"] == namespace and (t["pod"] or t["claim"] or "").startswith(prefix)]


def nothing_left(lab, namespace, run_id):
    """No pod, claim or claim template of the run in ``namespace`` (by its label, or owned by its pods)."""
    selector = "%s=%s" % (RUN_LABEL, run_id)
    pods = lab.core.list_namespaced_pod(namespace, label_selector=selector).items
    claims = [c for c in lab.custom.list_namespaced_custom_object("resource.k8s.io", "v1", namespace,
                                                                  "resourceclaims")["items"]
              if any(r.get("name", "").startswith("dra-gate-%s-" % run_id) for r in c["metadata"].get("ownerReferences") or [])
              or (c["metadata"].get("labels") or {}).get(RUN_LABEL) == run_id]
    templates = lab.custom.list_namespaced_custom_object("resource.k8s.io", "v1", namespace, "resourceclaimtemplates",
                                                         label_selector=selector)["items"]
    return not pods and not claims and not templates
