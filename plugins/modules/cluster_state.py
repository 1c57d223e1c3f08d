#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: cluster_state
short_description: Capture the GPU Operator's CRDs, its custom resources and the GPU nodes' labels as rollback artifacts
version_added: 0.2.0
description:
  - Captures, as the API server serves them, the cluster-side objects that a rollback of the GPU
    Operator may have to put back and that a Helm rollback does not restore (Helm does not touch CRDs
    on upgrade or rollback) - one JSON file per object under a new directory
    C(<dest>/<UTC timestamp>/) (format in docs/artifacts.md).
  - C(crds/) the CustomResourceDefinitions of the groups in O(crd_groups) (by default C(nvidia.com)
    and C(resource.nvidia.com) - clusterpolicies, nvidiadrivers, gpuclusters, computedomains,
    computedomaincliques, whichever exist), whole.
  - C(<plural>.<group>/) the objects of the kinds in O(custom_resource_kinds) (ClusterPolicy and
    GPUCluster), whole, with their status.
  - C(deviceclasses/) every DeviceClass (C(resource.k8s.io/v1)) and C(runtimeclasses/) every RuntimeClass.
  - C(node-labels-taints/) for each GPU node (label C(nvidia.com/gpu.present=true) or a non-zero
    C(nvidia.com/gpu) capacity or allocatable) its name, uid,
    resourceVersion, labels, annotations, taints and cordon.
  - C(metadata.managedFields) is removed from every object (server-side-apply bookkeeping, rewritten on
    every write, refused by a create); everything else is kept as served.
  - Never overwrites - every run creates a new directory (a C(-2), C(-3) suffix when the timestamp is
    taken already) and creates each file exclusively. Directories are mode 0700, files 0600.
  - Returns C(artifacts) in the shape M(gpufleet.dra_gate.artifact_index) takes. A kind the server does
    not serve (no DeviceClasses without C(resource.k8s.io/v1), no NVIDIA CRDs) is not an error; it is
    listed in C(not_served).
  - Forbidden is not absent - a 403 on any read (CRDs, ClusterPolicy/GPUCluster, DeviceClasses,
    RuntimeClasses, Nodes) fails the module naming the verb and the resource, and nothing is written.
    Transient API failures are retried within O(api_deadline).
  - Files are written crash-safe (a temporary file in the same directory, fsync, then linked to its
    final name, so a name that exists is never replaced).
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client.
author:
  - gpufleet maintainers (@gpufleet)
options:
  dest:
    description:
      - Directory under which the capture directory is created (with its parents, mode 0700).
    type: path
    required: true
  stamp:
    description:
      - Name of the capture directory; by default the UTC time C(YYYYmmddTHHMMSSZ). A name that is
        taken gets a C(-2), C(-3)... suffix, so nothing is overwritten.
      - Letters, digits, C(.), C(_), C(-).
    type: str
  include:
    description:
      - What to capture. C(crds), C(custom_resources) (the objects of O(custom_resource_kinds)),
        C(device_classes), C(runtime_classes), C(gpu_nodes) (labels and taints).
    type: list
    elements: str
    choices: [crds, custom_resources, device_classes, runtime_classes, gpu_nodes]
    default: [crds, custom_resources, device_classes, runtime_classes, gpu_nodes]
  crd_groups:
    description: API groups whose CRDs are captured (and searched for O(custom_resource_kinds)).
    type: list
    elements: str
    default: [nvidia.com, resource.nvidia.com]
  custom_resource_kinds:
    description: Kinds, defined by CRDs of O(crd_groups), whose objects are captured.
    type: list
    elements: str
    default: [ClusterPolicy, GPUCluster]
  page_size:
    description: Items per list request (C(limit)); the rest is fetched with C(continue). C(0) disables paging.
    type: int
    default: 500
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
attributes:
  check_mode:
    support: full
    description:
      - Reads the cluster and reports the directory and files it would write, with the sha256 and size
        of what it would write; creates and writes nothing.
  diff_mode:
    support: full
    description:
      - Returns the files the run adds (path, sha256, size), before empty - every run writes new files and
        never changes one.
notes:
  - Needs get/list on CRDs, the captured kinds, DeviceClasses, RuntimeClasses and Nodes.
  - Before re-creating an object from a capture, remove C(metadata.resourceVersion) and C(metadata.uid)
    (or use C(kubectl replace)); docs/artifacts.md has the steps.
seealso:
  - module: gpufleet.dra_gate.artifact_index
  - module: gpufleet.dra_gate.gpu_cluster_facts
"""

EXAMPLES = r"""
- name: Capture the operator's CRDs, custom resources and the GPU nodes' labels
  gpufleet.dra_gate.cluster_state:
    dest: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}/artifacts/cluster-state"
    kubeconfig: /etc/gpufleet/kubeconfig
  delegate_to: localhost
  run_once: true
  register: cluster_capture

- name: Index them
  gpufleet.dra_gate.artifact_index:
    run_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}"
    artifacts: "{{ cluster_capture.artifacts }}"
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
dir:
  description: The capture directory (created; in check mode the one that would be created).
  returned: always
  type: str
  sample: /var/lib/dra-gate/evidence/run-1/artifacts/cluster-state/20261130T080000Z
artifacts:
  description: One entry per file, in the shape M(gpufleet.dra_gate.artifact_index) takes.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: Absolute path of the file.
      type: str
    kind:
      description: C(crd), C(custom-resource), C(device-class), C(runtime-class) or C(node-labels-taints).
      type: str
    sha256:
      description: SHA-256 of the file's bytes.
      type: str
    size:
      description: Size in bytes.
      type: int
    source:
      description: The API URL the object was read from.
      type: str
    verify:
      description: A shell command that re-checks the file's sha256.
      type: str
    captured_at:
      description: UTC time of the capture.
      type: str
counts:
  description: Files per kind.
  returned: always
  type: dict
  sample: {"crd": 2, "custom-resource": 1, "node-labels-taints": 6}
not_served:
  description: What could not be captured because the server does not serve it, each with C(what) and C(reason).
  returned: always
  type: list
  elements: dict
api_calls:
  description: Number of HTTP requests made (retries included).
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries of a failed attempt (429, 5xx, transport failures).
  returned: always
  type: int
"""

import datetime
import os
import re

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import state as cs
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.artifacts import default_verify
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster.client import (
    K8sApiError,
    argspec,
    check_params,
    module_api_client,
    reader_from_params,
)
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.evidence.private_files import (
    PrivateFileError,
    ensure_private_dir,
    make_new_dir,
    write_private,
)

MODULE_ARG_SPEC = dict(
    dest=dict(type="path", required=True),
    stamp=dict(type="str"),
    include=dict(type="list", elements="str", choices=list(cs.SECTIONS), default=list(cs.SECTIONS)),
    crd_groups=dict(type="list", elements="str", default=list(cs.DEFAULT_GROUPS)),
    custom_resource_kinds=dict(type="list", elements="str", default=list(cs.DEFAULT_KINDS)),
    page_size=dict(type="int", default=500),
)
STAMP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
NOT_SERVED = (404, 405)


def list_or_none(reader, path, not_served, what):
    """The items at ``path``, or None (recorded in ``not_served``) when the server does not serve it."""
    try:
        return reader.list(path)
    except K8sApiError as exc:
        if exc.status in NOT_SERVED:
            not_served.append({"what": what, "reason": "%s: not served (HTTP %s)" % (exc.call, exc.status)})
            return None
        raise


def read(reader, params, not_served):
    include = set(params["include"])
    sections = {}
    crds = []
    if include & {"crds", "custom_resources"}:
        crds = cs.select_crds(list_or_none(reader, cs.CRD_PATH, not_served, "customresourcedefinitions") or [],
                              params["crd_groups"])
    if "crds" in include:
        sections["crds"] = crds
    if "custom_resources" in include:
        found = cs.crds_for_kinds(crds, params["custom_resource_kinds"])
        for kind in params["custom_resource_kinds"]:
            if kind not in [k for k, _crd in found]:
                not_served.append({"what": kind, "reason": "no CRD of the groups %s defines kind %s" % (
                    ", ".join(params["crd_groups"]), kind)})
        objects = []
        for kind, crd in found:
            path = cs.custom_resource_path(crd)
            if path is None:
                not_served.append({"what": kind, "reason": "CRD %s serves no version" % crd["metadata"]["name"]})
                continue
            items = list_or_none(reader, path, not_served, kind)
            if items is not None:
                objects.append((crd, items))
        sections["custom_resources"] = objects
    if "device_classes" in include:
        sections["device_classes"] = list_or_none(reader, cs.DEVICE_CLASS_PATH, not_served, "deviceclasses")
    if "runtime_classes" in include:
        sections["runtime_classes"] = list_or_none(reader, cs.RUNTIME_CLASS_PATH, not_served, "runtimeclasses")
    if "gpu_nodes" in include:
        sections["nodes"] = reader.list(cs.NODE_PATH)
    return sections


def make_capture_dir(dest, stamp):
    """Create ``dest`` (0700, with its parents) and a new ``dest/<stamp>[-N]`` exclusively; returns its path."""
    return make_new_dir(dest, stamp)


def write_exclusive(path, data):
    """One artifact: its directory 0700, the file 0600 through the crash-safe writer, never replacing one."""
    ensure_private_dir(os.path.dirname(path))
    write_private(path, data, replace=False)


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True)
    params = module.params
    if params["page_size"] < 0:
        module.fail_json(msg="page_size: must be 0 (no paging) or more, got %d" % params["page_size"])
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = params["stamp"] or clock.name_stamp(now)
    if not STAMP_RE.match(stamp):
        module.fail_json(msg="stamp: %r is not valid; expected letters, digits, '.', '_' or '-'" % stamp)
    dest = params["dest"]
    if os.path.exists(dest) and not os.path.isdir(dest):
        module.fail_json(msg="dest: %r exists and is not a directory" % dest)
    api_client = module_api_client(module)
    host = (api_client.configuration.host or "").rstrip("/")
    reader = reader_from_params(api_client, params, page_size=params["page_size"])
    not_served = []
    try:
        sections = read(reader, params, not_served)
    except K8sApiError as exc:
        module.fail_json(msg="reading the cluster failed, nothing was written: %s" % exc, call=exc.call,
                         status=exc.status, forbidden=exc.forbidden, attempts=exc.attempts, api_calls=reader.calls,
                         api_retries=reader.retries)
    finally:
        api_client.close()
    files = cs.render(cs.plan(**sections))
    existing = set(os.listdir(dest)) if os.path.isdir(dest) else set()
    capture_dir = os.path.join(dest, cs.stamp_name(stamp, existing))
    if not module.check_mode:
        try:
            capture_dir = make_capture_dir(dest, stamp)
            for item in files:
                write_exclusive(os.path.join(capture_dir, item["relpath"]), item["text"])
        except (IOError, OSError, PrivateFileError) as exc:
            module.fail_json(msg="dest: cannot write the capture under %s: %s" % (capture_dir, exc), dir=capture_dir)
    captured_at = clock.to_datetime(now)
    artifacts = []
    for item in files:
        path = os.path.join(capture_dir, item["relpath"])
        artifacts.append({"path": path, "kind": item["kind"], "sha256": item["sha256"], "size": item["size"],
                          "source": host + item["source"], "verify": default_verify(path, item["sha256"]),
                          "captured_at": captured_at})
    verb = "would write" if module.check_mode else "wrote"
    extra = {}
    if module._diff:  # pylint: disable=protected-access
        extra["diff"] = {"before": "", "before_header": "%s (absent)" % capture_dir, "after_header": capture_dir,
                         "after": "".join("%s  sha256:%s  %d bytes\n" % (a["path"], a["sha256"], a["size"])
                                          for a in artifacts)}
    module.exit_json(changed=True, dir=capture_dir, artifacts=artifacts, counts=cs.counts(files),
                     not_served=not_served, api_calls=reader.calls, api_retries=reader.retries,
                     msg="%s %d file(s) under %s" % (verb, len(files), capture_dir), **extra)


if __name__ == "__main__":
    main()
