# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Resource operations with kube-apiserver semantics, independent of HTTP.

The HTTP handler (server.py) and the simulated controllers both act through this class, so the
lab's behaviour is only ever what its API allows.
"""

from __future__ import annotations

import base64
import datetime
import json
import random
import threading
import time
import uuid

from kubelab.clone import clone
from kubelab import admission, defaults, encoding
from kubelab import patch as patching
from kubelab import validation
from kubelab.errors import ApiError, bad_request, method_not_allowed, not_found, too_many_requests
from kubelab.resources import RETURN_OBJECT_ON_DELETE, Registry
from kubelab.selectors import label_selector_from_object, parse_field_selector, parse_label_selector
from kubelab.store import Store, now

PATCH_TYPES = {
    "application/json-patch+json": "json",
    "application/merge-patch+json": "merge",
    "application/strategic-merge-patch+json": "strategic",
    "application/apply-patch+yaml": "apply",
    "application/apply-patch+cbor": "apply",
}
DEFAULT_POD_GRACE = 30
NAME_ALPHABET = "bcdfghjklmnpqrstvwxz2456789"  # utilrand.String


def _status_success(rtype, name: str, uid: str | None = None, code: int = 200) -> dict:
    details = {"name": name, "kind": rtype.plural}
    if rtype.group:
        details["group"] = rtype.group
    if uid:
        details["uid"] = uid
    return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "details": details}


def _later(seconds: int) -> str:
    moment = datetime.datetime.now(datetime.timezone.utc) + datetime.timedelta(seconds=seconds)
    return moment.strftime("%Y-%m-%dT%H:%M:%SZ")


class Api:
    def __init__(self, store: Store, registry: Registry):
        self.store = store
        self.registry = registry
        self.ns_type = registry.get("", "v1", "namespaces")
        self.crd_type = registry.get("apiextensions.k8s.io", "v1", "customresourcedefinitions")
        self.pod_type = registry.get("", "v1", "pods")
        self.pdb_type = registry.get("policy", "v1", "poddisruptionbudgets")
        self.gc_lock = threading.Lock()
        store.listeners.append(self._on_event)

    # -- helpers --------------------------------------------------------------------------------

    def _require_namespace(self, rtype, namespace: str | None, creating: bool = False) -> None:
        if not rtype.namespaced:
            return
        if not namespace:
            raise bad_request("the server could not find the requested resource: a namespace is required")
        if creating:
            ns = self.store.get_or_none(self.ns_type, None, namespace)
            if ns is None:
                raise not_found("", "namespaces", namespace)
            if ns.get("metadata", {}).get("deletionTimestamp"):
                raise ApiError(403, "Forbidden", 'unable to create new content in namespace %s because it is being '
                               "terminated" % namespace, {"name": namespace, "kind": "namespaces"})

    def _prepare(self, rtype, obj: dict, operation: str, old: dict | None = None) -> dict:
        """What kube-apiserver does to a decoded object before it is stored, in its order.

        The Go round trip (``encoding``: omitempty, Secret ``stringData``), defaulting
        (``defaults``), mutating admission, then validating admission. ``operation`` is
        ``CREATE`` or ``UPDATE`` (patches and applies of an existing object are updates).
        """
        if not rtype.custom:
            encoding.normalize(rtype, obj)
            defaults.apply(rtype, obj)
            if old is not None and rtype.kind == "Service" and not rtype.group:
                defaults.core.service_keep_allocated(obj, old)  # the registry's patchAllocatedValues
        admission.mutate(self, rtype, obj, operation, old)
        admission.validate(self, rtype, obj, operation, old)
        return obj

    def _managed(self, obj: dict, manager: str | None, operation: str, subresource: str = "", old: dict | None = None) -> None:
        if manager is not None:
            patching.update_managed_fields(obj, manager or "unknown", operation, old, subresource=subresource)

    # -- reads ----------------------------------------------------------------------------------

    def get(self, rtype, namespace: str | None, name: str) -> dict:
        return self.store.get(rtype, namespace, name)

    def list(self, rtype, namespace: str | None, label_selector: str = "", field_selector: str = "",
             limit: int = 0, continue_token: str = "", shared: bool = False) -> dict:
        """A list response. ``shared``: the items are the store's shared decoded objects (an informer
        lister's read, see ``Store.list``): read them, copy before changing anything."""
        labels = parse_label_selector(label_selector or "")
        fields = parse_field_selector(field_selector or "", rtype.kind)
        items, revision = self.store.list(rtype, namespace, shared=shared)
        items = [o for o in items if labels.matches(o.get("metadata", {}).get("labels") or {}) and fields.matches(o)]
        items.sort(key=lambda o: (o["metadata"].get("namespace", ""), o["metadata"]["name"]))
        meta = {"resourceVersion": str(revision)}
        if continue_token:
            try:
                start = json.loads(base64.urlsafe_b64decode(continue_token.encode()).decode())
                revision, after = int(start["rv"]), tuple(start["after"])
            except (ValueError, KeyError, TypeError) as exc:
                raise bad_request("continue key is not valid: %s" % exc) from exc
            items = [o for o in items if (o["metadata"].get("namespace", ""), o["metadata"]["name"]) > after]
            meta["resourceVersion"] = str(revision)
        if limit and len(items) > limit:
            last = items[limit - 1]["metadata"]
            token = {"rv": int(meta["resourceVersion"]), "after": [last.get("namespace", ""), last["name"]]}
            meta["continue"] = base64.urlsafe_b64encode(json.dumps(token).encode()).decode()
            meta["remainingItemCount"] = len(items) - limit
            items = items[:limit]
        return {"kind": rtype.list_kind, "apiVersion": rtype.api_version, "metadata": meta, "items": items}

    # -- create ---------------------------------------------------------------------------------

    def create(self, rtype, namespace: str | None, body, dry_run: bool = False, field_manager: str | None = None,
               applied: bool = False) -> dict:
        obj = validation.check_type(clone(body), rtype)
        meta = obj.setdefault("metadata", {})
        if rtype.namespaced:
            validation.require_namespace_match(obj, namespace)
        meta["uid"] = str(uuid.uuid4())  # BeforeCreate fills it before validation (a Job's selector uses it)
        self._require_namespace(rtype, namespace, creating=True)
        self._prepare(rtype, obj, "CREATE")
        # rest.BeforeCreate names the object after mutating admission (whose errors name the generateName),
        # with names.SimpleNameGenerator's 5 characters of utilrand's alphabet.
        meta = obj.setdefault("metadata", {})
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = meta["generateName"] + "".join(random.choice(NAME_ALPHABET) for _index in range(5))
            if not rtype.custom:
                defaults.apply(rtype, obj)  # idempotent; what needs the name (a Job's job-name labels) now has it
        validation.validate_object(rtype, obj)
        self._defaults(rtype, obj)
        if not applied:  # an apply create carries its Apply entry already
            self._managed(obj, field_manager if field_manager is not None else "", "Update")
        created = self.store.create(rtype, obj, dry_run=dry_run)
        if rtype is self.crd_type and not dry_run:
            self.registry.set_custom(created)
        return created

    def _defaults(self, rtype, obj: dict) -> None:
        """What the registries add on create, after defaulting and admission (``defaults.apply`` did the
        ``SetDefaults_*`` part in ``_prepare``): the namespace strategy's ``kubernetes`` finalizer and
        Active phase, a CRD's status, a Pod's status as ``podStrategy.PrepareForCreate`` sets it
        (phase Pending and ``qos.ComputePodQOS``), and the Service registry's IP families, cluster IP
        and node ports (``Allocators.allocateCreate``)."""
        from kubelab.defaults import core as core_defaults  # pylint: disable=import-outside-toplevel
        kind = rtype.kind
        if rtype.custom:
            return
        if kind == "Namespace":
            obj.setdefault("spec", {}).setdefault("finalizers", ["kubernetes"])
            obj["status"] = {"phase": "Active"}
            obj["metadata"].setdefault("labels", {})["kubernetes.io/metadata.name"] = obj["metadata"]["name"]
        elif kind == "CustomResourceDefinition":
            self._crd_status(obj)
        elif kind == "Pod":
            spec = obj.setdefault("spec", {})
            core_defaults.service_account_names(spec)  # admission may have set serviceAccountName
            status = obj.get("status")
            if not isinstance(status, dict):
                status = obj["status"] = {}
            status.setdefault("phase", "Pending")
            status["qosClass"] = core_defaults.pod_qos(obj)
        elif kind == "Service" and rtype.group == "":
            existing, _revision = self.store.list(rtype)
            core_defaults.service_allocate(obj, existing)

    def _crd_status(self, crd: dict, previous: dict | None = None) -> None:
        """The apiextensions controllers' status: names accepted, Established. A condition whose
        status does not change keeps its ``lastTransitionTime`` (so a no-op write stays a no-op)."""
        spec = crd.get("spec") or {}
        names = dict(spec.get("names") or {})
        names.setdefault("singular", (names.get("kind") or "").lower())
        names.setdefault("listKind", (names.get("kind") or "") + "List")
        stamp = now()
        crd["status"] = {
            "acceptedNames": names,
            "storedVersions": [v["name"] for v in spec.get("versions") or [] if v.get("storage")],
            "conditions": [
                {"type": "NamesAccepted", "status": "True", "reason": "NoConflicts",
                 "message": "no conflicts found", "lastTransitionTime": stamp},
                {"type": "Established", "status": "True", "reason": "InitialNamesAccepted",
                 "message": "the initial names have been accepted", "lastTransitionTime": stamp},
            ],
        }
        before = {c.get("type"): c for c in ((previous or {}).get("status") or {}).get("conditions") or []
                  if isinstance(c, dict)}
        for cond in crd["status"]["conditions"]:
            old_cond = before.get(cond["type"])
            if old_cond and old_cond.get("status") == cond["status"] and old_cond.get("lastTransitionTime"):
                cond["lastTransitionTime"] = old_cond["lastTransitionTime"]

    # -- update ---------------------------------------------------------------------------------

    def update(self, rtype, namespace: str | None, name: str, body, subresource: str = "", dry_run: bool = False,
               field_manager: str | None = None) -> tuple[dict, int]:
        obj = validation.check_type(clone(body), rtype)
        validation.require_name_match(obj, name)
        if rtype.namespaced:
            validation.require_namespace_match(obj, namespace)
        expected = obj.get("metadata", {}).get("resourceVersion")
        current = self.store.get_or_none(rtype, namespace, name)
        if current is None:
            if subresource:
                raise not_found(rtype.group, rtype.plural, name)
            # PUT creates when the object is missing (AllowCreateOnUpdate types) only without a precondition.
            if expected:
                raise not_found(rtype.group, rtype.plural, name)
            return self.create(rtype, namespace, obj, dry_run, field_manager), 201
        obj = self._merge_scope(rtype, current, obj, subresource)
        self._prepare(rtype, obj, "UPDATE", current)
        validation.validate_object(rtype, obj)
        self._managed(obj, field_manager if field_manager is not None else "", "Update", subresource, current)
        return self._write(rtype, obj, expected, dry_run, subresource), 200

    def _merge_scope(self, rtype, current: dict, obj: dict, subresource: str) -> dict:
        """A write to the main resource keeps the stored status; a /status write only changes status."""
        if subresource == "status":
            # ``current`` is this request's own decoded copy (Store.get): the merged object shares its
            # unchanged parts (spec) instead of copying them; only metadata and status are replaced.
            merged = dict(current, metadata=dict(current.get("metadata") or {}))
            merged["status"] = obj.get("status")
            for key in ("labels", "annotations"):
                if key in (obj.get("metadata") or {}):
                    merged["metadata"][key] = obj["metadata"][key]
            merged["metadata"]["resourceVersion"] = obj.get("metadata", {}).get("resourceVersion")
            if "managedFields" in (obj.get("metadata") or {}):
                merged["metadata"]["managedFields"] = obj["metadata"]["managedFields"]
            return merged
        if rtype.has_status and rtype.kind != "CustomResourceDefinition":
            if "status" in current:
                obj["status"] = current["status"]
            else:
                obj.pop("status", None)
        return obj

    def _write(self, rtype, obj: dict, expected: str | None, dry_run: bool, subresource: str = "") -> dict:
        if rtype is self.crd_type:
            self._crd_status(obj, self.store.get_or_none(rtype, None, obj["metadata"]["name"]))
        if rtype is self.ns_type and subresource != "status":
            current = self.store.get_or_none(rtype, None, obj["metadata"]["name"])
            if current:
                obj["status"] = current.get("status")
        finalizers_removed = False
        if obj.get("metadata", {}).get("deletionTimestamp") or self._terminating(rtype, obj):
            finalizers_removed = not obj["metadata"].get("finalizers")
        written = self.store.update(rtype, obj, expected, dry_run=dry_run, bump_generation=subresource != "status")
        if rtype is self.crd_type and not dry_run:
            self.registry.set_custom(written)
        if finalizers_removed and not dry_run and written["metadata"].get("deletionTimestamp") \
                and rtype.kind not in ("Pod", "Namespace", "CustomResourceDefinition"):
            self._finish_delete(rtype, written)
        return written

    def _terminating(self, rtype, obj: dict) -> bool:
        current = self.store.get_or_none(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"])
        if current and current["metadata"].get("deletionTimestamp"):
            obj["metadata"]["deletionTimestamp"] = current["metadata"]["deletionTimestamp"]
            return True
        return False

    # -- patch ----------------------------------------------------------------------------------

    def patch(self, rtype, namespace: str | None, name: str, content_type: str, raw: bytes, subresource: str = "",
              field_manager: str | None = None, force: bool | str | None = None,
              dry_run: bool = False) -> tuple[dict, int]:
        media = (content_type or "").split(";")[0].strip().lower()
        kind = PATCH_TYPES.get(media)
        if kind is None:
            raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - accepted "
                           "media types include: application/json-patch+json, application/merge-patch+json, "
                           "application/apply-patch+yaml")
        if kind == "apply" and not field_manager:
            cause = {"reason": "FieldValueRequired", "message": "Required value: is required for apply patch",
                     "field": "fieldManager"}
            raise ApiError(422, "Invalid", "PatchOptions.meta.k8s.io \"\" is invalid: fieldManager: Required value: is "
                           "required for apply patch", {"kind": "PatchOptions", "group": "meta.k8s.io", "causes": [cause]})
        if kind != "apply" and force is not None and force is not False:
            # ValidatePatchOptions: force is only for apply, even force=false
            patching.validate_patch_options(media, field_manager, force)
        force = patching.parse_bool_param(force)  # a raw query value or a bool
        body = validation.decode_body(media, raw, allow_yaml=kind == "apply")
        current = self.store.get_or_none(rtype, namespace, name)
        if current is None:
            if kind != "apply" or subresource:
                raise not_found(rtype.group, rtype.plural, name)
            obj = validation.check_type(body, rtype)
            validation.require_name_match(obj, name)
            created = patching.apply_patch(None, obj, field_manager, force, subresource=subresource,
                                           reset_fields=("status",) if rtype.has_status else ())
            return self.create(rtype, namespace, created, dry_run, field_manager, applied=True), 201
        expected = None
        if kind == "json":
            if not isinstance(body, list):
                raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
            patched = patching.json_patch(clone(current), body)
            # A resourceVersion in the patch result acts as a precondition (kubectl's SSA migration).
            new_rv = (patched.get("metadata") or {}).get("resourceVersion")
            if new_rv and new_rv != current["metadata"]["resourceVersion"]:
                expected = new_rv
        elif kind == "merge":
            if not isinstance(body, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
            patched = patching.json_merge_patch(clone(current), body)
        elif kind == "strategic":
            if not isinstance(body, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
            patched = patching.strategic_merge_patch(clone(current), body)
        else:
            if not isinstance(body, dict):
                raise bad_request("error decoding YAML: the apply configuration is not an object")
            validation.check_type(body, rtype)
            patched = patching.apply_patch(clone(current), body, field_manager, force, subresource=subresource,
                                           reset_fields=("status",) if rtype.has_status and not subresource else ())
        if not isinstance(patched, dict):
            raise ApiError(422, "Invalid", "the patch produced a non-object result")
        patched = validation.check_type(patched, rtype)
        meta = patched.setdefault("metadata", {})
        for field in ("name", "namespace", "uid"):
            if field in current["metadata"] and meta.get(field) != current["metadata"][field]:
                if field == "uid":
                    meta["uid"] = current["metadata"]["uid"]
                else:
                    raise bad_request("metadata.%s cannot be changed by a patch" % field)
        meta["resourceVersion"] = expected or current["metadata"]["resourceVersion"]
        patched = self._merge_scope(rtype, current, patched, subresource)
        self._prepare(rtype, patched, "UPDATE", current)
        validation.validate_object(rtype, patched)
        if kind != "apply":
            self._managed(patched, field_manager if field_manager is not None else "", "Update", subresource, current)
        return self._write(rtype, patched, expected, dry_run, subresource), 200

    # -- delete ---------------------------------------------------------------------------------

    def delete(self, rtype, namespace: str | None, name: str, options: dict | None = None,
               dry_run: bool = False) -> tuple[dict, int]:
        options = options or {}
        pre = options.get("preconditions") or {}
        current = self.store.get(rtype, namespace, name)
        if pre.get("uid") and pre["uid"] != current["metadata"].get("uid"):
            raise ApiError(409, "Conflict", "Precondition failed: UID in precondition: %s, UID in object meta: %s"
                           % (pre["uid"], current["metadata"].get("uid")))
        if pre.get("resourceVersion") and pre["resourceVersion"] != current["metadata"]["resourceVersion"]:
            raise ApiError(409, "Conflict", "Precondition failed: ResourceVersion in precondition: %s, ResourceVersion "
                           "in object meta: %s" % (pre["resourceVersion"], current["metadata"]["resourceVersion"]))
        if dry_run:
            return current, 200
        propagation = options.get("propagationPolicy") or ("Orphan" if options.get("orphanDependents") else "Background")
        meta = current["metadata"]
        graceful = self._grace_seconds(rtype, current, options)
        if meta.get("deletionTimestamp"):
            # Already terminating: only a forced pod deletion (grace 0) changes anything.
            if rtype.kind == "Pod" and options.get("gracePeriodSeconds") == 0 and not meta.get("finalizers"):
                return self._remove(rtype, current, propagation), 200
            return current, 200
        staged = rtype.kind == "Namespace" or rtype is self.crd_type or bool(meta.get("finalizers")) or graceful > 0
        if not staged:
            removed = self._remove(rtype, current, propagation)
            if rtype.kind in RETURN_OBJECT_ON_DELETE:
                return removed, 200
            return _status_success(rtype, name, meta.get("uid")), 200
        meta["deletionTimestamp"] = _later(graceful)
        meta["deletionGracePeriodSeconds"] = graceful
        if rtype.kind == "Namespace":
            current.setdefault("status", {})["phase"] = "Terminating"
        current = self.store.update(rtype, current, None, bump_generation=False, deleting=True)
        if propagation == "Orphan":
            self.orphan_dependents(meta.get("uid"))
        if rtype.kind == "Namespace":
            threading.Thread(target=self._finalize_namespace, args=(name,), daemon=True).start()
        elif rtype is self.crd_type:
            threading.Thread(target=self._finalize_crd, args=(current,), daemon=True).start()
        return current, 200

    def _grace_seconds(self, rtype, obj: dict, options: dict) -> int:
        if rtype.kind != "Pod":
            return 0
        if options.get("gracePeriodSeconds") is not None:
            return max(0, int(options["gracePeriodSeconds"]))
        if not (obj.get("spec") or {}).get("nodeName"):
            return 0  # an unscheduled pod goes at once, as in Kubernetes
        if (obj.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            return 0
        return int((obj.get("spec") or {}).get("terminationGracePeriodSeconds", DEFAULT_POD_GRACE))

    def _remove(self, rtype, obj: dict, propagation: str = "Background") -> dict:
        meta = obj["metadata"]
        removed = self.store.delete(rtype, meta.get("namespace"), meta["name"])
        if propagation != "Orphan":
            threading.Thread(target=self.collect_dependents, args=(meta.get("uid"),), daemon=True).start()
        else:
            self.orphan_dependents(meta.get("uid"))
        return removed

    def _finish_delete(self, rtype, obj: dict) -> None:
        try:
            self._remove(rtype, obj)
        except ApiError as exc:
            if exc.code != 404:
                raise

    def finalize_pod(self, namespace: str, name: str, uid: str | None = None) -> None:
        """What a kubelet does when a terminating pod's containers have stopped."""
        pod = self.store.get_or_none(self.pod_type, namespace, name)
        if pod and pod["metadata"].get("deletionTimestamp") and (uid is None or pod["metadata"]["uid"] == uid) \
                and not pod["metadata"].get("finalizers"):
            self._finish_delete(self.pod_type, pod)

    # -- garbage collection ---------------------------------------------------------------------

    def _dependents(self, uid: str) -> list:
        found = []
        owned = self.store.owned_keys(uid)  # the garbage collector's owner index
        if not owned:
            return found
        for rtype in self.registry.all():
            if rtype.kind in ("Event",):
                continue
            prefix = rtype.prefix(None)
            if not any(key.startswith(prefix) for key in owned):
                continue
            try:  # only objects whose JSON names the UID are decoded
                items, _rev = self.store.list(rtype, containing=uid.encode("utf-8"))
            except ApiError:
                continue
            for obj in items:
                for ref in obj.get("metadata", {}).get("ownerReferences") or []:
                    if ref.get("uid") == uid:
                        found.append((rtype, obj))
        return found

    def collect_dependents(self, uid: str | None) -> None:
        if not uid:
            return
        for rtype, obj in self._dependents(uid):
            try:
                self.delete(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"],
                            {"propagationPolicy": "Background"})
            except ApiError:
                continue

    def orphan_dependents(self, uid: str | None) -> None:
        for rtype, obj in self._dependents(uid or ""):
            obj["metadata"]["ownerReferences"] = [r for r in obj["metadata"]["ownerReferences"] if r.get("uid") != uid]
            if not obj["metadata"]["ownerReferences"]:
                del obj["metadata"]["ownerReferences"]
            try:
                self.store.update(rtype, obj, None, bump_generation=False)
            except ApiError:
                continue

    def _finalize_namespace(self, name: str) -> None:
        for rtype in self.registry.all():
            if not rtype.namespaced:
                continue
            try:
                items, _rev = self.store.list(rtype, name)
            except ApiError:
                continue
            for obj in items:
                try:
                    self.delete(rtype, name, obj["metadata"]["name"], {"gracePeriodSeconds": 0})
                except ApiError:
                    continue
        ns = self.store.get_or_none(self.ns_type, None, name)
        if ns is not None:
            self._finish_delete(self.ns_type, ns)

    def _finalize_crd(self, crd: dict) -> None:
        spec = crd.get("spec") or {}
        plural = (spec.get("names") or {}).get("plural", "")
        for version in spec.get("versions") or []:
            rtype = self.registry.get(spec.get("group", ""), version.get("name", ""), plural)
            if rtype is None:
                continue
            items, _rev = self.store.list(rtype)
            for obj in items:
                try:
                    self.store.delete(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"])
                except ApiError:
                    continue
        self.registry.remove_custom(spec.get("group", ""), plural)
        current = self.store.get_or_none(self.crd_type, None, crd["metadata"]["name"])
        if current is not None:
            self.store.delete(self.crd_type, None, current["metadata"]["name"])

    def _on_event(self, event_type: str, rtype, obj: dict) -> None:
        """Hook for the store's writes (controllers subscribe through Lab, not here)."""

    # -- eviction and scale ---------------------------------------------------------------------

    def evict(self, namespace: str, name: str, body) -> dict:
        """POST pods/{name}/eviction: PDB-enforcing, as the API server's eviction REST does."""
        if body is not None and not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format - expected an Eviction")
        pod = self.store.get(self.pod_type, namespace, name)
        options = (body or {}).get("deleteOptions") or {}
        if pod["metadata"].get("deletionTimestamp") or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
            self.delete(self.pod_type, namespace, name, options)
            return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}
        # As the eviction REST handler: re-read and retry when the PDB changed under us (409).
        for attempt in range(10):
            try:
                self._charge_budget(namespace, name, pod)
                break
            except ApiError as exc:
                if exc.code != 409 or attempt == 9:
                    raise
                time.sleep(0.05)
        self.delete(self.pod_type, namespace, name, options)
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def bind(self, namespace: str, name: str, body, dry_run: bool = False) -> dict:
        """POST pods/{name}/binding, as kube-apiserver's BindingREST: ``spec.nodeName``, the binding's
        annotations and the PodScheduled condition in one write (the scheduler's bind), with the binding's
        ``metadata.uid``/``resourceVersion`` as preconditions. A pod already assigned, being deleted or gated
        is a 409 Conflict on pods/binding; the write goes around the field manager (no managedFields entry)."""
        if not isinstance(body, dict):
            raise bad_request("the body of the request was in an unknown format - expected a Binding")
        bmeta = body.get("metadata") or {}
        if bmeta.get("name") not in (None, name):
            raise bad_request("name in URL does not match name in Binding object")
        target = body.get("target") or {}
        causes = []
        if not target.get("name"):
            causes.append({"reason": "FieldValueRequired", "message": "Required value", "field": "target.name"})
        if target.get("kind") not in (None, "", "Node"):
            causes.append({"reason": "FieldValueInvalid", "field": "target.kind",
                           "message": "Invalid value: %r: must be empty or 'Node'" % target.get("kind")})
        if causes:
            raise ApiError(422, "Invalid", "Binding.core \"%s\" is invalid: %s" % (
                name, ", ".join("%s: %s" % (c["field"], c["message"]) for c in causes)),
                {"name": name, "kind": "Binding", "causes": causes})
        for attempt in range(10):
            pod = self.store.get(self.pod_type, namespace, name)
            pmeta = pod["metadata"]
            if bmeta.get("uid") and bmeta["uid"] != pmeta.get("uid"):
                raise ApiError(409, "Conflict", "Operation cannot be fulfilled on pods \"%s\": Precondition failed: UID in "
                               "precondition: %s, UID in object meta: %s" % (name, bmeta["uid"], pmeta.get("uid")),
                               {"name": name, "kind": "pods"})
            refused = None
            if pmeta.get("deletionTimestamp"):
                refused = "pod %s is being deleted, cannot be assigned to a host" % name
            elif (pod.get("spec") or {}).get("nodeName"):
                refused = "pod %s is already assigned to node \"%s\"" % (name, pod["spec"]["nodeName"])
            elif (pod.get("spec") or {}).get("schedulingGates"):
                refused = "pod %s has non-empty .spec.schedulingGates" % name
            if refused:
                raise ApiError(409, "Conflict", "Operation cannot be fulfilled on pods/binding \"%s\": %s" % (name, refused),
                               {"name": name, "group": "", "kind": "pods/binding"})
            pod.setdefault("spec", {})["nodeName"] = target["name"]
            if bmeta.get("annotations"):
                pmeta["annotations"] = dict(pmeta.get("annotations") or {}, **bmeta["annotations"])
            pod_status = pod.setdefault("status", {})
            conditions = [dict(c) for c in pod_status.get("conditions") or [] if isinstance(c, dict)]
            scheduled = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
            if scheduled is None:
                conditions.append({"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                                   "lastTransitionTime": now()})
            elif scheduled.get("status") != "True" or scheduled.get("reason") or scheduled.get("message"):
                if scheduled.get("status") != "True":
                    scheduled["lastTransitionTime"] = now()
                scheduled["status"] = "True"
                scheduled.pop("reason", None)
                scheduled.pop("message", None)
            pod_status["conditions"] = conditions
            try:  # GuaranteedUpdate: a write in between is read again, unless the binding named the version
                # (the binding goes around the pod strategy: no generation bump for nodeName)
                self.store.update(self.pod_type, pod, bmeta.get("resourceVersion") or pmeta.get("resourceVersion"),
                                  dry_run=dry_run, bump_generation=False)
            except ApiError as exc:
                if exc.code != 409 or bmeta.get("resourceVersion") or attempt == 9:
                    raise
                continue
            break
        return {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Success", "code": 201}

    def _charge_budget(self, namespace: str, name: str, pod: dict) -> None:
        """Check the pod's PodDisruptionBudget and record the disruption; 429/500 when refused."""
        labels = pod["metadata"].get("labels") or {}
        pdbs, _rev = self.store.list(self.pdb_type, namespace)
        matching = [p for p in pdbs if label_selector_from_object((p.get("spec") or {}).get("selector")).matches(labels)]
        if len(matching) > 1:
            raise ApiError(500, "InternalError", "This pod has more than one PodDisruptionBudget, which the eviction "
                           "subresource does not support.")
        if not matching:
            return
        pdb = matching[0]
        status = pdb.get("status") or {}
        if status.get("observedGeneration", 0) < pdb["metadata"].get("generation", 1) or \
                int(status.get("disruptionsAllowed", 0)) <= 0:
            message = ("The disruption budget %s needs %d healthy pods and has %d currently"
                       % (pdb["metadata"]["name"], int(status.get("desiredHealthy", 0)), int(status.get("currentHealthy", 0))))
            error = too_many_requests("Cannot evict pod as it would violate the pod's disruption budget.")
            error.details = {"causes": [{"reason": "DisruptionBudget", "message": message}]}
            raise error
        status = dict(status)
        status["disruptionsAllowed"] = int(status["disruptionsAllowed"]) - 1
        status.setdefault("disruptedPods", {})[name] = now()
        pdb["status"] = status
        self.store.update(self.pdb_type, pdb, pdb["metadata"]["resourceVersion"], bump_generation=False)

    def _scale_paths(self, rtype) -> tuple:
        """(specReplicasPath, statusReplicasPath, labelSelectorPath) as tuples of keys.

        Built-in kinds: ``spec.replicas``, ``status.replicas`` and ``spec.selector`` (a
        LabelSelector); custom resources: the CRD version's ``subresources.scale`` paths
        (``labelSelectorPath`` names a string field), as apiextensions' ScaleREST.
        """
        if not rtype.custom:
            return ("spec", "replicas"), ("status", "replicas"), None
        crd = self.store.get_or_none(self.crd_type, None, "%s.%s" % (rtype.plural, rtype.group)) or {}
        scale = {}
        for version in (crd.get("spec") or {}).get("versions") or []:
            if version.get("name") == rtype.version:
                scale = (version.get("subresources") or {}).get("scale") or {}

        def path(text):
            return tuple(p for p in str(text or "").lstrip(".").split(".") if p) or None
        return (path(scale.get("specReplicasPath")) or ("spec", "replicas"),
                path(scale.get("statusReplicasPath")) or ("status", "replicas"), path(scale.get("labelSelectorPath")))

    @staticmethod
    def _at(obj, keys: tuple):
        for key in keys:
            if not isinstance(obj, dict) or key not in obj:
                return None
            obj = obj[key]
        return obj

    def get_scale(self, rtype, namespace: str, name: str, obj: dict | None = None) -> dict:
        """``autoscaling/v1`` Scale of the parent, as ScaleREST's scaleFromDeployment / scaleFromCustomResource.

        ``status.selector`` is the parent's label selector as ``labels.Selector.String()`` (matchLabels
        and matchExpressions, sorted by key); for a custom resource the string at ``labelSelectorPath``.
        """
        if obj is None:
            obj = self.store.get(rtype, namespace, name)
        spec_path, status_path, selector_path = self._scale_paths(rtype)
        replicas = self._at(obj, spec_path)
        if not rtype.custom:
            try:
                selector = str(label_selector_from_object((obj.get("spec") or {}).get("selector")))
            except ApiError:
                selector = ""
        else:
            found = self._at(obj, selector_path) if selector_path else None
            selector = found if isinstance(found, str) else ""
        scale = {"kind": "Scale", "apiVersion": "autoscaling/v1",
                 "metadata": {k: obj["metadata"][k] for k in ("name", "namespace", "uid", "resourceVersion",
                                                              "creationTimestamp") if k in obj["metadata"]},
                 "spec": {"replicas": replicas if isinstance(replicas, int) else (0 if rtype.custom else 1)},
                 "status": {"replicas": self._at(obj, status_path) or 0}}
        if selector:
            scale["status"]["selector"] = selector
        return scale

    def set_scale(self, rtype, namespace: str, name: str, scale, field_manager: str | None = None,
                  dry_run: bool = False) -> dict:
        """PUT (or the result of a PATCH on) ``.../scale``, as ScaleREST.Update with scaleUpdatedObjectInfo.

        ``spec.replicas`` (absent = 0, as the Go int32) must be >= 0 (422 ``Scale.autoscaling``); a
        ``metadata.resourceVersion`` in the Scale is the parent's precondition (stale: 409 on the
        parent, e.g. ``deployments.apps``). The parent is written as an update of subresource
        ``scale`` (managedFields entry of ``field_manager`` with ``subresource: scale``; generation
        bumped by the spec change); the answer is the Scale of what was stored.
        """
        if not isinstance(scale, dict):
            raise bad_request("the body of the request was in an unknown format - expected a Scale")
        replicas = (scale.get("spec") or {}).get("replicas", 0)
        if not isinstance(replicas, int) or isinstance(replicas, bool) or replicas < 0:
            message = "Invalid value: %s: must be greater than or equal to 0" % json.dumps(replicas)
            raise ApiError(422, "Invalid", 'Scale.autoscaling "%s" is invalid: spec.replicas: %s' % (name, message),
                           {"name": name, "group": "autoscaling", "kind": "Scale",
                            "causes": [{"reason": "FieldValueInvalid", "message": message, "field": "spec.replicas"}]})
        current = self.store.get(rtype, namespace, name)
        body = clone(current)
        body["metadata"]["resourceVersion"] = (scale.get("metadata") or {}).get("resourceVersion") or ""
        spec_path = self._scale_paths(rtype)[0]
        target = body
        for key in spec_path[:-1]:
            if not isinstance(target.get(key), dict):
                target[key] = {}
            target = target[key]
        target[spec_path[-1]] = replicas
        written, _code = self.update(rtype, namespace, name, body, "scale", dry_run,
                                     field_manager if field_manager is not None else "")
        return self.get_scale(rtype, namespace, name, written)

    def not_allowed(self):
        raise method_not_allowed()
