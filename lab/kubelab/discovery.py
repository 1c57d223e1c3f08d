# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Discovery (plain and aggregated), /version and a minimal /openapi/v3.

What the real clients need (shared/KUBE_API_SURFACE.md findings 2 and 6): kubectl and Helm ask for
aggregated discovery first (``application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList``)
and fall back to /api, /apis, /apis/{g}/{v}; ``kubectl apply`` and Helm GET /openapi/v3 first and
need, per resource, a ``patch`` operation carrying ``x-kubernetes-group-version-kind`` and a
``fieldValidation`` parameter; schemas may be empty.
"""

from __future__ import annotations

import hashlib
import json

from kubelab.resources import ALL_VERBS, Registry, ResourceType

VERSION = {
    "major": "1",
    "minor": "37",
    "emulationMajor": "1",
    "emulationMinor": "37",
    "minCompatibilityMajor": "1",
    "minCompatibilityMinor": "36",
    "gitVersion": "v1.37.0-kubelab",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-08-26T00:00:00Z",
    "goVersion": "go1.26.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}
AGGREGATED_CONTENT_TYPE = "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList"


def _verbs(rtype: ResourceType) -> list[str]:
    return list(ALL_VERBS)


def resource_list(registry: Registry, group: str, version: str) -> dict | None:
    """APIResourceList for /api/v1 or /apis/{group}/{version}."""
    types = [r for r in registry.all() if r.group == group and r.version == version]
    if not types:
        return None
    resources = []
    for rtype in types:
        entry = {"name": rtype.plural, "singularName": rtype.singular, "namespaced": rtype.namespaced,
                 "kind": rtype.kind, "verbs": _verbs(rtype)}
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        resources.append(entry)
        for sub in rtype.subresources:
            if sub == "eviction":
                resources.append({"name": "pods/eviction", "singularName": "", "namespaced": True, "group": "policy",
                                  "version": "v1", "kind": "Eviction", "verbs": ["create"]})
            elif sub == "binding":
                resources.append({"name": "pods/binding", "singularName": "", "namespaced": True, "kind": "Binding",
                                  "verbs": ["create"]})
            elif sub == "scale":
                resources.append({"name": "%s/scale" % rtype.plural, "singularName": "", "namespaced": rtype.namespaced,
                                  "group": "autoscaling", "version": "v1", "kind": "Scale",
                                  "verbs": ["get", "patch", "update"]})
            elif sub in ("status", "finalize", "ephemeralcontainers"):
                resources.append({"name": "%s/%s" % (rtype.plural, sub), "singularName": "",
                                  "namespaced": rtype.namespaced, "kind": rtype.kind,
                                  "verbs": ["get", "patch", "update"] if sub == "status" else ["update"]})
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": rtype.api_version if group else "v1",
            "resources": resources}


def api_versions() -> dict:
    return {"kind": "APIVersions", "versions": ["v1"],
            "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": "127.0.0.1"}]}


def _group_entry(group: str, versions: list[str]) -> dict:
    gvs = [{"groupVersion": "%s/%s" % (group, v), "version": v} for v in versions]
    return {"name": group, "versions": gvs, "preferredVersion": gvs[0]}


def api_group_list(registry: Registry) -> dict:
    groups = [_group_entry(g, vs) for g, vs in sorted(registry.groups().items()) if g]
    return {"kind": "APIGroupList", "apiVersion": "v1", "groups": groups}


def api_group(registry: Registry, group: str) -> dict | None:
    versions = registry.groups().get(group)
    if not versions:
        return None
    entry = _group_entry(group, versions)
    entry.update(kind="APIGroup", apiVersion="v1")
    return entry


def _aggregated_resources(registry: Registry, group: str, version: str) -> list[dict]:
    out = []
    for rtype in registry.all():
        if rtype.group != group or rtype.version != version:
            continue
        entry = {"resource": rtype.plural, "responseKind": {"group": group, "version": version, "kind": rtype.kind},
                 "scope": "Namespaced" if rtype.namespaced else "Cluster", "singularResource": rtype.singular,
                 "verbs": _verbs(rtype)}
        if rtype.short_names:
            entry["shortNames"] = list(rtype.short_names)
        if rtype.categories:
            entry["categories"] = list(rtype.categories)
        subs = []
        for sub in rtype.subresources:
            if sub == "eviction":
                subs.append({"subresource": "eviction", "responseKind": {"group": "policy", "version": "v1", "kind": "Eviction"},
                             "verbs": ["create"]})
            elif sub == "binding":
                subs.append({"subresource": "binding", "responseKind": {"group": "", "version": "v1", "kind": "Binding"},
                             "verbs": ["create"]})
            elif sub == "scale":
                subs.append({"subresource": "scale", "responseKind": {"group": "autoscaling", "version": "v1", "kind": "Scale"},
                             "verbs": ["get", "patch", "update"]})
            elif sub == "status":
                subs.append({"subresource": "status", "responseKind": {"group": group, "version": version, "kind": rtype.kind},
                             "verbs": ["get", "patch", "update"]})
        if subs:
            entry["subresources"] = subs
        out.append(entry)
    return out


def aggregated(registry: Registry, legacy: bool) -> dict:
    """APIGroupDiscoveryList for /api (legacy) or /apis."""
    items = []
    for group, versions in sorted(registry.groups().items()):
        if bool(group) == legacy:
            continue
        items.append({"metadata": {"name": group, "creationTimestamp": None},
                      "versions": [{"version": v, "resources": _aggregated_resources(registry, group, v),
                                    "freshness": "Current"} for v in versions]})
    return {"kind": "APIGroupDiscoveryList", "apiVersion": "apidiscovery.k8s.io/v2", "metadata": {}, "items": items}


def wants_aggregated(accept: str) -> bool:
    return "as=APIGroupDiscoveryList" in (accept or "")


# -- OpenAPI v3 --------------------------------------------------------------------------------

def _gv_key(group: str, version: str) -> str:
    return "api/v1" if not group else "apis/%s/%s" % (group, version)


def openapi_index(registry: Registry) -> dict:
    paths = {}
    for group, versions in registry.groups().items():
        for version in versions:
            doc = openapi_document(registry, group, version)
            digest = hashlib.sha512(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:64].upper()
            paths[_gv_key(group, version)] = {"serverRelativeURL": "/openapi/v3/%s?hash=%s" % (_gv_key(group, version), digest)}
    return {"paths": paths}


def openapi_document(registry: Registry, group: str, version: str) -> dict | None:
    types = [r for r in registry.all() if r.group == group and r.version == version]
    if not types:
        return None
    paths = {}
    schemas = {}
    for rtype in types:
        gvk = {"group": group, "version": version, "kind": rtype.kind}
        base = rtype.gv_path + ("/namespaces/{namespace}/" if rtype.namespaced else "/") + rtype.plural + "/{name}"
        schema_name = "%s.%s.%s" % (group or "io.k8s.api.core", version, rtype.kind)
        params = [{"name": "fieldValidation", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "fieldManager", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "dryRun", "in": "query", "schema": {"type": "string", "uniqueItems": True}},
                  {"name": "force", "in": "query", "schema": {"type": "boolean", "uniqueItems": True}}]
        op = {"x-kubernetes-action": "patch", "x-kubernetes-group-version-kind": gvk, "parameters": params,
              "responses": {"200": {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/" + schema_name}}}}}}
        paths[base] = {"patch": op, "put": dict(op, **{"x-kubernetes-action": "put"}),
                       "get": dict(op, **{"x-kubernetes-action": "get"})}
        schemas[schema_name] = {"type": "object", "x-kubernetes-group-version-kind": [gvk],
                                "x-kubernetes-preserve-unknown-fields": True}
    return {"openapi": "3.0.0", "info": {"title": "Kubernetes", "version": VERSION["gitVersion"]},
            "paths": paths, "components": {"schemas": schemas}}


def parse_openapi_path(path: str) -> tuple[str, str] | None:
    """'/openapi/v3/api/v1' -> ('', 'v1'); '/openapi/v3/apis/apps/v1' -> ('apps', 'v1')."""
    rest = path[len("/openapi/v3/"):].strip("/")
    parts = rest.split("/")
    if parts == ["api", "v1"]:
        return "", "v1"
    if len(parts) == 3 and parts[0] == "apis":
        return parts[1], parts[2]
    return None
