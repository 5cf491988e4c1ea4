"""`cairn-mcp`: the MCP server over stdio, acting with `CAIRN_API_KEY` against `CAIRN_GATEWAY_URL`."""

from __future__ import annotations

import sys

from mcp.server.mcpserver import Context

from cairn_client import AsyncCairnClient
from cairn_client.settings import ClientSettings
from cairn_mcp.tools import build_server


def main() -> None:
    settings = ClientSettings()
    if not settings.api_key:
        sys.stderr.write("cairn-mcp: set CAIRN_API_KEY (and CAIRN_GATEWAY_URL) to the agent's key\n")
        sys.exit(2)
    client = AsyncCairnClient(settings.gateway_url, settings.api_key)

    def client_for(_: Context) -> AsyncCairnClient:
        return client

    build_server(client_for).run("stdio")
