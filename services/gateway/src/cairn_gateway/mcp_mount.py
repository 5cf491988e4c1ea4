"""`/mcp` on the gateway: the MCP tools over Streamable HTTP, with the caller's key as a bearer token."""

from fastapi import FastAPI
from starlette.routing import Route

from cairn_mcp import McpHttp

MCP_PATH = "/mcp"


def mount_mcp(app: FastAPI) -> McpHttp:
    """Route `/mcp` to the MCP server; its tools call this gateway's REST API in process with the caller's
    key. The caller enters `McpHttp.running()` in the app's lifespan."""

    async def verify(authorization: str) -> object:
        # The same check (and the same 401) as every REST path; a bad key never reaches MCP.
        return await app.state.gateway.auth.authenticate(authorization)

    mcp = McpHttp.in_process(app, verify)
    # An ASGI app as the endpoint: Starlette hands it the raw request (no redirect to "/mcp/").
    app.router.routes.append(Route(MCP_PATH, mcp, methods=["GET", "POST", "DELETE"], include_in_schema=False))
    return mcp
