"""MCP tool-call latency over stdio (`cairn-mcp`) and Streamable HTTP (`/mcp` on the gateway), next to the
same operation as a plain REST call through the SDK, on a private stack.

    python bench/mcp_latency.py [--calls 200] [--memories 50]

The raw row posts one JSON-RPC `tools/call` with httpx (the server's own cost);
each transport runs `memory_recall` (hybrid recall of 50 embedded memories) and `memory_list` sequentially
from one connected `mcp` client; the REST rows call the same endpoints with `AsyncCairnClient`.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any

import httpx
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

from cairn_client import AsyncCairnClient
from harness import running_stack, summary_ms

QUERY = "which editor theme does the user like?"
_raw = httpx.AsyncClient(timeout=30)


async def timed(call: Callable[[], Awaitable[Any]], count: int) -> list[float]:
    for _ in range(10):  # warm up
        await call()
    latencies = []
    for _ in range(count):
        start = time.perf_counter()
        await call()
        latencies.append(time.perf_counter() - start)
    return latencies


@asynccontextmanager
async def stdio(gateway_url: str, key: str) -> AsyncIterator[Client]:
    params = StdioServerParameters(
        command=os.path.join(os.path.dirname(sys.executable), "cairn-mcp"),
        env={"CAIRN_GATEWAY_URL": gateway_url, "CAIRN_API_KEY": key},
    )
    async with Client(params) as client:
        yield client


@asynccontextmanager
async def http(gateway_url: str, key: str) -> AsyncIterator[Client]:
    async with (
        httpx2.AsyncClient(headers={"Authorization": f"Bearer {key}"}, timeout=30) as raw,
        Client(streamable_http_client(f"{gateway_url}/mcp", http_client=raw)) as client,
    ):
        yield client


async def raw_tools_call(gateway_url: str, key: str) -> None:
    """One `tools/call` as a bare HTTP POST (stateless server: no session to open): the server's own cost."""
    body = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "memory_list", "arguments": {}},
    }
    headers = {
        "Authorization": f"Bearer {key}",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2025-06-18",
    }
    response = await _raw.post(f"{gateway_url}/mcp", json=body, headers=headers)
    assert response.status_code == 200, response.text
    assert not response.json()["result"].get("isError"), response.text


async def tool(client: Client, name: str, arguments: dict[str, Any]) -> None:
    result = await client.call_tool(name, arguments)
    assert not result.is_error, result.content


async def run(calls: int, memories: int) -> None:
    async with running_stack() as bench:
        tenant = await bench.tenant()
        key = await bench.agent_key(tenant, "bench-mcp")
        async with AsyncCairnClient(bench.stack.gateway_url, key) as sdk:
            for n in range(memories):
                await sdk.remember(f"Fact {n}: the user prefers theme number {n} in editor {n % 7}")
            await sdk.remember("The user prefers dark mode in every editor")
            while any(m.embedding_status != "ready" for m in (await sdk.list(limit=100)).data):
                await asyncio.sleep(0.2)

            rows: list[tuple[str, list[float]]] = [
                (
                    "raw JSON-RPC POST /mcp memory_list",
                    await timed(partial(raw_tools_call, bench.stack.gateway_url, key), calls),
                ),
                ("REST (SDK)    POST /memory/recall", await timed(lambda: sdk.recall(QUERY), calls)),
                ("REST (SDK)    GET  /memory", await timed(lambda: sdk.list(limit=20), calls)),
            ]
        for name, opener in (("stdio", stdio), ("HTTP /mcp", http)):
            async with opener(bench.stack.gateway_url, key) as client:
                recall = await timed(partial(tool, client, "memory_recall", {"query": QUERY}), calls)
                listing = await timed(partial(tool, client, "memory_list", {"limit": 20}), calls)
            rows.append((f"MCP {name:<9} memory_recall", recall))
            rows.append((f"MCP {name:<9} memory_list", listing))
        print(f"sequential calls, {memories + 1} memories, n={calls} each (after 10 warm-up calls)")
        for name, latencies in rows:
            print(f"{name:<36} {summary_ms(latencies)}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--calls", type=int, default=200)
    parser.add_argument("--memories", type=int, default=50)
    args = parser.parse_args()
    asyncio.run(run(args.calls, args.memories))


if __name__ == "__main__":
    main()
