"""Locust scenario: a realistic agent mix against one Cairn gateway (run by `bench/locust_load.py`).

Each simulated agent has its own key (read from CAIRN_LOCUST_KEYS, one per line) and session, and does,
by weight: append session turns (4), recall (4), remember a fact (3), merged recall (2), promote its
session (1). Agents think 0.5-1.5 s between calls, like an agent loop waiting on its model.
"""

import itertools
import os
import random
import uuid
from pathlib import Path

from locust import FastHttpUser, between, task

_KEYS = Path(os.environ["CAIRN_LOCUST_KEYS"]).read_text().split()  # noqa: TID251 - locust reads env
_NEXT = itertools.count()
_TOPICS = ["deploy", "billing", "on-call", "staging", "editor", "database", "release", "travel"]


class Agent(FastHttpUser):
    wait_time = between(0.5, 1.5)

    def on_start(self) -> None:
        key = _KEYS[next(_NEXT) % len(_KEYS)]
        self.headers = {"Authorization": f"Bearer {key}"}
        self.session_id = f"load-{uuid.uuid4().hex[:12]}"
        self.turns = 0

    def _topic(self) -> str:
        return random.choice(_TOPICS)

    @task(4)
    def append_turn(self) -> None:
        self.turns += 1
        role = "user" if self.turns % 2 else "assistant"
        content = (
            f"turn {self.turns}: about the {self._topic()} plan, the number is {random.randint(1, 9999)}"
        )
        self.client.post(
            "/api/v1/memory",
            json={"tier": "session", "session_id": self.session_id, "role": role, "content": content},
            headers={**self.headers, "Idempotency-Key": uuid.uuid4().hex},
            name="append turn",
        )

    @task(4)
    def recall(self) -> None:
        self.client.post(
            "/api/v1/memory/recall",
            json={"query": f"what did we decide about {self._topic()}?"},
            headers=self.headers,
            name="recall",
        )

    @task(3)
    def remember(self) -> None:
        text = f"The {self._topic()} contact is person {random.randint(1, 500)} since week {random.randint(1, 52)}"
        self.client.post(
            "/api/v1/memory",
            json={"text": text},
            headers={**self.headers, "Idempotency-Key": uuid.uuid4().hex},
            name="remember",
        )

    @task(2)
    def merged_recall(self) -> None:
        self.client.post(
            "/api/v1/recall",
            json={"query": f"{self._topic()} decisions", "session_id": self.session_id},
            headers=self.headers,
            name="merged recall",
        )

    @task(1)
    def promote(self) -> None:
        with self.client.post(
            "/api/v1/memory/promote",
            json={"session_id": self.session_id},
            headers=self.headers,
            name="promote",
            catch_response=True,
        ) as response:
            # 429 is the per-tenant promotion budget saying "later": expected back-pressure, not an error.
            if response.status_code == 429:
                response.success()
