# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""A CRD write that changes nothing is a no-op (resourceVersion kept), as in kube-apiserver."""

from __future__ import annotations

import json
import time

CRD = {
    "apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
    "metadata": {"name": "widgets.example.com"},
    "spec": {"group": "example.com", "scope": "Namespaced",
             "names": {"plural": "widgets", "singular": "widget", "kind": "Widget"},
             "versions": [{"name": "v1", "served": True, "storage": True,
                           "schema": {"openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}]},
}


def test_identical_crd_applies_keep_the_resource_version(lab):
    api = lab.server.api
    rtype = api.crd_type
    body = json.dumps(CRD).encode()
    first, code = api.patch(rtype, None, CRD["metadata"]["name"], "application/apply-patch+yaml", body,
                            field_manager="dra-gate", force=True)
    assert code == 201
    time.sleep(1.1)  # a new lastTransitionTime would differ by at least a second
    second, code = api.patch(rtype, None, CRD["metadata"]["name"], "application/apply-patch+yaml", body,
                             field_manager="dra-gate", force=True)
    assert code == 200
    assert second["metadata"]["resourceVersion"] == first["metadata"]["resourceVersion"]
    assert second["status"]["conditions"] == first["status"]["conditions"]
