#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: crd_prepare
short_description: Apply a chart's CustomResourceDefinitions server-side before a helm upgrade
version_added: 0.3.0
description:
  - Helm installs the CRDs of a chart's C(crds/) directory only on the first install and never upgrades
    them, and the GPU Operator's pre-upgrade hook does not update the CRDs shipped as templates
    (ComputeDomain, ComputeDomainClique). This module applies the target chart's CRDs before each
    C(helm upgrade) - those of C(crds/), the static templates that are CRDs, and those of the subcharts
    (C(charts/<name>/) directories and C(charts/*.tgz) archives, so NFD's too) - with server-side apply.
  - The CRDs are read from O(chart) (a chart directory or archive, read in memory without Helm and
    without extracting anything) and/or O(manifests) (an already rendered manifest, e.g. the output of
    C(helm template)). A template that defines a CRD with template actions cannot be read without
    rendering; it is reported in RV(templated) and, unless O(manifests) is given (the rendered manifest
    is then authoritative for templates), handled as O(templated_crds) says.
  - One CRD per name; the same object from two sources is applied once, two different definitions of
    one name fail the module naming both sources.
  - First, for every selected CRD, the live object is read and the apply is sent as a dry run
    (C(dryRun=All), without force). A 409 conflict names the managers and fields another manager owns;
    with O(force_conflicts=false) the module fails naming them and nothing is written; with
    O(force_conflicts=true) the dry run is repeated with C(force=true). A CRD whose dry-run answer
    equals the live object (server-populated fields aside) with the same field ownership is
    C(unchanged) and is not written at all (its resourceVersion stays).
  - Then each CRD to change is applied (C(PATCH) C(application/apply-patch+yaml) with C(fieldManager)
    and, when forced, C(force=true)) and waited for until its C(Established) condition is True, at most
    O(establish_timeout) seconds.
  - The diff of each CRD (the paths that differ between the live object and the applied one, without
    C(status), C(metadata.managedFields), C(resourceVersion), C(uid), C(generation) and
    C(creationTimestamp); labels and annotations such as Helm's are kept) is returned in RV(crds).
  - With O(evidence_dir), the objects before and after, as served (with their managed fields), are
    written one file per CRD, mode 0600, crash-safe (temporary file, fsync, link), under a new
    directory C(<evidence_dir>/<stamp>/before/) and C(after/); the "before" of a CRD is written before
    it is applied.
  - Forbidden is not absent - a 403 on any read or write fails the module naming the verb and the
    resource. Transient API failures are retried within O(api_deadline) (writes only where they cannot
    have been applied).
  - Runs on the controller (or a delegate) with the C(kubernetes) Python client.
author:
  - gpufleet maintainers (@gpufleet)
options:
  chart:
    description:
      - A chart directory (holding C(Chart.yaml)) or chart archive (C(.tgz)) whose CRDs are applied.
      - Read are C(crds/*.yaml|yml|json), C(templates/) files without template actions (C({{)) that hold
        a CustomResourceDefinition, and the same in every subchart, recursively.
      - At least one of O(chart) and O(manifests) is required.
    type: path
  chart_sha256:
    description:
      - The digest O(chart) must have (the archive's sha256, or the directory digest of
        M(gpufleet.dra_gate.operator_charts)), as the hop plan verified it.
      - When given, the chart is copied into a private temporary directory, the copy's bytes hashed as
        they are written, and only the copy is read; a different digest fails the module naming the
        path, the expected and the actual digest before any API write. So what is applied is what was
        verified, even when the source changes after the plan.
    type: str
  manifests:
    description:
      - An already rendered manifest (multi-document YAML, e.g. C(helm template --include-crds) output);
        its CustomResourceDefinitions are applied, other kinds ignored.
      - When given, the templated CRD templates of O(chart) are taken as rendered here.
    type: str
  include:
    description:
      - Apply only the CRDs whose name or API group matches one of these (exact, or a shell glob such as
        C(*.nvidia.com)). All when empty.
      - O(include) and O(exclude) also select the templated templates of RV(templated) whose CRD name is
        a literal.
    type: list
    elements: str
    default: []
  exclude:
    description:
      - Do not apply the CRDs whose name or API group matches one of these (exact or glob).
    type: list
    elements: str
    default: []
  field_manager:
    description:
      - The field manager of the apply; it owns the fields it applies afterwards.
    type: str
    default: dra-gate
  force_conflicts:
    description:
      - Whether the apply takes ownership of fields another manager owns (C(force=true)).
      - The CRDs were installed by Helm, so manager C(helm) owns their fields; taking them over from
        C(helm) is the point of this step, and the fields taken, from whom, are returned per CRD in
        C(conflicts).
      - With V(false), a conflict fails the module before anything is written, naming each manager
        and the fields it owns, as the server's 409 Status causes name them.
    type: bool
    default: true
  templated_crds:
    description:
      - What to do, when O(manifests) is not given, with templates of O(chart) that define a CRD with
        template actions (they need rendering).
      - V(fail) fails before anything is read from or written to the cluster, naming the files;
        V(warn) applies the others and warns.
    type: str
    choices: [fail, warn]
    default: fail
  establish_timeout:
    description:
      - Seconds to wait, per applied CRD, for its C(Established) condition to become True.
    type: float
    default: 60
  stamp:
    description:
      - Name of the evidence directory; by default the UTC time C(YYYYmmddTHHMMSSZ). A name that is
        taken gets a C(-2), C(-3)... suffix. Letters, digits, C(.), C(_), C(-).
    type: str
extends_documentation_fragment:
  - gpufleet.dra_gate.k8s_auth
  - gpufleet.dra_gate.attributes.k8s
  - gpufleet.dra_gate.evidence_dir.stamped
attributes:
  check_mode:
    support: full
    description:
      - Every apply is sent with C(dryRun=All) only; nothing is written to the cluster (resourceVersions
        unchanged) nor to O(evidence_dir). The actions, diffs and conflicts are those the server
        computed for the dry run.
  diff_mode:
    support: full
    description:
      - Returns the before and after YAML of each CRD that is (or, in check mode, would be) created or
        updated, without the server-populated fields.
notes:
  - Needs get and patch on customresourcedefinitions (create through apply).
  - Helm conditions on subcharts (e.g. C(nfd.enabled)) are not evaluated; use O(exclude) for the CRDs
    of a disabled subchart, or give the rendered O(manifests).
seealso:
  - module: gpufleet.dra_gate.cluster_state
  - module: gpufleet.dra_gate.helm_state
"""

EXAMPLES = r"""
- name: Apply the target chart's CRDs before the upgrade
  gpufleet.dra_gate.crd_prepare:
    chart: /srv/charts/gpu-operator-v26.7.0.tgz
    kubeconfig: /etc/gpufleet/kubeconfig
    evidence_dir: "/var/lib/dra-gate/evidence/{{ dra_gate_run_id }}/crds/hop-1"
  delegate_to: localhost
  run_once: true
  register: crds

- name: The same with the CRD templates rendered by helm template
  gpufleet.dra_gate.crd_prepare:
    chart: /srv/charts/gpu-operator-v26.7.0.tgz
    manifests: "{{ rendered.stdout }}"
    exclude: ["*.nfd.k8s-sigs.io"]
    force_conflicts: false
  delegate_to: localhost
  run_once: true
"""

RETURN = r"""
crds:
  description: One entry per selected CRD, in the order of the sources.
  returned: always
  type: list
  elements: dict
  contains:
    name:
      description: The CRD's name.
      type: str
    group:
      description: Its API group.
      type: str
    sources:
      description: Where it was read (C(<chart>/crds/x.yaml), C(manifests)).
      type: list
      elements: str
    action:
      description: C(created), C(updated) or C(unchanged) (in check mode, what would be done).
      type: str
    diff:
      description:
        - The paths that differ between the live object and the applied one, each with C(path)
          (C(.spec.versions[name="v1"].schema.openAPIV3Schema.properties.spec.properties.x)) and
          C(change) (C(added), C(removed), C(changed), C(reordered)); C(.) added for a created CRD.
      type: list
      elements: dict
    conflicts:
      description:
        - The fields other managers owned, each with C(manager), C(subresource), C(api_version) and
          C(fields); with O(force_conflicts=true) these are the fields taken from them.
      type: list
      elements: dict
    managers_before:
      description: The field managers of the live object (C(helm (Update))).
      type: list
      elements: str
    managers_after:
      description: The field managers after the apply.
      type: list
      elements: str
    resource_version_before:
      description: The live object's resourceVersion, null when it did not exist.
      type: str
    resource_version_after:
      description: The resourceVersion after the apply (the same when unchanged; the live one in check mode).
      type: str
    established:
      description: Whether the C(Established) condition is True afterwards; null in check mode for a CRD
        that would be created.
      type: bool
applied:
  description: The names of the CRDs created or updated (in check mode, that would be).
  returned: always
  type: list
  elements: str
counts:
  description: CRDs per action.
  returned: always
  type: dict
  sample: {"created": 1, "updated": 2, "unchanged": 3}
templated:
  description: Templates of the chart that define a CRD with template actions, each with C(path), C(name)
    (when a literal, else null) and C(rendered) (whether O(manifests) holds a CRD of that name).
  returned: always
  type: list
  elements: dict
evidence_dir:
  description: The directory the before and after objects were written to; null without O(evidence_dir)
    and in check mode.
  returned: always
  type: str
artifacts:
  description: One entry per evidence file, in the shape M(gpufleet.dra_gate.artifact_index) takes
    (C(path), C(kind) C(crd-before) or C(crd-after), C(sha256), C(size), C(source), C(verify), C(captured_at)).
  returned: always
  type: list
  elements: dict
chart:
  description:
    - The chart the CRDs were read from - C(source), C(kind) (C(directory) or C(archive)), C(sha256) (the
      digest of exactly the bytes read) and C(verified) (true when it equalled O(chart_sha256)); after a
      mismatch C(expected_sha256) too and C(verified=false). Null without O(chart).
  returned: always
  type: dict
api_calls:
  description: Number of HTTP requests made (retries included).
  returned: always
  type: int
api_retries:
  description: How many of those requests were retries of a failed attempt.
  returned: always
  type: int
"""

import datetime
import hashlib
import json
import os
import re
import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.dra_gate.plugins.module_utils.cluster import objects as kube
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.common import clock
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import crd_prepare as cp
from ansible_collections.gpufleet.dra_gate.plugins.module_utils.phases import operator_charts as opc
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
    chart=dict(type="path"),
    chart_sha256=dict(type="str"),
    manifests=dict(type="str"),
    include=dict(type="list", elements="str", default=[]),
    exclude=dict(type="list", elements="str", default=[]),
    field_manager=dict(type="str", default="dra-gate"),
    force_conflicts=dict(type="bool", default=True),
    templated_crds=dict(type="str", choices=["fail", "warn"], default="fail"),
    establish_timeout=dict(type="float", default=60.0),
    evidence_dir=dict(type="path"),
    stamp=dict(type="str"),
)
STAMP_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
POLL_SECONDS = 0.5


class Refused(Exception):
    """The run stops before or while writing; ``extra`` goes into the failure result."""

    def __init__(self, msg, **extra):
        Exception.__init__(self, msg)
        self.extra = extra


def gather(params, chart_path=None):
    """The selected CRDs and the templated templates, from the chart (read at ``chart_path``, its
    verified copy, when given) and/or the manifests."""
    entries, templated = [], []
    if params["chart"]:
        found = cp.collect_chart(chart_path or params["chart"])
        entries.extend(found["crds"])
        templated = found["templated"]
    if params["manifests"] is not None:
        entries.extend(cp.collect_manifests(params["manifests"]))
    if not entries and not templated:
        raise cp.CrdSourceError("no CustomResourceDefinition found in %s" % " and ".join(
            x for x in (params["chart"], "manifests" if params["manifests"] is not None else None) if x))
    crds = cp.dedupe(entries)
    rendered = set(crd["name"] for crd in crds if any(s == "manifests" for s in crd["sources"]))
    kept = []
    for item in templated:
        name = item["name"]
        if name and not cp.select([{"name": name, "object": {"spec": {"group": name.partition(".")[2]}}}],
                                  params["include"], params["exclude"]):
            continue  # a literal CRD name that include/exclude leaves out
        item["rendered"] = name in rendered if name else None
        kept.append(item)
    return cp.select(crds, params["include"], params["exclude"]), kept


def crd_path(name):
    return "%s/%s" % (cp.CRD_PATH, name)


def read_live(reader, name):
    return kube.get_or_none(reader, crd_path(name))


def apply(reader, params, crd, force, dry_run):
    query = [("fieldManager", params["field_manager"])]
    if force:
        query.append(("force", "true"))
    if dry_run:
        query.append(("dryRun", "All"))
    return reader.request("PATCH", crd_path(crd["name"]), query, body=json.dumps(crd["object"]),
                          content_type=cp.APPLY_PATCH)


def conflicts_of(exc):
    return cp.parse_conflicts(exc.status_doc, exc.reason)


def plan(reader, params, crds):
    """Read each CRD and dry-run its apply; nothing is written. Raises Refused on conflicts without force."""
    planned, refused = [], []
    for crd in crds:
        live = read_live(reader, crd["name"])
        conflicts = []
        try:
            preview = apply(reader, params, crd, force=False, dry_run=True)
        except K8sApiError as exc:
            if exc.status != 409:
                raise
            conflicts = conflicts_of(exc)
            if not params["force_conflicts"]:
                refused.append({"name": crd["name"], "conflicts": conflicts})
                continue
            preview = apply(reader, params, crd, force=True, dry_run=True)
        if live is None:
            action = "created"
        elif cp.same_state(live, preview):
            action = "unchanged"
        else:
            action = "updated"
        planned.append({"crd": crd, "live": live, "preview": preview, "conflicts": conflicts, "action": action})
    if refused:
        raise Refused("%d CRD(s) have fields that other managers own and force_conflicts is false; nothing was "
                      "written: %s" % (len(refused), "; ".join("%s: %s" % (r["name"], cp.conflict_text(r["conflicts"]))
                                                               for r in refused)), refused=refused)
    return planned


def wait_established(reader, name, timeout, sleep=time.sleep, clock=time.monotonic):
    """The CRD once Established (GET polled), or Refused at the timeout naming its conditions."""
    deadline = clock() + timeout
    while True:
        obj = read_live(reader, name)
        ok, shown = cp.established(obj)
        if ok:
            return obj
        if clock() + POLL_SECONDS > deadline:
            raise Refused("CRD %s is not Established %g s after its apply (conditions: %s)" % (
                name, timeout, ", ".join(shown) or ("the CRD is gone" if obj is None else "none")))
        sleep(POLL_SECONDS)


class Evidence:
    """The before/after files of one run (0600, crash-safe, never replaced)."""

    def __init__(self, parent, stamp, host, captured_at):
        self.dir = make_new_dir(parent, stamp)
        self.host = host
        self.captured_at = captured_at
        self.artifacts = []

    def write(self, which, name, obj):
        directory = os.path.join(self.dir, which)
        ensure_private_dir(directory)
        path = os.path.join(directory, cp.safe_file_name(name) + ".json")
        text = cp.to_json(obj)
        write_private(path, text, replace=False)
        data = text.encode("utf-8")
        digest = hashlib.sha256(data).hexdigest()
        self.artifacts.append({"path": path, "kind": "crd-" + which, "sha256": digest, "size": len(data),
                               "source": self.host + crd_path(name), "verify": default_verify(path, digest),
                               "captured_at": self.captured_at})


def entry_of(item, after, established, resource_version_after):
    crd, live = item["crd"], item["live"]
    return {
        "name": crd["name"],
        "group": (crd["object"].get("spec") or {}).get("group"),
        "sources": crd["sources"],
        "action": item["action"],
        "diff": cp.diff_objects(live, after),
        "conflicts": item["conflicts"],
        "managers_before": cp.managers(live),
        "managers_after": cp.managers(after),
        "resource_version_before": ((live or {}).get("metadata") or {}).get("resourceVersion"),
        "resource_version_after": resource_version_after,
        "established": established,
    }


def execute(reader, params, planned, evidence, check_mode, done):
    """Apply the plan (or, in check mode, report the dry runs); appends each CRD's entry to ``done``."""
    for item in planned:
        crd, live = item["crd"], item["live"]
        if check_mode:
            before_rv = ((live or {}).get("metadata") or {}).get("resourceVersion")
            if item["action"] == "unchanged":
                after, established = live, cp.established(live)[0]
            elif item["action"] == "created":
                after, established = item["preview"], None  # nothing was stored: no resourceVersion
            else:
                after, established = item["preview"], cp.established(live)[0]
            done.append((entry_of(item, after, established, before_rv), live, after))
            continue
        if evidence is not None and live is not None:
            evidence.write("before", crd["name"], live)
        if item["action"] != "unchanged":
            try:
                apply(reader, params, crd, force=params["force_conflicts"], dry_run=False)
            except K8sApiError as exc:
                if exc.status == 409:
                    raise Refused("CRD %s: the apply conflicted (another manager changed it since the dry run): %s"
                                  % (crd["name"], cp.conflict_text(conflicts_of(exc))), conflicts=conflicts_of(exc))
                raise
        after = wait_established(reader, crd["name"], params["establish_timeout"])
        if evidence is not None:
            evidence.write("after", crd["name"], after)
        done.append((entry_of(item, after, True, (after.get("metadata") or {}).get("resourceVersion")), live, after))


def diffs_of(done):
    out = []
    for entry, live, after in done:
        if entry["action"] == "unchanged":
            continue
        out.append({"before_header": "%s (%s)" % (entry["name"], "live" if live is not None else "absent"),
                    "after_header": "%s (%s)" % (entry["name"], entry["action"]),
                    "before": cp.to_yaml(live), "after": cp.to_yaml(after)})
    return out


def main():
    module = AnsibleModule(argument_spec=argspec(MODULE_ARG_SPEC), supports_check_mode=True,
                           required_one_of=[("chart", "manifests")])
    params = module.params
    bad = check_params(params)
    if bad:
        module.fail_json(msg=bad)
    if not params["establish_timeout"] > 0:
        module.fail_json(msg="establish_timeout: must be a positive number of seconds, got %r" % params["establish_timeout"])
    if not params["field_manager"]:
        module.fail_json(msg="field_manager: must not be empty")
    now = datetime.datetime.now(datetime.timezone.utc)
    stamp = params["stamp"] or clock.name_stamp(now)
    if not STAMP_RE.match(stamp):
        module.fail_json(msg="stamp: %r is not valid; expected letters, digits, '.', '_' or '-'" % stamp)
    if params["evidence_dir"] and os.path.exists(params["evidence_dir"]) and not os.path.isdir(params["evidence_dir"]):
        module.fail_json(msg="evidence_dir: %r exists and is not a directory" % params["evidence_dir"])
    chart_used = None
    try:
        if params["chart"]:
            # The chart is read once, from a private copy whose bytes are the ones hashed (chart_sha256):
            # what is applied is what was verified, whatever happens to the source afterwards.
            with opc.ChartAtUse(params["chart"], params["chart_sha256"]) as used:
                chart_used = opc.used_chart(used)
                crds, templated = gather(params, used["path"])
        else:
            crds, templated = gather(params)
    except opc.ChartsError as exc:
        module.fail_json(msg="%s" % exc, changed=False,
                         chart=opc.used_chart({"source": params["chart"], "sha256": params["chart_sha256"]}, exc))
    except cp.CrdSourceError as exc:
        module.fail_json(msg="reading the CRDs failed, nothing was applied: %s" % exc, chart=chart_used)
    unrendered = [t for t in templated if params["manifests"] is None]
    if unrendered:
        text = ("%d template(s) define a CRD with template actions and need rendering (give the rendered "
                "manifest in manifests): %s" % (len(unrendered), ", ".join(
                    "%s%s" % (t["path"], " (%s)" % t["name"] if t["name"] else "") for t in unrendered)))
        if params["templated_crds"] == "fail":
            module.fail_json(msg=text + "; nothing was applied", templated=templated)
        module.warn(text)
    api_client = module_api_client(module)
    host = (api_client.configuration.host or "").rstrip("/")
    reader = reader_from_params(api_client, params)
    done, evidence = [], None

    def result(**extra):
        entries = [entry for entry, _live, _after in done]
        counts = dict((a, sum(1 for e in entries if e["action"] == a)) for a in ("created", "updated", "unchanged"))
        out = dict(crds=entries, applied=[e["name"] for e in entries if e["action"] != "unchanged"], counts=counts,
                   templated=templated, evidence_dir=evidence.dir if evidence is not None else None,
                   artifacts=evidence.artifacts if evidence is not None else [], chart=chart_used, api_calls=reader.calls,
                   api_retries=reader.retries)
        out.update(extra)
        return out

    try:
        planned = plan(reader, params, crds)
        if params["evidence_dir"] and not module.check_mode:
            evidence = Evidence(params["evidence_dir"], stamp, host, clock.to_datetime(now))
        execute(reader, params, planned, evidence, module.check_mode, done)
    except Refused as exc:
        written = [e["name"] for e, _l, _a in done if e["action"] != "unchanged"]
        module.fail_json(msg="%s%s" % (exc, "; applied before the failure: %s" % ", ".join(written) if written else ""),
                         **result(changed=bool(written), **exc.extra))
    except K8sApiError as exc:
        written = [e["name"] for e, _l, _a in done if e["action"] != "unchanged"]
        module.fail_json(msg="the API call failed (%s): %s" % (
            "applied before the failure: %s" % ", ".join(written) if written else "nothing was applied", exc),
            call=exc.call, status=exc.status, forbidden=exc.forbidden, attempts=exc.attempts,
            **result(changed=bool(written)))
    except (IOError, OSError, PrivateFileError) as exc:
        written = [e["name"] for e, _l, _a in done if e["action"] != "unchanged"]
        module.fail_json(msg="evidence_dir: cannot write the evidence (%s): %s" % (
            "applied before the failure: %s" % ", ".join(written) if written else "nothing was applied", exc),
            **result(changed=bool(written)))
    finally:
        api_client.close()
    out = result()
    changed = bool(out["applied"])
    if module._diff:  # pylint: disable=protected-access
        out["diff"] = diffs_of(done)
    verb = "would apply" if module.check_mode else "applied"
    out["msg"] = "%s %d of %d CRD(s) (%s)" % (verb, len(out["applied"]), len(done), ", ".join(
        "%d %s" % (n, a) for a, n in out["counts"].items() if n) or "none selected")
    module.exit_json(changed=changed, **out)


if __name__ == "__main__":
    main()
