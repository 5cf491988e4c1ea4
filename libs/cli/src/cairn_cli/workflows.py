"""`cairn workflows`: a tenant's promotion and graduation workflows, read from Temporal."""

from __future__ import annotations

from typing import Any

from temporalio.client import Client, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from cairn_servicekit.health import connect_temporal

KINDS = {"promotion": ("PromoteSession",), "graduation": ("GraduateMemory",)}


class TemporalUnreachable(Exception):
    pass


class WorkflowNotFound(Exception):
    pass


async def _connect(address: str, namespace: str, payload_keys: str | None) -> Client:
    try:
        return await connect_temporal(address, namespace, payload_keys, attempts=1)
    except Exception as exc:
        raise TemporalUnreachable(f"cannot reach Temporal at {address}: {exc}") from exc


def _query(tenant_id: str, kind: str | None, running: bool) -> str:
    safe = tenant_id.replace("'", "")
    types = KINDS[kind] if kind else tuple(t for ts in KINDS.values() for t in ts)
    parts = [f"CairnTenantId = '{safe}'", "(" + " OR ".join(f"WorkflowType = '{t}'" for t in types) + ")"]
    if running:
        parts.append("ExecutionStatus = 'Running'")
    return " AND ".join(parts)


async def _progress(client: Client, workflow_id: str, run_id: str | None) -> dict[str, Any] | None:
    try:
        result = await client.get_workflow_handle(workflow_id, run_id=run_id).query("progress")
    except Exception:
        return None
    return result if isinstance(result, dict) else None


async def list_workflows(
    address: str,
    namespace: str,
    payload_keys: str | None,
    tenant_id: str,
    kind: str | None,
    running: bool,
    limit: int,
) -> list[dict[str, Any]]:
    client = await _connect(address, namespace, payload_keys)
    rows: list[dict[str, Any]] = []
    async for wf in client.list_workflows(_query(tenant_id, kind, running), limit=limit):
        is_running = wf.status == WorkflowExecutionStatus.RUNNING
        rows.append(
            {
                "workflow_id": wf.id,
                "type": wf.workflow_type,
                "status": wf.status.name.lower() if wf.status else None,
                "started": wf.start_time.isoformat() if wf.start_time else None,
                "closed": wf.close_time.isoformat() if wf.close_time else None,
                "progress": await _progress(client, wf.id, wf.run_id) if is_running else None,
            }
        )
    return rows


async def describe(
    address: str, namespace: str, payload_keys: str | None, workflow_id: str
) -> dict[str, Any]:
    client = await _connect(address, namespace, payload_keys)
    handle = client.get_workflow_handle(workflow_id)
    try:
        desc = await handle.describe()
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            raise WorkflowNotFound(workflow_id) from exc
        raise TemporalUnreachable(str(exc)) from exc
    info: dict[str, Any] = {
        "workflow_id": desc.id,
        "run_id": desc.run_id,
        "type": desc.workflow_type,
        "status": desc.status.name.lower() if desc.status else None,
        "task_queue": desc.task_queue,
        "started": desc.start_time.isoformat() if desc.start_time else None,
        "closed": desc.close_time.isoformat() if desc.close_time else None,
    }
    if desc.status == WorkflowExecutionStatus.RUNNING:
        info["progress"] = await _progress(client, desc.id, desc.run_id)
    elif desc.status == WorkflowExecutionStatus.COMPLETED:
        try:
            info["result"] = await handle.result()
        except Exception as exc:
            info["result_error"] = str(exc)
    return info
