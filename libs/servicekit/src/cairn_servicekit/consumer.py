"""Pull-consumer helpers for JetStream workers: fetching that rides out broker restarts, bounded
redelivery with backoff, and a dead-letter stream so one poison message cannot loop forever."""

import asyncio
import base64
import logging
from dataclasses import dataclass

from nats.aio.msg import Msg
from nats.errors import Error as NatsError
from nats.js.api import AckPolicy, ConsumerConfig, RetentionPolicy, StorageType, StreamConfig
from nats.js.client import JetStreamContext
from nats.js.errors import BadRequestError
from prometheus_client import Counter

from cairn_contracts import subjects
from cairn_contracts.dead_letter import DeadLetter, DeadLetterReason
from cairn_observability.metrics import count_redelivery

log = logging.getLogger(__name__)

RETRY_AFTER_BROKER_ERROR_SECONDS = 1.0

DEAD_LETTERS = Counter(
    "cairn_jetstream_dead_letters_total",
    "JetStream messages a consumer gave up on and republished to its dead-letter subject.",
    ["consumer", "reason"],
)

DEAD_LETTER_STREAM = StreamConfig(
    name=subjects.DEAD_LETTER_STREAM,
    # The advisory is recorded too: it is the only trace of a message whose every attempt crashed or hung
    # the worker (nobody was left to republish it); its stream_seq points at the original.
    subjects=[subjects.DEAD_LETTER_SUBJECTS, subjects.MAX_DELIVERIES_ADVISORY],
    retention=RetentionPolicy.LIMITS,
    storage=StorageType.FILE,
    max_age=30 * 24 * 3600,
    max_msgs=1_000_000,
)


async def ensure_dead_letter_stream(js: JetStreamContext) -> None:
    """Create the dead-letter stream or bring it to this config (idempotent)."""
    try:
        await js.add_stream(DEAD_LETTER_STREAM)
    except BadRequestError:
        await js.update_stream(DEAD_LETTER_STREAM)


@dataclass(frozen=True)
class Redelivery:
    """How often and how fast a failed message is tried again before it is dead-lettered.

    Attributes:
        max_deliver: Attempts in total (JetStream's ``max_deliver``); the last failure dead-letters.
        initial_delay: Seconds before the second attempt; doubles per attempt.
        max_delay: Cap on the delay.
    """

    max_deliver: int = 8
    initial_delay: float = 1.0
    max_delay: float = 60.0

    def delay(self, deliveries: int) -> float:
        """Seconds to wait before the attempt after delivery number ``deliveries`` (1 for the first)."""
        return float(min(self.max_delay, self.initial_delay * 2 ** max(0, deliveries - 1)))


async def durable_pull(
    js: JetStreamContext,
    subject: str,
    durable: str,
    stream: str,
    *,
    ack_wait: float,
    redelivery: Redelivery,
    max_ack_pending: int = 1000,
) -> JetStreamContext.PullSubscription:
    """A pull subscription on a durable consumer whose config (max_deliver above all) is applied even when
    the consumer already exists from an older release (`pull_subscribe` alone keeps the stored one)."""
    await ensure_dead_letter_stream(js)
    config = ConsumerConfig(
        durable_name=durable,
        filter_subject=subject,
        ack_policy=AckPolicy.EXPLICIT,
        ack_wait=ack_wait,
        max_deliver=redelivery.max_deliver,
        max_ack_pending=max_ack_pending,
    )
    # A durable create with a changed (editable) config updates the consumer in place (nats-server 2.10+).
    await js.add_consumer(stream, config)
    return await js.pull_subscribe_bind(durable, stream)


class DeadLetters:
    """Ends a message's life: nak with backoff while attempts remain, then dead-letter it.

    Dead-lettering publishes a :class:`DeadLetter` (original body included) to the consumer's
    dead-letter subject, *then* terminates the message, and counts it in ``cairn_jetstream_dead_letters_total``.
    If the publish fails the message is nak'ed instead, so it is never dropped unrecorded.
    """

    def __init__(self, js: JetStreamContext, consumer: str, redelivery: Redelivery) -> None:
        self._js = js
        self.consumer = consumer
        self.redelivery = redelivery
        for reason in DeadLetterReason:  # exported at 0 from the start: alerts on increase() see no gap
            DEAD_LETTERS.labels(consumer, reason.value)

    async def failed(self, msg: Msg, error: str) -> None:
        """Handling `msg` failed: try again later, or dead-letter it if that was the last attempt."""
        deliveries = _deliveries(msg)
        if deliveries >= self.redelivery.max_deliver:
            await self.give_up(msg, DeadLetterReason.max_deliveries, error)
            return
        await msg.nak(delay=self.redelivery.delay(deliveries))

    async def give_up(self, msg: Msg, reason: DeadLetterReason, error: str) -> None:
        """Dead-letter `msg` now (a malformed message, or the last failed attempt)."""
        meta = _metadata(msg)
        letter = DeadLetter(
            consumer=self.consumer,
            subject=msg.subject,
            stream_sequence=meta.sequence.stream if meta else 0,
            deliveries=meta.num_delivered if meta else 0,
            reason=reason,
            error=error[:2000],
            data=base64.b64encode(msg.data),  # Base64Bytes validates the encoded form
        )
        try:
            await self._js.publish(
                subjects.dead_letter(self.consumer),
                letter.model_dump_json().encode(),
                stream=subjects.DEAD_LETTER_STREAM,
            )
        except Exception as exc:  # NATS is down: keep the message rather than lose it unrecorded
            log.warning("%s: dead-letter publish failed (%s); redelivering", self.consumer, exc)
            await msg.nak(delay=self.redelivery.max_delay)
            return
        await msg.term()
        DEAD_LETTERS.labels(self.consumer, reason.value).inc()
        log.error(
            "%s: dead-lettered stream seq %d after %d deliveries (%s): %s",
            self.consumer, letter.stream_sequence, letter.deliveries, reason.value, letter.error,
        )  # fmt: skip


def _metadata(msg: Msg) -> Msg.Metadata | None:
    try:
        return msg.metadata
    except Exception:  # not a JetStream message (no reply subject to parse)
        return None


def _deliveries(msg: Msg) -> int:
    meta = _metadata(msg)
    return meta.num_delivered if meta else 1


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
