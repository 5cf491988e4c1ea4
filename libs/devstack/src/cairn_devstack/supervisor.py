"""Running named child processes that cannot outlive the Python process that started them."""

from __future__ import annotations

import asyncio
import ctypes
import logging
import os
import pwd
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable, Callable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

from cairn_devstack.errors import DevstackError, ProcessStartError

_log = logging.getLogger(__name__)

ReadyCheck = Callable[[], Awaitable[bool]]
"""An async probe: returns True once the process serves requests. Exceptions count as "not yet"."""

_PR_SET_PDEATHSIG = 1
_POLL_INTERVAL = 0.05
_CHECK_TIMEOUT = 5.0
_WATCH_INTERVAL = 0.1

# Loaded once in the parent: dlopen() between fork() and exec() is not safe.
_libc = ctypes.CDLL(None, use_errno=True) if sys.platform == "linux" else None


def _die_with_parent(parent_pid: int) -> Callable[[], None]:
    """Returns a ``preexec_fn`` that makes the kernel SIGKILL the child when its parent dies.

    It runs after Popen's setuid, which matters: the kernel clears the parent-death signal whenever the
    child's credentials change.
    """

    def preexec() -> None:
        if _libc is not None:
            _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        # The parent may have died between fork() and prctl(); then no signal would ever come.
        if os.getppid() != parent_pid:
            os._exit(1)

    return preexec


@dataclass(frozen=True)
class RestartPolicy:
    """How a crashed child is brought back: exponential backoff, capped, forgiven after a stable run.

    Attributes:
        initial_delay: Seconds before the first restart after a crash.
        max_delay: Cap on the delay; it doubles with each crash in a row.
        stable_after: A child that ran this long before crashing starts again at ``initial_delay``.
    """

    initial_delay: float = 0.5
    max_delay: float = 30.0
    stable_after: float = 60.0

    def delay(self, crashes_in_a_row: int) -> float:
        """Seconds to wait before restart number ``crashes_in_a_row`` (1 for the first)."""
        return float(min(self.max_delay, self.initial_delay * 2 ** max(0, crashes_in_a_row - 1)))


@dataclass
class ProcessSpec:
    """Everything needed to (re)start one child process.

    Attributes:
        name: Unique name within the supervisor; also the log file name.
        argv: Program and arguments.
        env: Complete environment of the child.
        cwd: Working directory, or None for the parent's.
        user: OS user to run as (the parent must be root), or None.
        stop_signal: Signal asking the process to shut down gracefully.
        stop_timeout: Seconds to wait after ``stop_signal`` before SIGKILL of the process group.
        ready: Probe polled after start; None means started is ready.
        ready_timeout: Seconds ``ready`` may take to return True.
        restart: Restart the child when it exits on its own; None leaves a crashed child down.
    """

    name: str
    argv: list[str]
    env: dict[str, str]
    cwd: Path | None
    user: str | None
    stop_signal: signal.Signals
    stop_timeout: float
    ready: ReadyCheck | None
    ready_timeout: float
    restart: RestartPolicy | None = None


@dataclass
class _Child:
    spec: ProcessSpec
    log_path: Path
    popen: subprocess.Popen[bytes] | None = None
    started_at: float = field(default=0.0)
    group_killed: bool = False

    def returncode(self) -> int | None:
        """Reaps the process if it exited; then SIGKILLs what is left of its group, exactly once.

        Doing it at the moment of reaping matters: from then on the kernel may hand the pid, which is
        also the group id, to an unrelated new process group.
        """
        assert self.popen is not None
        code = self.popen.poll()
        if code is not None and not self.group_killed:
            self.group_killed = True
            _kill_group(self.popen.pid)
        return code

    def running(self) -> bool:
        return self.popen is not None and self.returncode() is None


class ProcessSupervisor:
    """Starts, health-checks, restarts and stops named child processes.

    Every child gets its own session (so a Ctrl-C in the terminal reaches only the launcher, which then
    stops the children in order) and is SIGKILLed by the kernel if the launcher dies, even by SIGKILL.
    The kernel ties that to the *thread* that started the child, so call :meth:`start` from a thread that
    lives as long as the children, normally the event loop's; never from ``asyncio.to_thread``.

    Output goes to ``<log_dir>/<name>.log``, appended across restarts.

    Example:
        >>> sup = ProcessSupervisor(Path(".cairn/logs"))
        >>> await sup.start("gateway", ["python", "-m", "cairn_gateway"], env={"CAIRN_PORT": "8080"})
        >>> await sup.stop_all()
    """

    def __init__(self, log_dir: Path) -> None:
        """Creates a supervisor; nothing is started yet.

        Args:
            log_dir: Directory for the per-process log files; created if missing.
        """
        self.log_dir = Path(log_dir)
        self._children: dict[str, _Child] = {}
        self._watchers: dict[str, asyncio.Task[None]] = {}
        self.restarts: dict[str, int] = {}
        """Crash restarts done so far, by name (deliberate restarts are not counted)."""

    async def start(
        self,
        name: str,
        argv: Sequence[str | os.PathLike[str]],
        *,
        env: Mapping[str, str] | None = None,
        inherit_env: bool = True,
        cwd: Path | None = None,
        user: str | None = None,
        stop_signal: signal.Signals = signal.SIGTERM,
        stop_timeout: float = 10.0,
        ready: ReadyCheck | None = None,
        ready_timeout: float = 60.0,
        restart: RestartPolicy | None = None,
    ) -> int:
        """Starts a child process and waits until ``ready`` says it serves.

        Args:
            name: Unique name; starting a name whose process is still running is an error.
            argv: Program and arguments.
            env: Variables for the child, laid over this process's environment (or alone, see below).
            inherit_env: If False, ``env`` is the child's whole environment.
            cwd: Working directory of the child.
            user: Run as this OS user (only when this process is root); its primary group is used and
                root's supplementary groups are dropped.
            stop_signal: Graceful-shutdown signal (SIGINT for postgres' fast shutdown, SIGTERM for most).
            stop_timeout: Seconds between ``stop_signal`` and SIGKILL of the whole process group.
            ready: Async probe polled until it returns True; exceptions it raises count as "not ready".
            ready_timeout: Seconds the probe may take in total.
            restart: Restart the child with backoff whenever it exits without :meth:`stop` asking it to
                (a crash, a SIGKILL, an OOM kill); each restart is logged at WARNING.

        Returns:
            The child's pid.

        Raises:
            DevstackError: ``name`` is already running.
            ProcessStartError: The child exited or was not ready in time; it has been stopped, and the
                message holds the tail of its log.
        """
        existing = self._children.get(name)
        if existing is not None and existing.running():
            assert existing.popen is not None
            raise DevstackError(f"process {name!r} is already running (pid {existing.popen.pid})")
        await self._unwatch(name)  # a crashed child's pending restart must not start a second copy
        child_env = parent_env() if inherit_env else {}
        child_env.update(env or {})
        spec = ProcessSpec(
            name=name,
            argv=[os.fspath(arg) for arg in argv],
            env=child_env,
            cwd=cwd,
            user=user,
            stop_signal=stop_signal,
            stop_timeout=stop_timeout,
            ready=ready,
            ready_timeout=ready_timeout,
            restart=restart,
        )
        pid = await self._launch(spec)
        self._watch(spec)
        return pid

    async def stop(self, name: str) -> int | None:
        """Stops a child gracefully, then SIGKILLs its process group if needed.

        The group is SIGKILLed after the main process exits too, so helpers it forked (postgres backends,
        worker processes) cannot linger.

        Args:
            name: The process name.

        Returns:
            The exit code (negative for a signal), or None if it was never started.

        Raises:
            KeyError: Unknown name.
        """
        child = self._children[name]
        # A deliberate stop: the restart watcher goes first, so the exit it causes is not a crash.
        await self._unwatch(name)
        return await self._stop_process(child)

    async def _stop_process(self, child: _Child) -> int | None:
        name = child.spec.name
        popen = child.popen
        if popen is None:
            return None
        if child.running():
            _log.debug("stopping %s (pid %d) with %s", name, popen.pid, child.spec.stop_signal.name)
            with suppress(ProcessLookupError):
                popen.send_signal(child.spec.stop_signal)
            if await _wait_exit(child, child.spec.stop_timeout) is None:
                _log.warning("%s did not stop within %.0f s; killing it", name, child.spec.stop_timeout)
                _kill_group(popen.pid)
                await _wait_exit(child, 10.0)
        return child.returncode()

    async def stop_all(self) -> None:
        """Stops every child, the most recently started first.

        Raises:
            DevstackError: Some child could not be stopped; the others were still stopped.
        """
        failures = []
        # No restarts while shutting down: a child dying because its dependency stopped is not a crash.
        for name in list(self._watchers):
            await self._unwatch(name)
        for name in reversed(list(self._children)):
            try:
                await self.stop(name)
            except Exception as exc:  # stop the rest first, report after
                failures.append(f"{name}: {exc!r}")
        if failures:
            raise DevstackError("could not stop: " + "; ".join(failures))

    async def restart(self, name: str) -> int:
        """Stops and starts a child with the same command, environment and ports, and waits until ready.

        Args:
            name: The process name.

        Returns:
            The new pid.

        Raises:
            KeyError: Unknown name.
            ProcessStartError: As for :meth:`start`.
        """
        spec = self._children[name].spec
        await self.stop(name)
        pid = await self._launch(spec)
        self._watch(spec)
        return pid

    def kill_all(self) -> None:
        """SIGKILLs every child's process group at once, without waiting. For emergencies only."""
        for watcher in self._watchers.values():
            watcher.cancel()
        self._watchers.clear()
        for child in self._children.values():
            if child.running():
                assert child.popen is not None
                _kill_group(child.popen.pid)
                with suppress(subprocess.TimeoutExpired):
                    child.popen.wait(1.0)
                child.returncode()

    def pids(self) -> dict[str, int]:
        """Returns the pids of the children that are running now, by name."""
        return {
            name: child.popen.pid
            for name, child in self._children.items()
            if child.popen is not None and child.running()
        }

    def __contains__(self, name: object) -> bool:
        """Tells whether a process of that name was ever started (running or not)."""
        return name in self._children

    def is_running(self, name: str) -> bool:
        """Tells whether the named child is running (False for unknown names)."""
        child = self._children.get(name)
        return child is not None and child.running()

    def log_path(self, name: str) -> Path:
        """Returns the log file of a child."""
        return self.log_dir / f"{name}.log"

    def log_tail(self, name: str, lines: int = 30) -> str:
        """Returns the last ``lines`` lines of a child's log file ("" if there is none)."""
        path = self.log_path(name)
        try:
            with path.open("rb") as fh:
                fh.seek(max(0, path.stat().st_size - 16 * 1024))
                data = fh.read()
        except FileNotFoundError:
            return ""
        return "\n".join(data.decode(errors="replace").splitlines()[-lines:])

    async def _launch(self, spec: ProcessSpec) -> int:
        self.log_dir.mkdir(parents=True, exist_ok=True)
        log_path = self.log_path(spec.name)
        child = _Child(spec=spec, log_path=log_path)
        uid, gid, groups = _credentials(spec.user)
        # Re-assigning an existing key keeps its place, so stop_all's order survives restarts.
        self._children[spec.name] = child
        with log_path.open("ab") as log:
            stamp = time.strftime("%Y-%m-%d %H:%M:%S")
            log.write(f"\n===== {stamp} starting {spec.name}: {' '.join(spec.argv)}\n".encode())
            log.flush()
            child.popen = subprocess.Popen(
                spec.argv,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                env=spec.env,
                cwd=spec.cwd,
                start_new_session=True,
                preexec_fn=_die_with_parent(os.getpid()),
                user=uid,
                group=gid,
                extra_groups=groups,
            )
        child.started_at = time.monotonic()
        popen = child.popen
        _log.info("started %s (pid %d), log %s", spec.name, popen.pid, log_path)
        try:
            if spec.ready is not None:
                await self._wait_ready(child, spec.ready, spec.ready_timeout)
        except BaseException:
            # Includes cancellation: a half-started child must not outlive a failed start.
            await self._stop_process(child)
            raise
        _log.info("%s ready in %.2f s", spec.name, time.monotonic() - child.started_at)
        return popen.pid

    def _watch(self, spec: ProcessSpec) -> None:
        if spec.restart is not None and spec.name not in self._watchers:
            self._watchers[spec.name] = asyncio.create_task(
                self._keep_running(spec, spec.restart), name=f"supervise-{spec.name}"
            )

    async def _unwatch(self, name: str) -> None:
        watcher = self._watchers.pop(name, None)
        if watcher is not None and watcher is not asyncio.current_task():
            watcher.cancel()
            with suppress(asyncio.CancelledError):
                await watcher

    async def _keep_running(self, spec: ProcessSpec, policy: RestartPolicy) -> None:
        """Restarts ``spec`` whenever it exits until cancelled by :meth:`stop` (runs on the loop's thread,
        which the parent-death signal of the restarted children is tied to)."""
        crashes = 0
        while True:
            child = self._children[spec.name]
            while (code := child.returncode()) is None:
                await asyncio.sleep(_WATCH_INTERVAL)
            ran = time.monotonic() - child.started_at
            crashes = 1 if ran >= policy.stable_after else crashes + 1
            delay = policy.delay(crashes)
            pid = child.popen.pid if child.popen is not None else -1
            _log.warning(
                "%s (pid %d) exited with code %s after %.1f s; restarting in %.1f s (crash %d in a row)",
                spec.name, pid, code, ran, delay, crashes,
            )  # fmt: skip
            self._note(spec.name, f"exited with code {code}; restarting in {delay:.1f} s")
            await asyncio.sleep(delay)
            try:
                new_pid = await self._launch(spec)
            except Exception as exc:  # a failed start is one more crash, never the end of supervision
                _log.warning("restart of %s failed: %s", spec.name, str(exc).splitlines()[0])
                # The failed child stays registered with started_at = now: the next round backs off more.
                continue
            self.restarts[spec.name] = self.restarts.get(spec.name, 0) + 1
            _log.warning("%s restarted (pid %d)", spec.name, new_pid)

    def _note(self, name: str, what: str) -> None:
        with suppress(OSError), self.log_path(name).open("ab") as log:
            log.write(f"\n===== {time.strftime('%Y-%m-%d %H:%M:%S')} supervisor: {name} {what}\n".encode())

    async def _wait_ready(self, child: _Child, ready: ReadyCheck, timeout: float) -> None:
        assert child.popen is not None
        deadline = time.monotonic() + timeout
        last_error = "probe returned False"
        while True:
            remaining = deadline - time.monotonic()
            try:
                if await asyncio.wait_for(ready(), timeout=max(0.1, min(_CHECK_TIMEOUT, remaining))):
                    return
            except Exception as exc:  # any probe failure just means "not ready yet"
                last_error = f"{type(exc).__name__}: {exc}"
            returncode = child.returncode()
            if returncode is not None:
                raise ProcessStartError(
                    self._failure(child, f"exited with code {returncode} during start-up")
                )
            if time.monotonic() >= deadline:
                raise ProcessStartError(
                    self._failure(child, f"was not ready after {timeout:.0f} s (last probe: {last_error})")
                )
            await asyncio.sleep(_POLL_INTERVAL)

    def _failure(self, child: _Child, what: str) -> str:
        tail = self.log_tail(child.spec.name)
        return f"{child.spec.name} {what}. Last lines of {child.log_path}:\n{tail}"


def parent_env(*, without_prefixes: Sequence[str] = ()) -> dict[str, str]:
    """Returns a copy of this process's environment, for building a child's.

    Args:
        without_prefixes: Drop variables whose names start with any of these.
    """
    # Copying the environment into a child is the one sanctioned read of os.environ in library code.
    env = dict(os.environ)  # noqa: TID251
    return {key: value for key, value in env.items() if not key.startswith(tuple(without_prefixes))}


def _credentials(user: str | None) -> tuple[int | None, int | None, list[int] | None]:
    if user is None:
        return None, None, None
    entry = pwd.getpwnam(user)
    # Popen's user= alone would keep root's group and supplementary groups.
    return entry.pw_uid, entry.pw_gid, []


async def _wait_exit(child: _Child, timeout: float) -> int | None:
    # Polling keeps the supervisor independent of asyncio's child watchers and of which loop is running.
    deadline = time.monotonic() + timeout
    while (code := child.returncode()) is None:
        if time.monotonic() >= deadline:
            return None
        await asyncio.sleep(_POLL_INTERVAL)
    return code


def _kill_group(pgid: int) -> None:
    # Each child leads its own session and group (start_new_session), so its pid is the group id.
    with suppress(ProcessLookupError, PermissionError):
        os.killpg(pgid, signal.SIGKILL)
