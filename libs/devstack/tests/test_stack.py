"""Real processes, no mocks: the stack starts, persists data, restarts pieces and leaves nothing behind."""

from __future__ import annotations

import asyncio
import os
import shutil
import signal
import socket
import sys
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from dataclasses import astuple
from pathlib import Path

import asyncpg
import nats
import psutil
import pytest
from nats.js.api import StreamConfig
from temporalio.api.operatorservice.v1 import ListSearchAttributesRequest
from temporalio.client import Client, WorkflowExecutionStatus

from cairn_devstack import (
    DEFAULT_SEARCH_ATTRIBUTES,
    BackingStack,
    NatsServer,
    PortInUseError,
    ProcessStartError,
    ProcessSupervisor,
    RestartPolicy,
    StackPorts,
    free_port,
    http_ok,
)
from cairn_devstack.cairn import CairnConfig, CairnStack

pytestmark = pytest.mark.timeout(90)

STREAM = "DEVSTACK_TEST"
WORKFLOW_ID = "devstack-persistence"


def process_tree(stack: BackingStack) -> list[psutil.Process]:
    """Every supervised process and all of its descendants (postgres backends, ...)."""
    procs = []
    for pid in stack.supervisor.pids().values():
        parent = psutil.Process(pid)
        procs += [parent, *parent.children(recursive=True)]
    return procs


def processes_using(path: Path) -> list[psutil.Process]:
    """Live processes whose command line mentions ``path``."""
    found = []
    for proc in psutil.process_iter(["cmdline", "status"]):
        cmdline = proc.info["cmdline"] or []
        if proc.info["status"] != psutil.STATUS_ZOMBIE and any(str(path) in arg for arg in cmdline):
            found.append(proc)
    return found


async def assert_all_gone(procs: list[psutil.Process], data_dir: Path) -> None:
    # Orphaned grandchildren are reaped by init, not by us: give it a moment.
    _, alive = await asyncio.to_thread(psutil.wait_procs, procs, 5)
    assert alive == []
    assert processes_using(data_dir) == []


@pytest.fixture(scope="module")
def data_dir() -> Iterator[Path]:
    # Not tmp_path: pytest resets /tmp/pytest-of-<user> to 0700 whenever any pytest session starts, which
    # locks the pgserver user out of its data dir (see cairn_devstack.postgres.PERMISSION_HINT).
    root = Path(tempfile.mkdtemp(prefix="cairn-devstack-test-"))
    yield root / "data"
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def ports() -> StackPorts:
    return StackPorts.free()


@pytest.fixture(scope="module")
async def backing(data_dir: Path, ports: StackPorts) -> AsyncIterator[BackingStack]:
    async with BackingStack(data_dir, ports) as running:
        yield running


class TestPorts:
    def test_free_returns_distinct_ports(self) -> None:
        ports = StackPorts.free()
        values = [ports.postgres, ports.nats, ports.nats_monitor, ports.temporal, ports.temporal_ui]
        assert len(set(values)) == 5

    def test_separate_draws_never_repeat_a_port(self) -> None:
        # 300 single draws from ~17,000 ports would repeat one about 9 times in 10 without the record.
        ports = [free_port() for _ in range(300)]
        assert len(set(ports)) == len(ports)

    def test_free_ports_avoid_the_kernels_ephemeral_range(self) -> None:
        ephemeral_start = int(Path("/proc/sys/net/ipv4/ip_local_port_range").read_text().split()[0])
        assert all(1024 <= port < ephemeral_start for port in [free_port(), *astuple(StackPorts.free())])

    async def test_taken_port_is_reported_before_starting(self, tmp_path: Path) -> None:
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            server = NatsServer(tmp_path, taken.getsockname()[1], free_port())
            with pytest.raises(PortInUseError, match="nats"):
                await server.start()
        assert server.supervisor.pids() == {}

    async def test_a_taken_gateway_port_is_reported_before_starting(self, tmp_path: Path) -> None:
        # Another server on the gateway's port would answer /healthz in its place (the Temporal UI's does).
        with socket.socket() as taken:
            taken.bind(("127.0.0.1", 0))
            taken.listen()
            config = CairnConfig(tmp_path, provider_secrets_key="k" * 43, gateway_port=taken.getsockname()[1])
            stack = CairnStack(config)
            with pytest.raises(PortInUseError, match="gateway"):
                await stack.start_gateway()
            assert stack.supervisor.pids() == {}


async def _next_pid(supervisor: ProcessSupervisor, name: str, old: int, timeout: float = 10) -> int:
    """The pid of the process that replaced ``old`` once it runs."""
    for _ in range(int(timeout / 0.05)):
        pid = supervisor.pids().get(name)
        if pid is not None and pid != old:
            return pid
        await asyncio.sleep(0.05)
    raise AssertionError(f"{name} was not restarted within {timeout} s")


class TestSupervisor:
    async def test_failed_start_reports_log_tail(self, tmp_path: Path) -> None:
        supervisor = ProcessSupervisor(tmp_path / "logs")

        async def never_ready() -> bool:
            return False

        with pytest.raises(ProcessStartError, match=r"exited with code 3(.|\n)*boom"):
            await supervisor.start("broken", ["sh", "-c", "echo boom; exit 3"], ready=never_ready)

    @pytest.mark.parametrize(
        "script",
        [
            pytest.param("sleep 300 & wait", id="leader-exits-on-sigterm"),
            pytest.param("trap '' TERM; sleep 300 & wait", id="leader-ignores-sigterm"),
        ],
    )
    async def test_stop_leaves_no_group_member_alive(self, tmp_path: Path, script: str) -> None:
        supervisor = ProcessSupervisor(tmp_path / "logs")
        pid = await supervisor.start("shell", ["sh", "-c", script], stop_timeout=0.5)
        leader = psutil.Process(pid)
        for _ in range(100):
            if leader.children():
                break
            await asyncio.sleep(0.02)
        family = [leader, *leader.children()]
        assert len(family) == 2

        await supervisor.stop_all()

        gone, alive = await asyncio.to_thread(psutil.wait_procs, family, 5)
        assert alive == []
        assert supervisor.pids() == {}

    async def test_a_killed_child_is_restarted_with_backoff_and_logged(
        self, tmp_path: Path, caplog: pytest.LogCaptureFixture
    ) -> None:
        supervisor = ProcessSupervisor(tmp_path / "logs")
        policy = RestartPolicy(initial_delay=0.2, max_delay=0.4, stable_after=30)
        first = await supervisor.start("sleeper", ["sleep", "300"], restart=policy)
        try:
            pids = [first]
            for _ in range(3):
                os.kill(pids[-1], signal.SIGKILL)
                pids.append(await _next_pid(supervisor, "sleeper", pids[-1]))
            assert len(set(pids)) == 4
            assert supervisor.restarts["sleeper"] == 3
            log = supervisor.log_path("sleeper").read_text()
            assert "supervisor: sleeper exited with code -9; restarting in 0.2 s" in log
            assert "restarting in 0.4 s" in log  # doubled, then capped (0.8 -> 0.4)
            assert "restarting in 0.8 s" not in log
            assert "sleeper (pid" in caplog.text
            assert "crash 3 in a row" in caplog.text
        finally:
            await supervisor.stop_all()

    async def test_a_stable_run_resets_the_backoff(self, tmp_path: Path) -> None:
        supervisor = ProcessSupervisor(tmp_path / "logs")
        policy = RestartPolicy(initial_delay=0.3, max_delay=10, stable_after=0.5)
        pid = await supervisor.start("sleeper", ["sleep", "300"], restart=policy)
        try:
            for _ in range(3):
                await asyncio.sleep(0.6)  # longer than stable_after: each crash is the first in a row
                os.kill(pid, signal.SIGKILL)
                pid = await _next_pid(supervisor, "sleeper", pid)
            log = supervisor.log_path("sleeper").read_text()
            assert log.count("restarting in 0.3 s") == 3
        finally:
            await supervisor.stop_all()

    async def test_a_deliberate_stop_is_not_restarted(self, tmp_path: Path) -> None:
        supervisor = ProcessSupervisor(tmp_path / "logs")
        policy = RestartPolicy(initial_delay=0.1)
        await supervisor.start("a", ["sleep", "300"], restart=policy)
        await supervisor.start("b", ["sleep", "300"], restart=policy)
        await supervisor.stop("a")
        await asyncio.sleep(0.5)
        assert not supervisor.is_running("a")
        assert supervisor.is_running("b")
        await supervisor.stop_all()
        await asyncio.sleep(0.5)
        assert supervisor.pids() == {}
        assert supervisor.restarts == {}

    async def test_children_die_when_launcher_is_killed(self, tmp_path: Path) -> None:
        script = (
            "import asyncio, sys\n"
            "from pathlib import Path\n"
            "from cairn_devstack.supervisor import ProcessSupervisor\n"
            "async def main():\n"
            "    sup = ProcessSupervisor(Path(sys.argv[1]))\n"
            "    print(await sup.start('sleeper', ['sleep', '300']), flush=True)\n"
            "    await asyncio.sleep(300)\n"
            "asyncio.run(main())\n"
        )
        launcher = await asyncio.create_subprocess_exec(
            sys.executable, "-c", script, str(tmp_path), stdout=asyncio.subprocess.PIPE
        )
        assert launcher.stdout is not None
        sleeper_pid = int(await asyncio.wait_for(launcher.stdout.readline(), 30))
        sleeper = psutil.Process(sleeper_pid)
        try:
            assert sleeper.ppid() == launcher.pid
            assert os.getpgid(sleeper_pid) == sleeper_pid  # own session and process group
            launcher.send_signal(signal.SIGKILL)
            await launcher.wait()
            gone, _ = await asyncio.to_thread(psutil.wait_procs, [sleeper], 5)
            assert gone == [sleeper]
        finally:
            if sleeper.is_running():
                sleeper.kill()


class TestBackingStack:
    async def test_services_are_healthy(self, backing: BackingStack) -> None:
        conn = await asyncpg.connect(backing.database_url)
        try:
            assert await conn.fetchval("select extversion from pg_extension where extname = 'vector'")
            assert await conn.fetchval("select '[1,2]'::vector <-> '[1,3]'::vector") == 1.0
        finally:
            await conn.close()

        assert await http_ok(f"{backing.nats.monitor_url}/healthz?js-enabled-only=true", contains='"ok"')

        client = await Client.connect(backing.temporal_address, namespace=backing.temporal_namespace)
        assert await client.count_workflows() is not None
        attributes = await client.operator_service.list_search_attributes(
            ListSearchAttributesRequest(namespace=backing.temporal_namespace)
        )
        assert set(DEFAULT_SEARCH_ATTRIBUTES) <= set(attributes.custom_attributes)
        assert await http_ok(backing.temporal_ui_url + "/")

    async def test_everything_listens_on_loopback_only(self, backing: BackingStack) -> None:
        for proc in process_tree(backing):
            for conn in proc.net_connections(kind="inet"):
                if conn.status == psutil.CONN_LISTEN:
                    assert conn.laddr.ip == "127.0.0.1", (proc.name(), conn.laddr)

    async def test_nats_restart_keeps_clients_connected(self, backing: BackingStack) -> None:
        reconnected = asyncio.Event()

        async def on_reconnect() -> None:
            reconnected.set()

        nc = await nats.connect(
            backing.nats_url, reconnected_cb=on_reconnect, reconnect_time_wait=0.1, max_reconnect_attempts=-1
        )
        try:
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name="RESTART_TEST", subjects=["restart.>"]))
            old_pid = backing.supervisor.pids()["nats"]

            new_pid = await backing.supervisor.restart("nats")

            assert new_pid != old_pid
            await asyncio.wait_for(reconnected.wait(), 10)
            ack = await js.publish("restart.after", b"hello")
            assert ack.stream == "RESTART_TEST"
        finally:
            await nc.close()

    async def test_data_survives_a_full_restart(
        self, backing: BackingStack, data_dir: Path, ports: StackPorts
    ) -> None:
        conn = await asyncpg.connect(backing.database_url)
        try:
            await conn.execute("create table notes (id int primary key, embedding vector(2))")
            await conn.execute("insert into notes values (1, '[0.5,0.25]')")
        finally:
            await conn.close()
        nc = await nats.connect(backing.nats_url)
        try:
            js = nc.jetstream()
            await js.add_stream(StreamConfig(name=STREAM, subjects=["persist.>"]))
            await js.publish("persist.one", b"kept")
        finally:
            await nc.close()
        client = await Client.connect(backing.temporal_address, namespace=backing.temporal_namespace)
        # No worker exists: the workflow just stays running, which is enough to see it persisted.
        await client.start_workflow("NoSuchWorkflow", id=WORKFLOW_ID, task_queue=f"q-{uuid.uuid4()}")
        first_generation = process_tree(backing)
        if os.geteuid() == 0:
            assert any(p.username() == "pgserver" for p in first_generation)

        await backing.stop()
        await assert_all_gone(first_generation, data_dir)
        # What a pytest session starting elsewhere does to its tmp root: the restart must undo it.
        data_dir.parent.chmod(0o700)

        async with BackingStack(data_dir, ports) as again:
            second_generation = process_tree(again)
            conn = await asyncpg.connect(again.database_url)
            try:
                assert await conn.fetchval("select embedding::text from notes where id = 1") == "[0.5,0.25]"
            finally:
                await conn.close()
            nc = await nats.connect(again.nats_url)
            try:
                msg = await nc.jetstream().get_last_msg(STREAM, "persist.one")
                assert msg.data == b"kept"
            finally:
                await nc.close()
            client = await Client.connect(again.temporal_address, namespace=again.temporal_namespace)
            description = await client.get_workflow_handle(WORKFLOW_ID).describe()
            assert description.status == WorkflowExecutionStatus.RUNNING
        await assert_all_gone(second_generation, data_dir)
