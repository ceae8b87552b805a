"""Error mapping shared by the HTTP services: bad input is a 4xx with a reason; a failure of
ours is a 5xx whose body never echoes internal exception text (that goes to the log)."""

from __future__ import annotations

import logging

from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse

from patchstream.errors import ContractError, StoreUnavailable

log = logging.getLogger("patchstream.http")


def install_error_handlers(app: FastAPI) -> None:
    @app.exception_handler(ContractError)
    async def contract(_request: Request, exc: ContractError) -> JSONResponse:
        return JSONResponse({"detail": str(exc), "code": exc.code}, status_code=400)

    @app.exception_handler(StoreUnavailable)
    async def unavailable(_request: Request, exc: StoreUnavailable) -> JSONResponse:
        # Which store, never the driver's text (that goes to the log).
        log.warning("event=store_unavailable store=%s error=%s", exc.store, exc)
        return JSONResponse({"detail": f"the {exc.store} store is not answering; retry later",
                             "store": exc.store}, status_code=503,
                            headers={"Retry-After": "5"})  # fmt: skip

    @app.exception_handler(UnicodeError)
    async def encoding(_request: Request, _exc: UnicodeError) -> JSONResponse:
        return JSONResponse({"detail": "text is not valid UTF-8 (lone surrogate?)"},
                            status_code=422)  # fmt: skip

    @app.exception_handler(RecursionError)
    async def too_deep(_request: Request, _exc: RecursionError) -> JSONResponse:
        return JSONResponse({"detail": "input nested too deeply"}, status_code=400)

    @app.exception_handler(Exception)
    async def internal(request: Request, exc: Exception) -> JSONResponse:
        log.error("event=request_failed path=%s error=%s", request.url.path, type(exc).__name__,
                  exc_info=exc)  # fmt: skip
        return JSONResponse({"detail": "internal error; the service log has the details"},
                            status_code=500)  # fmt: skip
