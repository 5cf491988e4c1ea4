"""`cairn`: every SDK operation from the shell, operator commands, workflows and the Claude Code hook.

Output is a table by default and JSON with `--json`. Exit codes: 0 success, 2 usage error, 3 the API
answered with an error (its code is printed), 4 the gateway (or Temporal) could not be reached.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, NoReturn, TypeVar

import typer
from pydantic import SecretStr

from cairn_cli import output
from cairn_cli.settings import CliSettings
from cairn_client import CairnAPIError, CairnClient, CairnConnectionError

EXIT_USAGE = 2
EXIT_API = 3
EXIT_CONNECTION = 4

T = TypeVar("T")

app = typer.Typer(
    name="cairn",
    help="Cairn from the shell: memories, sessions, knowledge, operators, workflows, the Claude Code hook.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)
knowledge_app = typer.Typer(help="The curated knowledge base.", no_args_is_help=True)
project_app = typer.Typer(help="Projects (the partition key of memories).", no_args_is_help=True)
admin_app = typer.Typer(help="Operator commands (superadmin key: CAIRN_ADMIN_KEY).", no_args_is_help=True)
workflows_app = typer.Typer(help="Promotion and graduation workflows in Temporal.", no_args_is_help=True)
hook_app = typer.Typer(help="Agent hooks.", no_args_is_help=True)
app.add_typer(knowledge_app, name="knowledge")
app.add_typer(project_app, name="project")
app.add_typer(admin_app, name="admin")
app.add_typer(workflows_app, name="workflows")
app.add_typer(hook_app, name="hook")


@dataclass
class Options:
    settings: CliSettings
    json: bool
    gateway_url: str
    api_key: SecretStr | None
    timeout: float

    def client(self, key: SecretStr | None = None, impersonate: str | None = None) -> CairnClient:
        return CairnClient(
            self.gateway_url, key or self.api_key, timeout=self.timeout, impersonate_tenant=impersonate
        )

    def admin(self, impersonate: str | None = None) -> CairnClient:
        if not self.settings.admin_key:
            output.note("set CAIRN_ADMIN_KEY (or run where .cairn/env holds it)")
            raise typer.Exit(EXIT_USAGE)
        return self.client(self.settings.admin_key, impersonate)


def _opts(ctx: typer.Context) -> Options:
    opts: Options = ctx.find_root().obj
    return opts


@app.callback()
def main_options(
    ctx: typer.Context,
    json_out: Annotated[bool, typer.Option("--json", help="Print JSON instead of tables.")] = False,
    gateway_url: Annotated[
        str | None, typer.Option(help="The gateway (default: CAIRN_GATEWAY_URL, then .cairn/env).")
    ] = None,
    api_key: Annotated[str | None, typer.Option(help="The key to act with (default: CAIRN_API_KEY).")] = None,
    timeout: Annotated[float | None, typer.Option(help="Seconds per request.")] = None,
) -> None:
    """Cairn from the shell."""
    settings = CliSettings()
    ctx.obj = Options(
        settings=settings,
        json=json_out,
        gateway_url=gateway_url or settings.gateway_url,
        api_key=SecretStr(api_key) if api_key else settings.api_key,
        timeout=timeout or settings.timeout_seconds,
    )


def _call(ctx: typer.Context, fn: Callable[[], T]) -> T:
    """Run one API call; map failures to their exit codes."""
    opts = _opts(ctx)
    try:
        return fn()
    except CairnAPIError as exc:
        if opts.json:
            output.emit_json(exc.to_dict())
        output.note(f"error: {exc.code} ({exc.status}): {exc.message}")
        raise typer.Exit(EXIT_API) from exc
    except CairnConnectionError as exc:
        output.note(f"error: {exc}")
        raise typer.Exit(EXIT_CONNECTION) from exc


def _show(ctx: typer.Context, value: Any, columns: list[str] | None = None, rows: Any = None) -> None:
    """JSON with --json; else a table of `rows` (dicts) in `columns`, or a key/value record."""
    if _opts(ctx).json:
        output.emit_json(value)
    elif columns is not None:
        output.table(output.plain(rows if rows is not None else value), columns)
    else:
        output.record(value)


MEMORY_COLUMNS = ["id", "text", "source", "tags", "project_id", "created_at"]

ProjectOpt = Annotated[str | None, typer.Option("--project-id", help="Project partition.")]


# -- memory ------------------------------------------------------------------------------------------
@app.command()
def remember(
    ctx: typer.Context,
    text: Annotated[str, typer.Argument(help="The fact to remember.")],
    tag: Annotated[list[str] | None, typer.Option("--tag", help="A tag (repeatable).")] = None,
    confidence: Annotated[float | None, typer.Option(min=0.0, max=1.0)] = None,
    project_id: ProjectOpt = None,
) -> None:
    """Write a long-term memory."""
    with _opts(ctx).client() as c:
        memory = _call(ctx, lambda: c.remember(text, tags=tag, confidence=confidence, project_id=project_id))
    _show(ctx, memory)


@app.command()
def recall(
    ctx: typer.Context,
    query: str,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    project_id: ProjectOpt = None,
    include_superseded: Annotated[bool, typer.Option(help="Include replaced memories.")] = False,
    mode: Annotated[str | None, typer.Option(help="hybrid (default), semantic or keyword.")] = None,
) -> None:
    """Recall own memories for a query."""
    with _opts(ctx).client() as c:
        result = _call(
            ctx,
            lambda: c.recall(
                query,
                limit=limit,
                project_id=project_id,
                include_superseded=include_superseded or None,
                mode=mode,
            ),
        )
    rows = [
        {**hit.memory.model_dump(mode="json"), "score": hit.score, "why": hit.selection_reason}
        for hit in result.data
    ]
    _show(ctx, result, ["score", "why", "id", "text", "project_id"], rows)
    if not _opts(ctx).json and result.meta.get("fallback"):
        output.note(f"fallback: {result.meta.get('reason')}")


@app.command()
def context(
    ctx: typer.Context,
    query: str,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    project_id: ProjectOpt = None,
    session_id: Annotated[
        str | None, typer.Option(help="Containment token: no repeats in a session.")
    ] = None,
) -> None:
    """Merged recall: memories and knowledge in one ranked list."""
    with _opts(ctx).client() as c:
        result = _call(
            ctx, lambda: c.recall_context(query, limit=limit, project_id=project_id, session_id=session_id)
        )
    rows = [
        {
            "rank": item.rank,
            "source": item.source,
            "score": item.score,
            "why": item.selection_reason,
            "id": item.id,
            "text": item.memory.text if item.memory else (item.article.title if item.article else ""),
        }
        for item in result.data
    ]
    _show(ctx, result, ["rank", "source", "score", "why", "id", "text"], rows)
    if not _opts(ctx).json:
        output.note(f"recall_id {result.meta.recall_id}, answer_confidence {result.meta.answer_confidence}")


@app.command()
def referenced(
    ctx: typer.Context,
    recall_id: str,
    article_ids: Annotated[list[str], typer.Argument(help="Articles of that recall you used.")],
    project_id: ProjectOpt = None,
) -> None:
    """Record which articles of a merged recall were used."""
    with _opts(ctx).client() as c:
        result = _call(ctx, lambda: c.referenced(recall_id, article_ids, project_id=project_id))
    _show(ctx, result)


@app.command("list")
def list_memories(
    ctx: typer.Context,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    offset: Annotated[int | None, typer.Option(min=0)] = None,
    source: Annotated[str | None, typer.Option(help="explicit or promoted.")] = None,
    tag: str | None = None,
    project_id: ProjectOpt = None,
    include_superseded: bool = False,
    all_subjects: Annotated[bool, typer.Option(help="Superadmin oversight (with --tenant).")] = False,
    tenant: Annotated[str | None, typer.Option(help="Superadmin: the tenant to act in.")] = None,
) -> None:
    """List own long-term memories (newest first)."""
    opts = _opts(ctx)
    client = opts.admin(tenant) if tenant else opts.client()
    with client as c:
        page = _call(
            ctx,
            lambda: c.list(
                limit=limit,
                offset=offset,
                source=source,
                tag=tag,
                project_id=project_id,
                include_superseded=include_superseded or None,
                all_subjects=all_subjects or None,
            ),
        )
    _show(ctx, page, MEMORY_COLUMNS + (["subject_id"] if all_subjects else []), page.data)
    if not opts.json:
        output.note(f"{len(page.data)} of {page.meta.get('total_count')}")


@app.command()
def get(ctx: typer.Context, memory_id: str) -> None:
    """One memory."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.get(memory_id)))


@app.command()
def forget(
    ctx: typer.Context,
    memory_id: str,
    tenant: Annotated[str | None, typer.Option(help="Superadmin: delete in this tenant.")] = None,
) -> None:
    """Delete a memory outright."""
    opts = _opts(ctx)
    with opts.admin(tenant) if tenant else opts.client() as c:
        _show(ctx, _call(ctx, lambda: c.forget(memory_id)))


@app.command()
def supersede(
    ctx: typer.Context,
    memory_id: str,
    text: str,
    tag: Annotated[list[str] | None, typer.Option("--tag")] = None,
    project_id: ProjectOpt = None,
) -> None:
    """Write a newer memory that supersedes MEMORY_ID."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.supersede(memory_id, text, tags=tag, project_id=project_id)))


@app.command()
def turn(
    ctx: typer.Context,
    session_id: str,
    role: Annotated[str, typer.Argument(help="user, assistant, system or fact.")],
    content: str,
    ttl_seconds: Annotated[int | None, typer.Option(min=1)] = None,
) -> None:
    """Append a turn to a session."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.append_turn(session_id, role, content, ttl_seconds=ttl_seconds)))


@app.command()
def history(
    ctx: typer.Context,
    session_id: str,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    offset: Annotated[int | None, typer.Option(min=0)] = None,
) -> None:
    """A session's turns in order."""
    with _opts(ctx).client() as c:
        page = _call(ctx, lambda: c.session_history(session_id, limit=limit, offset=offset))
    _show(ctx, page, ["seq", "role", "content", "created_at"], page.data)


@app.command()
def promote(ctx: typer.Context, session_id: str) -> None:
    """Promote a session's turns into long-term memories."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.promote(session_id)))


@app.command()
def graduate(
    ctx: typer.Context,
    memory_id: str,
    re_scope: Annotated[str | None, typer.Option(help='"global": a tenant-wide article.')] = None,
) -> None:
    """Graduate a memory into an (owner-visible) knowledge article."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.graduate(memory_id, re_scope=re_scope)))


@app.command()
def whoami(ctx: typer.Context) -> None:
    """The scope the server derives from the key."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, c.whoami))


# -- knowledge ---------------------------------------------------------------------------------------
@knowledge_app.command("propose")
def knowledge_propose(
    ctx: typer.Context,
    title: str,
    body: Annotated[str, typer.Argument(help="The article (markdown); '-' reads stdin.")],
    category: str | None = None,
    tag: Annotated[list[str] | None, typer.Option("--tag")] = None,
    project_id: ProjectOpt = None,
    visibility: Annotated[str | None, typer.Option(help="tenant (default) or owner.")] = None,
) -> None:
    """Propose an article through the novelty gate."""
    text = sys.stdin.read() if body == "-" else body
    with _opts(ctx).client() as c:
        result = _call(
            ctx,
            lambda: c.knowledge_propose(
                title, text, category=category, tags=tag, project_id=project_id, visibility=visibility
            ),
        )
    _show(ctx, result)


@knowledge_app.command("get")
def knowledge_get(ctx: typer.Context, article_id: str) -> None:
    """One article with its body."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.knowledge_get(article_id)))


@knowledge_app.command("search")
def knowledge_search(
    ctx: typer.Context,
    query: str,
    limit: Annotated[int | None, typer.Option(min=1)] = None,
    project_id: ProjectOpt = None,
) -> None:
    """Hybrid article search."""
    with _opts(ctx).client() as c:
        page = _call(ctx, lambda: c.knowledge_search(query, limit=limit, project_id=project_id))
    _show(ctx, page, ["score", "selection_reason", "id", "title", "snippet"], page.data)


# -- projects ----------------------------------------------------------------------------------------
@project_app.command("resolve")
def project_resolve(
    ctx: typer.Context, slug: str | None = None, repo_url: str | None = None, name: str | None = None
) -> None:
    """Find a project by slug > repo_url > name."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.resolve_project(slug=slug, repo_url=repo_url, name=name)))


@project_app.command("create")
def project_create(ctx: typer.Context, name: str, slug: str, repo_url: str | None = None) -> None:
    """Create a project in the key's tenant."""
    with _opts(ctx).client() as c:
        _show(ctx, _call(ctx, lambda: c.create_project(name, slug, repo_url=repo_url)))


@project_app.command("list")
def project_list(ctx: typer.Context) -> None:
    """The tenant's projects."""
    with _opts(ctx).client() as c:
        projects = _call(ctx, c.list_projects)
    _show(ctx, projects, ["id", "slug", "name", "repo_url"])


# -- operators ---------------------------------------------------------------------------------------
@admin_app.command("bootstrap")
def admin_bootstrap(
    ctx: typer.Context,
    database_url: Annotated[str | None, typer.Option(help="Default: CAIRN_DATABASE_URL.")] = None,
    demo_tenant: Annotated[
        str | None, typer.Option(help="Also create this tenant with one agent key.")
    ] = None,
) -> None:
    """Create the first superadmin key (and a demo tenant) directly in PostgreSQL."""
    from cairn_gateway.cli import bootstrap

    url = database_url or _opts(ctx).settings.database_url
    if not url:
        output.note("give --database-url or set CAIRN_DATABASE_URL")
        raise typer.Exit(EXIT_USAGE)
    try:
        result = asyncio.run(bootstrap(url, demo_tenant))
    except OSError as exc:
        output.note(f"error: cannot reach PostgreSQL: {exc}")
        raise typer.Exit(EXIT_CONNECTION) from exc
    output.emit_json(result)  # secrets, shown once: always machine-readable


@admin_app.command("create-tenant")
def admin_create_tenant(ctx: typer.Context, name: str) -> None:
    """Create a tenant."""
    with _opts(ctx).admin() as c:
        _show(ctx, _call(ctx, lambda: c.create_tenant(name)))


@admin_app.command("set-tenant-limits")
def admin_set_limits(
    ctx: typer.Context,
    tenant_id: str,
    memory_quota: int | None = None,
    promotion_budget_per_hour: int | None = None,
    rate_limit_per_second: float | None = None,
    rate_limit_burst: int | None = None,
    read_rate_limit_per_second: Annotated[
        float | None, typer.Option(help="Per-key recall/search bucket (separate from writes).")
    ] = None,
    read_rate_limit_burst: int | None = None,
) -> None:
    """Set a tenant's quota, promotion budget, write rate limit or read (recall/search) rate limit."""
    fields = {
        "memory_quota": memory_quota,
        "promotion_budget_per_hour": promotion_budget_per_hour,
        "rate_limit_per_second": rate_limit_per_second,
        "rate_limit_burst": rate_limit_burst,
        "read_rate_limit_per_second": read_rate_limit_per_second,
        "read_rate_limit_burst": read_rate_limit_burst,
    }
    with _opts(ctx).admin() as c:
        _show(ctx, _call(ctx, lambda: c.patch_tenant(tenant_id, **fields)))


@admin_app.command("create-key")
def admin_create_key(
    ctx: typer.Context,
    tenant_id: Annotated[str | None, typer.Option(help="Required unless --role superadmin.")] = None,
    role: Annotated[str, typer.Option(help="agent, user, orchestrator or superadmin.")] = "agent",
    agent_id: str | None = None,
    name: str | None = None,
) -> None:
    """Create an API key (its secret is printed once)."""
    with _opts(ctx).admin() as c:
        created = _call(ctx, lambda: c.create_key(role, tenant_id=tenant_id, agent_id=agent_id, name=name))
    _show(ctx, created)


@admin_app.command("list-keys")
def admin_list_keys(ctx: typer.Context, tenant_id: str) -> None:
    """A tenant's keys (never their secrets)."""
    with _opts(ctx).admin() as c:
        keys = _call(ctx, lambda: c.list_keys(tenant_id))
    _show(ctx, keys, ["id", "role", "agent_id", "name", "prefix", "created_at", "revoked_at"])


@admin_app.command("revoke-key")
def admin_revoke_key(ctx: typer.Context, key_id: str) -> None:
    """Revoke a key."""
    with _opts(ctx).admin() as c:
        _show(ctx, _call(ctx, lambda: c.revoke_key(key_id)))


@admin_app.command("get-providers")
def admin_get_providers(ctx: typer.Context, tenant_id: str) -> None:
    """A tenant's own embedding / compiler providers (keys never shown)."""
    with _opts(ctx).admin() as c:
        _show(ctx, _call(ctx, lambda: c.get_providers(tenant_id)))


@admin_app.command("set-providers")
def admin_set_providers(
    ctx: typer.Context,
    tenant_id: str,
    body_file: Annotated[Path, typer.Argument(help="JSON body of PUT .../providers ('-' reads stdin).")],
) -> None:
    """Set a tenant's providers from a JSON file: {"embedding": {...}, "compiler": {...}}."""
    import json

    raw = sys.stdin.read() if str(body_file) == "-" else body_file.read_text()
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise typer.BadParameter(f"not JSON: {exc}") from exc
    with _opts(ctx).admin() as c:
        _show(ctx, _call(ctx, lambda: c.put_providers(tenant_id, body)))


# -- workflows ---------------------------------------------------------------------------------------
def _exit_now(code: int) -> NoReturn:
    """Exit without interpreter finalization: the Temporal SDK's native runtime threads may still be alive,
    and finalizing under them aborts the process (SIGABRT) after the output was written."""
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


@workflows_app.command("list")
def workflows_list(
    ctx: typer.Context,
    tenant_id: Annotated[str | None, typer.Option(help="Default: the tenant of CAIRN_API_KEY.")] = None,
    kind: Annotated[str | None, typer.Option(help="promotion or graduation (default: both).")] = None,
    running: Annotated[bool, typer.Option(help="Only running ones.")] = False,
    limit: Annotated[int, typer.Option(min=1, max=1000)] = 50,
) -> None:
    """A tenant's promotion / graduation workflows and their progress."""
    from cairn_cli import workflows

    opts = _opts(ctx)
    if tenant_id is None:
        with opts.client() as c:
            tenant_id = _call(ctx, c.whoami).tenant_id
        if tenant_id is None:
            raise typer.BadParameter("this key has no tenant: pass --tenant-id")
    if kind not in (None, "promotion", "graduation"):
        raise typer.BadParameter("kind is promotion or graduation")
    try:
        rows = asyncio.run(
            workflows.list_workflows(
                opts.settings.temporal_address,
                opts.settings.temporal_namespace,
                opts.settings.payload_keys,
                tenant_id,
                kind,
                running,
                limit,
            )
        )
    except workflows.TemporalUnreachable as exc:
        output.note(f"error: {exc}")
        _exit_now(EXIT_CONNECTION)
    _show(ctx, rows, ["workflow_id", "type", "status", "started", "closed", "progress"])
    _exit_now(0)


@workflows_app.command("show")
def workflows_show(ctx: typer.Context, workflow_id: str) -> None:
    """One workflow: status, progress (when running) or result."""
    from cairn_cli import workflows

    opts = _opts(ctx)
    try:
        info = asyncio.run(
            workflows.describe(
                opts.settings.temporal_address,
                opts.settings.temporal_namespace,
                opts.settings.payload_keys,
                workflow_id,
            )
        )
    except workflows.TemporalUnreachable as exc:
        output.note(f"error: {exc}")
        _exit_now(EXIT_CONNECTION)
    except workflows.WorkflowNotFound as exc:
        output.note(f"error: not_found: {exc}")
        _exit_now(EXIT_API)
    _show(ctx, info)
    _exit_now(0)


# -- hooks -------------------------------------------------------------------------------------------
@hook_app.command("claude-code")
def hook_claude_code(ctx: typer.Context) -> None:
    """Claude Code Stop / SessionEnd hook: hook JSON on stdin; appends new turns, promotes; always exits 0."""
    from cairn_cli import hook

    opts = _opts(ctx)
    raise typer.Exit(hook.main(opts.gateway_url, opts.api_key))


def main() -> None:
    """The `cairn` console script (usage errors exit 2, as click does)."""
    app(prog_name="cairn")


def admin_main() -> None:
    """`cairn-admin ...`, the old operator command: the same as `cairn admin ...`."""
    app(args=["admin", *sys.argv[1:]], prog_name="cairn")
