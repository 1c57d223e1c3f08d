# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""The lab's HTTP(S) front: routing, authentication, content negotiation and watch streams.

Paths served: /version, /healthz|livez|readyz, /api, /apis, /api/v1, /apis/{g}[/{v}], /openapi/v3[/...],
and resources under /api/v1 and /apis/{g}/{v}: [namespaces/{ns}/]{plural}[/{name}[/{subresource}]].
"""

from __future__ import annotations

import gc
import json
import socket
import ssl
import sys
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qs, urlsplit

from kubelab import discovery, validation
from kubelab.api import Api
from kubelab.controllers.dra import record_delivery as dra_delivered, record_truth as dra_truth, truth_list
from kubelab.errors import ApiError, bad_request, method_not_allowed, unauthorized
from kubelab.faults import FaultEngine
from kubelab.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from kubelab.metrics import KubeletMetrics
from kubelab.patch import manager_from_user_agent
from kubelab.resources import Registry
from kubelab.selectors import parse_field_selector, parse_label_selector
from kubelab.store import Store

WATCH_DEFAULT_TIMEOUT = 1800
NOT_FOUND_PATH = ApiError(404, "NotFound", "the server could not find the requested resource", {})


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    request_queue_size = 128


class LabServer:
    """The API server: ``LabServer(etcd_url).start()``; ``url``; ``stop()``."""

    def __init__(self, etcd_url: str, host: str = "127.0.0.1", port: int = 0, tls: tuple | None = None,
                 token: str | None = None, scenario: dict | None = None):
        self.registry = Registry()
        self.store = Store(etcd_url)
        self.api = Api(self.store, self.registry)
        self.token = token
        self.scenario = scenario or {}
        self.faults = []  # callables(method, path) -> ApiError | None (fault injection, lab part 2)
        self.httpd = _HTTPServer((host, port), _handler_for(self))
        self.scheme = "http"
        if tls:
            context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
            context.load_cert_chain(tls[0], tls[1])
            self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)
            self.scheme = "https"
        self.thread = None
        self.stopping = threading.Event()
        self.controllers = []
        self.controller_errors = []
        self._restore_custom_types()
        # -- lab part 2: faults (kubelab.faults), kubelet metrics (kubelab.metrics), DRA claim timings
        self.claim_timings = {}  # (namespace, name) -> {"created", "allocated", ...}: filled by the DRA part
        self.claim_truth = {}  # ground truth per claim (kubelab.controllers.dra.record_truth), wall-clock
        self._hook_truth()
        self.fault_engine = FaultEngine(self, self.scenario.get("faults"))
        self.faults.append(self.fault_engine.http_fault)
        self.metrics = KubeletMetrics(self)

    def _hook_truth(self) -> None:
        """Stamp claim ground truth when the store records the write (``Store.listeners``)."""
        def listener(event_type, rtype, obj):
            kind = getattr(rtype, "kind", None)
            if kind in ("ResourceClaim", "Pod") and isinstance(obj, dict):
                try:
                    dra_truth(self, event_type, kind, obj, self.store.event_ns())
                except (KeyError, TypeError, AttributeError) as exc:
                    self.controller_errors.append("claim truth: %r" % exc)

        self.store.listeners.append(listener)

    def fault_active(self, kind: str, node: str | None = None) -> bool:
        """Is a fault of ``kind`` active now (for ``node``)? See kubelab.faults."""
        return self.fault_engine.fault_active(kind, node)

    def fault_rate(self, kind: str) -> float:
        """The failure rate (0..1) of ``kind`` now, e.g. ``fault_rate("claim_allocation")``."""
        return self.fault_engine.fault_rate(kind)

    @property
    def url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return "%s://%s:%d" % (self.scheme, host, port)

    def _restore_custom_types(self) -> None:
        """After a restart (or an etcd restore) serve the CRDs that etcd holds."""
        crds, _rev = self.store.list(self.api.crd_type)
        for crd in crds:
            self.registry.set_custom(crd)

    def apply_scenario(self) -> None:
        """Create the built-in namespaces and the scenario's namespaces, nodes and objects.

        Objects that already exist (a restart on the same etcd) are left as they are. The objects
        are created before the controllers start, so each namespace first gets what its
        controllers would give it (ServiceAccount ``default``, ConfigMap ``kube-root-ca.crt``:
        the installed controllers' ``publish_namespace``), as the pods in it need them to pass
        ServiceAccount admission.
        """
        names = ["default", "kube-system", "kube-public", "kube-node-lease"] + list(self.scenario.get("namespaces") or [])
        manifests = [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": n}} for n in names]
        manifests += list(self.scenario.get("nodes") or []) + list(self.scenario.get("objects") or [])
        publishers = [c for c in self.controllers if callable(getattr(c, "publish_namespace", None))]
        published = set()
        for manifest in manifests:
            rtype = self.registry.by_kind(manifest.get("apiVersion", ""), manifest.get("kind", ""))
            if rtype is None:
                raise ApiError(400, "BadRequest", "scenario object of unknown kind %s/%s"
                               % (manifest.get("apiVersion"), manifest.get("kind")))
            namespace = (manifest.get("metadata") or {}).get("namespace", "default") if rtype.namespaced else None
            if namespace is not None and namespace not in published \
                    and self.store.get_or_none(self.api.ns_type, None, namespace) is not None:
                published.add(namespace)
                for publisher in publishers:
                    publisher.publish_namespace(namespace)
            try:
                self.api.create(rtype, namespace, manifest, field_manager="kubelab-scenario")
            except ApiError as exc:
                if exc.code != 409:
                    raise
        for namespace in names:  # the rest too: a client that connects finds every namespace complete
            if namespace not in published:
                for publisher in publishers:
                    publisher.publish_namespace(namespace)

    def start(self) -> "LabServer":
        # Many runnable threads (controllers, request handlers, watch streams) share one interpreter: a 1 ms
        # switch interval (the default is 5 ms) keeps a watch event's delivery close to the write that made it.
        sys.setswitchinterval(0.001)
        self.apply_scenario()
        calm_collector()
        self.thread = threading.Thread(target=self.httpd.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True)
        self.thread.start()
        for controller in self.controllers:
            controller.start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        for controller in self.controllers:  # all told first, then joined: they wind down together
            controller.stop_event.set()
        for controller in self.controllers:
            controller.stop()
        with self.store.changed:
            self.store.changed.notify_all()
        self.httpd.shutdown()
        self.httpd.server_close()
        self.store.close()  # the etcd watch thread that feeds the cache


def _handler_for(lab: LabServer):
    class Handler(_Handler):
        server_lab = lab
    return Handler


def _freeze_survivors(phase: str, info: dict) -> None:
    if phase == "stop" and info.get("generation") == 2:
        gc.freeze()


def calm_collector() -> None:
    """Keep the cycle collector's full passes short, as kube-apiserver's concurrent Go GC never stops the world
    for long: the lab's heap (the cache, the event log, decoded objects) grows to millions of objects, and
    a full collection of it stops every thread for 60-190 ms (measured) - a watch event sent meanwhile is
    that late. The objects alive after a full collection are frozen (``gc.freeze``: never scanned again;
    reference counting still frees them), so the next full pass scans only what came after. Once per
    process."""
    if _freeze_survivors not in gc.callbacks:
        gc.freeze()
        gc.callbacks.append(_freeze_survivors)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # TCP_NODELAY, as kube-apiserver's Go sockets have by default: without it a watch event written
    # right after another waits for the client's delayed ACK (up to 40 ms on Linux) - Nagle's algorithm.
    disable_nagle_algorithm = True
    server_lab: LabServer = None  # set by _handler_for

    def log_message(self, fmt, *args):  # quiet; tests read responses, not logs
        return

    # -- plumbing -------------------------------------------------------------------------------

    def _body(self) -> bytes:
        length = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(length) if length else b""

    def _send_json(self, code: int, data, content_type: str = "application/json", headers: dict | None = None) -> None:
        payload = json.dumps(data).encode("utf-8")
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(payload)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _send_error(self, exc: ApiError) -> None:
        # As kube-apiserver's responsewriters.ErrorNegotiated: a Status with retryAfterSeconds also
        # sets the Retry-After header (429 from max-in-flight/APF, eviction blocked by a PDB).
        retry_after = (exc.details or {}).get("retryAfterSeconds")
        headers = {"Retry-After": str(int(retry_after))} if isinstance(retry_after, int) and retry_after > 0 else None
        self._send_json(exc.code, exc.status(), headers=headers)

    def _dispatch(self) -> None:
        lab = self.server_lab
        parts = urlsplit(self.path)
        query = {k: v[-1] for k, v in parse_qs(parts.query, keep_blank_values=True).items()}
        body = b""
        try:
            if self.command in ("POST", "PUT", "PATCH", "DELETE"):
                body = self._body()
            if lab.token is not None and self.headers.get("Authorization", "") != "Bearer " + lab.token \
                    and parts.path not in ("/healthz", "/livez", "/readyz"):
                raise unauthorized()
            for fault in list(lab.faults):
                error = fault(self.command, parts.path)
                if error is not None:
                    raise error
            self._route(parts.path, query, body)
        except ApiError as exc:
            self._send_error(exc)
        except (BrokenPipeError, ConnectionResetError, socket.timeout):
            return
        except Exception as exc:  # pylint: disable=broad-except
            self._send_error(validation.api_error_from(exc))

    do_GET = do_POST = do_PUT = do_PATCH = do_DELETE = do_HEAD = _dispatch

    # -- routing --------------------------------------------------------------------------------

    def _route(self, path: str, query: dict, body: bytes) -> None:
        lab = self.server_lab
        registry = lab.registry
        accept = self.headers.get("Accept", "")
        path = path.rstrip("/") or "/"
        if path in ("/healthz", "/livez", "/readyz"):
            payload = b"ok"
            self.send_response(200)
            self.send_header("Content-Type", "text/plain")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)
            return
        if path == "/version":
            return self._send_json(200, discovery.VERSION)
        if path.startswith("/kubelab/"):
            return self._kubelab(path, body)
        if path in ("/api", "/apis") and self.command == "GET":
            if discovery.wants_aggregated(accept):
                return self._send_json(200, discovery.aggregated(registry, legacy=path == "/api"),
                                       discovery.AGGREGATED_CONTENT_TYPE)
            return self._send_json(200, discovery.api_versions() if path == "/api" else discovery.api_group_list(registry))
        if path == "/openapi/v3":
            return self._send_json(200, discovery.openapi_index(registry))
        if path.startswith("/openapi/v3/"):
            gv = discovery.parse_openapi_path(path)
            doc = discovery.openapi_document(registry, *gv) if gv else None
            if doc is None:
                raise NOT_FOUND_PATH
            return self._send_json(200, doc)
        segments = path.strip("/").split("/")
        if segments[0] == "api" and len(segments) >= 2:
            group, version, rest = "", segments[1], segments[2:]
        elif segments[0] == "apis" and len(segments) >= 2:
            if len(segments) == 2:
                entry = discovery.api_group(registry, segments[1])
                if entry is None:
                    raise NOT_FOUND_PATH
                return self._send_json(200, entry)
            group, version, rest = segments[1], segments[2], segments[3:]
        else:
            raise NOT_FOUND_PATH
        if not rest:
            listing = discovery.resource_list(registry, group, version)
            if listing is None:
                raise NOT_FOUND_PATH
            return self._send_json(200, listing)
        namespace = None
        if rest[0] == "namespaces" and len(rest) >= 3 and registry.get(group, version, rest[2]) is not None \
                and registry.get(group, version, rest[2]).namespaced:
            namespace, rest = rest[1], rest[2:]
        rtype = registry.get(group, version, rest[0])
        if rtype is None or len(rest) > 3:
            raise NOT_FOUND_PATH
        name = rest[1] if len(rest) > 1 else None
        sub = rest[2] if len(rest) > 2 else ""
        if sub and sub not in rtype.subresources:
            raise NOT_FOUND_PATH
        if rtype.namespaced and namespace is None and name is not None:
            raise NOT_FOUND_PATH
        self._resource(rtype, namespace, name, sub, query, body)

    # -- lab administration: /kubelab/faults[/<id>], /kubelab/metrics[/nodes/<node>] --------------

    def _kubelab(self, path: str, body: bytes) -> None:
        lab, method = self.server_lab, self.command
        parts = path.strip("/").split("/")[1:]
        if parts[:1] == ["metrics"] and method in ("GET", "HEAD"):
            if len(parts) == 3 and parts[1] == "nodes":
                if lab.store.get_or_none(lab.registry.get("", "v1", "nodes"), None, parts[2]) is None:
                    raise ApiError(404, "NotFound", 'nodes "%s" not found' % parts[2], {"name": parts[2], "kind": "nodes"})
                return self._send_text(lab.metrics.render(parts[2]))
            if len(parts) == 1:
                return self._send_text(lab.metrics.render())
        if parts[:2] == ["claims", "truth"] and len(parts) == 2:
            if method == "GET":
                return self._send_json(200, truth_list(lab))
            if method == "DELETE":
                removed = len(lab.claim_truth)
                lab.claim_truth.clear()
                getattr(lab, "claim_truth_pods", {}).clear()
                return self._send_json(200, {"removed": removed})
            raise method_not_allowed()
        if parts[:1] == ["faults"] and len(parts) <= 2:
            if method == "GET" and len(parts) == 1:
                return self._send_json(200, {"faults": lab.fault_engine.describe()})
            if method == "POST" and len(parts) == 1:
                try:
                    added = lab.fault_engine.add(json.loads(body.decode("utf-8") or "null"))
                except (ValueError, UnicodeDecodeError) as exc:
                    raise bad_request("invalid fault: %s" % exc) from exc
                return self._send_json(201, {"faults": added})
            if method == "DELETE":
                ident = int(parts[1]) if len(parts) == 2 and parts[1].isdigit() else None
                if len(parts) == 2 and ident is None:
                    raise NOT_FOUND_PATH
                return self._send_json(200, {"removed": lab.fault_engine.remove(ident)})
            raise method_not_allowed()
        raise NOT_FOUND_PATH

    def _send_text(self, text: str) -> None:
        payload = text.encode("utf-8")
        self.send_response(200)
        self.send_header("Content-Type", METRICS_CONTENT_TYPE)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    def _resource(self, rtype, namespace, name, sub, query, body) -> None:
        api = self.server_lab.api
        method = self.command
        dry_run = query.get("dryRun") == "All"
        content_type = self.headers.get("Content-Type", "")
        manager = query.get("fieldManager")
        if manager is None and "apply-patch" not in content_type:
            # kube-apiserver records the User-Agent's first part; an apply must name its manager.
            manager = manager_from_user_agent(self.headers.get("User-Agent", ""))
        if name is None:
            if method in ("GET", "HEAD"):
                if query.get("watch") in ("true", "1"):
                    return self._watch(rtype, namespace, query)
                return self._send_json(200, api.list(rtype, namespace, query.get("labelSelector", ""),
                                                     query.get("fieldSelector", ""), int(query.get("limit") or 0),
                                                     query.get("continue", ""), shared=True))
            if method == "POST":
                data = validation.decode_body(content_type, body)
                return self._send_json(201, api.create(rtype, namespace, data, dry_run, manager))
            if method == "DELETE":
                return self._delete_collection(rtype, namespace, query, body)
            raise method_not_allowed()
        if sub == "eviction":
            if method != "POST":
                raise method_not_allowed()
            data = validation.decode_body(content_type, body) if body else {}
            return self._send_json(201, api.evict(namespace, name, data))
        if sub == "binding" and rtype.kind == "Pod":
            if method != "POST":
                raise method_not_allowed()
            return self._send_json(201, api.bind(namespace, name, validation.decode_body(content_type, body), dry_run))
        if sub == "scale":
            return self._scale(rtype, namespace, name, body, content_type)
        if method in ("GET", "HEAD"):
            return self._send_json(200, api.get(rtype, namespace, name))
        if method == "PUT":
            data = validation.decode_body(content_type, body)
            obj, code = api.update(rtype, namespace, name, data, sub, dry_run, manager)
            return self._send_json(code, obj)
        if method == "PATCH":
            obj, code = api.patch(rtype, namespace, name, content_type, body, sub, manager,
                                  query.get("force"), dry_run)
            return self._send_json(code, obj)
        if method == "DELETE":
            options = validation.decode_body(content_type, body) if body else {}
            options = dict(options or {})
            if "gracePeriodSeconds" in query:
                options["gracePeriodSeconds"] = int(query["gracePeriodSeconds"])
            if "propagationPolicy" in query:
                options["propagationPolicy"] = query["propagationPolicy"]
            obj, code = api.delete(rtype, namespace, name, options, dry_run)
            return self._send_json(code, obj)
        raise method_not_allowed()

    def _scale(self, rtype, namespace, name, body, content_type) -> None:
        """GET/PUT/PATCH ``.../{name}/scale`` as kube-apiserver's ScaleREST (apps and custom resources).

        A PATCH (JSON, merge or strategic merge; an apply is merged too) is applied to the parent's
        current Scale, and a resourceVersion it changes becomes the precondition, as the patcher does
        on the Scale object; ``fieldManager`` (else the User-Agent's first part) and ``dryRun=All``
        as for the main resource.
        """
        from kubelab import api as api_module
        from kubelab import patch as patching
        api = self.server_lab.api
        query = {k: v[-1] for k, v in parse_qs(urlsplit(self.path).query, keep_blank_values=True).items()}
        dry_run = query.get("dryRun") == "All"
        manager = query.get("fieldManager")
        if manager is None:
            manager = manager_from_user_agent(self.headers.get("User-Agent", ""))
        if self.command in ("GET", "HEAD"):
            return self._send_json(200, api.get_scale(rtype, namespace, name))
        if self.command == "PUT":
            data = validation.decode_body(content_type, body)
            if isinstance(data, dict) and (data.get("metadata") or {}).get("name") not in (None, "", name):
                raise bad_request("the name of the object (%s) does not match the name on the URL (%s)"
                                  % (data["metadata"]["name"], name))
            return self._send_json(200, api.set_scale(rtype, namespace, name, data, manager, dry_run))
        if self.command == "PATCH":
            media = (content_type or "").split(";")[0].strip().lower()
            kind = api_module.PATCH_TYPES.get(media)
            if kind is None:
                raise ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                               "accepted media types include: application/json-patch+json, "
                               "application/merge-patch+json, application/apply-patch+yaml")
            data = validation.decode_body(media, body, allow_yaml=kind == "apply")
            scale = api.get_scale(rtype, namespace, name)
            if kind == "json":
                if not isinstance(data, list):
                    raise bad_request("json: cannot unmarshal object into Go value of type jsonpatch.Patch")
                merged = patching.json_patch(scale, data)
            elif not isinstance(data, dict):
                raise bad_request("json: cannot unmarshal array into Go value of type map[string]interface {}")
            elif kind == "strategic":
                merged = patching.strategic_merge_patch(scale, data)
            else:
                merged = patching.json_merge_patch(scale, data)
            if not isinstance(merged, dict):
                raise ApiError(422, "Invalid", "the patch produced a non-object result")
            merged_meta = merged.setdefault("metadata", {}) if isinstance(merged.get("metadata"), dict) else {}
            if merged_meta.get("resourceVersion") == scale["metadata"].get("resourceVersion"):
                merged_meta["resourceVersion"] = ""  # unchanged: no precondition (the patcher's retry)
            merged["metadata"] = merged_meta
            return self._send_json(200, api.set_scale(rtype, namespace, name, merged, manager, dry_run))
        raise method_not_allowed()

    def _delete_collection(self, rtype, namespace, query, body) -> None:
        api = self.server_lab.api
        listing = api.list(rtype, namespace, query.get("labelSelector", ""), query.get("fieldSelector", ""))
        options = validation.decode_body(self.headers.get("Content-Type", ""), body) if body else {}
        for obj in listing["items"]:
            try:
                api.delete(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"], options or {},
                           query.get("dryRun") == "All")
            except ApiError as exc:
                if exc.code != 404:
                    raise
        listing["items"] = []
        self._send_json(200, listing)

    # -- watch ----------------------------------------------------------------------------------

    def _chunk(self, data: dict) -> None:
        payload = json.dumps(data).encode("utf-8") + b"\n"
        self.wfile.write(b"%x\r\n%s\r\n" % (len(payload), payload))
        self.wfile.flush()

    def _watch(self, rtype, namespace, query) -> None:
        """Newline-delimited events; WatchList (sendInitialEvents) ends its initial part with a bookmark."""
        lab = self.server_lab
        labels = parse_label_selector(query.get("labelSelector", ""))
        fields = parse_field_selector(query.get("fieldSelector", ""), rtype.kind)
        timeout = min(float(query.get("timeoutSeconds") or WATCH_DEFAULT_TIMEOUT), WATCH_DEFAULT_TIMEOUT)
        send_initial = query.get("sendInitialEvents") == "true"
        rv = query.get("resourceVersion", "")
        if send_initial and query.get("resourceVersionMatch") not in (None, "", "NotOlderThan"):
            raise ApiError(422, "Invalid", "resourceVersionMatch: Unsupported value: must be NotOlderThan with "
                           "sendInitialEvents")
        if rv and not rv.isdigit():
            raise bad_request("resourceVersion: Invalid value: %r: must be a number" % rv)

        def matches(obj: dict) -> bool:
            meta = obj.get("metadata") or {}
            if namespace is not None and meta.get("namespace") != namespace:
                return False
            return labels.matches(meta.get("labels") or {}) and fields.matches(obj)

        lab.store.streaming()  # this thread sends events on: it never waits for streams (Store.give_way)
        initial = []
        if send_initial or rv in ("", "0"):
            items, revision = lab.store.list(rtype, namespace, shared=True)
            initial = [o for o in items if matches(o)]
        else:
            revision = int(rv)
            try:
                lab.store.events_after(revision)
            except ApiError as exc:
                self._start_stream()
                self._chunk({"type": "ERROR", "object": exc.status()})
                return self._end_stream()
        self._start_stream()
        for obj in initial:
            dra_delivered(lab, rtype.kind, obj, time.time_ns())
            self._chunk({"type": "ADDED", "object": obj})
        if send_initial:
            self._chunk({"type": "BOOKMARK", "object": {
                "kind": rtype.kind, "apiVersion": rtype.api_version,
                "metadata": {"resourceVersion": str(revision), "annotations": {"k8s.io/initial-events-end": "true"}}}})
        deadline = time.monotonic() + timeout
        # woken only by the events of its own kind (Store.subscribe), not behind every controller's loop
        seen = lab.store.subscribe((rtype.kind,), stream=True)
        try:
            while not lab.stopping.is_set():
                left = deadline - time.monotonic()
                if left <= 0:
                    break
                try:
                    seen.wait(min(left, 1.0))
                    seen.clear()  # before the read: an event recorded after it sets it again
                    mark = lab.store.stream_mark(seen)
                    events = lab.store.events_after(revision)
                except ApiError as exc:
                    self._chunk({"type": "ERROR", "object": exc.status()})
                    break
                for event_revision, event_type, event_rtype, obj in events:
                    revision = event_revision
                    if event_rtype.group != rtype.group or event_rtype.plural != rtype.plural or not matches(obj):
                        continue
                    out = dict(obj)
                    if event_rtype.version != rtype.version:
                        out["apiVersion"] = rtype.api_version
                    if event_type != "DELETED":
                        dra_delivered(lab, event_rtype.kind, obj, time.time_ns())
                    self._chunk({"type": event_type, "object": out})
                lab.store.stream_sent(seen, mark)
        finally:
            lab.store.unsubscribe(seen)
        self._end_stream()

    def _start_stream(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Cache-Control", "no-cache, private")
        self.end_headers()

    def _end_stream(self) -> None:
        try:
            self.wfile.write(b"0\r\n\r\n")
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            pass
        self.close_connection = True
