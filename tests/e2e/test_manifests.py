"""The dev overlay, run as local processes: every Job and every Deployment's init and main containers,
with exactly the manifest's `command` and env (ConfigMap and Secret values resolved from the rendered
objects). Only addresses change: in-cluster Service hosts map to a private backing stack, and fixed
container ports to free local ports. A wrong entry point, env name or Secret key fails here.

The backing stack is private, not the session one: these processes join the services' NATS queue groups
and Temporal task queues and would re-point the session's sweep schedules to production intervals.
Its Temporal starts without Cairn's namespace and its database without a schema, so the Jobs do real work
and the init containers really wait for it.
"""

import asyncio
import base64
import json
import shutil
import subprocess
import sys
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import psutil
import pytest
import yaml
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client

from cairn_devstack import BackingStack, ProcessSupervisor, StackPorts, free_port
from cairn_devstack.ports import HOST
from cairn_servicekit.temporal_setup import SEARCH_ATTRIBUTES
from conftest import stack_dir

ROOT = Path(__file__).resolve().parents[2]
DEV_OVERLAY = ROOT / "deploy" / "k8s" / "overlays" / "dev"
CAIRN_IMAGE = "cairn:"  # the one image every Cairn container runs (infra images are replaced by the stack)
# Settings that carry a container's own listening port: rewritten to a free local port.
PORT_SETTINGS = ("CAIRN_PORT", "CAIRN_HTTP_PORT")


def render(overlay: Path) -> list[dict[str, Any]]:
    kubectl = shutil.which("kubectl")
    assert kubectl, "kubectl is needed to render the overlays (CI installs it; see .ci/run)"
    out = subprocess.run([kubectl, "kustomize", str(overlay)], check=True, capture_output=True, text=True)
    return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


@dataclass
class Workload:
    kind: str
    name: str
    pod: dict[str, Any]

    @property
    def labels(self) -> dict[str, str]:
        return dict(self.pod["metadata"].get("labels", {}))

    def containers(self, key: str = "containers") -> list[dict[str, Any]]:
        return list(self.pod["spec"].get(key, []))

    @property
    def is_cairn(self) -> bool:
        return all(c["image"].startswith(CAIRN_IMAGE) for c in self.containers())


class Rendered:
    def __init__(self, docs: list[dict[str, Any]]) -> None:
        self.docs = docs
        self.config_maps = {
            d["metadata"]["name"]: d.get("data", {}) for d in docs if d["kind"] == "ConfigMap"
        }
        self.secrets = {
            d["metadata"]["name"]: {k: base64.b64decode(v).decode() for k, v in d.get("data", {}).items()}
            for d in docs
            if d["kind"] == "Secret"
        }

    def workloads(self, *kinds: str) -> Iterator[Workload]:
        for d in self.docs:
            if d["kind"] in kinds:
                yield Workload(d["kind"], d["metadata"]["name"], d["spec"]["template"])

    def services(self) -> Iterator[dict[str, Any]]:
        return (d for d in self.docs if d["kind"] == "Service")

    def _lookup(self, source: dict[str, dict[str, str]], ref: dict[str, Any], what: str) -> str | None:
        value = source.get(ref["name"], {}).get(ref["key"])
        if value is None and not ref.get("optional", False):
            raise AssertionError(f"{what} {ref['name']}/{ref['key']} is referenced but not rendered")
        return value

    def env(self, container: dict[str, Any]) -> dict[str, str]:
        """The container's environment as the kubelet builds it: envFrom first, then env (which wins)."""
        env: dict[str, str] = {}
        for source in container.get("envFrom", []):
            if "configMapRef" in source:
                env.update(self.config_maps[source["configMapRef"]["name"]])
            if "secretRef" in source:
                env.update(self.secrets[source["secretRef"]["name"]])
        for var in container.get("env", []):
            if "value" in var:
                env[var["name"]] = var["value"]
                continue
            ref = var["valueFrom"]
            if "configMapKeyRef" in ref:
                value = self._lookup(self.config_maps, ref["configMapKeyRef"], "ConfigMap key")
            else:
                value = self._lookup(self.secrets, ref["secretKeyRef"], "Secret key")
            if value is not None:
                env[var["name"]] = value
        return env


def probe_port(container: dict[str, Any]) -> int:
    port = container["readinessProbe"]["httpGet"]["port"]
    if isinstance(port, int):
        return port
    named = {p["name"]: p["containerPort"] for p in container.get("ports", [])}
    assert port in named, f"{container['name']}: probe port {port!r} is not a declared port"
    return int(named[port])


@dataclass
class LocalRun:
    """Where each in-cluster address lives on this machine."""

    hosts: dict[str, str]  # "service:port" -> "127.0.0.1:port"
    local_ports: dict[str, int]  # workload name -> free port its probe port maps to

    def map_env(self, env: dict[str, str], own_port: int | None, local_port: int | None) -> dict[str, str]:
        mapped: dict[str, str] = {}
        for key, value in env.items():
            for cluster, local in self.hosts.items():
                value = value.replace(cluster, local)
            if own_port is not None and key in PORT_SETTINGS and value == str(own_port):
                value = str(local_port)
            mapped[key] = value
        return mapped


def plan(rendered: Rendered, ports: StackPorts) -> LocalRun:
    backing = {"postgres": ports.postgres, "nats": ports.nats, "temporal": ports.temporal}
    local_ports = {w.name: free_port() for w in rendered.workloads("Deployment") if w.is_cairn}
    by_labels = list(rendered.workloads("Deployment", "StatefulSet"))
    hosts: dict[str, str] = {}
    for service in rendered.services():
        selector = service["spec"]["selector"]
        (target,) = [w for w in by_labels if selector.items() <= w.labels.items()]
        for port in service["spec"]["ports"]:
            if target.is_cairn:
                local = local_ports[target.name]
            else:
                local = backing[target.labels["app.kubernetes.io/component"]]
            hosts[f"{service['metadata']['name']}:{port['port']}"] = f"{HOST}:{local}"
    return LocalRun(hosts, local_ports)


def argv(container: dict[str, Any]) -> list[str]:
    command = [*container.get("command", []), *container.get("args", [])]
    assert command[:1] == ["python"], f"{container['name']}: runs {command}, not the image's python"
    return [sys.executable, *command[1:]]


def base_env() -> dict[str, str]:
    """What the image provides around the manifest's env: no CAIRN_* from this test process."""
    keep = ("PATH", "HOME", "LANG", "TMPDIR", "OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
    return {k: v for k, v in psutil.Process().environ().items() if k in keep} | {"PYTHONUNBUFFERED": "1"}


def nats_authorization(rendered: Rendered) -> dict[str, Any]:
    """The dev overlay's NATS `authorization` block as its server reads it: the ConfigMap's config with
    the `$CAIRN_NATS_PASSWORD_*` references resolved from the NATS container's env (its Secrets)."""
    (nats,) = [w for w in rendered.workloads("Deployment") if w.name == "cairn-nats"]
    (container,) = nats.containers()
    env = rendered.env(container)
    (config,) = [data["nats-auth.conf"] for data in rendered.config_maps.values() if "nats-auth.conf" in data]
    for name in sorted(env, key=len, reverse=True):  # longest first: _MEMORY_EMBEDDER before _MEMORY
        config = config.replace(f"${name}", json.dumps(env[name]))
    authorization: dict[str, Any] = json.loads(config)["authorization"]
    return authorization


@pytest.fixture(scope="module")
async def backing() -> AsyncIterator[tuple[BackingStack, StackPorts]]:
    data_dir = stack_dir("cairn-manifests-")
    ports = StackPorts.free()
    stack = BackingStack(
        data_dir,
        ports,
        namespace="default",  # Cairn's namespace and attributes are the setup Job's to create
        search_attributes={},
        postgres_settings={"fsync": "off", "synchronous_commit": "off", "full_page_writes": "off"},
        # NATS as the overlay runs it: its users, permissions and passwords, no anonymous access.
        nats_authorization=nats_authorization(Rendered(render(DEV_OVERLAY))),
    )
    try:
        async with stack:
            # The dev overlay's database user (the pgvector image makes POSTGRES_USER its superuser).
            conn = await asyncpg.connect(stack.database_url)
            try:
                await conn.execute("CREATE ROLE cairn LOGIN SUPERUSER PASSWORD 'unused-trust-auth'")
            finally:
                await conn.close()
            yield stack, ports
    finally:
        shutil.rmtree(data_dir, ignore_errors=True)


async def wait_exit(supervisor: ProcessSupervisor, name: str, timeout: float) -> int:
    deadline = asyncio.get_running_loop().time() + timeout
    while supervisor.is_running(name):
        if asyncio.get_running_loop().time() > deadline:
            raise AssertionError(f"{name} still running after {timeout}s:\n{supervisor.log_tail(name)}")
        await asyncio.sleep(0.2)
    code = await supervisor.stop(name)
    assert code is not None
    return code


async def ready(url: str) -> bool:
    try:
        async with httpx.AsyncClient(timeout=3) as client:
            return (await client.get(url)).status_code == 200
    except httpx.HTTPError:
        return False


async def test_dev_overlay_runs_as_written(backing: tuple[BackingStack, StackPorts]) -> None:
    stack, ports = backing
    rendered = Rendered(render(DEV_OVERLAY))
    deployments = [w for w in rendered.workloads("Deployment") if w.is_cairn]
    jobs = list(rendered.workloads("Job"))
    assert {w.name for w in deployments} == {
        "cairn-gateway",
        "cairn-memory",
        "cairn-memory-embedder",
        "cairn-recall",
        "cairn-promotion",
        "cairn-graduation",
        "cairn-knowledge",
    }
    assert {j.name for j in jobs} == {"cairn-migrate", "cairn-temporal-setup"}
    local = plan(rendered, ports)
    logs = stack_dir("cairn-manifest-logs-")
    supervisor = ProcessSupervisor(logs)

    def start(name: str, container: dict[str, Any], own: int | None = None, port: int | None = None) -> Any:
        env = local.map_env(rendered.env(container), own, port)
        return supervisor.start(
            name, argv(container), env=base_env() | env, inherit_env=False, stop_timeout=25
        )

    try:
        # Init containers first, as the kubelet may run them before the Jobs: they must wait, not pass.
        inits = [(f"{w.name}.{c['name']}", c) for w in deployments for c in w.containers("initContainers")]
        assert {name.split(".")[1] for name, _ in inits} == {"wait-for-schema", "wait-for-temporal"}
        for name, container in inits:
            await start(name, container)
        await asyncio.sleep(3)
        early = [name for name, _ in inits if not supervisor.is_running(name)]
        assert early == [], f"init containers finished before the Jobs ran: {early}"

        for job in jobs:
            (container,) = job.containers()
            await start(job.name, container)
        for job in jobs:
            code = await wait_exit(supervisor, job.name, 120)
            assert code == 0, supervisor.log_tail(job.name)
        for name, _ in inits:
            code = await wait_exit(supervisor, name, 60)
            assert code == 0, supervisor.log_tail(name)

        # The Jobs did the real work: schema at head, Cairn's namespace with its search attributes.
        conn = await asyncpg.connect(stack.database_url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM alembic_version") == 1
        finally:
            await conn.close()
        (setup,) = next(j for j in jobs if j.name == "cairn-temporal-setup").containers()
        namespace = rendered.env(setup)["CAIRN_TEMPORAL_NAMESPACE"]
        temporal = await Client.connect(stack.temporal_address)
        listed = await temporal.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=namespace)
        )
        assert set(SEARCH_ATTRIBUTES) <= set(listed.custom_attributes)

        urls = {}
        for w in deployments:
            (container,) = w.containers()
            own = probe_port(container)
            port = local.local_ports[w.name]
            await start(w.name, container, own, port)
            urls[w.name] = f"http://{HOST}:{port}{container['readinessProbe']['httpGet']['path']}"
        deadline = asyncio.get_running_loop().time() + 150
        pending = dict(urls)
        while pending:
            for name, url in list(pending.items()):
                if await ready(url):
                    del pending[name]
                elif not supervisor.is_running(name):
                    raise AssertionError(f"{name} exited:\n{supervisor.log_tail(name)}")
            if asyncio.get_running_loop().time() > deadline:
                raise AssertionError(f"not ready: {sorted(pending)}")
            await asyncio.sleep(0.5)
        # The gateway's /readyz names every component, the embedder's port included: the whole system.
        async with httpx.AsyncClient(timeout=5) as client:
            report = (await client.get(urls["cairn-gateway"])).json()
        assert report["status"] == "ok"
        assert report["components"]["memory-embedder"]["status"] == "ok"
    finally:
        await supervisor.stop_all()
        shutil.rmtree(logs, ignore_errors=True)
