# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Request bodies and object validation, with the status codes and messages kube-apiserver uses."""

from __future__ import annotations

import json
import re

import yaml

from kubelab.errors import ApiError, bad_request, invalid, unsupported_media_type

DNS1123_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS1123_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
# Kinds whose names must be DNS-1123 labels (kube-apiserver's ValidateNamespaceName, services, ...).
LABEL_NAMED = {"Namespace", "Service"}
LABEL_KEY = re.compile(r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")


def decode_body(content_type: str, raw: bytes, allow_yaml: bool = False):
    """The request body as Python data. JSON by default (a missing Content-Type means JSON)."""
    media = (content_type or "application/json").split(";")[0].strip().lower()
    if media == "application/vnd.kubernetes.protobuf":
        from kubelab.protobuf import decode_body as decode_protobuf
        return decode_protobuf(raw)
    if media in ("application/yaml", "application/apply-patch+yaml") or (allow_yaml and media.endswith("yaml")):
        try:
            return yaml.safe_load(raw.decode("utf-8")) if raw else None
        except (yaml.YAMLError, UnicodeDecodeError) as exc:
            raise bad_request("error converting YAML to JSON: %s" % str(exc).replace("\n", " ")) from exc
    if media in ("application/json", "application/strategic-merge-patch+json", "application/merge-patch+json",
                 "application/json-patch+json", "*/*", ""):
        try:
            return json.loads(raw.decode("utf-8")) if raw else None
        except (ValueError, UnicodeDecodeError) as exc:
            raise bad_request("couldn't get version/kind; json parse error: %s" % exc) from exc
    raise unsupported_media_type(content_type)


def check_type(body, rtype, path_kind: str = "") -> dict:
    """The body must be an object of the resource's kind and apiVersion (when it names them)."""
    if not isinstance(body, dict):
        raise bad_request("the body of the request was in an unknown format - expected a %s object" % rtype.kind)
    kind = body.get("kind")
    api_version = body.get("apiVersion")
    if kind not in (None, "", path_kind or rtype.kind):
        raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                          % (api_version, rtype.api_version) if api_version not in (None, rtype.api_version)
                          else "%s in version \"%s\" cannot be handled as a %s: no kind \"%s\" is registered for version \"%s\""
                          % (kind, rtype.version, rtype.kind, kind, rtype.api_version))
    if api_version not in (None, "", rtype.api_version):
        raise bad_request("the API version in the data (%s) does not match the expected API version (%s)"
                          % (api_version, rtype.api_version))
    meta = body.get("metadata")
    if meta is not None and not isinstance(meta, dict):
        raise bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal %s into Go struct "
                          "field %s.metadata of type v1.ObjectMeta" % (rtype.kind, rtype.version, rtype.kind,
                                                                       type(meta).__name__, rtype.kind))
    return body


def validate_object(rtype, obj: dict) -> None:
    """Name rules (DNS-1123), labels and annotations; 422 Invalid with causes, as the API server."""
    meta = obj.get("metadata") or {}
    name = meta.get("name") or ""
    causes = []
    if not name:
        causes.append({"reason": "FieldValueRequired", "message": "Required value: name or generateName is required",
                       "field": "metadata.name"})
    else:
        label = rtype.kind in LABEL_NAMED
        pattern = DNS1123_LABEL if label else DNS1123_SUBDOMAIN
        limit = 63 if label else 253
        if not pattern.match(name) or len(name) > limit:
            what = "RFC 1123 label" if label else "RFC 1123 subdomain"
            causes.append({"reason": "FieldValueInvalid", "field": "metadata.name",
                           "message": 'Invalid value: "%s": a lowercase %s must consist of lower case alphanumeric '
                                      "characters, '-'%s, and must start and end with an alphanumeric character"
                                      % (name, what, "" if label else " or '.'")})
    for field in ("labels", "annotations"):
        value = meta.get(field)
        if value is None:
            continue
        if not isinstance(value, dict):
            raise bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal into Go struct "
                              "field ObjectMeta.metadata.%s of type map[string]string" % (rtype.kind, rtype.version,
                                                                                          rtype.kind, field))
        for key, val in value.items():
            if not isinstance(key, str) or not LABEL_KEY.match(key):
                causes.append({"reason": "FieldValueInvalid", "field": "metadata.%s" % field,
                               "message": 'Invalid value: "%s": name part must consist of alphanumeric characters' % key})
            if not isinstance(val, str):
                raise bad_request("%s in version \"%s\" cannot be handled as a %s: json: cannot unmarshal %s into Go "
                                  "struct field ObjectMeta.metadata.%s of type string" % (
                                      rtype.kind, rtype.version, rtype.kind, type(val).__name__, field))
            if field == "labels" and (len(val) > 63 or not LABEL_VALUE.match(val)):
                causes.append({"reason": "FieldValueInvalid", "field": "metadata.labels",
                               "message": 'Invalid value: "%s": a valid label must be an empty string or consist of '
                                          "alphanumeric characters, '-', '_' or '.'" % val})
    if causes:
        raise invalid(rtype.kind, name, causes, rtype.group)


def require_namespace_match(obj: dict, namespace: str | None) -> None:
    meta = obj.setdefault("metadata", {})
    given = meta.get("namespace")
    if namespace is None:
        return
    if given not in (None, "", namespace):
        raise bad_request("the namespace of the provided object does not match the namespace sent on the request")
    meta["namespace"] = namespace


def require_name_match(obj: dict, name: str) -> None:
    meta = obj.setdefault("metadata", {})
    if meta.get("name") not in (None, "", name):
        raise bad_request("the name of the object (%s) does not match the name on the URL (%s)" % (meta.get("name"), name))
    meta["name"] = name


def api_error_from(exc: Exception) -> ApiError:
    if isinstance(exc, ApiError):
        return exc
    return ApiError(500, "InternalError", "Internal error occurred: %s" % exc)
