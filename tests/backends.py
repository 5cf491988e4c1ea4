"""Where the test session's PostgreSQL, NATS and Temporal come from: `CAIRN_TEST_BACKEND`.

- `embedded` (the default): the devstack starts them from PyPI wheels, no Docker.
- `external`: already running ones, named by `CAIRN_DATABASE_URL`, `CAIRN_NATS_URL`,
  `CAIRN_TEMPORAL_ADDRESS` (and `CAIRN_TEMPORAL_NAMESPACE`); setting all three without a backend also
  means `external`, as it always did.
- `testcontainers`: the pgvector, NATS (JetStream) and Temporal dev server images, started through a
  Docker daemon (platform teams' CI); with no daemon it stops at once, saying so.

The Cairn services themselves always run as local processes.
"""

import asyncio
from contextlib import ExitStack
from typing import Literal

from pydantic_settings import BaseSettings, SettingsConfigDict

from cairn_devstack.cairn import ExternalServices
from cairn_servicekit.temporal_setup import TemporalSetupSettings, ensure

# The same images as deploy/k8s/overlays/dev.
PGVECTOR_IMAGE = "pgvector/pgvector:0.8.0-pg17"
NATS_IMAGE = "nats:2.11.4-alpine"
TEMPORAL_IMAGE = "temporalio/temporal:1.4.1"


class BackendUnavailable(RuntimeError):
    """The chosen backend cannot run here; the message says why and what to do instead."""


class BackendSettings(BaseSettings):
    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    test_backend: Literal["embedded", "external", "testcontainers"] | None = None
    database_url: str | None = None
    nats_url: str | None = None
    temporal_address: str | None = None
    temporal_namespace: str = "cairn"

    def backend(self) -> Literal["embedded", "external", "testcontainers"]:
        if self.test_backend is not None:
            return self.test_backend
        return "external" if self.database_url and self.nats_url and self.temporal_address else "embedded"


async def external_services(settings: BackendSettings, cleanup: ExitStack) -> ExternalServices | None:
    """None for the embedded stack; else the backing services to use (containers stop with `cleanup`)."""
    backend = settings.backend()
    if backend == "embedded":
        return None
    if backend == "external":
        missing = [
            f"CAIRN_{name.upper()}"
            for name in ("database_url", "nats_url", "temporal_address")
            if not getattr(settings, name)
        ]
        if missing:
            raise BackendUnavailable(f"CAIRN_TEST_BACKEND=external needs {', '.join(missing)}")
        return ExternalServices(
            settings.database_url or "",
            settings.nats_url or "",
            settings.temporal_address or "",
            settings.temporal_namespace,
        )
    services = await asyncio.to_thread(start_containers, settings.temporal_namespace, cleanup)
    # A bare dev server: the namespace and search attributes come from the same code as the k8s Job.
    setup = TemporalSetupSettings(
        temporal_address=services.temporal_address, temporal_namespace=services.temporal_namespace
    )
    await ensure(setup, timeout=120)
    return services


def require_docker() -> None:
    import docker
    from docker.errors import DockerException

    try:
        docker.from_env().ping()
    except DockerException as exc:
        raise BackendUnavailable(
            "CAIRN_TEST_BACKEND=testcontainers needs a running Docker daemon, and none answers here "
            f"({exc}). Start Docker (or set DOCKER_HOST), or use the embedded default: unset CAIRN_TEST_BACKEND."
        ) from None


def start_containers(namespace: str, cleanup: ExitStack) -> ExternalServices:
    require_docker()
    from testcontainers.core.container import DockerContainer
    from testcontainers.core.wait_strategies import LogMessageWaitStrategy

    postgres = cleanup.enter_context(
        DockerContainer(
            PGVECTOR_IMAGE,
            env={"POSTGRES_USER": "cairn", "POSTGRES_PASSWORD": "cairn", "POSTGRES_DB": "cairn"},
            ports=[5432],
        ).waiting_for(LogMessageWaitStrategy("database system is ready to accept connections", times=2))
    )
    nats = cleanup.enter_context(
        DockerContainer(NATS_IMAGE, command="--jetstream", ports=[4222]).waiting_for(
            LogMessageWaitStrategy("Server is ready")
        )
    )
    temporal = cleanup.enter_context(
        DockerContainer(TEMPORAL_IMAGE, command="server start-dev --ip 0.0.0.0", ports=[7233])
    )

    def address(container: DockerContainer, port: int) -> str:
        return f"{container.get_container_host_ip()}:{container.get_exposed_port(port)}"

    return ExternalServices(
        database_url=f"postgresql://cairn:cairn@{address(postgres, 5432)}/cairn",
        nats_url=f"nats://{address(nats, 4222)}",
        temporal_address=address(temporal, 7233),
        temporal_namespace=namespace,
    )
