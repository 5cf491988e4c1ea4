"""The recall replica announces a recalled memory at most once per cooldown (pure logic, fake JetStream)."""

import asyncio
import json
from typing import Any

from cairn_contracts.identity import Role
from cairn_recall.events import HotnessPublisher
from cairn_scope import Scope


class RecordingJetStream:
    def __init__(self) -> None:
        self.published: list[list[str]] = []

    async def publish(self, subject: str, payload: bytes, headers: Any = None) -> None:
        self.published.append(json.loads(payload)["memory_ids"])


def scope(subject: str) -> Scope:
    return Scope(
        tenant_id="00000000-0000-0000-0000-000000000001", subject_id=subject, role=Role.agent, key_id="k"
    )


async def test_a_memory_is_announced_once_per_cooldown_per_subject() -> None:
    js = RecordingJetStream()
    publisher = HotnessPublisher(js, max_pending=10, cooldown_seconds=0.3)  # type: ignore[arg-type]
    await publisher(scope("a"), ["m1", "m2"])
    await publisher(scope("a"), ["m1", "m2"])  # both announced already: nothing is published
    await publisher(scope("a"), ["m2", "m3"])  # only the new one
    await publisher(scope("b"), ["m1"])  # another subject's memory of the same id is its own
    await publisher.drain()
    assert js.published == [["m1", "m2"], ["m3"], ["m1"]]
    await asyncio.sleep(0.35)  # the cooldown has passed: announced again
    await publisher(scope("a"), ["m1"])
    await publisher.drain()
    assert js.published[-1] == ["m1"]
