"""The whole Cairn system on one machine: backing services (or external ones), migrations, the services.

Used by `up` (long-lived, data under `.cairn/`) and by the pytest session fixture (temp dir, free ports).
"""

from __future__ import annotations

import asyncio
import secrets
import sys
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from cairn_devstack.bus_secrets import BusSecrets
from cairn_devstack.ports import HOST, StackPorts, ensure_port_free, free_port, free_ports
from cairn_devstack.stack import BackingStack
from cairn_devstack.supervisor import ProcessSupervisor, RestartPolicy

# Each service runs as its own OS process: (name, module).
SERVICES: tuple[tuple[str, str], ...] = (
    ("memory", "cairn_memory"),
    ("memory-embedder", "cairn_memory.embedder"),
    ("recall", "cairn_recall"),
    ("promotion", "cairn_promotion"),
    ("graduation", "cairn_graduation"),
    ("knowledge", "cairn_knowledge"),
)
# The bus principal (NATS user, scope signer) each module runs as; replicas share it.
PRINCIPAL_OF_MODULE = {module: name for name, module in SERVICES} | {"cairn_gateway": "gateway"}


SERVICE_DB_USER = "cairn_app"


def _service_db_password(path: Path) -> str:
    """The service login's password, generated once per data dir (like the bus secrets)."""
    if path.exists():
        return path.read_text().strip()
    password = secrets.token_urlsafe(24)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(password)
    return password


@dataclass(frozen=True)
class ExternalServices:
    """Managed PostgreSQL / NATS / Temporal to use instead of starting local ones."""

    database_url: str
    nats_url: str
    temporal_address: str
    temporal_namespace: str = "cairn"
    temporal_ui_url: str = ""


@dataclass
class CairnConfig:
    data_dir: Path
    provider_secrets_key: str
    ports: StackPorts = field(default_factory=StackPorts.defaults)
    gateway_port: int = 58080
    external: ExternalServices | None = None
    service_env: dict[str, str] = field(default_factory=dict)  # extra CAIRN_* settings for every service
    postgres_settings: dict[str, str] | None = None
    restart: RestartPolicy | None = field(default_factory=RestartPolicy)  # for crashed services; None: off


class CairnStack:
    """Start order: backing services (health-checked), migrations, services, gateway; `/readyz` gates ready."""

    def __init__(self, config: CairnConfig) -> None:
        self.config = config
        self.data_dir = config.data_dir.absolute()
        # NATS users, scope keys, payload key: generated once per data dir (kept by `up`).
        self.secrets = BusSecrets.load_or_create(self.data_dir / "bus_secrets.json")
        self.service_db_password = _service_db_password(self.data_dir / "db_service_password")
        self.backing: BackingStack | None = None
        if config.external is None:
            self.backing = BackingStack(
                self.data_dir,
                config.ports,
                postgres_settings=config.postgres_settings,
                nats_authorization=self.secrets.nats_authorization(),
                temporal_ui_codec_endpoint=f"{self.gateway_url}/codec",
            )
            self.supervisor = self.backing.supervisor
        else:
            self.supervisor = ProcessSupervisor(self.data_dir / "logs")
        # Each process's own HTTP port (/healthz, /readyz, /metrics); a restart keeps its port.
        self.http_ports: dict[str, int] = dict(
            zip((name for name, _ in SERVICES), free_ports(len(SERVICES)), strict=True)
        )

    @property
    def database_url(self) -> str:
        return self.backing.database_url if self.backing else self._external().database_url

    @property
    def service_database_url(self) -> str:
        """What the services connect with: the `cairn_app` login, subject to row-level security.

        `database_url` stays the administrative one (migrations, tests that seed rows directly).
        """
        from cairn_storage.roles import login_url

        return login_url(self.database_url, SERVICE_DB_USER, self.service_db_password)

    @property
    def nats_url(self) -> str:
        return self.backing.nats_url if self.backing else self._external().nats_url

    @property
    def temporal_address(self) -> str:
        return self.backing.temporal_address if self.backing else self._external().temporal_address

    @property
    def temporal_namespace(self) -> str:
        return self.backing.temporal_namespace if self.backing else self._external().temporal_namespace

    @property
    def temporal_ui_url(self) -> str:
        return self.backing.temporal_ui_url if self.backing else self._external().temporal_ui_url

    @property
    def gateway_url(self) -> str:
        return f"http://127.0.0.1:{self.config.gateway_port}"

    def http_url(self, name: str) -> str:
        """The HTTP port of a service process (the gateway's is its API port)."""
        if name == "gateway":
            return self.gateway_url
        return f"http://{HOST}:{self.http_ports[name]}"

    def http_urls(self) -> dict[str, str]:
        """`CAIRN_<SERVICE>_HTTP_URL` for every process, as `up` writes them into `.cairn/env`."""
        names = ("gateway", *(name for name, _ in SERVICES))
        return {f"CAIRN_{name.upper().replace('-', '_')}_HTTP_URL": self.http_url(name) for name in names}

    def _external(self) -> ExternalServices:
        assert self.config.external is not None
        return self.config.external

    def env(self) -> dict[str, str]:
        """The CAIRN_* environment every service process gets."""
        return {
            "CAIRN_DATABASE_URL": self.service_database_url,
            "CAIRN_NATS_URL": self.nats_url,
            "CAIRN_TEMPORAL_ADDRESS": self.temporal_address,
            "CAIRN_TEMPORAL_NAMESPACE": self.temporal_namespace,
            "CAIRN_PROVIDER_SECRETS_KEY": self.config.provider_secrets_key,
            "CAIRN_PORT": str(self.config.gateway_port),
            "CAIRN_HOST": "127.0.0.1",
            "CAIRN_HTTP_HOST": HOST,
            "CAIRN_MEMORY_EMBEDDER_HTTP_URL": self.http_url("memory-embedder"),
            "PYTHONUNBUFFERED": "1",
            **self.config.service_env,
        }

    async def start(self) -> None:
        if self.backing is not None:
            await self.backing.start()
        try:
            from cairn_storage import upgrade
            from cairn_storage.roles import ensure_service_login

            await upgrade(self.database_url)
            await ensure_service_login(self.database_url, SERVICE_DB_USER, self.service_db_password)
            for name, module in SERVICES:
                await self.start_service(name, module)
            await self.start_gateway()
            await self.wait_ready()
        except BaseException:
            await self.stop()
            raise

    def service_env(self, module: str) -> dict[str, str]:
        """`env()` plus what only this module's principal holds: its NATS user and its keys."""
        env = {**self.env(), **self.secrets.service_env(PRINCIPAL_OF_MODULE[module])}
        if module == "cairn_recall":
            # Subject indexes are DDL on the tables (owner only): an explicit maintenance role.
            env["CAIRN_INDEX_DATABASE_URL"] = self.database_url
        return env

    async def start_service(self, name: str, module: str, **env: str) -> int:
        """Start a service process; a new name (an extra replica) gets its own HTTP port."""
        port = self.http_ports.setdefault(name, free_port())
        return await self.supervisor.start(
            name,
            [sys.executable, "-m", module],
            env={**self.service_env(module), "CAIRN_HTTP_PORT": str(port), **env},
            stop_timeout=25.0,
            restart=self.config.restart,
        )

    async def start_gateway(self, name: str = "gateway", port: int | None = None) -> int:
        """Start a gateway process; extra replicas take another name and port (they share all state)."""
        port = port or self.config.gateway_port
        # Checked as the backing servers check theirs: another server on the port would answer /healthz in the
        # gateway's place, and the stack would wait 90 s for a /readyz that never comes.
        ensure_port_free(port, name)
        return await self.supervisor.start(
            name,
            [sys.executable, "-m", "cairn_gateway"],
            env={
                **self.service_env("cairn_gateway"),
                "CAIRN_PORT": str(port),
                "CAIRN_CODEC_CORS_ORIGINS": self.temporal_ui_url,
            },
            ready=lambda: _http_status_is(f"http://127.0.0.1:{port}/healthz", 200),
            ready_timeout=60.0,
            stop_timeout=25.0,
            restart=self.config.restart,
        )

    async def wait_ready(self, timeout: float = 90.0) -> None:
        """Poll `/readyz` until every component answers."""
        deadline = asyncio.get_running_loop().time() + timeout
        while not await _http_status_is(f"{self.gateway_url}/readyz", 200):
            for name, _ in SERVICES:
                # With restarts on, a service that is down now is being brought back: keep waiting.
                if self.config.restart is None and not self.supervisor.is_running(name):
                    raise RuntimeError(f"{name} exited:\n{self.supervisor.log_tail(name)}")
            if asyncio.get_running_loop().time() > deadline:
                async with httpx.AsyncClient() as client:
                    body = (await client.get(f"{self.gateway_url}/readyz")).text
                raise TimeoutError(f"Cairn not ready after {timeout}s: {body}")
            await asyncio.sleep(0.25)

    async def stop(self) -> None:
        await self.supervisor.stop_all()

    async def __aenter__(self) -> CairnStack:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def _http_status_is(url: str, status: int) -> bool:
    try:
        async with httpx.AsyncClient(timeout=2.0) as client:
            return (await client.get(url)).status_code == status
    except httpx.HTTPError:
        return False
