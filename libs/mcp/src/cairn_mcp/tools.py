"""The MCP tools: one function per tool, thin over the typed SDK client, which calls the REST API.

No tool has a tenant, subject or scope parameter: who the caller is comes from its own key (the
`Authorization` header on Streamable HTTP, `CAIRN_API_KEY` on stdio), so another scope's memory is not
even expressible here. `project_id` is only a partition of the caller's own memories.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import CallToolResult, TextContent
from pydantic import BaseModel, Field

from cairn_client import AsyncCairnClient, CairnAPIError, CairnConnectionError

# Given the tool call's context, the SDK client that acts with the caller's key.
ClientFor = Callable[[Context], AsyncCairnClient]

INSTRUCTIONS = (
    "Cairn is your durable, private memory. memory_remember stores a fact you learned about this user or "
    "task; memory_recall (or recall_context, which also searches the shared knowledge base) brings it back "
    "in a later session. Everything is confined to your own key: you never pass a tenant or subject. Pass "
    "project_id (from resolve_project) to keep a repository's memories apart from your global ones. Never "
    "store secrets (keys, passwords, tokens): store where they are instead."
)

ProjectIdArg = Annotated[
    str | None,
    Field(
        description="Optional project partition (a project id from resolve_project). Omit for global memories."
    ),
]


def _result(value: dict[str, Any], *, error: bool = False) -> CallToolResult:
    text = json.dumps(value, ensure_ascii=False)
    return CallToolResult(
        content=[TextContent(type="text", text=text)], structured_content=value, is_error=error
    )


async def _call(make: Callable[[], Awaitable[BaseModel]]) -> CallToolResult:
    """Run one SDK call. Success: the answer as JSON (text and structured). A Cairn error: a tool error whose
    content is the error envelope `{"error": {"code", "message", "status"}}`, exactly as REST sent it."""
    try:
        value = await make()
    except CairnAPIError as exc:
        return _result(exc.to_dict(), error=True)
    except CairnConnectionError as exc:
        return _result(
            {"error": {"code": "service_unavailable", "message": str(exc), "status": 503}}, error=True
        )
    return _result(value.model_dump(mode="json"))


def register_tools(server: MCPServer, client_for: ClientFor) -> None:
    """Add the eleven Cairn tools to `server`."""

    @server.tool()
    async def memory_remember(
        text: Annotated[
            str, Field(description="The fact to remember, in one or two plain sentences (<= 16 KiB).")
        ],
        ctx: Context,
        tags: Annotated[list[str] | None, Field(description="Optional short labels (at most 32).")] = None,
        confidence: Annotated[
            float | None, Field(ge=0.0, le=1.0, description="How sure you are (0-1, default 1).")
        ] = None,
        project_id: ProjectIdArg = None,
    ) -> CallToolResult:
        """Store a durable fact in your private long-term memory (e.g. a user preference, a decision, how a
        repository is built). Returns the stored memory with its id. Do not store secrets. Fails with
        quota_exceeded when your memory is full: forget stale memories first."""
        client = client_for(ctx)
        return await _call(
            lambda: client.remember(text, tags=tags, confidence=confidence, project_id=project_id)
        )

    @server.tool()
    async def memory_recall(
        query: Annotated[str, Field(description="What you want to remember, as a question or keywords.")],
        ctx: Context,
        limit: Annotated[
            int | None, Field(ge=1, le=50, description="At most this many memories (default 10).")
        ] = None,
        project_id: ProjectIdArg = None,
        include_superseded: Annotated[
            bool | None, Field(description="Also return memories that a newer one replaced.")
        ] = None,
    ) -> CallToolResult:
        """Search your own long-term memories by meaning and keywords. Returns `data` (memories with a
        score) and `meta`; `meta.fallback: true` means the semantic index was unavailable and a text match
        was used. With project_id you get that project's memories plus your global ones."""
        client = client_for(ctx)
        return await _call(
            lambda: client.recall(
                query, limit=limit, project_id=project_id, include_superseded=include_superseded
            )
        )

    @server.tool()
    async def memory_list(
        ctx: Context,
        limit: Annotated[int | None, Field(ge=1, le=100, description="Page size (default 20).")] = None,
        offset: Annotated[int | None, Field(ge=0, description="How many to skip (paging).")] = None,
        source: Annotated[
            Literal["explicit", "promoted"] | None,
            Field(description="explicit: written with memory_remember; promoted: distilled from sessions."),
        ] = None,
        tag: Annotated[str | None, Field(description="Only memories with this tag.")] = None,
        project_id: ProjectIdArg = None,
        include_superseded: Annotated[bool | None, Field(description="Include replaced memories.")] = None,
    ) -> CallToolResult:
        """List your long-term memories, newest first, to review or prune them. Returns `data` and
        `meta.total_count`."""
        client = client_for(ctx)
        return await _call(
            lambda: client.list(
                limit=limit,
                offset=offset,
                source=source,
                tag=tag,
                project_id=project_id,
                include_superseded=include_superseded,
            )
        )

    @server.tool()
    async def memory_forget(
        memory_id: Annotated[str, Field(description="The id of one of your memories.")], ctx: Context
    ) -> CallToolResult:
        """Delete one of your memories for good (when it is wrong or stale). Returns the deleted memory; an
        id that is not yours is not_found."""
        client = client_for(ctx)
        return await _call(lambda: client.forget(memory_id))

    @server.tool()
    async def memory_promote(
        session_id: Annotated[str, Field(description="The session whose turns to distill.")], ctx: Context
    ) -> CallToolResult:
        """Distill a finished session's turns into durable long-term memories (runs in the background).
        Safe to call repeatedly: an unchanged session is skipped. Returns the workflow id and status
        (started, running, unchanged, noop); budget_exceeded means the hourly promotion budget is spent."""
        client = client_for(ctx)
        return await _call(lambda: client.promote(session_id))

    @server.tool()
    async def memory_graduate(
        memory_id: Annotated[str, Field(description="The id of one of your long-term memories.")],
        ctx: Context,
        re_scope: Annotated[
            Literal["global"] | None,
            Field(
                description='"global": make a project memory\'s article tenant-wide (first graduation only).'
            ),
        ] = None,
    ) -> CallToolResult:
        """Turn one proven memory into a knowledge article only you can see (deduplicated by the novelty
        gate). Returns {verdict, created, article}; already_graduated (409) when re_scope comes too late."""
        client = client_for(ctx)
        return await _call(lambda: client.graduate(memory_id, re_scope=re_scope))

    @server.tool()
    async def recall_context(
        query: Annotated[str, Field(description="What the current task needs to know.")],
        ctx: Context,
        project_id: ProjectIdArg = None,
        limit: Annotated[int | None, Field(ge=1, le=50, description="Merged results (default 10).")] = None,
        session_id: Annotated[
            str | None,
            Field(description="Your session token: articles already shown in it are not repeated."),
        ] = None,
    ) -> CallToolResult:
        """One call for context: your memories and the knowledge base, merged and ranked, with a ledger of
        why each item was chosen. Returns `data` (items tagged source memory/knowledge), the per-source
        envelopes and `meta` (recall_id, answer_confidence). Report the articles you used with
        recall_referenced."""
        client = client_for(ctx)
        return await _call(
            lambda: client.recall_context(query, limit=limit, project_id=project_id, session_id=session_id)
        )

    @server.tool()
    async def recall_referenced(
        recall_id: Annotated[str, Field(description="meta.recall_id of a recall_context answer.")],
        article_ids: Annotated[
            list[str], Field(description="Ids of knowledge articles from that answer that you used (<= 50).")
        ],
        ctx: Context,
        project_id: ProjectIdArg = None,
    ) -> CallToolResult:
        """Record which knowledge articles of a recall_context answer you actually used (feeds the
        knowledge base's usefulness metrics). Only articles that recall surfaced are accepted."""
        client = client_for(ctx)
        return await _call(lambda: client.referenced(recall_id, article_ids, project_id=project_id))

    @server.tool()
    async def resolve_project(
        ctx: Context,
        slug: Annotated[str | None, Field(description="The project's slug (checked first).")] = None,
        repo_url: Annotated[
            str | None, Field(description="The repository: git@host:owner/repo.git, https URL or owner/repo.")
        ] = None,
        name: Annotated[str | None, Field(description="The project's name (checked last).")] = None,
    ) -> CallToolResult:
        """Find the project id for the repository you work in (slug > repo_url > name), to pass as
        project_id elsewhere. not_found when nothing matches; no_identifier when none is given."""
        client = client_for(ctx)
        return await _call(lambda: client.resolve_project(slug=slug, repo_url=repo_url, name=name))

    @server.tool()
    async def knowledge_search(
        query: Annotated[str, Field(description="What you are looking for in the shared knowledge base.")],
        ctx: Context,
        limit: Annotated[
            int | None, Field(ge=1, le=50, description="At most this many (default 10).")
        ] = None,
        project_id: ProjectIdArg = None,
    ) -> CallToolResult:
        """Search the curated knowledge base (keyword + semantic). Returns article summaries with a snippet
        and score, and meta.answer_confidence (answer / weak / none)."""
        client = client_for(ctx)
        return await _call(lambda: client.knowledge_search(query, limit=limit, project_id=project_id))

    @server.tool()
    async def knowledge_propose(
        title: Annotated[str, Field(description="A short, specific title.")],
        body: Annotated[str, Field(description="The article in markdown: what is true and why.")],
        ctx: Context,
        category: Annotated[
            str | None, Field(description="e.g. pattern, decision, finding, reference.")
        ] = None,
        tags: Annotated[list[str] | None, Field(description="Optional labels.")] = None,
        project_id: ProjectIdArg = None,
        visibility: Annotated[
            Literal["tenant", "owner"] | None,
            Field(description="tenant (default): every agent of your organisation; owner: only you."),
        ] = None,
    ) -> CallToolResult:
        """Propose knowledge worth sharing with other agents. The novelty gate decides: created, or
        gated_to_draft / duplicate / deduplicated when it already exists. Returns {verdict, created, article}."""
        client = client_for(ctx)
        return await _call(
            lambda: client.knowledge_propose(
                title,
                body,
                category=category,
                tags=tags,
                project_id=project_id,
                visibility=visibility,
            )
        )


TOOL_NAMES = (
    "memory_remember",
    "memory_recall",
    "memory_list",
    "memory_forget",
    "memory_promote",
    "memory_graduate",
    "recall_context",
    "recall_referenced",
    "resolve_project",
    "knowledge_search",
    "knowledge_propose",
)


def build_server(client_for: ClientFor) -> MCPServer:
    """The Cairn MCP server with every tool registered."""
    server: MCPServer = MCPServer("cairn", instructions=INSTRUCTIONS, version="0.1.0", log_level="WARNING")
    register_tools(server, client_for)
    return server
