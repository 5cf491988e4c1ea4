"""`cairn-up` / `cairn-down`: the embedded default on one machine.

`up` starts everything, prints (and writes to `.cairn/env`) the URLs and keys, and runs until Ctrl-C or
`cairn-down`, then stops every process it started. A second `up` while one runs exits non-zero.
"""

import asyncio
import contextlib
import fcntl
import json
import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import IO, Literal

from pydantic_settings import BaseSettings, SettingsConfigDict

from cairn_devstack.cairn import CairnConfig, CairnStack, ExternalServices
from cairn_devstack.ports import StackPorts


class UpSettings(BaseSettings):
    """Ports default away from the usual 5432/4222/7233/8233 and can be overridden by env."""

    model_config = SettingsConfigDict(env_prefix="CAIRN_", extra="ignore")

    home: Path = Path(".cairn")
    postgres_port: int = 55432
    nats_port: int = 54222
    nats_monitor_port: int = 58222
    temporal_port: int = 57233
    temporal_ui_port: int = 58233
    gateway_port: int = 58080
    # Dev mode logs read as lines; CAIRN_LOG_FORMAT=json gives the production JSON lines.
    log_format: Literal["console", "json"] = "console"
    # Set all three to use external services instead of starting local ones.
    database_url: str | None = None
    nats_url: str | None = None
    temporal_address: str | None = None
    temporal_namespace: str = "cairn"
    temporal_ui_url: str = ""


def _lock(home: Path) -> IO[str] | None:
    """Hold `.cairn/up.lock` for our lifetime; None when another `up` holds it."""
    handle = (home / "up.lock").open("a+")
    try:
        fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        handle.close()
        return None
    return handle


def _secret(home: Path, name: str) -> str:
    path = home / name
    if not path.exists():
        path.write_text(secrets.token_urlsafe(32))
        path.chmod(0o600)
    return path.read_text().strip()


def _read_env(path: Path) -> dict[str, str]:
    if not path.exists():
        return {}
    pairs = (line.split("=", 1) for line in path.read_text().splitlines() if "=" in line)
    return {k.strip(): v.strip() for k, v in pairs}


def _bootstrap_keys(home: Path, database_url: str) -> dict[str, str]:
    """First run only: a superadmin key and a demo tenant with an agent key (secrets kept in .cairn/keys)."""
    keys_path = home / "keys.json"
    if keys_path.exists():
        stored: dict[str, str] = json.loads(keys_path.read_text())
        return stored
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "cairn_gateway.cli",
            "bootstrap",
            "--database-url",
            database_url,
            "--demo-tenant",
            "demo",
        ],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    keys: dict[str, str] = json.loads(out)
    keys_path.write_text(json.dumps(keys))
    keys_path.chmod(0o600)
    return keys


def _config(settings: UpSettings, home: Path) -> CairnConfig:
    external = None
    if settings.database_url and settings.nats_url and settings.temporal_address:
        external = ExternalServices(
            settings.database_url,
            settings.nats_url,
            settings.temporal_address,
            settings.temporal_namespace,
            settings.temporal_ui_url,
        )
    ports = StackPorts(
        postgres=settings.postgres_port,
        nats=settings.nats_port,
        nats_monitor=settings.nats_monitor_port,
        temporal=settings.temporal_port,
        temporal_ui=settings.temporal_ui_port,
    )
    return CairnConfig(
        data_dir=home,
        provider_secrets_key=_secret(home, "provider_secrets_key"),
        ports=ports,
        gateway_port=settings.gateway_port,
        external=external,
        service_env={"CAIRN_LOG_FORMAT": settings.log_format},
    )


async def _run(settings: UpSettings) -> int:
    home = settings.home.absolute()
    home.mkdir(parents=True, exist_ok=True)
    lock = _lock(home)
    if lock is None:
        pid = (home / "up.pid").read_text().strip() if (home / "up.pid").exists() else "?"
        print(
            f"Cairn is already running from {home} (pid {pid}); stop it with `./task down` first.",
            file=sys.stderr,
        )
        return 1
    (home / "up.pid").write_text(str(os.getpid()))
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    began = time.monotonic()
    stack = CairnStack(_config(settings, home))
    try:
        await stack.start()
        keys = await asyncio.to_thread(_bootstrap_keys, home, stack.database_url)
        env = {
            "CAIRN_GATEWAY_URL": stack.gateway_url,
            "CAIRN_API_KEY": keys["api_key"],
            "CAIRN_ADMIN_KEY": keys["admin_key"],
            "CAIRN_TEMPORAL_UI_URL": stack.temporal_ui_url,
            **stack.http_urls(),
            # `cairn workflows` decrypts Temporal payloads with it.
            "CAIRN_PAYLOAD_KEYS": stack.secrets.payload_keys,
        }
        (home / "env").write_text("".join(f"{k}={v}\n" for k, v in env.items()))
        (home / "env").chmod(0o600)
        print(f"Cairn is up in {time.monotonic() - began:.1f}s (data in {home}). Ctrl-C stops everything.")
        for key, value in env.items():
            print(f"{key}={value}")
        sys.stdout.flush()
        await stop.wait()
        print("stopping Cairn ...")
    finally:
        await stack.stop()
        (home / "up.pid").unlink(missing_ok=True)
        lock.close()
    print("Cairn stopped.")
    return 0


def main() -> None:
    sys.exit(asyncio.run(_run(UpSettings())))


def down() -> None:
    """Stop a running `up` (SIGTERM to its pid) and wait until it has stopped everything."""
    home = UpSettings().home.absolute()
    pid_file = home / "up.pid"
    if not pid_file.exists():
        print("Cairn is not running.")
        return
    pid = int(pid_file.read_text().strip())
    with contextlib.suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            print("Cairn stopped.")
            return
        time.sleep(0.2)
    print(f"pid {pid} did not stop within 60s", file=sys.stderr)
    sys.exit(1)


if __name__ == "__main__":
    main()
