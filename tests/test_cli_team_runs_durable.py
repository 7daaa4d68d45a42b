"""``oma tasks`` and ``oma team`` checkpoint into the oma home's ``runs.db``: a team run the
command started, stopped by a crash (SIGKILL) or Ctrl-C with a task in flight, is resumed by
``oma runs resume ID`` from the files its command read, finished tasks not run again; ``oma
runs`` lists the team run (not its tasks' runs), ``oma runs show`` gives its tasks."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from _builders import ROOT, oma
from _waiting import until

from oma_core._checkpoints import decode

pytestmark = pytest.mark.usefixtures("cli_home")

ENTRY = "from oma_core.cli import main; main()"


def _agent(name: str, *responses: Any) -> dict[str, Any]:
    return {
        "name": name,
        "provider": "scripted",
        "provider_options": {"responses": list(responses)},
    }


def _plan(quick: list[Any], slow: list[Any]) -> dict[str, Any]:
    return {
        "name": "crew",
        "max_concurrency": 2,
        "agents": [_agent("quickly", *quick), _agent("slowly", *slow)],
        "tasks": [
            {"title": "quick", "description": "Do quick.", "assignee": "quickly"},
            {"title": "slow", "description": "Do slow.", "assignee": "slowly"},
            {
                "title": "after",
                "description": "Do after.",
                "assignee": "quickly",
                "depends_on": ["quick", "slow"],
            },
        ],
    }


def _team_runs(db: Path) -> dict[str, Any]:
    """The team runs in ``db`` (read as another process would), their states by id."""
    if not db.exists():
        return {}
    with sqlite3.connect(db) as connection:
        rows = connection.execute(
            "SELECT run_id, checkpoint FROM runs WHERE kind IN ('tasks', 'team')"
        ).fetchall()
    return {run_id: decode(run_id, checkpoint) for run_id, checkpoint in rows}


def _quick_done(db: Path) -> bool:
    try:
        states = _team_runs(db)
    except sqlite3.OperationalError:  # the command has not made its tables yet
        return False
    return any(
        state["tasks"].get("quick", {}).get("status") == "completed"
        and state["tasks"].get("slow", {}).get("status") == "running"
        for state in states.values()
    )


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGINT])
def test_a_team_run_the_command_started_resumes_from_its_files_after_a_crash_or_ctrl_c(
    tmp_path: Path, cli_home: Path, stop: signal.Signals
) -> None:
    plan = tmp_path / "plan.json"
    late = {"delay": 3600, "response": "late"}  # in flight until the command is stopped
    plan.write_text(json.dumps(_plan(["quick done", "after done"], [late])))
    env = {**os.environ, "OMA_HOME": str(cli_home), "OMA_LOAD_PLUGINS": "", "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "tasks", str(plan)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
        env=env,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    db = cli_home / "runs.db"
    try:
        asyncio.run(until(lambda: _quick_done(db), within=60))
        process.send_signal(stop)
        _, err = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()
    assert process.returncode == (-signal.SIGKILL if stop == signal.SIGKILL else 130), err
    (run_id,) = _team_runs(db)
    if stop == signal.SIGINT:  # Ctrl-C says how to go on
        assert err.splitlines()[-1] == f"continue it with: oma runs resume {run_id}", err

    listed = oma("runs", "--json")
    assert [(row["run_id"], row["kind"]) for row in json.loads(listed.stdout)] == [
        (run_id, "tasks")
    ]
    # the agents file changed since: "quick" would fail if it ran again, "slow" answers now
    plan.write_text(json.dumps(_plan(["after done"], ["slow done"])))
    resumed = oma("runs", "resume", run_id)
    assert resumed.exit_code == 0, resumed.stderr
    view, _, results = resumed.stdout.partition("\n\n")
    assert results == "## after\nafter done\n"
    states = [line.split(" (")[0] for line in view.splitlines()]
    # the live view: "quick" was read back, not run again; the others ran now
    assert states == ["slow: running", "slow: completed", "after: running", "after: completed"]
    shown = oma("runs", "show", run_id)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[:4] == [f"run {run_id}", "kind: tasks", "status: ok", "team: crew"]
    assert f"  quick  completed  (quickly, 1 attempt)  run {run_id}/1" in lines
    assert f"  slow  completed  (slowly, 1 attempt)  run {run_id}/2" in lines
    data = json.loads(oma("runs", "show", run_id, "--json").stdout)
    assert {title: task["status"] for title, task in data["tasks"].items()} == dict.fromkeys(
        ("quick", "slow", "after"), "completed"
    )


def test_a_team_run_started_from_code_with_tools_names_them_on_resume(cli_home: Path) -> None:
    from oma_core import AgentConfig, OpenMultiAgent, tool
    from oma_core.stores import default_sqlite_path
    from oma_core.teams import TaskSpec, Team

    def shout(text: str) -> str:
        """Shout it."""
        return text.upper()

    call = {"type": "tool_use", "id": "s1", "name": "shout", "input": {"text": "hi"}}
    config = AgentConfig(
        name="crier",
        provider="scripted",
        provider_options={"responses": [{"role": "assistant", "content": [call]}]},
        tools=[tool(shout, needs_approval=True)],
    )

    async def main() -> str | None:
        oma_ = OpenMultiAgent(store=f"sqlite:{default_sqlite_path()}")
        result = await oma_.run_tasks(Team("t", [config]), [TaskSpec("cry", "cry")])
        assert result.suspended  # not finished: resuming it needs its tools
        return result.run_id

    run_id = asyncio.run(main())
    assert run_id is not None
    resumed = oma("runs", "resume", run_id)
    assert resumed.exit_code == 2
    assert "shout" in resumed.stderr and len(resumed.stderr.splitlines()) == 1
    shown = oma("runs", "show", run_id)
    assert '  s1  shout  {"text": "hi"}  [waiting]' in shown.stdout.splitlines()
    assert "  cry  waiting  (crier, 1 attempt)" in shown.stdout, shown.stdout
    approved = oma("runs", "approve", run_id, "s1")
    assert approved.exit_code == 0 and "approved" in approved.stdout, approved.stderr


def test_a_resumed_command_run_keeps_its_prices_and_goes_on_with_its_budget(
    tmp_path: Path, cli_home: Path
) -> None:
    plan = tmp_path / "plan.json"
    late = {"delay": 3600, "response": "late"}
    plan.write_text(json.dumps(_plan(["quick done", "after done"], [late])))
    env = {**os.environ, "OMA_HOME": str(cli_home), "OMA_LOAD_PLUGINS": "", "PYTHONUNBUFFERED": "1"}
    limits = ["--max-token-budget", "100000", "--price", "1", "2"]
    process = subprocess.Popen(
        [sys.executable, "-c", ENTRY, "tasks", str(plan), *limits],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        cwd=ROOT,
        env=env,
    )
    db = cli_home / "runs.db"
    try:
        asyncio.run(until(lambda: _quick_done(db), within=60))
        process.send_signal(signal.SIGKILL)
        process.wait(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    ((run_id, state),) = _team_runs(db).items()
    spent = state["budget"]["used_tokens"]  # "quick"'s run, in the first life
    assert spent > 0 and state["budget"]["max_tokens"] == 100000
    plan.write_text(json.dumps(_plan(["after done"], ["slow done"])))
    resumed = oma("runs", "resume", run_id)
    assert resumed.exit_code == 0, resumed.stderr
    used = _team_runs(db)[run_id]["budget"]["used_tokens"]
    assert used > spent  # the first life's spend, and this life's on top
    last = [line for line in resumed.stdout.splitlines() if line.startswith("after: completed")]
    assert len(last) == 1 and "$" in last[0], resumed.stdout  # priced as the command was
    assert last[0].endswith(f"; budget left: {100000 - used:,} of 100,000 tokens")
