"""The OpenAPI document as clients (and schemathesis) should see it: FastAPI's, plus what FastAPI cannot
know: the bearer scheme, the error envelope on every error status, and the links between operations."""

from typing import Any

from fastapi import FastAPI
from fastapi.openapi.utils import get_openapi

from cairn_contracts.errors import ErrorEnvelope

API_PREFIX = "/api/v1"
# The probes answer without a key and in their own shape; every other operation (the API, the Temporal
# codec endpoints) takes a bearer key and answers errors in the envelope.
UNAUTHENTICATED = frozenset({"/healthz", "/readyz"})
ERROR_STATUSES = {
    "400": "Malformed request",
    "401": "Missing, unknown or revoked key",
    "403": "This key's role may not do that",
    "404": "Not found (also a foreign id: no existence leak)",
    "409": "Conflicts with the current state",
    "413": "Request body too large",
    "422": "Validation failed (the code names the rule)",
    "429": "Rate limit or budget reached (see Retry-After)",
    "503": "A backing service is unavailable",
    "504": "A backing service timed out",
}
_ERROR_REF = {"$ref": "#/components/schemas/ErrorEnvelope"}

# (source path, method, statuses) -> [(link name, target path, method, parameters, request body)]
LinkSpec = tuple[str, str, str, dict[str, str]]
LINKS: dict[tuple[str, str], list[LinkSpec]] = {
    ("/memory", "post"): [
        ("GetMemory", "/memory/{memory_id}", "get", {"memory_id": "$response.body#/data/id"}),
        (
            "SupersedeMemory",
            "/memory/{memory_id}/supersede",
            "post",
            {"memory_id": "$response.body#/data/id"},
        ),
        ("ForgetMemory", "/memory/{memory_id}", "delete", {"memory_id": "$response.body#/data/id"}),
        (
            "SessionHistory",
            "/sessions/{session_id}/history",
            "get",
            {"session_id": "$response.body#/data/session_id"},
        ),
    ],
    ("/memory/{memory_id}/supersede", "post"): [
        ("GetSuccessor", "/memory/{memory_id}", "get", {"memory_id": "$response.body#/data/id"}),
    ],
    ("/knowledge", "post"): [
        ("GetArticle", "/knowledge/{article_id}", "get", {"article_id": "$response.body#/data/article/id"}),
        (
            "DeleteArticle",
            "/knowledge/{article_id}",
            "delete",
            {"article_id": "$response.body#/data/article/id"},
        ),
    ],
    ("/recall", "post"): [
        (
            "ReferenceRecall",
            "/recall/{recall_id}/referenced",
            "post",
            {"recall_id": "$response.body#/meta/recall_id"},
        ),
    ],
    ("/keys", "post"): [
        ("RevokeKey", "/keys/{key_id}", "delete", {"key_id": "$response.body#/data/id"}),
    ],
    ("/tenants", "post"): [
        ("PatchTenant", "/tenants/{tenant_id}", "patch", {"tenant_id": "$response.body#/data/id"}),
        ("GetProviders", "/tenants/{tenant_id}/providers", "get", {"tenant_id": "$response.body#/data/id"}),
        ("PutProviders", "/tenants/{tenant_id}/providers", "put", {"tenant_id": "$response.body#/data/id"}),
    ],
}


def _add_links(paths: dict[str, Any]) -> None:
    for (source, method), links in LINKS.items():
        operation = paths.get(API_PREFIX + source, {}).get(method)
        if operation is None:
            continue
        for status, response in operation["responses"].items():
            if not status.startswith("2"):
                continue
            response["links"] = {
                name: {
                    "operationId": paths[API_PREFIX + target][target_method]["operationId"],
                    "parameters": parameters,
                }
                for name, target, target_method, parameters in links
                if target_method in paths.get(API_PREFIX + target, {})
            }


def build_openapi(app: FastAPI) -> dict[str, Any]:
    doc = get_openapi(title=app.title, version=app.version, description=app.description, routes=app.routes)
    schemas = doc.setdefault("components", {}).setdefault("schemas", {})
    error_schema = ErrorEnvelope.model_json_schema(ref_template="#/components/schemas/{model}")
    schemas.update(error_schema.pop("$defs", {}))
    schemas["ErrorEnvelope"] = error_schema
    doc["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
    for path, operations in doc["paths"].items():
        if path in UNAUTHENTICATED:
            continue
        for operation in operations.values():
            operation["security"] = [{"bearer": []}]
            responses = operation["responses"]
            for status, description in ERROR_STATUSES.items():
                # FastAPI's own 422 body (HTTPValidationError) is never sent: errors use the envelope.
                responses[status] = {
                    "description": description,
                    "content": {"application/json": {"schema": _ERROR_REF}},
                }
    for unused in ("HTTPValidationError", "ValidationError"):
        schemas.pop(unused, None)
    _add_links(doc["paths"])
    return doc


def install_openapi(app: FastAPI) -> None:
    cached: dict[str, Any] = {}

    def openapi() -> dict[str, Any]:
        if not cached:
            cached.update(build_openapi(app))
        return cached

    app.openapi = openapi  # type: ignore[method-assign]
