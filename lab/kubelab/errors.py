# Copyright (c) 2026 gpufleet maintainers
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""API errors as Kubernetes reports them: an HTTP status and a ``Status`` body."""

from __future__ import annotations


class ApiError(Exception):
    """An error answered as ``{"kind": "Status", "status": "Failure", ...}`` with ``code``."""

    def __init__(self, code: int, reason: str, message: str, details: dict | None = None):
        super().__init__(message)
        self.code = code
        self.reason = reason
        self.message = message
        self.details = details or {}

    def status(self) -> dict:
        body = {
            "kind": "Status",
            "apiVersion": "v1",
            "metadata": {},
            "status": "Failure",
            "message": self.message,
            "reason": self.reason,
            "code": self.code,
        }
        if self.details:
            body["details"] = self.details
        return body


def not_found(group: str, resource: str, name: str) -> ApiError:
    qualified = "%s.%s" % (resource, group) if group else resource
    return ApiError(404, "NotFound", '%s "%s" not found' % (qualified, name),
                    {"name": name, "group": group, "kind": resource})


def already_exists(group: str, resource: str, name: str) -> ApiError:
    qualified = "%s.%s" % (resource, group) if group else resource
    return ApiError(409, "AlreadyExists", '%s "%s" already exists' % (qualified, name),
                    {"name": name, "group": group, "kind": resource})


def conflict(group: str, resource: str, name: str, why: str) -> ApiError:
    qualified = "%s.%s" % (resource, group) if group else resource
    return ApiError(409, "Conflict", 'Operation cannot be fulfilled on %s "%s": %s' % (qualified, name, why),
                    {"name": name, "group": group, "kind": resource})


def invalid(kind: str, name: str, causes: list[dict], group: str = "") -> ApiError:
    """422 Invalid; ``causes`` are ``{"reason": "FieldValueInvalid", "message": ..., "field": ...}``."""
    text = "; ".join("%s: %s" % (c.get("field", ""), c.get("message", "")) for c in causes)
    return ApiError(422, "Invalid", '%s "%s" is invalid: %s' % (kind, name, text),
                    {"name": name, "group": group, "kind": kind, "causes": causes})


def bad_request(message: str) -> ApiError:
    return ApiError(400, "BadRequest", message)


def method_not_allowed(message: str = "the server does not allow this method on the requested resource") -> ApiError:
    return ApiError(405, "MethodNotAllowed", message)


def unsupported_media_type(content_type: str) -> ApiError:
    return ApiError(415, "UnsupportedMediaType", "the body of the request was in an unknown format - "
                    "accepted media types include: application/json, application/yaml, "
                    "application/vnd.kubernetes.protobuf (got %s)" % content_type)


def gone(message: str) -> ApiError:
    return ApiError(410, "Expired", message)


def too_many_requests(message: str, retry_after: int = 10) -> ApiError:
    return ApiError(429, "TooManyRequests", message, {"causes": [{"reason": "DisruptionBudget", "message": message}],
                                                      "retryAfterSeconds": retry_after})


def unauthorized() -> ApiError:
    return ApiError(401, "Unauthorized", "Unauthorized")
