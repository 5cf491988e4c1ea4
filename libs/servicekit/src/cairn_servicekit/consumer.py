"""Pull-consumer helpers for JetStream workers."""

import asyncio
import logging

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.client import JetStreamContext

from cairn_observability.metrics import count_redelivery

log = logging.getLogger(__name__)

RETRY_AFTER_BROKER_ERROR_SECONDS = 1.0


async def fetch_batch(sub: JetStreamContext.PullSubscription, batch: int, timeout: float) -> list[Msg]:
    """Up to `batch` messages; [] when none came in time or the broker is briefly unavailable.

    A NATS restart surfaces here as `ServiceUnavailableError` (JetStream not up yet) and idle polls as
    `asyncio.TimeoutError`: a worker must ride both out, not die, and redelivery covers what was in flight.
    """
    try:
        msgs = await sub.fetch(batch, timeout=timeout)
    except TimeoutError:  # nats raises both its own TimeoutError and asyncio's
        return []
    except NatsError as exc:
        log.warning("JetStream fetch failed (%s); retrying", type(exc).__name__)
        await asyncio.sleep(RETRY_AFTER_BROKER_ERROR_SECONDS)
        return []
    for msg in msgs:
        count_redelivery(msg.metadata.consumer, msg.metadata.num_delivered)
    return msgs
