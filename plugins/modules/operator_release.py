#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: operator_release
short_description: Install the GPU Operator's Helm release, upgrade it by one hop, or roll it back to a recorded revision
version_added: 0.3.0
description:
  - The one Helm write of an operator upgrade hop (O(state=upgraded)), of the scripted rollback
    (O(state=rolled_back)) and of a first install (O(state=installed), the canary's), through the C(helm) CLI (production; flags chosen from its version, Helm 3
    or 4) or the Helm Go library (C(helm-python-sdk), the lab).
  - Values are never reused silently. An upgrade passes exactly the user values given (O(user_values) or
    O(user_values_file), normally the snapshot's C(values.user.json)) with O(overrides) merged over them
    (maps merge, lists and scalars replace, C(null) deletes), and Helm is told C(--reset-values) with one
    0600 values file. RV(values_diff) is what the merge changes against the captured values,
    RV(deployed_values_diff) what the release's user values change.
  - The decision starts from the newest revision of the release's history (normally the deployed one).
    An upgrade is C(unchanged) - no Helm call that writes - when that revision is C(deployed), has the
    target chart's version and exactly the merged user values. The target chart's version is read from
    the chart (C(Chart.yaml) of a directory or inside a C(.tgz)); for an C(oci://) or C(https://)
    reference it is O(chart_version).
  - O(state=installed) installs O(chart) with the merged values (C(helm install)) when Helm has no such
    release; when it has one, it decides as O(state=upgraded) does (C(unchanged) when the newest revision
    already runs that chart version and those values, else an upgrade), so a rerun changes nothing.
  - O(state=rolled_back) goes back to O(revision) - C(unchanged) when the newest revision is deployed with
    that revision's chart version and user values (it is that revision, or an earlier rollback to it);
    C(helm rollback) when the revision is in the history; otherwise (pruned, or the release is gone) the
    recorded chart O(chart) is reinstalled with the recorded values (an upgrade, or an install when the
    release is gone).
  - Waits are explicit and bounded (O(wait), O(timeout); C(--wait=watcher) on Helm 4). No
    C(--atomic)/C(--rollback-on-failure) - a failed write leaves the failed revision for the scripted
    rollback; the module fails with RV(revision_before) and the revision and status read back after the
    failure.
  - Forbidden is not absent - a 403 reading the release's storage Secrets fails the module. Transient API
    failures are retried within O(api_deadline) (writes only when refused before any change). The
    controller's C(HELM_*) environment variables are removed for both backends.
  - With O(evidence_dir), C(values.merged.json) (redacted) and C(values.diff.txt) are written there mode
    0600, before the Helm write.
  - Runs on the controller (or a delegate).
author:
  - gpufleet maintainers (@gpufleet)
options:
  state:
    description:
      - V(upgraded) - the release runs O(chart) with the merged values.
      - V(rolled_back) - the release runs what O(revision) ran.
      - V(installed) - the release exists and runs O(chart) with the merged values (installed when it does not
        exist yet).
    type: str
    choices: [upgraded, rolled_back, installed]
    default: upgraded
  release:
    description: Name of the Helm release.
    type: str
    default: gpu-operator
  namespace:
    description: Namespace of the release (where Helm keeps its storage Secrets).
    type: str
    default: gpu-operator
  chart:
    description:
      - The chart to upgrade to - a local chart directory or C(.tgz) archive, or an C(oci://) or C(https://)
        reference (then O(chart_version) is required).
      - Required for O(state=upgraded) and O(state=installed). For O(state=rolled_back), the chart
        reinstalled when O(revision) is no longer in the history (the recorded chart); not used otherwise.
    type: str
  chart_sha256:
    description:
      - The digest a local O(chart) must have (the archive's sha256 or the directory digest of
        M(gpufleet.dra_gate.operator_charts)), as the hop plan verified it.
      - When given, the chart is copied into a private temporary directory, the copy's bytes hashed as they
        are written, and Helm gets only the copy; a different digest fails the module before anything is
        read from the cluster or written, naming the path, the expected and the actual digest. Refused for
        an C(oci://) or C(https://) reference (nothing local to verify).
    type: str
  chart_version:
    description:
      - The chart's version. For a remote reference, the version it names (passed as C(--version) to an
        C(oci://) reference). For a local chart it must match C(Chart.yaml) when given.
    type: str
  user_values:
    description:
      - The captured user values of the release (C(helm get values)), as a map.
      - Mutually exclusive with O(user_values_file); one of them is required for O(state=upgraded) and
        O(state=installed). For O(state=rolled_back), the values reinstalled when O(revision) is no longer in
        the history.
    type: dict
  user_values_file:
    description:
      - A JSON or YAML file holding the captured user values, such as the snapshot's C(values.user.json).
      - Mutually exclusive with O(user_values).
    type: path
  keep_deployment:
    description:
      - For O(state=rolled_back) - the Deployment (the GPU Operator's own, C(gpu-operator)) that O(revision)'s
        manifest, as Helm stores it, must hold. A revision without it is refused before anything is written -
        rolling back to it would delete the operator the newer revision runs.
    type: str
  user_values_sha256:
    description:
      - The sha256 the artifact index recorded for O(user_values_file); the bytes read are the bytes
        checked, a different digest fails the module naming the file before anything is written.
    type: str
  overrides:
    description:
      - The operator's overrides, merged over the user values (maps merge, lists and scalars replace, a
        C(null) deletes the key so the chart's default applies).
      - Needs O(user_values) or O(user_values_file).
    type: dict
    default: {}
  redact:
    description:
      - Key names (case-insensitive, at any depth) whose values appear in RV(values), the diffs and the
        evidence only as C(<redacted sha256:...>).
    type: list
    elements: str
    default: [password, passwd, token, secret, apiKey, api_key, accessKey, secretKey, privateKey, credentials, auth,
              .dockerconfigjson]
  revision:
    description:
      - For O(state=rolled_back) (required there), the recorded revision to go back to.
    type: int
  backend:
    description:
      - How Helm is run. C(cli) runs O(helm_binary); C(library) uses the Helm Go library through
        C(helm-python-sdk); C(auto) takes the CLI when O(helm_binary) is set or C(helm) is on C($PATH), the
        library otherwise.
      - Neither can pass O(client_cert)/O(client_key) - put them in the kubeconfig.
    type: str
    choices: [auto, cli, library]
    default: auto
  helm_binary:
    description: The C(helm) executable for the CLI backend (a path, or a name looked up in C($PATH)).
    type: str
  wait:
    description:
      - Wait until the release's resources are ready (Helm 4 C(--wait=watcher), Helm 3 C(--wait)); with
        V(false) only the hooks are waited for.
    type: bool
    default: true
  timeout:
    description:
      - Seconds Helm may take for the write and its wait (C(--timeout)); the CLI is killed 60 s after it.
    type: int
    default: 600
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
  - gpufleet.dra_gate.evidence_dir
attributes:
  check_mode:
    support: full
    description:
      - Reads the release and decides; no Helm write at all (not even a dry run) and no evidence files.
        RV(action) is C(would_install), C(would_upgrade), C(would_roll_back), C(would_reinstall) or
        C(unchanged).
  diff_mode:
    support: full
    description:
      - Returns the chart name and version and the user values (redacted) of the newest revision before and
        of what the release runs after (or would run, in check mode).
requirements:
  - helm (3 or 4) for the C(cli) backend, or helm-python-sdk for the C(library) backend
  - PyYAML
notes:
  - Needs what Helm needs for the chart's objects, and get/list/create/update on the release's storage
    Secrets in O(namespace).
  - Helm does not upgrade C(crds/); run M(gpufleet.dra_gate.crd_prepare) before each upgrade.
  - O(evidence_dir) receives C(values.merged.json) (the values the release gets, redacted) and
    C(values.diff.txt) (the diffs) before the Helm write. An existing file with the same content is kept;
    one with other content fails the module before anything changes.
seealso:
  - module: gpufleet.dra_gate.helm_state
  - module: gpufleet.dra_gate.crd_prepare
  - module: gpufleet.dra_gate.operator_charts
"""

EXAMPLES = r"""
- name: Install the operator at the pinned chart (a first install; unchanged on a rerun)
  gpufleet.dra_gate.operator_release:
    state: installed
    chart: /srv/charts/gpu-operator-v26.3.1.tgz
    user_values: {}
    overrides:
      devicePlugin:
        enabled: false
  delegate_to: localhost
  run_once: true

- name: Upgrade one hop with the captured values and the operator's overrides
  gpufleet.dra_gate.operator_release:
    chart: /srv/charts/gpu-operator-v26.6.2.tgz
    user_values_file: "{{ snapshot_dir }}/values.user.json"
    overrides:
      devicePlugin:
        enabled: true
    timeout: 900
    evidence_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}/helm/hop-1"
  delegate_to: localhost
  run_once: true
  register: hop

- name: Roll back to the revision recorded before the upgrade
  gpufleet.dra_gate.operator_release:
    state: rolled_back
    revision: "{{ snapshot.summary.revision }}"
    chart: /srv/charts/gpu-operator-v26.3.1.tgz
    user_values_file: "{{ snapshot_dir }}/values.user.json"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
action:
  description: >-
    C(installed), C(upgraded), C(rolled_back), C(reinstalled), C(unchanged); in check mode C(would_install),
    C(would_upgrade), C(would_roll_back), C(would_reinstall) or C(unchanged).
  returned: always
  type: str
release:
  description: The release name.
  returned: always
  type: str
namespace:
  description: The release namespace.
  returned: always
  type: str
revision_before:
  description: The newest revision before the run (normally the deployed one); null when the release was gone.
  returned: always
  type: int
revision:
  description: The newest revision after the run (in check mode and when unchanged, RV(revision_before)).
  returned: always
  type: int
status:
  description: Helm's status of RV(revision) (C(deployed), C(failed), ...).
  returned: always
  type: str
chart:
  description:
    - The local chart used - C(source), C(kind), C(sha256) (the digest of exactly the bytes Helm read) and
      C(verified) (true when it equalled O(chart_sha256)); after a mismatch C(expected_sha256) and
      C(verified=false). Null without O(chart).
  returned: when O(chart) is given
  type: dict
chart_before:
  description: The chart of RV(revision_before) (C(name), C(version), C(app_version); nulls when the release was gone).
  returned: always
  type: dict
chart_after:
  description: The chart the release runs after the run (in check mode, would run), same keys.
  returned: always
  type: dict
values:
  description: The user values the release gets (redacted) - the merged values, or those of O(revision) for a rollback.
  returned: always
  type: dict
values_diff:
  description:
    - What the merge of O(overrides) changes against the captured user values, a list of C(path), C(before),
      C(after), C(change) (C(added), C(removed), C(changed)); empty without user values.
  returned: always
  type: list
  elements: dict
deployed_values_diff:
  description: The same from the user values of RV(revision_before) to RV(values).
  returned: always
  type: list
  elements: dict
diff_text:
  description: RV(deployed_values_diff) as a unified diff of sorted JSON (empty when nothing changes).
  returned: always
  type: str
helm:
  description: The backend that ran (C(backend) C(cli) or C(library)) and the Helm version (C(version), C(v4.2.3)).
  returned: always
  type: dict
artifacts:
  description: Paths of the evidence files written (empty without O(evidence_dir) and in check mode).
  returned: always
  type: list
  elements: str
started_at:
  description: UTC time (RFC 3339) the run started.
  returned: always
  type: str
finished_at:
  description: UTC time (RFC 3339) the run finished.
  returned: always
  type: str
duration_seconds:
  description: Seconds from RV(started_at) to RV(finished_at).
  returned: always
  type: float
helm_retries:
  description: How many Helm calls were retried after a transient API failure.
  returned: always
  type: int
removed_helm_env:
  description: Names of the controller's C(HELM_*) environment variables that were removed (never their values).
  returned: always
  type: list
  elements: str
failed_revision:
  description: On a failed Helm write, the revision it left behind when that one is not deployed.
  returned: failure
  type: int
"""

import os
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common.module_run import ModuleRun
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_library
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import helm_values
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_charts as opc
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_release as orl
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import CommandTimedOut, Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmCommandError,
    HelmForbidden,
    HelmOutputError,
    HelmRetriesExhausted,
    RetryingHelm,
    apply_helm_environment,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_library import HelmLibraryCallError
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import RetryPolicy, argspec, check_params
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import (
    ArtifactExists,
    PrivateFileError,
    write_private_files,
)

MODULE_ARG_SPEC = dict(
    state=dict(type="str", choices=["upgraded", "rolled_back", "installed"], default="upgraded"),
    release=dict(type="str", default="gpu-operator"),
    namespace=dict(type="str", default="gpu-operator"),
    chart=dict(type="str"),
    chart_sha256=dict(type="str"),
    chart_version=dict(type="str"),
    user_values=dict(type="dict"),
    user_values_file=dict(type="path"),
    user_values_sha256=dict(type="str"),
    overrides=dict(type="dict", default={}),
    redact=dict(type="list", elements="str", default=list(orl.DEFAULT_REDACT)),
    revision=dict(type="int"),
    backend=dict(type="str", choices=["auto", "cli", "library"], default="auto"),
    helm_binary=dict(type="str"),
    wait=dict(type="bool", default=True),
    timeout=dict(type="int", default=600),
    evidence_dir=dict(type="path"),
    keep_deployment=dict(type="str"),
)
HELM_ERRORS = (HelmCommandError, HelmLibraryCallError)


class Run:
    """The timing and the fields every result carries, also a failure's."""

    def __init__(self, module):
        self.module = module
        self.run = ModuleRun(module)
        self.helm = None
        self.common = {"release": module.params["release"], "namespace": module.params["namespace"],
                       "helm": {"backend": None, "version": None}, "artifacts": [], "removed_helm_env": []}

    def fields(self, extra):
        out = dict(self.common)
        out["helm_retries"] = self.helm.retries if self.helm is not None else 0
        out.update(extra)
        return self.run.timed(out)

    def fail(self, msg, **extra):
        extra.setdefault("changed", False)
        self.module.fail_json(msg=msg, **self.fields(extra))

    def exit(self, msg, **extra):
        self.module.exit_json(msg=msg, **self.fields(extra))


def check_input(module, run, chart_path=None):
    """The inputs, checked before anything is read: (chart metadata or None, merged plan or None).
    ``chart_path`` is the verified private copy of ``chart`` (operator_charts.ChartAtUse), when there is one."""
    params = module.params
    state = params["state"]
    bad = check_params(params)
    if bad:
        run.fail(bad)
    for name in ("release", "namespace"):
        if not params[name]:
            run.fail("%s: must not be empty" % name)
    if params["timeout"] <= 0:
        run.fail("timeout: must be a positive number of seconds, got %r" % params["timeout"])
    if params.get("client_cert") or params.get("client_key"):
        run.fail("client_cert/client_key cannot be passed to Helm (either backend); put the client certificate "
                 "in the kubeconfig")
    if state in ("upgraded", "installed"):
        if not params["chart"]:
            run.fail("chart: required for state=%s (a chart directory, .tgz, oci:// or https:// reference)" % state)
        if params["user_values"] is None and not params["user_values_file"]:
            run.fail("user_values or user_values_file: one is required for state=%s (values are never reused "
                     "silently; pass the captured values.user.json)" % state)
        if params["revision"] is not None:
            run.fail("revision: only for state=rolled_back")
    else:
        if params["revision"] is None:
            run.fail("revision: required for state=rolled_back (the recorded revision to go back to)")
        if params["revision"] < 1:
            run.fail("revision: must be a recorded revision (an integer >= 1), got %d" % params["revision"])
    has_values = params["user_values"] is not None or bool(params["user_values_file"])
    if params["overrides"] and not has_values:
        run.fail("overrides: need user_values or user_values_file to be merged over")
    if params["evidence_dir"] and os.path.exists(params["evidence_dir"]) and not os.path.isdir(params["evidence_dir"]):
        run.fail("evidence_dir: %s exists and is not a directory" % params["evidence_dir"])
    chart = merged = None
    try:
        if params["chart"]:
            chart = orl.chart_metadata(chart_path or params["chart"], params["chart_version"])
        if has_values:
            values = params["user_values"]
            if values is None:
                values = orl.load_values_file(params["user_values_file"], params["user_values_sha256"])
            merged = helm_values.plan(values, params["overrides"], redact=params["redact"])
    except orl.ChartError as exc:
        run.fail(str(exc))
    except helm_values.ValuesError as exc:
        text = str(exc)
        run.fail(text if text.startswith("user_values_file") else "user_values/overrides: %s" % text)
    return chart, merged


def open_helm(module, run, helm_home):
    params = module.params
    try:
        kind, backend = helm_library.open_backend(
            params["namespace"], backend=params["backend"], helm_binary=params["helm_binary"],
            run=Runner(params["api_deadline"]), kubeconfig=params.get("kubeconfig"), context=params.get("context"),
            host=params.get("host"), api_key=params.get("api_key"), ca_cert=params.get("ca_cert"),
            validate_certs=params.get("validate_certs"), proxy=params.get("proxy"), work_dir=helm_home)
    except HelmLibraryCallError as exc:
        if exc.call == "import":
            module.fail_json(msg="%s (or set backend=cli with a helm binary)" % missing_required_lib("helm-python-sdk"),
                             exception=helm_library.import_error(), **run.fields({"changed": False}))
        run.fail("opening the Helm %s backend failed: %s" % (params["backend"], exc))
    except (HelmCommandError, HelmOutputError, CommandTimedOut) as exc:
        run.fail("the helm binary cannot be used: %s" % exc)
    try:
        version = backend.version_text()
    except Exception:  # pylint: disable=broad-except  # the version is informational only
        version = None
    run.common["helm"] = {"backend": kind, "version": version}
    return backend


def write_evidence(run, directory, files):
    """The evidence files (0600); an existing one with the same content is kept, another fails."""
    try:
        return write_private_files(directory, files)  # every file checked before any is written
    except ArtifactExists as exc:
        run.fail("evidence_dir: %s (artifacts are never replaced; use a new evidence_dir); nothing was changed" % exc)
    except (IOError, OSError, PrivateFileError) as exc:
        run.fail("evidence_dir: cannot write the evidence (nothing was changed in the cluster): %s" % exc)
    return []


def decide(module, run, helm, chart, merged):
    params = module.params
    try:
        if params["state"] == "upgraded":
            return orl.plan_upgrade(helm, params["release"], params["namespace"], chart, merged)
        if params["state"] == "installed":
            return orl.plan_install(helm, params["release"], params["namespace"], chart, merged)
        return orl.plan_rollback(helm, params["release"], params["namespace"], params["revision"], chart, merged,
                                 keep_deployment=params["keep_deployment"])
    except orl.ReleaseError as exc:
        run.fail(str(exc), **exc.extra)
    except HelmForbidden as exc:
        run.fail("reading helm release %s/%s failed: %s" % (params["namespace"], params["release"], exc), forbidden=True)
    except CommandTimedOut as exc:
        run.fail("reading helm release %s/%s failed: %s" % (params["namespace"], params["release"], exc), timed_out=True)
    except (HelmCommandError, HelmLibraryCallError, HelmOutputError, HelmRetriesExhausted, ValueError) as exc:
        run.fail("reading helm release %s/%s failed: %s" % (params["namespace"], params["release"], exc))
    return None


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True,
                           mutually_exclusive=[("user_values", "user_values_file")])
    params = module.params
    run = Run(module)
    # The chart Helm reads is a private copy whose bytes were hashed against chart_sha256 (the digest
    # the hop plan verified): a chart changed on disk after the plan or the CRD step is refused here,
    # before anything is written.
    chart_use = opc.ChartAtUse(params["chart"], params["chart_sha256"])
    try:
        used = chart_use.__enter__() if params["chart"] else None
    except opc.ChartsError as exc:
        run.fail(str(exc), chart=opc.used_chart({"source": params["chart"], "sha256": params["chart_sha256"]}, exc))
    run.common["chart"] = opc.used_chart(used) if used else None
    try:
        chart, merged = check_input(module, run, used["path"] if used else None)
        plan, applied = upgrade_or_roll_back(module, run, chart, merged)
    finally:
        chart_use.__exit__(None, None, None)
    redact = params["redact"]
    result = orl.result_of(plan, applied, module.check_mode, redact)
    if module._diff:  # pylint: disable=protected-access
        result["diff"] = orl.diff_of(plan, redact)
    msg = "helm release %s/%s: %s (revision %s -> %s, chart %s -> %s)" % (
        params["namespace"], params["release"], result["action"], result["revision_before"], result["revision"],
        result["chart_before"]["version"], result["chart_after"]["version"])
    run.exit(msg, **result)


def upgrade_or_roll_back(module, run, chart, merged):
    """Plan and apply; ``(plan, applied)``."""
    params = module.params
    redact = params["redact"]

    # The controller's HELM_* variables are removed (a few pinned) before either backend runs and
    # before the Helm library is loaded (its Go runtime copies the environment at load time).
    helm_home = tempfile.mkdtemp(prefix="dra-gate-helm-")
    backend = applied = None
    try:
        run.common["removed_helm_env"] = apply_helm_environment(os.environ, helm_home)
        backend = open_helm(module, run, helm_home)
        helm = run.helm = RetryingHelm(backend, RetryPolicy(deadline=params["api_deadline"]), HELM_ERRORS,
                                       params["namespace"], params["release"])
        plan = decide(module, run, helm, chart, merged)
        if params["evidence_dir"] and not module.check_mode:
            run.common["artifacts"] = write_evidence(run, params["evidence_dir"], orl.evidence_files(plan, redact))
        try:
            applied = orl.apply_plan(helm, plan, wait=params["wait"], timeout=params["timeout"],
                                     check_mode=module.check_mode)
        except orl.ReleaseError as exc:
            extra = dict(exc.extra)
            cause = extra.pop("cause", None)
            run.fail(str(exc), changed=extra.get("revision") != plan["revision_before"],
                     forbidden=isinstance(cause, HelmForbidden), timed_out=isinstance(cause, CommandTimedOut), **extra)
    finally:
        if backend is not None:
            backend.close()
        shutil.rmtree(helm_home, ignore_errors=True)
    return plan, applied


if __name__ == "__main__":
    main()
