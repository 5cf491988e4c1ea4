"""One error envelope for every failure: `{"error": {"code", "message", "status"}}`."""

import logging

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import ValidationError
from starlette.exceptions import HTTPException as StarletteHTTPException

from cairn_contracts.errors import CairnError, ErrorBody, ErrorCode, validation_code
from cairn_servicekit.runtime import validation_error

log = logging.getLogger(__name__)

_HTTP_CODES = {
    400: ErrorCode.bad_request,
    401: ErrorCode.unauthenticated,
    403: ErrorCode.forbidden,
    404: ErrorCode.not_found,
    405: ErrorCode.method_not_allowed,
}


def error_response(body: ErrorBody, headers: dict[str, str] | None = None) -> JSONResponse:
    return JSONResponse({"error": body.model_dump()}, status_code=body.status, headers=headers)


async def _cairn_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, CairnError)
    return error_response(exc.body(), exc.headers)


async def _http_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    code = _HTTP_CODES.get(exc.status_code, ErrorCode.bad_request)
    message = "no such route" if exc.status_code == 404 else str(exc.detail)
    return error_response(
        ErrorBody(code=code, message=message, status=exc.status_code), dict(exc.headers or {})
    )


async def _validation_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, RequestValidationError)
    errors = list(exc.errors())
    code = validation_code([str(e.get("type")) for e in errors])
    first = errors[0] if errors else {"msg": "invalid request", "loc": ()}
    where = ".".join(str(p) for p in first.get("loc", ()) if p not in ("body",))
    message = (
        "request body is not valid JSON"
        if code == ErrorCode.invalid_json
        else (f"{where}: {first.get('msg')}" if where else str(first.get("msg")))
    )
    return error_response(ErrorBody(code=code, message=message, status=422))


async def _pydantic_error(_: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, ValidationError)
    return error_response(validation_error(exc).body())


async def _unhandled(_: Request, exc: Exception) -> JSONResponse:
    log.exception("unhandled error", exc_info=exc)
    return error_response(ErrorBody(code=ErrorCode.internal_error, message="internal error", status=500))


def install_error_handlers(app: FastAPI) -> None:
    app.add_exception_handler(CairnError, _cairn_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(ValidationError, _pydantic_error)
    app.add_exception_handler(Exception, _unhandled)
