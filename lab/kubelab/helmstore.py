# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Helm releases as Helm's "secret" storage driver keeps them, for scenarios.

A scenario's ``helm_releases`` entry becomes one Secret per revision, exactly the shape the Helm
library writes (recorded in tests/lab/fixtures/protobuf and tests/fixtures/cluster): name
``sh.helm.release.v1.<release>.v<revision>``, type ``helm.sh/release.v1``, labels ``name``,
``owner=helm``, ``status``, ``version``, and ``data.release`` = base64 (Kubernetes) of base64 of
gzip of the release JSON (helm pkg/storage/driver/util.go). The lab thus starts with a release
whose history ``helm history`` and the collection's Helm readers see as if Helm had installed it.

Entry: ``{name, namespace, chart, revisions: [{chart_version, app_version, status, values?,
description?, manifest?}]}`` (oldest first; the statuses are Helm's: deployed, superseded, failed, ...).

``manifest`` is what the revision's chart rendered: a mapping of template path (``templates/operator.yaml``)
to the objects it rendered. It is stored as Helm stores it (``---\n# Source: <chart>/<path>\n<yaml>``
per object, in Helm's install order: kinds by ``INSTALL_ORDER``, unknown kinds after them by kind, as
listed otherwise), and it is what ``helm rollback`` to that revision and ``helm upgrade`` from it diff
against: an object the current release has and the target's manifest lacks is deleted. Without one the
manifest is empty (as a release that rendered nothing). The objects of the last ``deployed`` revision
are also what Helm applied: ``release_objects`` returns them with the ownership metadata Helm adds
(annotations ``meta.helm.sh/release-name`` and ``meta.helm.sh/release-namespace``) and the scenario
creates them (kubelab.scenario). Namespaced objects carry their namespace (as the charts render
``{{ .Release.Namespace }}``).
"""

from __future__ import annotations

import base64
import gzip
import json

import yaml

# releaseutil.InstallOrder (helm pkg/release/util/kind_sorter.go): how Helm orders a release's manifest.
INSTALL_ORDER = ("PriorityClass", "Namespace", "NetworkPolicy", "ResourceQuota", "LimitRange", "PodSecurityPolicy",
                 "PodDisruptionBudget", "ServiceAccount", "Secret", "SecretList", "ConfigMap", "StorageClass",
                 "PersistentVolume", "PersistentVolumeClaim", "CustomResourceDefinition", "ClusterRole",
                 "ClusterRoleList", "ClusterRoleBinding", "ClusterRoleBindingList", "Role", "RoleList", "RoleBinding",
                 "RoleBindingList", "Service", "DaemonSet", "Pod", "ReplicationController", "ReplicaSet", "Deployment",
                 "HorizontalPodAutoscaler", "StatefulSet", "Job", "CronJob", "IngressClass", "Ingress", "APIService",
                 "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration")
RELEASE_NAME = "meta.helm.sh/release-name"
RELEASE_NAMESPACE = "meta.helm.sh/release-namespace"
STATUSES = ("unknown", "deployed", "uninstalled", "superseded", "failed", "uninstalling", "pending-install",
            "pending-upgrade", "pending-rollback")


def manifest_documents(chart: str, manifest: dict | None) -> list[tuple[str, dict]]:
    """``[(source, object)]`` of a revision's ``manifest`` in Helm's order (sortManifestsByKind: a stable sort,
    kinds by INSTALL_ORDER, unknown kinds after them alphabetically)."""
    docs = [("%s/%s" % (chart, path), obj) for path, objects in (manifest or {}).items() for obj in objects or []]
    rank = {kind: index for index, kind in enumerate(INSTALL_ORDER)}
    return sorted(docs, key=lambda doc: (rank.get(doc[1].get("kind"), len(rank)),
                                         "" if doc[1].get("kind") in rank else str(doc[1].get("kind"))))


def manifest_text(chart: str, manifest: dict | None) -> str:
    """The release's ``manifest`` string as Helm writes it (``---\n# Source: <template>\n<yaml>\n`` each)."""
    # a JSON round trip first: objects a scenario shares through YAML aliases are written out, not as anchors
    parts = []
    for source, obj in manifest_documents(chart, manifest):
        text = yaml.safe_dump(json.loads(json.dumps(obj)), sort_keys=False, default_flow_style=False)
        parts.append("---\n# Source: %s\n%s\n" % (source, text.rstrip("\n")))
    return "".join(parts)


def deployed_revision(entry: dict) -> dict | None:
    """The revision Helm's storage calls current: the last one ``deployed``."""
    deployed = [rev for rev in entry.get("revisions") or [] if rev.get("status", "deployed") == "deployed"]
    return deployed[-1] if deployed else None


def release_objects(entry: dict) -> list[dict]:
    """The deployed revision's objects as Helm applied them: with its ownership annotations."""
    revision = deployed_revision(entry)
    objects = []
    for _source, obj in manifest_documents(entry["chart"], (revision or {}).get("manifest")):
        applied = json.loads(json.dumps(obj))
        annotations = applied.setdefault("metadata", {}).setdefault("annotations", {})
        annotations[RELEASE_NAME] = entry["name"]
        annotations[RELEASE_NAMESPACE] = entry["namespace"]
        objects.append(applied)
    return objects


def release_json(name: str, namespace: str, chart: str, revision: int, chart_version: str, app_version: str,
                 status: str, values: dict, description: str, stamp: str, manifest: str = "") -> dict:
    return {
        "name": name,
        "info": {"first_deployed": stamp, "last_deployed": stamp, "deleted": "", "description": description,
                 "status": status},
        "chart": {"metadata": {"name": chart, "version": chart_version, "appVersion": app_version,
                               "apiVersion": "v2", "type": "application"},
                  "templates": [], "values": {}},
        "config": values,
        "manifest": manifest,
        "version": revision,
        "namespace": namespace,
    }


def release_secrets(entry: dict, stamp: str) -> list[dict]:
    """The storage Secrets of one scenario release, oldest revision first."""
    secrets = []
    for number, rev in enumerate(entry["revisions"], start=1):
        status = rev.get("status", "deployed")
        data = release_json(entry["name"], entry["namespace"], entry["chart"], number, str(rev["chart_version"]),
                            str(rev.get("app_version", rev["chart_version"])), status, rev.get("values") or {},
                            rev.get("description") or ("Install complete" if number == 1 else "Upgrade complete"),
                            stamp, manifest_text(entry["chart"], rev.get("manifest")))
        helm_encoded = base64.b64encode(gzip.compress(json.dumps(data).encode("utf-8"))).decode("ascii")
        secrets.append({
            "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (entry["name"], number), "namespace": entry["namespace"],
                         "labels": {"name": entry["name"], "owner": "helm", "status": status, "version": str(number)}},
            "data": {"release": base64.b64encode(helm_encoded.encode("ascii")).decode("ascii")},
        })
    return secrets
