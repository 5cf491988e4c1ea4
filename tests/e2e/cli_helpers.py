"""Running the installed `cairn` command in a subprocess, with only the environment a test gives it."""

import asyncio
import os
import sys
import tempfile
from dataclasses import dataclass

import psutil

BIN = os.path.dirname(sys.executable)


@dataclass
class Ran:
    code: int
    out: str
    err: str
    seconds: float


def base_env() -> dict[str, str]:
    """The test process's environment without any CAIRN_* setting (so nothing leaks in from a shell), and
    a wide terminal so tables do not wrap the text a test looks for."""
    env = {k: v for k, v in psutil.Process().environ().items() if not k.startswith("CAIRN_")}
    return {**env, "COLUMNS": "250"}


async def run(
    args: list[str],
    env: dict[str, str],
    stdin: str | None = None,
    command: str = "cairn",
    timeout: float = 60,
) -> Ran:
    """Run `command args` from an empty directory (no `.cairn/env` to pick up)."""
    loop = asyncio.get_running_loop()
    started = loop.time()
    proc = await asyncio.create_subprocess_exec(
        os.path.join(BIN, command),
        *args,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**base_env(), **env},
        cwd=tempfile.gettempdir(),
    )
    out, err = await asyncio.wait_for(proc.communicate((stdin or "").encode()), timeout)
    assert proc.returncode is not None
    return Ran(proc.returncode, out.decode(), err.decode(), loop.time() - started)
