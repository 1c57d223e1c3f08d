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
description?}]}`` (oldest first; the statuses are Helm's: deployed, superseded, failed, ...).
"""

from __future__ import annotations

import base64
import gzip
import json

STATUSES = ("unknown", "deployed", "uninstalled", "superseded", "failed", "uninstalling", "pending-install",
            "pending-upgrade", "pending-rollback")


def release_json(name: str, namespace: str, chart: str, revision: int, chart_version: str, app_version: str,
                 status: str, values: dict, description: str, stamp: str) -> dict:
    return {
        "name": name,
        "info": {"first_deployed": stamp, "last_deployed": stamp, "deleted": "", "description": description,
                 "status": status},
        "chart": {"metadata": {"name": chart, "version": chart_version, "appVersion": app_version,
                               "apiVersion": "v2", "type": "application"},
                  "templates": [], "values": {}},
        "config": values,
        "manifest": "",
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
                            rev.get("description") or ("Install complete" if number == 1 else "Upgrade complete"), stamp)
        helm_encoded = base64.b64encode(gzip.compress(json.dumps(data).encode("utf-8"))).decode("ascii")
        secrets.append({
            "apiVersion": "v1", "kind": "Secret", "type": "helm.sh/release.v1",
            "metadata": {"name": "sh.helm.release.v1.%s.v%d" % (entry["name"], number), "namespace": entry["namespace"],
                         "labels": {"name": entry["name"], "owner": "helm", "status": status, "version": str(number)}},
            "data": {"release": base64.b64encode(helm_encoded.encode("ascii")).decode("ascii")},
        })
    return secrets
