"""HTTP readiness probes."""

from __future__ import annotations

import ssl
from functools import cache

import httpx


@cache
def _ssl_context() -> ssl.SSLContext:
    # httpx builds (and loads CA certificates into) a new context per client, ~25 ms of CPU per probe.
    return ssl.create_default_context()


async def http_ok(url: str, *, timeout: float = 2.0, contains: str | None = None) -> bool:
    """GETs ``url`` and tells whether it answered 200 (and its body holds ``contains``, if given).

    Proxy variables are ignored: an ``HTTP_PROXY`` in the developer's shell must not capture loopback probes.

    Args:
        url: The URL to probe.
        timeout: Seconds for the whole request.
        contains: Text the body must include.

    Returns:
        True if the server is ready.

    Raises:
        httpx.HTTPError: Connection refused and other transport errors.
    """
    async with httpx.AsyncClient(trust_env=False, verify=_ssl_context(), timeout=timeout) as client:
        response = await client.get(url)
    return response.status_code == 200 and (contains is None or contains in response.text)
