"""`cairn hook claude-code` against the real stack, with fixture transcripts in Claude Code's JSONL shape
(tests/fixtures/claude_code): turns appended once, promoted memories recallable, outages never fail the
session and are caught up by the next run."""

import asyncio
import json
import shutil
import time
from pathlib import Path
from typing import Any

import httpx

from cairn_cli.hook import read_transcript, turn_key
from cairn_devstack import free_port
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle, bearer
from tests.e2e.cli_helpers import Ran, run

FIXTURES = Path(__file__).parent.parent / "fixtures" / "claude_code"
PART1_TURNS = [
    ("user", "Hi! I prefer dark mode in every editor I use."),
    ("assistant", "Noted, dark mode everywhere."),
    ("user", "Our staging database runs on port 6543."),
    ("assistant", "Got it: staging is on 6543."),
]
PART2_TURNS = [
    ("user", "Finally: the on-call rotation changes every Monday."),
    ("user", "We decided to ship releases on Tuesdays."),
    ("assistant", "Tuesdays it is. I will remember that."),
]


class Hook:
    def __init__(self, stack: CairnStack, key: str, root: Path) -> None:
        self.root = root
        self.transcript = root / "transcript.jsonl"
        self.session_id = f"cc-{root.name}"
        self.env = {
            "CAIRN_GATEWAY_URL": stack.gateway_url,
            "CAIRN_API_KEY": key,
            "CAIRN_HOOK_LOG_FILE": str(root / "hook.log"),
            "CAIRN_HOOK_STATE_DIR": str(root / "state"),
        }

    async def fire(self, event: str = "Stop", **env: str) -> Ran:
        payload = {
            "session_id": self.session_id,
            "transcript_path": str(self.transcript),
            "hook_event_name": event,
            "cwd": str(self.root),
        }
        return await run(["hook", "claude-code"], {**self.env, **env}, stdin=json.dumps(payload))

    def log_lines(self) -> list[dict[str, Any]]:
        out = []
        for line in (self.root / "hook.log").read_text().splitlines():
            if "claude-code hook: " in line:
                out.append(json.loads(line.split("claude-code hook: ", 1)[1]))
        return out

    def write_part1(self) -> None:
        shutil.copy(FIXTURES / "session_part1.jsonl", self.transcript)

    def write_both_parts(self) -> None:
        """The session went on: the half-written line was finished, and more turns followed."""
        lines = (FIXTURES / "session_part1.jsonl").read_text().splitlines(keepends=True)
        partial = lines[-1]
        uuid = partial.split('"uuid": "', 1)[1].split('"', 1)[0]
        finished = {
            "type": "user",
            "uuid": uuid,
            "sessionId": "fixture-session",
            "message": {"role": "user", "content": PART2_TURNS[0][1]},
        }
        body = (
            "".join(lines[:-1]) + json.dumps(finished) + "\n" + (FIXTURES / "session_part2.jsonl").read_text()
        )
        self.transcript.write_text(body)


async def history(http: httpx.AsyncClient, key: str, session_id: str) -> list[tuple[str, str]]:
    response = await http.get(f"/api/v1/sessions/{session_id}/history", headers=bearer(key))
    assert response.status_code == 200, response.text
    return [(t["role"], t["content"]) for t in response.json()["data"]]


def hook_root(tmp_name: str) -> Path:
    import tempfile

    return Path(tempfile.mkdtemp(prefix=f"cairn-hook-{tmp_name}-"))


class TestHook:
    async def test_turns_then_promoted_memories_recallable(
        self, stack: CairnStack, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        hook = Hook(stack, key, hook_root("promote"))
        hook.write_part1()
        ran = await hook.fire("SessionEnd")
        assert ran.code == 0, ran.err
        assert await history(http, key, hook.session_id) == PART1_TURNS
        outcome = hook.log_lines()[-1]
        assert (outcome["appended"], outcome["pending"], outcome["promoted"]) == (4, 0, "started")

        deadline = time.monotonic() + 60
        while True:
            response = await http.post(
                "/api/v1/memory/recall", json={"query": "staging database port"}, headers=bearer(key)
            )
            hits = [h for h in response.json()["data"] if h["memory"]["source"] == "promoted"]
            if any("6543" in h["memory"]["text"] for h in hits):
                break
            assert time.monotonic() < deadline, response.json()
            await asyncio.sleep(0.5)
        assert hits[0]["memory"]["source_session_id"] == hook.session_id

    async def test_running_twice_adds_no_turn_even_without_its_state(
        self, stack: CairnStack, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        hook = Hook(stack, key, hook_root("twice"))
        hook.write_part1()
        assert (await hook.fire()).code == 0
        assert (await hook.fire()).code == 0
        assert hook.log_lines()[-1]["appended"] == 0  # the second run found nothing new
        shutil.rmtree(hook.root / "state")  # progress lost: the turn uuids (Idempotency-Key) still hold
        assert (await hook.fire()).code == 0
        assert hook.log_lines()[-1]["appended"] == 4
        assert await history(http, key, hook.session_id) == PART1_TURNS

    async def test_a_forked_session_gets_the_turns_it_repeats(
        self, stack: CairnStack, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        """A session forked from another repeats its transcript, turn uuids included: the fork's session
        gets those turns too, since a turn's Idempotency-Key is per session."""
        key = await tenant.agent()
        first = Hook(stack, key, hook_root("first"))
        first.write_part1()
        assert (await first.fire()).code == 0
        fork = Hook(stack, key, hook_root("fork"))
        shutil.copy(first.transcript, fork.transcript)
        assert (await fork.fire()).code == 0
        outcome = fork.log_lines()[-1]
        assert (outcome["appended"], outcome["refused"], outcome["pending"]) == (4, 0, 0)
        assert await history(http, key, fork.session_id) == PART1_TURNS
        assert await history(http, key, first.session_id) == PART1_TURNS

    async def test_a_refused_turn_is_counted_as_refused_not_appended(
        self, stack: CairnStack, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        hook = Hook(stack, key, hook_root("refused"))
        hook.write_part1()
        first_uuid = next(read_transcript(hook.transcript)).uuid
        # Another request already holds the first turn's key, with another body: the gateway refuses it.
        taken = await http.post(
            "/api/v1/memory",
            json={
                "tier": "session",
                "session_id": hook.session_id,
                "role": "user",
                "content": "something else",
            },
            headers={**bearer(key), "Idempotency-Key": turn_key(hook.session_id, first_uuid)},
        )
        assert taken.status_code == 201, taken.text
        assert (await hook.fire()).code == 0
        outcome = hook.log_lines()[-1]
        assert (outcome["appended"], outcome["refused"], outcome["pending"]) == (3, 1, 0)
        assert await history(http, key, hook.session_id) == [("user", "something else"), *PART1_TURNS[1:]]
        assert (await hook.fire()).code == 0  # a refused turn is not retried
        assert hook.log_lines()[-1]["skipped"] == 4

    async def test_gateway_down_exits_0_fast_and_the_next_run_catches_up(
        self, stack: CairnStack, tenant: TenantHandle, http: httpx.AsyncClient
    ) -> None:
        key = await tenant.agent()
        hook = Hook(stack, key, hook_root("down"))
        hook.write_part1()
        down = await hook.fire(CAIRN_GATEWAY_URL=f"http://127.0.0.1:{free_port()}")
        assert down.code == 0
        assert down.seconds < 5
        assert down.out == ""  # nothing on stdout for Claude Code to read as a decision
        failed = hook.log_lines()[-1]
        assert (failed["appended"], failed["pending"]) == (0, 4)
        assert "cannot reach" in failed["error"]
        assert await history(http, key, hook.session_id) == []

        hook.write_both_parts()
        assert (await hook.fire()).code == 0
        assert await history(http, key, hook.session_id) == PART1_TURNS + PART2_TURNS

    async def test_bad_input_and_missing_key_still_exit_0(
        self, stack: CairnStack, tenant: TenantHandle
    ) -> None:
        hook = Hook(stack, await tenant.agent(), hook_root("bad"))
        for stdin in ("", "not json", json.dumps({"session_id": "x"})):
            ran = await run(["hook", "claude-code"], hook.env, stdin=stdin)
            assert ran.code == 0
        missing = await run(
            ["hook", "claude-code"],
            {**hook.env, "CAIRN_API_KEY": ""},
            stdin=json.dumps({"session_id": "x", "transcript_path": str(hook.root / "nope.jsonl")}),
        )
        assert missing.code == 0
        gone = await hook.fire()  # transcript file does not exist
        assert gone.code == 0
        assert "FileNotFoundError" in hook.log_lines()[-1]["error"]
