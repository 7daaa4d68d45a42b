"""The process backend end to end: through Agent.run/stream/prompt, a team and the CLI."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    OpenMultiAgent,
    TaskSpec,
    Team,
    image_url,
)
from oma_core.errors import BackendError
from oma_core.testing import assert_holds_no_secret

FAKE_CLI = str(Path(__file__).with_name("fake_cli.py"))
STRUCTURED = [
    {
        "role": "user",
        "content": [
            image_url("https://example.com/cat.png"),
            {"type": "text", "text": "What is shown?"},
        ],
    }
]


def _agent(*mode: str, system_prompt: str | None = None, **options: Any) -> Agent:
    backend = {"kind": "process", "command": sys.executable, "args": [FAKE_CLI, *mode]}
    return Agent(
        AgentConfig(name="cli", system_prompt=system_prompt, backend={**backend, **options})
    )


async def test_run_sends_the_system_prompt_and_prompt_and_returns_stdout() -> None:
    async with _agent("cat", system_prompt="You are terse.") as agent:
        result = await agent.run("Say hi")
    assert result.success
    assert result.output == "You are terse.\n\nSay hi"
    assert [m.role for m in result.messages] == ["assistant"]


async def test_stream_yields_text_events_then_done() -> None:
    async with _agent("chunks") as agent:
        events = [event async for event in agent.stream("go")]
    texts = [e.data for e in events if e.type == "text"]
    assert "".join(texts) == "alpha beta gamma \u00e9"
    assert events[-1].type == "done" and events[-1].data.success


async def test_prompt_turns_append_to_history_and_each_starts_a_fresh_process(
    tmp_path: Path,
) -> None:
    counter = tmp_path / "spawns.txt"
    async with _agent("count", str(counter)) as agent:
        first = await agent.prompt("one")
        second = await agent.prompt("two")
    assert (first.output, second.output) == ("one", "two")
    assert [m.role for m in agent.get_history()] == ["user", "assistant", "user", "assistant"]
    assert counter.read_text().count("spawned") == 2


async def test_structured_input_is_refused_before_any_process_starts(tmp_path: Path) -> None:
    counter = tmp_path / "spawns.txt"
    async with _agent("count", str(counter)) as agent:
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            await agent.run(STRUCTURED)
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            agent.stream(STRUCTURED)
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            await agent.prompt([image_url("https://example.com/cat.png")])
        assert not counter.exists()
        assert (await agent.run("control")).output == "control"
    assert counter.read_text().count("spawned") == 1


async def test_a_failing_command_gives_a_failed_result_with_a_backend_error() -> None:
    async with _agent("fail", "4", "bad things") as agent:
        result = await agent.run("hi")
    assert not result.success
    assert result.status.code == "error"
    assert isinstance(result.status.error, BackendError)
    assert result.status.error.exit_code == 4


async def test_the_backend_timeout_ends_the_run_with_status_timeout(
    group_gone: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    async with _agent("hang", str(info_file), timeout=0.5, kill_grace=0.2) as agent:
        result = await agent.run("hi")
    assert result.status.code == "timeout"
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_cancelling_agent_run_from_outside_stops_the_process_group(
    group_gone: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    agent = _agent("hang", str(info_file), kill_grace=0.2)
    task = asyncio.ensure_future(agent.run("hi"))
    for _ in range(1500):  # up to 30 s: the fake CLI starts slowly on a loaded machine
        if info_file.exists() and info_file.read_text():
            break
        await asyncio.sleep(0.02)
    assert info_file.exists(), "the fake CLI never started"
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await agent.aclose()
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


def _oma(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-c", "from oma_core.cli import main; main()", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)


def test_the_cli_runs_a_process_backend(tmp_path: Path) -> None:
    done = _oma(
        "run", "--backend", "process", "--command", sys.executable,
        f"--arg={FAKE_CLI}", "--arg=cat", "hello from the cli",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "hello from the cli" in done.stdout


def test_the_cli_refuses_an_image_for_a_process_backend_without_spawning(tmp_path: Path) -> None:
    counter = tmp_path / "spawns.txt"
    image = Path(__file__).resolve().parents[3] / "examples" / "cat.png"
    done = _oma(
        "run", "--backend", "process", "--command", sys.executable,
        f"--arg={FAKE_CLI}", "--arg=count", f"--arg={counter}", "--image", str(image), "hi",
    )  # fmt: skip
    assert done.returncode != 0
    assert "string prompts only" in done.stderr
    assert not counter.exists()


async def test_process_agents_run_as_a_team() -> None:
    backend = {"kind": "process", "command": sys.executable, "args": [FAKE_CLI, "cat"]}
    coder = AgentConfig(name="coder", backend=backend)
    reviewer = AgentConfig(name="reviewer", system_prompt="REVIEW", backend=backend)
    result = await OpenMultiAgent().run_tasks(
        Team("ship-it", agents=[coder, reviewer]),
        [
            TaskSpec("fix", "Fix the failing test", assignee="coder"),
            TaskSpec("review", "Review the fix", assignee="reviewer", depends_on=["fix"]),
        ],
    )
    assert result.success
    review = result.tasks["review"].result
    assert review is not None
    assert review.output.startswith("REVIEW\n\nReview the fix")
    assert "Fix the failing test" in review.output


def test_oma_plugins_lists_the_process_backend_as_text_only() -> None:
    done = _oma("plugins", "--json")
    assert done.returncode == 0, done.stderr
    backend = json.loads(done.stdout)["backends"]["process"]
    assert backend["text_only"] is True
    assert backend["plugin"] == "process" and backend["display_name"] == "Process"


async def test_run_agent_reports_progress_and_its_timeout_stops_the_group(
    group_gone: Any, tmp_path: Path
) -> None:
    events: list[Any] = []
    oma = OpenMultiAgent(on_progress=events.append)
    backend = {"kind": "process", "command": sys.executable, "args": [FAKE_CLI, "cat"]}
    done = await oma.run_agent(AgentConfig(name="cli", backend=backend), "hello")
    assert done.success and done.output == "hello"
    assert [(e.type, e.agent) for e in events] == [
        ("agent_start", "cli"),
        ("agent_complete", "cli"),
    ]
    assert events[0].data == {"prompt": "hello"}
    info_file = tmp_path / "pids.json"
    hanging = {**backend, "args": [FAKE_CLI, "hang", str(info_file)], "kill_grace": 0.2}
    events.clear()
    timed_out = await oma.run_agent(AgentConfig(name="slow", backend=hanging), "hi", timeout=0.5)
    assert timed_out.status.code == "timeout"
    assert events[-1].type == "agent_complete"
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_run_agent_refuses_structured_input_without_spawning(tmp_path: Path) -> None:
    counter = tmp_path / "spawns.txt"
    events: list[Any] = []
    backend = {
        "kind": "process",
        "command": sys.executable,
        "args": [FAKE_CLI, "count", str(counter)],
    }
    with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
        await OpenMultiAgent(on_progress=events.append).run_agent(
            AgentConfig(name="cli", backend=backend), STRUCTURED
        )
    assert not counter.exists()
    assert events == []


async def test_a_before_run_hook_may_rewrite_the_prompt_but_not_the_messages(
    tmp_path: Path,
) -> None:
    counter = tmp_path / "spawns.txt"
    backend = {
        "kind": "process",
        "command": sys.executable,
        "args": [FAKE_CLI, "count", str(counter)],
    }
    rewrite = Agent(
        AgentConfig(name="cli", backend=backend, before_run=lambda ctx: {"prompt": "rewritten"})
    )
    replace = Agent(
        AgentConfig(
            name="cli",
            backend=backend,
            before_run=lambda ctx: {
                "messages": [{"role": "user", "content": [{"type": "text", "text": "x"}]}]
            },
        )
    )
    async with rewrite, replace:
        assert (await rewrite.run("original")).output == "rewritten"
        failed = await replace.run("original")
    assert not failed.success and "cannot be forwarded without loss" in str(failed.status.error)
    assert counter.read_text().count("spawned") == 1


async def test_failed_and_timed_out_runs_hold_neither_the_prompt_nor_a_passed_secret() -> None:
    secret, prompt = "child-secret-value-4242", "the confidential plan for project nightingale"
    env = {"CHILD_SECRET": secret}
    async with _agent("leak", "CHILD_SECRET", env=env) as leaking:
        failed = await leaking.run(prompt)
    async with _agent("sleep", "30", env=env, timeout=0.3, kill_grace=0.2) as sleeping:
        timed_out = await sleeping.run(prompt)
    assert isinstance(failed.status.error, BackendError), failed.status
    assert timed_out.status.code == "timeout", timed_out.status
    for result in (failed, timed_out):
        assert_holds_no_secret(result.status, secret, prompt)


async def test_leaving_a_stream_early_stops_the_process_group(
    group_gone: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    async with _agent("hang", str(info_file), kill_grace=0.2) as agent:
        async with agent.stream("hi") as events:
            async for event in events:
                assert (event.type, event.data) == ("text", "ready")
                break
        info = json.loads(info_file.read_text())
        group_gone(info["pgid"], info["pid"])  # stopped by leaving the block, not by aclose
