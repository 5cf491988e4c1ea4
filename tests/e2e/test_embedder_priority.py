"""The embedding worker yields the CPU to the request paths: a write burst is acknowledged first and
embedded with the CPU left over (`CAIRN_EMBED_SCHED_IDLE`, `CAIRN_EMBED_NICE`)."""

import os
from pathlib import Path

from cairn_devstack.cairn import CairnStack


def _threads(pid: int) -> list[int]:
    return [int(t) for t in os.listdir(f"/proc/{pid}/task")]


def _nice(tid: int) -> int:
    # Field 19 of /proc/<tid>/stat, counted after the command name's closing parenthesis.
    stat = Path(f"/proc/{tid}/stat").read_text()
    return int(stat[stat.rindex(")") + 2 :].split()[16])


def test_the_embedding_worker_runs_at_idle_priority_and_the_request_path_does_not(stack: CairnStack) -> None:
    pids = stack.supervisor.pids()
    worker = pids["memory-embedder"]
    assert os.sched_getscheduler(worker) == os.SCHED_IDLE
    assert _nice(worker) == 10
    # The model's threads start after the worker lowered itself, so they inherit it.
    idle = [t for t in _threads(worker) if os.sched_getscheduler(t) == os.SCHED_IDLE]
    assert len(idle) >= 2
    for name in ("gateway", "memory", "recall"):
        assert os.sched_getscheduler(pids[name]) == os.SCHED_OTHER, name
        assert _nice(pids[name]) == 0, name
