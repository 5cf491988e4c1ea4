"""`cairn-up`, the embedded default, as a newcomer runs it: ready, prints its env, refuses a twin, and
leaves nothing running after Ctrl-C."""

import asyncio
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import httpx
import psutil

from cairn_devstack import StackPorts, free_port
from conftest import stack_dir

HTTP_URLS = (
    "CAIRN_GATEWAY_HTTP_URL",
    "CAIRN_MEMORY_HTTP_URL",
    "CAIRN_MEMORY_EMBEDDER_HTTP_URL",
    "CAIRN_RECALL_HTTP_URL",
    "CAIRN_PROMOTION_HTTP_URL",
    "CAIRN_GRADUATION_HTTP_URL",
    "CAIRN_KNOWLEDGE_HTTP_URL",
)


def _env(home: Path) -> dict[str, str]:
    ports = StackPorts.free()
    base = {k: v for k, v in psutil.Process().environ().items() if not k.startswith("CAIRN_")}
    return {
        **base,
        "CAIRN_HOME": str(home),
        "CAIRN_POSTGRES_PORT": str(ports.postgres),
        "CAIRN_NATS_PORT": str(ports.nats),
        "CAIRN_NATS_MONITOR_PORT": str(ports.nats_monitor),
        "CAIRN_TEMPORAL_PORT": str(ports.temporal),
        "CAIRN_TEMPORAL_UI_PORT": str(ports.temporal_ui),
        "CAIRN_GATEWAY_PORT": str(free_port()),
    }


async def _wait_for_env_file(path: Path, up: subprocess.Popen[str], timeout: float = 180) -> dict[str, str]:
    for _ in range(int(timeout / 0.25)):
        if path.exists() and "CAIRN_TEMPORAL_UI_URL" in path.read_text():
            return dict(line.split("=", 1) for line in path.read_text().splitlines())
        assert up.poll() is None, up.stdout.read() if up.stdout else ""
        await asyncio.sleep(0.25)
    raise AssertionError("up never became ready")


async def test_up_runs_everything_refuses_a_twin_and_stops_clean() -> None:
    home = stack_dir("cairn-up-") / "home"
    env = _env(home)
    up = subprocess.Popen(
        [sys.executable, "-m", "cairn_devstack.up"],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        values = await _wait_for_env_file(home / "env", up)
        assert set(values) == {
            "CAIRN_GATEWAY_URL",
            "CAIRN_API_KEY",
            "CAIRN_ADMIN_KEY",
            "CAIRN_TEMPORAL_UI_URL",
            "CAIRN_PAYLOAD_KEYS",
            *HTTP_URLS,
        }
        secrets_file = home / "bus_secrets.json"  # NATS passwords and private keys: the owner's only
        assert secrets_file.stat().st_mode & 0o777 == 0o600
        descendants = psutil.Process(up.pid).children(recursive=True)
        assert len(descendants) >= 9  # postgres, nats, temporal, 5 services + embedder, gateway
        async with httpx.AsyncClient(timeout=10) as client:
            ready = await client.get(values["CAIRN_GATEWAY_URL"] + "/readyz")
            assert ready.status_code == 200, ready.text
            assert all(c["status"] == "ok" for c in ready.json()["components"].values())
            for name in HTTP_URLS:  # every process's own port, as written into .cairn/env
                own = await client.get(values[name] + "/readyz")
                assert own.status_code == 200, (name, own.text)
            ui = await client.get(values["CAIRN_TEMPORAL_UI_URL"])
            assert ui.status_code == 200
            me = await client.get(
                values["CAIRN_GATEWAY_URL"] + "/api/v1/whoami",
                headers={"Authorization": f"Bearer {values['CAIRN_API_KEY']}"},
            )
            assert me.json()["data"]["subject_id"] == "demo-agent"
        twin = subprocess.run(
            [sys.executable, "-m", "cairn_devstack.up"], env=env, capture_output=True, text=True, timeout=60
        )
        assert twin.returncode != 0
        assert "already running" in twin.stderr
        up.send_signal(signal.SIGINT)
        out, _ = up.communicate(timeout=90)
        assert up.returncode == 0, out
        assert "Cairn stopped." in out
        await asyncio.sleep(0.5)
        alive = [p for p in descendants if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        assert alive == [], alive
    finally:
        if up.poll() is None:
            up.kill()
            up.wait()
        shutil.rmtree(home.parent, ignore_errors=True)
