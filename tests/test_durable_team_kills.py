"""Durable team runs killed with SIGKILL with tasks in flight (tests/durable_team_child.py),
then resumed in another process: the uninterrupted run's output and usage, every
checkpointed tool's side effect once, finished tasks (and the coordinator's plan) not rerun."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import durable_team_child
import pytest

from oma_core import OpenMultiAgent
from oma_core.stores import SQLiteRunStore
from oma_core.teams import TeamRunResult

CHILD = Path(durable_team_child.__file__)


def _kill_in_flight(tmp_path: Path, kind: str, stop: str) -> tuple[str, Path]:
    """Start the child team run, wait until task "first" is checkpointed completed and task
    "second" waits at ``stop``, kill it with SIGKILL; the run's id and the tools' log."""
    run_id, log = f"team-{kind}-{stop}", tmp_path / f"{kind}-{stop}.log"
    command = [sys.executable, str(CHILD), str(tmp_path / "runs.db"), run_id, str(log)]
    process = subprocess.Popen([*command, kind, stop], stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        said = {process.stdout.readline(), process.stdout.readline()}  # blocks until said
        assert said == {"first completed\n", "second stopped\n"}
        process.send_signal(signal.SIGKILL)
        assert process.wait(timeout=60) == -signal.SIGKILL
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(timeout=60)
        assert process.stdout is not None
        process.stdout.close()
    return run_id, log


async def _run(db: Path, kind: str, log: Path, run_id: str | None = None) -> TeamRunResult:
    store = SQLiteRunStore(db)
    try:
        oma = OpenMultiAgent(store=store)
        team = durable_team_child.make_team(log)
        if run_id is not None:
            return await oma.resume(run_id, team=team)
        if kind == "tasks":
            return await oma.run_tasks(team, durable_team_child.PLAN)
        return await oma.run_team(team, durable_team_child.GOAL)
    finally:
        await store.aclose()


def _lines(path: Path, word: str) -> list[str]:
    return [line for line in path.read_text().splitlines() if line.startswith(word)]


def _outcome(result: TeamRunResult) -> Any:
    tasks = {title: (task.status, task.output) for title, task in result.tasks.items()}
    return result.success, result.output, tasks, result.usage


@pytest.mark.parametrize("kind", ["tasks", "team"])
@pytest.mark.parametrize(
    ("stop", "started"),
    [
        # killed in "second"'s second model call: c2's result was checkpointed
        ("model", ["c1", "c2"]),
        # killed inside c2, before its side effect: run again with the same call id
        ("tool", ["c1", "c2", "c2"]),
    ],
)
def test_a_team_run_killed_with_tasks_in_flight_resumes_to_the_uninterrupted_result(
    tmp_path: Path, kind: str, stop: str, started: list[str]
) -> None:
    reference = asyncio.run(_run(tmp_path / "reference.db", kind, tmp_path / "reference.log"))
    assert reference.success and reference.run_id is not None
    run_id, log = _kill_in_flight(tmp_path, kind, stop)

    result = asyncio.run(_run(tmp_path / "runs.db", kind, log, run_id))
    assert result.run_id == run_id
    assert _outcome(result) == _outcome(reference)  # usage summed over both lives, once each
    assert _lines(log, "done") == ["done c1", "done c2"]  # each side effect once
    assert [line.split()[1] for line in _lines(log, "start")] == started
    asked = Counter(
        " ".join(line.split()[1:]) for line in _lines(log.with_suffix(".calls"), "model")
    )
    assert asked["first 0"] == asked["first 1"] == 1  # the finished task was not rerun
    assert asked["second 0"] == 1  # its first turn was checkpointed: not asked again
    if kind == "team":
        assert asked["plan 0"] == 1 and asked["final 0"] == 1  # the plan was not made again

    again = asyncio.run(_run(tmp_path / "runs.db", kind, log, run_id))  # finished: read back
    assert _outcome(again) == _outcome(reference)
    assert _lines(log, "done") == ["done c1", "done c2"]
    calls = log.with_suffix(".calls").read_text()
    assert asyncio.run(_run(tmp_path / "runs.db", kind, log, run_id)).success
    assert log.with_suffix(".calls").read_text() == calls  # nothing asked of the model again
