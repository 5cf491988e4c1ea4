"""`python -m cairn_servicekit.temporal_setup`: the Cairn namespace and its search attributes, once.

Run by the Kubernetes setup Job against any Temporal (the devstack's dev server registers the same
itself). Idempotent: whatever already exists is left as it is. `--wait` changes nothing and only waits
until both exist; init containers use it so no worker or client starts against a bare Temporal.
"""

import argparse
import asyncio
import logging
import os
import sys
import time
from collections.abc import Mapping
from datetime import timedelta

from google.protobuf.duration_pb2 import Duration
from pydantic_settings import BaseSettings, SettingsConfigDict
from temporalio.api.enums.v1 import IndexedValueType
from temporalio.api.operatorservice.v1 import AddSearchAttributesRequest, ListSearchAttributesRequest
from temporalio.api.workflowservice.v1 import DescribeNamespaceRequest, RegisterNamespaceRequest
from temporalio.client import Client
from temporalio.service import RPCError, RPCStatusCode

log = logging.getLogger(__name__)

SEARCH_ATTRIBUTES: Mapping[str, str] = {
    "CairnTenantId": "Keyword",
    "CairnSubjectId": "Keyword",
    "CairnSessionId": "Keyword",
    "CairnMemoryId": "Keyword",
}
"""Custom search attributes Cairn's workflows carry, so operators can filter workflows by tenant."""


class TemporalSetupSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    temporal_address: str = "127.0.0.1:57233"
    temporal_namespace: str = "cairn"
    # Closed workflows (and their history) are kept this long.
    temporal_retention_days: int = 7


async def _connect(address: str, deadline: float) -> Client:
    """Temporal may still be starting (a Job and its server start together): retry until `deadline`."""
    while True:
        try:
            return await Client.connect(address)
        except Exception as exc:
            if time.monotonic() > deadline:
                raise TimeoutError(f"Temporal at {address} did not answer: {exc}") from exc
            await asyncio.sleep(1.0)


async def _missing_attributes(client: Client, namespace: str) -> list[str]:
    listed = await client.operator_service.list_search_attributes(
        ListSearchAttributesRequest(namespace=namespace)
    )
    return [name for name in SEARCH_ATTRIBUTES if name not in listed.custom_attributes]


async def _namespace_exists(client: Client, namespace: str) -> bool:
    try:
        await client.workflow_service.describe_namespace(DescribeNamespaceRequest(namespace=namespace))
    except RPCError as exc:
        if exc.status == RPCStatusCode.NOT_FOUND:
            return False
        raise
    return True


async def ensure(settings: TemporalSetupSettings, timeout: float) -> None:
    """Create the namespace and the search attributes that are missing."""
    deadline = time.monotonic() + timeout
    client = await _connect(settings.temporal_address, deadline)
    namespace = settings.temporal_namespace
    if not await _namespace_exists(client, namespace):
        retention = Duration()
        retention.FromTimedelta(timedelta(days=settings.temporal_retention_days))
        try:
            await client.workflow_service.register_namespace(
                RegisterNamespaceRequest(namespace=namespace, workflow_execution_retention_period=retention)
            )
            log.info("registered namespace %s", namespace)
        except RPCError as exc:
            if exc.status != RPCStatusCode.ALREADY_EXISTS:  # a concurrent run made it
                raise
    # A new namespace takes a moment to reach every frontend; adding attributes before that fails.
    while True:
        try:
            missing = await _missing_attributes(client, namespace)
            if missing:
                kinds = {name: _indexed_type(SEARCH_ATTRIBUTES[name]) for name in missing}
                await client.operator_service.add_search_attributes(
                    AddSearchAttributesRequest(namespace=namespace, search_attributes=kinds)
                )
                log.info("added search attributes %s", ", ".join(missing))
            if not await _missing_attributes(client, namespace):
                return
        except RPCError as exc:
            if exc.status not in (RPCStatusCode.NOT_FOUND, RPCStatusCode.UNAVAILABLE):
                raise
        if time.monotonic() > deadline:
            raise TimeoutError(f"namespace {namespace} is not usable after {timeout}s")
        await asyncio.sleep(1.0)


async def wait(settings: TemporalSetupSettings, timeout: float) -> None:
    """Until the namespace and every search attribute exist (creates nothing)."""
    deadline = time.monotonic() + timeout
    client = await _connect(settings.temporal_address, deadline)
    while True:
        try:
            if await _namespace_exists(client, settings.temporal_namespace):
                missing = await _missing_attributes(client, settings.temporal_namespace)
                if not missing:
                    return
                log.info("waiting for search attributes %s", ", ".join(missing))
            else:
                log.info("waiting for namespace %s", settings.temporal_namespace)
        except RPCError as exc:
            log.info("waiting for Temporal (%s)", exc.status.name if exc.status else exc)
        if time.monotonic() > deadline:
            raise TimeoutError(
                f"Temporal namespace {settings.temporal_namespace} not set up after {timeout}s"
            )
        await asyncio.sleep(2.0)


def _indexed_type(kind: str) -> "IndexedValueType.ValueType":
    return IndexedValueType.Value(f"INDEXED_VALUE_TYPE_{kind.upper()}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m cairn_servicekit.temporal_setup", description=__doc__)
    parser.add_argument("--wait", action="store_true", help="create nothing; wait until the setup is done")
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before giving up")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s temporal-setup %(levelname)s %(message)s")
    settings = TemporalSetupSettings()
    try:
        asyncio.run((wait if args.wait else ensure)(settings, args.timeout))
    except TimeoutError as exc:
        log.error("%s", exc)
        return 1
    log.info(
        "namespace %s ready with %d search attributes", settings.temporal_namespace, len(SEARCH_ATTRIBUTES)
    )
    return 0


if __name__ == "__main__":
    code = main()
    logging.shutdown()
    sys.stdout.flush()
    sys.stderr.flush()
    # The Temporal client's native threads abort (SIGABRT) at interpreter shutdown: leave without it.
    os._exit(code)
