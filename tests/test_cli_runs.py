"""``oma runs``: the durable runs of a store listed, shown, decided on and resumed from the
command line, against a real SQLite run store in the test's ``$OMA_HOME``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from _builders import oma

from oma_core import AgentConfig, OpenMultiAgent, RunResult, tool
from oma_core.stores import SQLiteRunStore, StoredRun, default_sqlite_path

pytestmark = pytest.mark.usefixtures("cli_home")

CALL = {"type": "tool_use", "id": "c1", "name": "send", "input": {"to": "bob@example.com"}}


class Mailer:
    """The approval-gated tool's side effects, kept."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def config(self, *answers: Any) -> AgentConfig:
        def send(to: str) -> str:
            """Send the email."""
            self.sent.append(to)
            return f"sent to {to}"

        return AgentConfig(
            name="mailer",
            provider="scripted",
            provider_options={"responses": list(answers)},
            tools=[tool(send, needs_approval=True)],
        )


def _run(config: AgentConfig, prompt: str, store: str = "sqlite") -> RunResult:
    async def main() -> RunResult:
        return await OpenMultiAgent(store=store).run_agent(config, prompt)

    return asyncio.run(main())


def _suspended(mailer: Mailer) -> RunResult:
    result = _run(mailer.config({"role": "assistant", "content": [CALL]}), "email bob")
    assert result.status.code == "suspended" and result.run_id is not None
    return result


def _finished() -> RunResult:
    result = _run(
        AgentConfig(name="helper", provider="scripted", provider_options={"responses": ["done"]}),
        "hi",
    )
    assert result.status.code == "ok" and result.run_id is not None
    return result


def _failed() -> RunResult:
    """A run that ended in an error: the script runs out after its first turn (a call of a
    tool the agent lacks, answered with an error result)."""
    turn = {"role": "assistant", "content": [CALL]}
    config = AgentConfig(name="broken", provider="scripted", provider_options={"responses": [turn]})
    result = _run(config, "hi")
    assert result.status.code == "error" and result.run_id is not None
    return result


def _decisions(run_id: str) -> dict[str, Any]:
    async def main() -> dict[str, Any]:
        store = SQLiteRunStore(default_sqlite_path())
        try:
            return dict(await store.decisions(run_id))
        finally:
            await store.aclose()

    return asyncio.run(main())


def test_the_list_shows_each_run_with_its_status_and_pending_count() -> None:
    waiting, done, failed = _suspended(Mailer()), _finished(), _failed()
    result = oma("runs")
    assert result.exit_code == 0, result.stderr
    lines = {line.split()[0]: line.split() for line in result.stdout.splitlines()[1:]}
    assert result.stdout.split()[:6] == ["ID", "KIND", "STATUS", "AGE", "COST", "PENDING"]
    assert lines[waiting.run_id][1:3] == ["agent", "suspended"] and lines[waiting.run_id][-1] == "1"
    assert lines[done.run_id][2] == "ok" and lines[done.run_id][-1] == "0"
    assert lines[failed.run_id][2] == "error"


def test_the_list_as_json_parses_and_an_empty_store_says_so() -> None:
    empty = oma("runs")
    assert (empty.exit_code, empty.stdout) == (0, "no durable runs\n")
    assert json.loads(oma("runs", "--json").stdout) == []
    waiting = _suspended(Mailer())
    (row,) = json.loads(oma("runs", "--json").stdout)
    assert (row["run_id"], row["kind"], row["status"], row["pending"]) == (
        waiting.run_id,
        "agent",
        "suspended",
        1,
    )
    assert row["age"] >= 0 and row["created"] <= row["updated"]


def test_show_prints_the_pending_call_and_its_arguments() -> None:
    waiting = _suspended(Mailer())
    assert waiting.run_id is not None
    shown = oma("runs", "show", waiting.run_id)
    assert shown.exit_code == 0, shown.stderr
    assert "status: suspended" in shown.stdout and "agent: mailer (scripted)" in shown.stdout
    assert 'c1  send  {"to": "bob@example.com"}  [waiting]' in shown.stdout
    data = json.loads(oma("runs", "show", waiting.run_id, "--json").stdout)
    (pending,) = data["pending"]
    assert (pending["call_id"], pending["tool"], pending["arguments"]) == (
        "c1",
        "send",
        {"to": "bob@example.com"},
    )
    assert pending["decision"] is None and data["turns"] == 1


def test_an_approval_is_stored_and_the_run_goes_on_at_the_next_resume() -> None:
    mailer = Mailer()
    waiting = _suspended(mailer)
    assert waiting.run_id is not None
    approved = oma("runs", "approve", waiting.run_id, "c1")
    assert approved.exit_code == 0, approved.stderr
    assert f"oma runs resume {waiting.run_id}" in approved.stdout
    assert _decisions(waiting.run_id)["c1"]["approve"] is True
    assert "[approved]" in oma("runs", "show", waiting.run_id).stdout
    assert mailer.sent == []  # a decision runs nothing by itself

    # the run's tools exist in code only: resume from the command line says so, runs nothing
    refused = oma("runs", "resume", waiting.run_id)
    assert refused.exit_code == 2 and refused.stdout == ""
    assert refused.stderr.startswith("error: ") and refused.stderr.count("\n") == 1
    assert "['send']" in refused.stderr and mailer.sent == []

    async def from_code() -> (
        RunResult
    ):  # what a program resuming it does: the stored decision holds
        return await OpenMultiAgent(store="sqlite").resume(
            waiting.run_id or "", config=mailer.config("Mail sent.")
        )

    result = asyncio.run(from_code())
    assert result.output == "Mail sent." and mailer.sent == ["bob@example.com"]
    assert "ok" in oma("runs").stdout.split()


def test_a_denial_keeps_its_reason_and_the_first_decision_wins() -> None:
    waiting = _suspended(Mailer())
    assert waiting.run_id is not None
    denied = oma("runs", "deny", waiting.run_id, "c1", "--reason", "not today")
    assert denied.exit_code == 0, denied.stderr
    kept = _decisions(waiting.run_id)["c1"]
    assert (kept["approve"], kept["reason"]) == (False, "not today")
    assert "[denied (not today)]" in oma("runs", "show", waiting.run_id).stdout
    again = oma("runs", "approve", waiting.run_id, "c1")
    assert again.exit_code == 0 and "denied (not today) already" in again.stdout
    assert _decisions(waiting.run_id)["c1"]["approve"] is False


def test_a_run_rebuilt_from_its_checkpoint_resumes_from_the_command_line() -> None:
    done = _run(AgentConfig(name="echoer", provider="echo", model="x"), "hello")
    assert done.status.code == "ok" and done.run_id is not None
    from oma_core._checkpoints import decode, encode

    async def rewind() -> None:  # what a crash right after the model's turn leaves
        store = SQLiteRunStore(default_sqlite_path())
        try:
            kept = await store.load(done.run_id or "")
            assert kept is not None
            state = decode(kept.run_id, kept.checkpoint)
            state.update(status="running", result=None)
            await store.save(
                StoredRun(kept.run_id, "agent", "running", encode(state), kept.created, 0.0)
            )
        finally:
            await store.aclose()

    asyncio.run(rewind())
    resumed = oma("runs", "resume", done.run_id)
    assert resumed.exit_code == 0, resumed.stderr
    assert resumed.stdout == done.output + "\n"
    assert "status: ok" in oma("runs", "show", done.run_id).stdout


def test_a_finished_run_resumes_to_its_stored_result_and_a_failed_one_exits_1() -> None:
    done, failed = _finished(), _failed()
    assert done.run_id is not None and failed.run_id is not None
    again = oma("runs", "resume", done.run_id)
    assert (again.exit_code, again.stdout) == (0, "done\n")
    broken = oma("runs", "resume", failed.run_id)
    assert broken.exit_code == 1 and broken.stderr.startswith(
        f"error: run {failed.run_id} ended error"
    )


@pytest.mark.parametrize(
    "args",
    [
        ("show", "nope"),
        ("resume", "nope"),
        ("approve", "nope", "c1"),
        ("deny", "nope", "c1", "--reason", "x"),
    ],
)
def test_an_unknown_run_is_one_error_line_and_exit_2(args: tuple[str, ...]) -> None:
    result = oma("runs", *args)
    assert result.exit_code == 2 and result.stdout == ""
    assert result.stderr == "error: no durable run 'nope' in the run store\n"


def test_a_call_the_run_never_asked_about_and_a_bad_store_are_usage_errors(tmp_path: Path) -> None:
    waiting = _suspended(Mailer())
    assert waiting.run_id is not None
    unknown = oma("runs", "approve", waiting.run_id, "c9")
    assert unknown.exit_code == 2 and "c9" in unknown.stderr and unknown.stderr.count("\n") == 1
    assert _decisions(waiting.run_id) == {}
    bad = oma("runs", "--store", "nosuch://host/db")
    assert bad.exit_code == 2 and bad.stderr.startswith("error: ") and "nosuch" in bad.stderr


def test_store_may_be_given_before_or_after_the_subcommand(tmp_path: Path) -> None:
    path = tmp_path / "elsewhere.db"
    result = _run(
        AgentConfig(name="helper", provider="scripted", provider_options={"responses": ["hi"]}),
        "hi",
        store=f"sqlite:{path}",
    )
    assert result.run_id is not None
    assert oma("runs").stdout == "no durable runs\n"  # not in the home's store
    assert result.run_id in oma("runs", "--store", f"sqlite:{path}").stdout
    for args in (
        ("runs", "--store", f"sqlite:{path}", "show", result.run_id),
        ("runs", "show", result.run_id, "--store", f"sqlite:{path}"),
    ):
        shown = oma(*args)
        assert shown.exit_code == 0 and "status: ok" in shown.stdout, shown.stderr


def test_show_gives_the_record_of_a_run_that_is_not_an_agent_run() -> None:
    async def save() -> None:  # a team run: its checkpoint is not read
        store = SQLiteRunStore(default_sqlite_path())
        try:
            await store.save(StoredRun("t1", "team", "running", b"{}", 1.0, 2.0, 0.25, 0))
        finally:
            await store.aclose()

    asyncio.run(save())
    shown = oma("runs", "show", "t1")
    assert shown.exit_code == 0, shown.stderr
    assert (
        shown.stdout == "run t1\nkind: team\nstatus: running\ncost: $0.2500, pending approvals: 0\n"
    )
    data = json.loads(oma("runs", "show", "t1", "--json").stdout)
    assert (data["kind"], data["cost"], data["agent"], data["pending"]) == ("team", 0.25, None, [])
    assert "$0.2500" in oma("runs").stdout
