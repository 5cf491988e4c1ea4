"""`cairn hook claude-code`: the Claude Code `Stop` / `SessionEnd` hook.

Reads the hook's JSON on stdin (`session_id`, `transcript_path`), appends the transcript's user and
assistant turns that earlier runs have not appended to the Cairn session of the same id (each turn's
Idempotency-Key is derived from the session id and the turn's `uuid`, so a repeated or concurrent run adds
nothing, and a session forked from another, whose transcript repeats the first one's turns and uuids, gets
them too), then triggers promotion.
It always exits 0 within its time budget: a memory outage must never break the user's session. What it
did goes to a log file; turns it could not send are sent by the next run.
"""

from __future__ import annotations

import json
import logging
import os
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr
from pydantic_settings import BaseSettings, SettingsConfigDict

from cairn_client import CairnAPIError, CairnClient, CairnClientError
from cairn_contracts import limits

log = logging.getLogger("cairn.hook")

TRUNCATED = "\n[... truncated by the cairn hook]"


class HookSettings(BaseSettings):
    """`CAIRN_HOOK_*`: where the hook logs and keeps its progress, and how long it may take."""

    model_config = SettingsConfigDict(env_prefix="CAIRN_HOOK_", extra="ignore")
    log_file: Path = Path.home() / ".cache" / "cairn" / "claude-code-hook.log"
    state_dir: Path = Path.home() / ".cache" / "cairn" / "claude-code-hook"
    budget_seconds: float = 5.0
    promote: bool = True


@dataclass(frozen=True)
class Turn:
    uuid: str
    role: str
    content: str


def _text(content: Any) -> str:
    """A message's text: a string as is; content blocks: their `text` blocks (tool calls, tool results
    and images are not conversation)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
        return "\n".join(p for p in parts if isinstance(p, str) and p)
    return ""


def _fit(text: str) -> str:
    cap = limits.SESSION_CONTENT_MAX_BYTES
    raw = text.encode()
    if len(raw) <= cap:
        return text
    room = cap - len(TRUNCATED.encode())
    return raw[:room].decode(errors="ignore") + TRUNCATED


def read_transcript(path: Path) -> Iterator[Turn]:
    """The main conversation's user / assistant turns, in file order. Lines that are not JSON (a line still
    being written) and other entry types (summaries, sub-agent side chains, meta lines) are skipped."""
    with path.open(encoding="utf-8", errors="replace") as lines:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if not isinstance(entry, dict) or entry.get("type") not in ("user", "assistant"):
                continue
            if entry.get("isSidechain") or entry.get("isMeta"):
                continue
            message = entry.get("message")
            uuid = entry.get("uuid")
            if not isinstance(message, dict) or not isinstance(uuid, str) or not uuid:
                continue
            role = message.get("role")
            text = _text(message.get("content"))
            if role not in ("user", "assistant") or not text.strip():
                continue
            yield Turn(uuid, role, _fit(text))


def turn_key(session_id: str, turn_uuid: str) -> str:
    """The Idempotency-Key of one turn in one session. A gateway key is scoped to the caller, not the session,
    so the turn's uuid alone would refuse a forked session's copy of it (`idempotency_key_reused`); a UUID5
    also keeps any session id within the header's printable-ASCII limit."""
    return str(uuid.uuid5(uuid.NAMESPACE_URL, f"cairn-claude-code/{session_id}/{turn_uuid}"))


class Progress:
    """The uuids already appended for one session, in a small JSON file (replaced atomically)."""

    def __init__(self, state_dir: Path, session_id: str) -> None:
        safe = "".join(c if c.isalnum() or c in "-_." else "_" for c in session_id)[:150]
        self.path = state_dir / f"{safe}.json"
        self.done: set[str] = set()
        try:
            self.done = set(json.loads(self.path.read_text()).get("done", []))
        except (OSError, ValueError, AttributeError):
            self.done = set()

    def save(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".progress-")
        with os.fdopen(fd, "w") as out:
            json.dump({"done": sorted(self.done)}, out)
        os.replace(tmp, self.path)


def _logging(path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    handler = logging.FileHandler(path, encoding="utf-8")
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(message)s"))
    log.addHandler(handler)
    log.setLevel(logging.INFO)


def run_hook(
    stdin: str, gateway_url: str, api_key: str | SecretStr | None, settings: HookSettings
) -> dict[str, Any]:
    """Append the new turns, then promote. Never raises; returns what it did (also logged)."""
    started = time.monotonic()
    outcome: dict[str, Any] = {"appended": 0, "refused": 0, "skipped": 0, "pending": 0, "promoted": None}
    try:
        _logging(settings.log_file)
    except OSError:
        pass  # no log file is still no reason to fail the user's session
    try:
        event = json.loads(stdin or "{}")
        session_id = str(event.get("session_id") or "")
        transcript = event.get("transcript_path")
        outcome["event"] = event.get("hook_event_name")
        outcome["session_id"] = session_id
        if not session_id or not transcript:
            log.warning("hook input has no session_id / transcript_path: %s", sorted(event))
            return outcome
        if not api_key:
            log.warning("CAIRN_API_KEY is not set; nothing sent for session %s", session_id)
            return outcome
        turns = list(read_transcript(Path(transcript)))
        progress = Progress(settings.state_dir, session_id)
        todo = [t for t in turns if t.uuid not in progress.done]
        outcome["skipped"] = len(turns) - len(todo)

        def remaining() -> float:
            return settings.budget_seconds - (time.monotonic() - started)

        client = CairnClient(gateway_url, api_key, timeout=max(0.5, min(2.0, remaining())), retry=False)
        try:
            for turn in todo:
                if remaining() <= 0.5:
                    break
                try:
                    client.append_turn(
                        session_id,
                        turn.role,
                        turn.content,
                        metadata={"source": "claude-code", "uuid": turn.uuid},
                        idempotency_key=turn_key(session_id, turn.uuid),
                    )
                    outcome["appended"] += 1
                except CairnAPIError as exc:
                    if exc.status in (429,) or exc.status >= 500:
                        raise  # transient: stop here, the next run continues in order
                    log.warning("turn %s refused (%s); not retried", turn.uuid, exc.code)
                    outcome["refused"] += 1
                progress.done.add(turn.uuid)
            outcome["pending"] = len(todo) - outcome["appended"] - outcome["refused"]
            if settings.promote and outcome["pending"] == 0 and remaining() > 0.5:
                accepted = client.promote(session_id)
                outcome["promoted"] = accepted.status
        except CairnClientError as exc:
            outcome["pending"] = len(todo) - outcome["appended"] - outcome["refused"]
            outcome["error"] = str(exc)
            log.warning("session %s: %s (the next run catches up)", session_id, exc)
        finally:
            client.close()
            if outcome["appended"] or outcome["refused"]:
                progress.save()
    except Exception as exc:  # the hook never fails the user's session
        outcome["error"] = f"{type(exc).__name__}: {exc}"
        log.exception("hook failed")
    outcome["seconds"] = round(time.monotonic() - started, 3)
    log.info("claude-code hook: %s", json.dumps(outcome, sort_keys=True))
    return outcome


def main(gateway_url: str, api_key: str | SecretStr | None) -> int:
    try:
        stdin = sys.stdin.read()
    except Exception:
        stdin = ""
    run_hook(stdin, gateway_url, api_key, HookSettings())
    return 0
