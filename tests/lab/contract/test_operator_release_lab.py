# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Contract: gpufleet.dra_gate.operator_release run through ansible-playbook against the lab.

Scenario ``operator-upgrade``; the operator-shaped test chart v26.3.1 is installed with the Helm
library (as test_operator_upgrade_lab.py does) with user values, then the module (library backend:
the lab has no helm binary) upgrades to v26.6.2 from its .tgz with overrides merged over the captured
values (revision 2, the values diff returned and written 0600 as evidence, secrets redacted), a rerun
is unchanged (no new revision), check mode towards v26.7.0 writes nothing, a rollback to revision 1
makes revision 3 with chart v26.3.1 and revision 1's values, and a second rollback is unchanged. A
release that does not exist is an error naming it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import stat
import textwrap

import pytest

helm_python = pytest.importorskip("helm_python", reason="helm-python-sdk is not installed")

import operator_charts  # noqa: E402  tests/ is on pytest's pythonpath (pytest.ini)
from kubelab.testing import start_lab, stop_lab  # noqa: E402

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
COLLECTIONS = os.path.join(REPO, ".cache", "collections")
NAMESPACE = "gpu-operator"
USER_VALUES = {"daemonsets": {"labels": {"fleet": "lab"}}, "ngc": {"apiKey": "s3cret-key"}}
OVERRIDES = {"daemonsets": {"labels": {"hop": "two"}}}

PLAYBOOK = textwrap.dedent("""\
    - hosts: localhost
      gather_facts: false
      module_defaults:
        gpufleet.dra_gate.operator_release:
          kubeconfig: "{{ lookup('ansible.builtin.env', 'KUBECONFIG') }}"
          backend: library
          timeout: 120
          api_deadline: 30
      tasks:
        - name: Upgrade to 26.6.2
          gpufleet.dra_gate.operator_release:
            chart: "{{ chart_2662 }}"
            user_values: "{{ user_values }}"
            overrides: "{{ overrides }}"
            evidence_dir: "{{ evidence }}"
          diff: true
          register: upgraded
        - name: Again
          gpufleet.dra_gate.operator_release:
            chart: "{{ chart_2662 }}"
            user_values: "{{ user_values }}"
            overrides: "{{ overrides }}"
          register: again
        - name: Check mode towards 26.7.0
          gpufleet.dra_gate.operator_release:
            chart: "{{ chart_2670 }}"
            user_values_file: "{{ values_file }}"
          check_mode: true
          diff: true
          register: checked
        - name: Roll back to revision 1
          gpufleet.dra_gate.operator_release:
            state: rolled_back
            revision: 1
          register: rolled
        - name: Roll back again
          gpufleet.dra_gate.operator_release:
            state: rolled_back
            revision: 1
          register: rolled_again
        - name: A release that is not there
          gpufleet.dra_gate.operator_release:
            release: no-such-release
            chart: "{{ chart_2662 }}"
            user_values: {}
          register: missing
          ignore_errors: true
        - name: Keep the results
          ansible.builtin.copy:
            content: "{{ {'upgraded': upgraded, 'again': again, 'checked': checked, 'rolled': rolled,
                          'rolled_again': rolled_again, 'missing': missing} | to_json }}"
            dest: "{{ out }}"
            mode: "0600"
    """)


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    work = str(tmp_path_factory.mktemp("operator-release"))
    cluster = start_lab(work, "operator-upgrade")
    yield cluster
    stop_lab(cluster)
    errors = list(cluster.server.controller_errors)
    shutil.rmtree(work, ignore_errors=True)
    assert not errors, "controller errors: %s" % errors[:5]


def test_upgrade_rerun_check_and_rollback(lab, tmp_path):
    charts = str(tmp_path / "charts")
    chart_2631 = operator_charts.write_chart(charts, "26.3.1")
    helm = helm_python.Config(kubeconfig_path=lab.kubeconfig, namespace=NAMESPACE, storage_driver="secret")
    helm.install(chart_2631, "gpu-operator", values=USER_VALUES, namespace=NAMESPACE, wait="watcher", timeout=120)
    values_file = tmp_path / "values.user.json"
    values_file.write_text(json.dumps(USER_VALUES))
    os.chmod(str(values_file), 0o600)
    evidence, out = tmp_path / "evidence", tmp_path / "results.json"
    extra = {"chart_2662": operator_charts.chart_archive(charts, "26.6.2"),
             "chart_2670": operator_charts.write_chart(charts, "26.7.0"), "values_file": str(values_file),
             "user_values": USER_VALUES, "overrides": OVERRIDES, "evidence": str(evidence), "out": str(out)}
    (tmp_path / "vars.json").write_text(json.dumps(extra))
    proc = lab.run_playbook(PLAYBOOK.replace("- hosts: localhost", "- hosts: localhost\n  vars_files: [vars.json]", 1),
                            tmp_path, ANSIBLE_COLLECTIONS_PATH=COLLECTIONS)
    assert proc.returncode == 0, proc.stdout[-6000:] + proc.stderr[-2000:]
    results = json.loads(out.read_text())

    up = results["upgraded"]
    assert (up["changed"], up["action"], up["revision_before"], up["revision"], up["status"]) == (
        True, "upgraded", 1, 2, "deployed"), up
    assert up["chart_before"] == {"name": "gpu-operator", "version": "v26.3.1", "app_version": "v26.3.1"}
    assert up["chart_after"] == {"name": "gpu-operator", "version": "v26.6.2", "app_version": "v26.6.2"}
    assert up["values_diff"] == [{"path": "daemonsets.labels.hop", "before": None, "after": "two", "change": "added"}]
    assert up["deployed_values_diff"] == up["values_diff"]
    assert up["values"]["daemonsets"] == {"labels": {"fleet": "lab", "hop": "two"}}
    assert up["values"]["ngc"]["apiKey"].startswith("<redacted sha256:") and "s3cret" not in json.dumps(up)
    assert up["helm"]["backend"] == "library" and up["helm"]["version"].startswith("v4.")
    assert up["started_at"].endswith("Z") and up["duration_seconds"] > 0
    assert "v26.6.2" in up["diff"]["after"] and "v26.3.1" in up["diff"]["before"]
    assert sorted(os.path.basename(p) for p in up["artifacts"]) == ["values.diff.txt", "values.merged.json"]
    for path in up["artifacts"]:
        assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
        assert "s3cret" not in open(path).read()
    assert json.loads((evidence / "values.merged.json").read_text())["daemonsets"]["labels"]["hop"] == "two"
    assert '+      "hop": "two"' in (evidence / "values.diff.txt").read_text()
    merged = helm.get_values("gpu-operator", revision=2)
    assert merged == {"daemonsets": {"labels": {"fleet": "lab", "hop": "two"}}, "ngc": {"apiKey": "s3cret-key"}}

    again = results["again"]
    assert (again["changed"], again["action"], again["revision_before"], again["revision"]) == (False, "unchanged", 2, 2)
    assert again["artifacts"] == [] and again["deployed_values_diff"] == []

    checked = results["checked"]
    assert (checked["changed"], checked["action"], checked["revision"]) == (True, "would_upgrade", 2)
    assert checked["chart_after"]["version"] == "v26.7.0" and checked["artifacts"] == []
    # the captured values without the override: the override's label would go
    assert checked["deployed_values_diff"] == [{"path": "daemonsets.labels.hop", "before": "two", "after": None,
                                                "change": "removed"}]
    assert "v26.7.0" in checked["diff"]["after"]

    rolled = results["rolled"]
    assert (rolled["changed"], rolled["action"], rolled["revision_before"], rolled["revision"], rolled["status"]) == (
        True, "rolled_back", 2, 3, "deployed"), rolled
    assert rolled["chart_after"]["version"] == "v26.3.1"
    again = results["rolled_again"]
    assert (again["changed"], again["action"], again["revision"]) == (False, "unchanged", 3)

    missing = results["missing"]
    assert missing["failed"] and "gpu-operator/no-such-release not found" in missing["msg"], missing["msg"]

    history = [(int(r["revision"]), str(r["status"]), r["chart_version"]) for r in helm.history("gpu-operator")]
    assert history == [(1, "superseded", "v26.3.1"), (2, "superseded", "v26.6.2"), (3, "deployed", "v26.3.1")]
    assert helm.get_values("gpu-operator", revision=3) == USER_VALUES
