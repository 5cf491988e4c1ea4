"""The installed `cairn` command end to end: memory commands, --json, exit codes, admin, workflows."""

import asyncio
import json
import time
import uuid
from typing import Any

import pytest
from typer.testing import CliRunner

from cairn_cli.app import app
from cairn_devstack import free_port
from cairn_devstack.cairn import CairnStack
from conftest import TenantHandle
from tests.e2e.cli_helpers import run


def agent_env(stack: CairnStack, key: str, admin_key: str | None = None) -> dict[str, str]:
    env = {
        "CAIRN_GATEWAY_URL": stack.gateway_url,
        "CAIRN_API_KEY": key,
        "CAIRN_TEMPORAL_ADDRESS": stack.temporal_address,
        "CAIRN_TEMPORAL_NAMESPACE": stack.temporal_namespace,
        "CAIRN_PAYLOAD_KEYS": stack.secrets.payload_keys,
    }
    if admin_key:
        env["CAIRN_ADMIN_KEY"] = admin_key
    return env


def as_json(text: str) -> Any:
    return json.loads(text)


class TestMemoryCommands:
    async def test_remember_then_recall_json_then_forget(
        self, stack: CairnStack, tenant: TenantHandle
    ) -> None:
        env = agent_env(stack, await tenant.agent())
        made = await run(["remember", "The user prefers dark mode", "--tag", "ui"], env)
        assert made.code == 0, made.err
        assert "The user prefers dark mode" in made.out  # a human-readable record
        listed = await run(["--json", "list"], env)
        memory = as_json(listed.out)["data"][0]
        assert memory["tags"] == ["ui"]

        deadline = time.monotonic() + 30
        while True:
            recalled = await run(["--json", "recall", "which theme does the user like?"], env)
            assert recalled.code == 0, recalled.err
            body = as_json(recalled.out)
            if [h["memory"]["id"] for h in body["data"]] == [memory["id"]]:
                break
            assert time.monotonic() < deadline, body
            await asyncio.sleep(0.5)
        assert body["meta"]["fallback"] is False

        table = await run(["recall", "dark mode"], env)
        assert "The user prefers dark mode" in table.out
        assert (await run(["forget", memory["id"]], env)).code == 0
        assert as_json((await run(["--json", "list"], env)).out)["data"] == []

    async def test_sessions_promote_whoami(self, stack: CairnStack, tenant: TenantHandle) -> None:
        env = agent_env(stack, await tenant.agent("cli-agent"))
        for role, content in [("user", "I prefer dark mode."), ("assistant", "Noted.")]:
            assert (await run(["turn", "cli-session", role, content], env)).code == 0
        history = as_json((await run(["--json", "history", "cli-session"], env)).out)
        assert [t["content"] for t in history["data"]] == ["I prefer dark mode.", "Noted."]
        promoted = as_json((await run(["--json", "promote", "cli-session"], env)).out)
        assert promoted["status"] in {"started", "running"}
        me = as_json((await run(["--json", "whoami"], env)).out)
        assert (me["tenant_id"], me["subject_id"]) == (tenant.id, "cli-agent")

        deadline = time.monotonic() + 30
        while True:
            flows = await run(["--json", "workflows", "list", "--kind", "promotion"], env)
            assert flows.code == 0, flows.err
            rows = as_json(flows.out)
            if [r["workflow_id"] for r in rows] == [promoted["workflow_id"]] and rows[0][
                "status"
            ] == "completed":
                break
            assert time.monotonic() < deadline, rows
            await asyncio.sleep(0.5)
        shown = as_json((await run(["--json", "workflows", "show", promoted["workflow_id"]], env)).out)
        assert shown["status"] == "completed"
        assert shown["result"]["status"] == "promoted"


class TestExitCodes:
    async def test_usage_api_and_connection_failures_are_distinct(
        self, stack: CairnStack, tenant: TenantHandle
    ) -> None:
        env = agent_env(stack, await tenant.agent())
        usage = await run(["remember"], env)
        assert usage.code == 2
        api = await run(["get", str(uuid.uuid4())], env)
        assert api.code == 3
        assert "not_found" in api.err
        as_error = await run(["--json", "get", str(uuid.uuid4())], env)
        assert as_json(as_error.out)["error"]["code"] == "not_found"
        down = await run(["whoami"], {**env, "CAIRN_GATEWAY_URL": f"http://127.0.0.1:{free_port()}"})
        assert down.code == 4
        assert "cannot reach" in down.err
        unauthenticated = await run(["whoami"], {**env, "CAIRN_API_KEY": "cairn_nope"})
        assert unauthenticated.code == 3


class TestAdmin:
    async def test_tenant_key_limits_and_the_old_alias(self, stack: CairnStack, admin_key: str) -> None:
        env = agent_env(stack, "", admin_key)
        name = f"cli-{uuid.uuid4().hex[:8]}"
        tenant = as_json((await run(["--json", "admin", "create-tenant", name], env)).out)
        assert tenant["name"] == name
        key = as_json(
            (
                await run(
                    ["--json", "admin", "create-key", "--tenant-id", tenant["id"], "--agent-id", "ops"], env
                )
            ).out
        )
        assert key["key"].startswith("cairn_")
        limits = await run(["--json", "admin", "set-tenant-limits", tenant["id"], "--memory-quota", "3"], env)
        assert as_json(limits.out)["memory_quota"] == 3
        reads = [
            "--json",
            "admin",
            "set-tenant-limits",
            tenant["id"],
            "--read-rate-limit-per-second",
            "7.5",
            "--read-rate-limit-burst",
            "15",
        ]
        read_limits = as_json((await run(reads, env)).out)
        assert (read_limits["read_rate_limit_per_second"], read_limits["read_rate_limit_burst"]) == (7.5, 15)
        assert read_limits["memory_quota"] == 3  # untouched by a PATCH that did not name it
        too_big = await run([*reads[:-1], "1000001"], env)
        assert too_big.code == 3, too_big.err  # the API's 422, not a partial write
        # `cairn-admin` is the same command set.
        keys = await run(["list-keys", tenant["id"]], env, command="cairn-admin")
        assert keys.code == 0, keys.err
        assert key["id"][:8] in keys.out
        revoked = as_json((await run(["--json", "admin", "revoke-key", key["id"]], env)).out)
        assert revoked["revoked_at"] is not None
        no_key = await run(["admin", "create-tenant", "x"], {**env, "CAIRN_ADMIN_KEY": ""})
        assert no_key.code == 2

    async def test_bootstrap_writes_a_working_superadmin_key(self, stack: CairnStack) -> None:
        made = await run(["admin", "bootstrap", "--database-url", stack.database_url], {})
        assert made.code == 0, made.err
        admin = as_json(made.out)["admin_key"]
        env = agent_env(stack, admin)
        me = as_json((await run(["--json", "whoami"], env)).out)
        assert me["role"] == "superadmin"


def _commands(group: Any, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    import typer.main

    click_group = typer.main.get_command(group) if not hasattr(group, "commands") else group
    found = [prefix]
    for name, command in getattr(click_group, "commands", {}).items():
        found += _commands(command, (*prefix, name)) if hasattr(command, "commands") else [(*prefix, name)]
    return found


@pytest.mark.parametrize("path", _commands(app), ids=lambda p: " ".join(p) or "cairn")
def test_every_command_has_help(path: tuple[str, ...]) -> None:
    result = CliRunner().invoke(app, [*path, "--help"])
    assert result.exit_code == 0, result.output
    assert "Usage" in result.output
