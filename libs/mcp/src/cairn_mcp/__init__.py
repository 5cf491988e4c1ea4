"""Cairn's MCP server: the memory and knowledge tools over stdio (`cairn-mcp`) and Streamable HTTP."""

from cairn_mcp.http import McpHttp
from cairn_mcp.tools import TOOL_NAMES, build_server

__all__ = ["TOOL_NAMES", "McpHttp", "build_server"]
