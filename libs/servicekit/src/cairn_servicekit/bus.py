"""The one way a Cairn process connects to NATS: as its own principal's user, with its own inbox prefix,
optionally over TLS. Every `nats.connect` in the code base goes through `connect_nats`."""

import ssl
from collections.abc import Awaitable, Callable

import nats
from nats.aio.client import Client as NATS

from cairn_contracts.bus import PRINCIPALS
from cairn_servicekit.settings import BusSettings


def tls_context(settings: BusSettings) -> ssl.SSLContext | None:
    """A client TLS context when a CA or client certificate is configured, else None (plain TCP)."""
    if not (settings.nats_tls_ca or settings.nats_tls_cert):
        return None
    context = ssl.create_default_context(
        ssl.Purpose.SERVER_AUTH, cafile=str(settings.nats_tls_ca) if settings.nats_tls_ca else None
    )
    if settings.nats_tls_cert:
        if not settings.nats_tls_key:
            raise ValueError("CAIRN_NATS_TLS_CERT needs CAIRN_NATS_TLS_KEY")
        context.load_cert_chain(str(settings.nats_tls_cert), str(settings.nats_tls_key))
    return context


async def connect_nats(
    settings: BusSettings,
    principal: str,
    *,
    reconnect: bool = True,
    error_cb: Callable[[Exception], Awaitable[None]] | None = None,
) -> NATS:
    """Connect as `principal` (a name in `cairn_contracts.bus.PRINCIPALS`).

    Replies come back on `_INBOX_<principal>.>`, the only inboxes that principal's NATS user may
    subscribe to. With `reconnect` (services) reconnects are unbounded: a NATS restart must not kill them.
    """
    inbox_prefix = PRINCIPALS[principal].inbox_prefix
    password = settings.nats_password.get_secret_value() if settings.nats_password else None
    return await nats.connect(
        settings.nats_url,
        name=f"cairn-{principal}",
        user=settings.nats_user,
        password=password,
        user_credentials=str(settings.nats_creds) if settings.nats_creds else None,
        nkeys_seed=str(settings.nats_nkey_seed) if settings.nats_nkey_seed else None,
        tls=tls_context(settings),
        inbox_prefix=inbox_prefix,
        max_reconnect_attempts=-1 if reconnect else 0,
        reconnect_time_wait=0.5,
        connect_timeout=5,
        allow_reconnect=reconnect,
        error_cb=error_cb,
    )
