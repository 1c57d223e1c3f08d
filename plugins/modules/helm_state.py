#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: helm_state
short_description: Capture a Helm release's state as verified rollback artifacts
version_added: 0.2.0
description:
  - Captures, for one Helm release, what a rollback needs besides the chart - the history (every
    revision with status, chart, app version, description and time), the user-supplied and the
    computed values of one revision (the deployed one by default), its rendered manifest, its notes,
    the chart name and version, the container images the manifest names and the image digests
    (C(imageID)) the release's running pods report.
  - Writes them as files into a new directory C(<dest>/<release>-<UTC timestamp>-rev<N>/) (mode
    0700) - C(history.json), C(values.user.json), C(values.all.json), C(manifest.yaml), C(notes.txt),
    C(chart.json), C(images.json), each mode 0600, plus C(index.json) listing them with their sha256.
    A rerun writes a new directory and never overwrites one.
  - Values may hold secrets - the module never returns file contents, only paths, sizes and sha256s.
  - Reads through the C(helm) CLI (what operators have in production; flags chosen from its
    version, Helm 3 or 4) or the Helm library (C(helm-python-sdk)); the pods through the
    C(kubernetes) Python client.
  - The controller's C(HELM_*) environment variables never change what is read - every one is
    removed and C(HELM_DRIVER=secret), C(HELM_NO_PLUGINS=1) and empty private C(HELM_CACHE_HOME),
    C(HELM_CONFIG_HOME), C(HELM_DATA_HOME) are pinned, for both backends (the decision per variable is
    in docs/helm-state.md). C(removed_helm_env) names the variables that were removed.
  - Forbidden is not absent - when Helm may not read the release's storage Secrets (HTTP 403) the
    module fails naming them; only a release with no storage Secret at all is "not found".
  - Transient API failures that Helm reports (429, 5xx, connection refused or reset) are retried
    within O(api_deadline); a C(helm) command that runs past O(timeout) is killed and the module
    fails naming the command and the deadline.
  - Files are written crash-safe (a temporary file in the same directory, fsync, then linked to its
    final name, so an existing artifact is never replaced).
  - Runs on the controller (or a delegate).
author:
  - gpufleet maintainers (@gpufleet)
options:
  release:
    description: Name of the Helm release.
    type: str
    required: true
  namespace:
    description: Namespace of the release (where Helm keeps its storage Secrets).
    type: str
    default: default
  dest:
    description:
      - Directory under which the capture's own directory is created. Created with mode 0700 when
        it does not exist.
    type: path
    required: true
  backend:
    description:
      - How Helm is read. C(cli) runs O(helm_binary); C(library) uses the Helm Go library through
        C(helm-python-sdk); C(auto) takes the library when it can be imported, else the CLI.
      - The CLI backend cannot pass O(client_cert)/O(client_key) (Helm has no such flags) - put them
        in the kubeconfig. Neither can the library.
    type: str
    choices: [auto, cli, library]
    default: auto
  helm_binary:
    description: The C(helm) executable for the C(cli) backend; a name is looked up in C($PATH).
    type: str
    default: helm
  revision:
    description:
      - The revision whose values, manifest, notes and chart are captured. The history is always
        captured whole.
      - By default the newest revision with status C(deployed); the module fails when there is none.
    type: int
  max_revisions:
    description: At most this many of the newest revisions in the history (C(helm history --max)).
    type: int
    default: 256
  timeout:
    description:
      - Seconds each C(helm) command of the C(cli) backend may run; past it, its whole process group is
        killed and the module fails naming the command and the deadline.
    type: float
    default: 120
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description: Reads everything and reports the directory, files, sizes and sha256s it would write; writes nothing.
  diff_mode:
    support: full
    description:
      - Returns the files the run adds (path, sha256, size), before empty - every run adds a new directory
        and never changes a file. No content is shown (values may hold secrets).
requirements:
  - helm (3 or 4) for the C(cli) backend, or helm-python-sdk for the C(library) backend
notes:
  - Always reports C(changed=true) (a new directory per run; in check mode, the directory it would write).
  - The image digests are those of the pods running now, whichever revision is captured.
  - Pods belong to the release when their controller (through its ReplicaSet for a Deployment) is a
    workload of the manifest, or when they carry the label C(app.kubernetes.io/instance) or C(release)
    with the release's name.
seealso:
  - module: gpufleet.dra_gate.gpu_cluster_facts
"""

EXAMPLES = r"""
- name: Capture the GPU Operator's Helm state before the upgrade
  gpufleet.dra_gate.helm_state:
    release: gpu-operator
    namespace: gpu-operator
    dest: /var/lib/dra-gate/artifacts/helm
    kubeconfig: /etc/gpufleet/kubeconfig
  register: helm_state

- name: With the helm CLI of the bastion, for an older revision
  gpufleet.dra_gate.helm_state:
    release: gpu-operator
    namespace: gpu-operator
    dest: /var/lib/dra-gate/artifacts/helm
    backend: cli
    helm_binary: /usr/local/bin/helm
    revision: 3

- name: Show what was captured (paths and digests only)
  ansible.builtin.debug:
    msg: "{{ helm_state.artifacts | map(attribute='path') | list }}"
"""

RETURN = r"""
directory:
  description: The capture's directory (in check mode, the one it would create).
  returned: always
  type: str
  sample: /var/lib/dra-gate/artifacts/helm/gpu-operator-20260901T101500Z-rev2
index:
  description: Path of C(index.json) in O(dest)'s new directory.
  returned: always
  type: str
artifacts:
  description: The files written (or that would be written), never their contents.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Absolute path of the file.
      type: str
    kind:
      description: >-
        C(helm-history), C(helm-values-user), C(helm-values-all), C(helm-manifest), C(helm-notes),
        C(helm-chart) or C(helm-images).
      type: str
    sha256:
      description: SHA-256 of the file's bytes.
      type: str
    size:
      description: Size in bytes.
      type: int
    source:
      description: What it was captured from, C(helm release <namespace>/<name> rev <N>).
      type: str
    verify:
      description: A shell command that exits 0 when the file still has this sha256.
      type: str
summary:
  description: The captured revision.
  returned: always
  type: dict
  contains:
    release:
      description: Release name.
      type: str
    namespace:
      description: Release namespace.
      type: str
    revision:
      description: The captured revision.
      type: int
    status:
      description: Its status (C(deployed), C(superseded), C(failed), ...).
      type: str
    chart:
      description: Chart name.
      type: str
    version:
      description: Chart version.
      type: str
    app_version:
      description: The chart's app version.
      type: str
    revisions:
      description: Number of revisions in the captured history.
      type: int
    image_count:
      description: Distinct images named by the manifest's workloads.
      type: int
    digest_count:
      description: Distinct image digests reported by the release's running pods.
      type: int
backend:
  description: The backend that ran (C(cli) or C(library)) and the Helm version (C(v4.2.3)).
  returned: always
  type: dict
removed_helm_env:
  description: Names of the controller's C(HELM_*) environment variables that were removed (never their values).
  returned: always
  type: list
  elements: str
helm_retries:
  description: How many Helm calls were retried after a transient API failure.
  returned: always
  type: int
"""

import datetime
import hashlib
import json
import os
import shlex
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule, missing_required_lib

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers import helm_library
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.command_runner import CommandTimedOut, Runner
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_cli import (
    HelmCli,
    HelmCommandError,
    HelmForbidden,
    HelmOutputError,
    HelmRetriesExhausted,
    RetryingHelm,
    apply_helm_environment,
    connection_env,
    image_digest,
    manifest_images,
    manifest_objects,
    split_chart,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.wrappers.helm_library import (
    HelmLibrary,
    HelmLibraryCallError,
    library_version,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    RetryPolicy,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import (
    PrivateFileError,
    make_new_dir,
    write_private,
)

MODULE_ARG_SPEC = dict(
    release=dict(type="str", required=True),
    namespace=dict(type="str", default="default"),
    dest=dict(type="path", required=True),
    backend=dict(type="str", choices=["auto", "cli", "library"], default="auto"),
    helm_binary=dict(type="str", default="helm"),
    revision=dict(type="int"),
    max_revisions=dict(type="int", default=256),
    timeout=dict(type="float", default=120.0),
)

FILES = (
    ("history.json", "helm-history"),
    ("values.user.json", "helm-values-user"),
    ("values.all.json", "helm-values-all"),
    ("manifest.yaml", "helm-manifest"),
    ("notes.txt", "helm-notes"),
    ("chart.json", "helm-chart"),
    ("images.json", "helm-images"),
)
INSTANCE_LABELS = ("app.kubernetes.io/instance", "release")


def _json_bytes(data):
    return (json.dumps(data, indent=2, sort_keys=True) + "\n").encode("utf-8")


def _backend(module):
    """(name, reader, helm version string) for the chosen backend."""
    params = module.params
    choice = params["backend"]
    if choice == "auto":
        choice = "library" if helm_library.installed() and helm_library.load() is None else "cli"
    if params.get("client_cert") or params.get("client_key"):
        module.fail_json(msg="client_cert/client_key cannot be passed to Helm (%s backend); "
                             "put the client certificate in the kubeconfig" % choice)
    kubeconfig = params.get("kubeconfig")
    if choice == "library":
        error = helm_library.load()
        if error is not None:
            module.fail_json(msg=missing_required_lib("helm-python-sdk"), exception=error)
        try:
            reader = HelmLibrary(params["namespace"], kubeconfig=kubeconfig, context=params.get("context"),
                                 host=params.get("host"), api_key=params.get("api_key"),
                                 ca_cert=params.get("ca_cert"), validate_certs=params.get("validate_certs"))
        except HelmLibraryCallError as exc:
            module.fail_json(msg=str(exc))
        return "library", reader, library_version()
    helm = params["helm_binary"]
    if os.sep not in helm:
        helm = module.get_bin_path(helm, required=True)

    env = connection_env(host=params.get("host"), api_key=params.get("api_key"), ca_cert=params.get("ca_cert"),
                         validate_certs=params.get("validate_certs"), proxy=params.get("proxy"))
    reader = HelmCli(Runner(params["timeout"]), helm=helm, namespace=params["namespace"], kubeconfig=kubeconfig,
                     context=params.get("context"), env=env)
    version = reader.detect_version()
    return "cli", reader, "v%d.%d.%d" % version


def _pick_revision(module, history, wanted):
    if not history:
        module.fail_json(msg="helm release %s/%s has no history" % (module.params["namespace"], module.params["release"]))
    if wanted is not None:
        for entry in history:
            if entry["revision"] == wanted:
                return entry
        module.fail_json(msg="revision %d is not in the history (revisions %s)" % (
            wanted, ", ".join(str(e["revision"]) for e in history)))
    deployed = [e for e in history if e["status"] == "deployed"]
    if not deployed:
        module.fail_json(msg="no deployed revision (statuses: %s); set revision" % ", ".join(
            "%d %s" % (e["revision"], e["status"]) for e in history))
    return deployed[-1]


def _chart(entry, metadata):
    if metadata:
        return {"name": metadata.get("chart"), "version": metadata.get("version"),
                "app_version": metadata.get("appVersion"), "reference": "%s-%s" % (metadata.get("chart"), metadata.get("version")),
                "source": "helm get metadata", "metadata": metadata}
    name, version = split_chart(entry.get("chart"))
    return {"name": name, "version": version, "app_version": entry.get("app_version"), "reference": entry.get("chart"),
            "source": "helm history (chart field split at the version)", "metadata": None}


def _owned_by_release(pod, workloads, rs_owner, release):
    labels = (pod.get("metadata") or {}).get("labels") or {}
    if any(labels.get(key) == release for key in INSTANCE_LABELS):
        return True
    namespace = pod["metadata"].get("namespace")
    for ref in pod["metadata"].get("ownerReferences") or []:
        if not ref.get("controller", True):
            continue
        key = (ref.get("kind"), namespace, ref.get("name"))
        if key in workloads:
            return True
        if ref.get("kind") == "ReplicaSet" and rs_owner.get((namespace, ref.get("name"))) in workloads:
            return True
    return False


def running_images(reader, objects, namespace, release):
    """The containers of the release's pods with their image and imageID (digest)."""
    workloads = set()
    namespaces = {namespace}
    for obj in objects:
        meta = obj.get("metadata") or {}
        obj_ns = meta.get("namespace") or namespace
        workloads.add((obj.get("kind"), obj_ns, meta.get("name")))
        if obj.get("kind") in ("Deployment", "DaemonSet", "StatefulSet", "Job", "ReplicaSet", "Pod"):
            namespaces.add(obj_ns)
    running = []
    for ns in sorted(namespaces):
        rs_owner = {}
        for rs in reader.list("/apis/apps/v1/namespaces/%s/replicasets" % ns):
            for ref in (rs.get("metadata") or {}).get("ownerReferences") or []:
                if ref.get("kind") == "Deployment":
                    rs_owner[(ns, rs["metadata"]["name"])] = ("Deployment", ns, ref.get("name"))
        for pod in reader.list("/api/v1/namespaces/%s/pods" % ns):
            if not _owned_by_release(pod, workloads, rs_owner, release):
                continue
            status = pod.get("status") or {}
            for init, key in ((True, "initContainerStatuses"), (False, "containerStatuses")):
                for container in status.get(key) or []:
                    running.append({
                        "namespace": ns, "pod": pod["metadata"]["name"], "container": container.get("name"),
                        "init": init, "image": container.get("image"), "image_id": container.get("imageID") or None,
                        "digest": image_digest(container.get("imageID")),
                    })
    return sorted(running, key=lambda r: (r["namespace"], r["pod"], not r["init"], r["container"] or ""))


def _images_document(manifest_list, running):
    digests = {}
    for entry in running:
        if entry["digest"]:
            digests.setdefault(entry["image"], set()).add(entry["digest"])
    names = sorted({i["image"] for i in manifest_list})
    return {
        "images": names,
        "manifest_images": manifest_list,
        "running": running,
        "digests": dict((image, sorted(found)) for image, found in sorted(digests.items())),
        "without_digest": [name for name in names if name not in digests],
    }


def _run_directory(dest, release, revision, now):
    base = "%s-%s-rev%d" % (release, clock.name_stamp(now), revision)
    candidate, n = os.path.join(dest, base), 1
    while os.path.lexists(candidate):
        n += 1
        candidate = os.path.join(dest, "%s-%d" % (base, n))
    return candidate


def _make_run_directory(dest, release, revision, now):
    """``dest`` (0700, with its parents) and a new capture directory in it, created exclusively."""
    return make_new_dir(dest, "%s-%s-rev%d" % (release, clock.name_stamp(now), revision))


def _verify_command(path, sha256):
    return "echo %s | sha256sum --check --status -" % shlex.quote("%s  %s" % (sha256, path))


def capture(module, reader):
    params = module.params
    release, namespace = params["release"], params["namespace"]
    history = reader.history(release, max_revisions=params["max_revisions"])
    entry = _pick_revision(module, history, params["revision"])
    revision = entry["revision"]
    values_user = reader.get_values(release, revision)
    values_all = reader.get_values(release, revision, all_values=True)
    manifest = reader.get_manifest(release, revision)
    notes = reader.get_notes(release, revision)
    chart = _chart(entry, reader.get_metadata(release, revision))
    objects = manifest_objects(manifest)
    return entry, history, values_user, values_all, manifest, notes, chart, objects


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    release, namespace = params["release"], params["namespace"]
    if params["max_revisions"] < 1:
        module.fail_json(msg="max_revisions: must be 1 or more, got %d" % params["max_revisions"])
    if params["revision"] is not None and params["revision"] < 1:
        module.fail_json(msg="revision: must be 1 or more, got %d" % params["revision"])
    if os.path.exists(params["dest"]) and not os.path.isdir(params["dest"]):
        module.fail_json(msg="dest: %s exists and is not a directory" % params["dest"])
    if not params["timeout"] > 0:
        module.fail_json(msg="timeout: must be a positive number of seconds, got %r" % params["timeout"])
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)

    # The controller's HELM_* variables are removed (and a few pinned) before either backend runs
    # and before the Helm library is loaded: its Go runtime copies the environment at load time.
    helm_home = tempfile.mkdtemp(prefix="dra-gate-helm-")
    try:
        removed_env = apply_helm_environment(os.environ, helm_home)
        result = _read_release(module, release, namespace)
    finally:
        shutil.rmtree(helm_home, ignore_errors=True)
    result["removed_helm_env"] = removed_env
    _write_capture(module, **result)


def _read_release(module, release, namespace):
    params = module.params
    helm_retries = 0
    try:
        backend, backend_reader, helm_version = _backend(module)
        reader = RetryingHelm(backend_reader, RetryPolicy(deadline=params["api_deadline"]),
                              (HelmCommandError, HelmLibraryCallError), namespace, release)
        try:
            entry, history, values_user, values_all, manifest, notes, chart, objects = capture(module, reader)
        finally:
            helm_retries = reader.retries
            if backend == "library":
                backend_reader.close()
    except HelmForbidden as exc:
        module.fail_json(msg="reading helm release %s/%s failed: %s" % (namespace, release, exc), forbidden=True,
                         helm_retries=helm_retries)
    except CommandTimedOut as exc:
        module.fail_json(msg="reading helm release %s/%s failed: %s" % (namespace, release, exc), timed_out=True,
                         helm_retries=helm_retries)
    except (HelmCommandError, HelmLibraryCallError, HelmOutputError, HelmRetriesExhausted) as exc:
        module.fail_json(msg="reading helm release %s/%s failed: %s" % (namespace, release, exc),
                         helm_retries=helm_retries)
    return dict(entry=entry, history=history, values_user=values_user, values_all=values_all, manifest=manifest,
                notes=notes, chart=chart, objects=objects, backend=backend, helm_version=helm_version,
                helm_retries=helm_retries)


def _write_capture(module, entry, history, values_user, values_all, manifest, notes, chart, objects, backend,
                   helm_version, helm_retries, removed_helm_env):
    params = module.params
    release, namespace = params["release"], params["namespace"]
    revision = entry["revision"]
    manifest_list = manifest_images(objects, namespace)

    api_client = module_api_client(module)
    try:
        running = running_images(reader_from_params(api_client, params), objects, namespace, release)
    except K8sApiError as exc:
        module.fail_json(msg="reading the release's pods failed: %s" % exc, call=exc.call, status=exc.status,
                         forbidden=exc.forbidden, attempts=exc.attempts)
    finally:
        api_client.close()
    images = _images_document(manifest_list, running)
    images.update(release=release, namespace=namespace, revision=revision)

    contents = {
        "history.json": _json_bytes(history),
        "values.user.json": _json_bytes(values_user),
        "values.all.json": _json_bytes(values_all),
        "manifest.yaml": manifest.encode("utf-8"),
        "notes.txt": notes.encode("utf-8"),
        "chart.json": _json_bytes(chart),
        "images.json": _json_bytes(images),
    }
    now = datetime.datetime.now(datetime.timezone.utc)
    dest = os.path.abspath(params["dest"])
    directory = _run_directory(dest, release, revision, now)
    source = "helm release %s/%s rev %d" % (namespace, release, revision)
    artifacts = []
    for name, kind in FILES:
        path = os.path.join(directory, name)
        sha256 = hashlib.sha256(contents[name]).hexdigest()
        artifacts.append({"path": path, "kind": kind, "sha256": sha256, "size": len(contents[name]),
                          "source": source, "verify": _verify_command(path, sha256)})
    summary = {
        "release": release, "namespace": namespace, "revision": revision, "status": entry["status"],
        "chart": chart["name"], "version": chart["version"], "app_version": chart["app_version"],
        "revisions": len(history), "image_count": len(images["images"]),
        "digest_count": len({d for found in images["digests"].values() for d in found}),
    }
    index_path = os.path.join(directory, "index.json")
    result = dict(changed=True, directory=directory, index=index_path, artifacts=artifacts, summary=summary,
                  backend={"name": backend, "helm_version": helm_version}, removed_helm_env=removed_helm_env,
                  helm_retries=helm_retries)
    if module.check_mode:
        _add_diff(module, result)
        module.exit_json(msg="would write %d files into %s" % (len(artifacts) + 1, directory), **result)

    try:
        made = _make_run_directory(dest, release, revision, now)
        if made != directory:  # the name was taken meanwhile: the paths follow the directory made
            for artifact in artifacts:
                artifact["path"] = os.path.join(made, os.path.basename(artifact["path"]))
                artifact["verify"] = _verify_command(artifact["path"], artifact["sha256"])
            directory, index_path = made, os.path.join(made, "index.json")
            result.update(directory=directory, index=index_path)
        for artifact in artifacts:
            write_private(artifact["path"], contents[os.path.basename(artifact["path"])], replace=False)
        write_private(index_path, _json_bytes({
            "schema_version": 1, "captured_at": clock.to_datetime(now), "summary": summary,
            "backend": result["backend"], "artifacts": artifacts}), replace=False)
    except (IOError, OSError, PrivateFileError) as exc:
        module.fail_json(msg="writing the capture into %s failed: %s" % (directory, exc), directory=directory)
    _add_diff(module, result)
    module.exit_json(msg="wrote %d files into %s" % (len(artifacts) + 1, directory), **result)


def _add_diff(module, result):
    if module._diff:  # pylint: disable=protected-access
        lines = ["%s  sha256:%s  %d bytes\n" % (a["path"], a["sha256"], a["size"]) for a in result["artifacts"]]
        result["diff"] = {"before": "", "before_header": "%s (absent)" % result["directory"],
                          "after_header": result["directory"], "after": "".join(lines) + result["index"] + "\n"}


if __name__ == "__main__":
    main()
