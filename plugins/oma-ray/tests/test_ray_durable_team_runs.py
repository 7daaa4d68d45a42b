"""A durable team run on the Ray executor whose driver process is killed (SIGKILL) with a
task in flight resumes from its SQLite store on a new driver: the finished task is read
back, not rerun (its side effect counted once), the task in flight runs again from its start,
and the team run ends as an uninterrupted one would."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ray_durable_parts import PLAN, make_team

from oma_core import OpenMultiAgent, Usage
from oma_core.stores import SQLiteRunStore

HERE = Path(__file__).parent
DRIVER = HERE / "ray_durable_driver.py"


async def until(condition: Callable[[], object], *, within: float) -> None:
    """Return once ``condition()`` is true (the core tests' ``_waiting.until``): never a wait
    for a length of time, ``within`` only bounds a hang."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"still false after {within:g} s: {condition}")
        await asyncio.sleep(0.01)


def _tasks(db: Path, run_id: str) -> dict[str, Any]:
    """The task states of the team run ``run_id`` as its checkpoint in ``db`` holds them."""
    if not db.exists():
        return {}
    try:
        with sqlite3.connect(db) as connection:
            row = connection.execute(
                "SELECT checkpoint FROM runs WHERE run_id = ?", (run_id,)
            ).fetchone()
    except sqlite3.OperationalError:  # its tables are not made yet
        return {}
    # the checkpoint's JSON read as the store keeps it (the core checks its digest on resume)
    return {} if row is None else dict(json.loads(row[0])["state"]["tasks"])


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def _in_flight(db: Path, run_id: str, workdir: Path) -> bool:
    tasks = _tasks(db, run_id)
    first = tasks.get("first", {}).get("status")
    return first == "completed" and (workdir / "second-started").exists()


async def test_a_killed_driver_s_team_run_resumes_on_a_new_driver_without_rerunning(
    executor_options: dict[str, Any], tmp_path: Path
) -> None:
    db, run_id, workdir = tmp_path / "runs.db", "ray-team-1", tmp_path / "work"
    workdir.mkdir()
    env = {**os.environ}
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(HERE), env.get("PYTHONPATH")) if p)
    command = [sys.executable, str(DRIVER), str(db), run_id, str(workdir)]
    address = str(executor_options["address"])
    driver = await asyncio.create_subprocess_exec(*command, address, env=env)
    try:
        await until(lambda: _in_flight(db, run_id, workdir), within=180)
        driver.send_signal(signal.SIGKILL)
        assert await asyncio.wait_for(driver.wait(), 60) == -signal.SIGKILL
    finally:
        if driver.returncode is None:
            driver.kill()
            await driver.wait()
    assert (workdir / "effects").read_text() == "first\n"
    # Ray ends the dead driver's tasks: the worker holding "second" goes (nothing leaks)
    orphan = int((workdir / "second-started").read_text())
    await until(lambda: not _alive(orphan), within=120)
    assert _tasks(db, run_id)["second"]["status"] == "running"

    store = SQLiteRunStore(db)
    try:
        oma = OpenMultiAgent(store=store, executor="ray", executor_options=executor_options)
        result = await oma.resume(run_id, team=make_team(str(workdir)))
    finally:
        await store.aclose()
    assert result.success and result.run_id == run_id
    outputs = {title: task.output for title, task in result.tasks.items()}
    assert outputs == {"first": "first done", "second": "second done", "sum": "sum done"}
    # each task's calls once (two each for the tool tasks, one for "sum"): nothing counted twice
    assert result.usage == Usage(50, 5)
    assert (workdir / "effects").read_text().splitlines() == ["first", "second"]
    assert [task.title for task in PLAN] == list(result.tasks)
