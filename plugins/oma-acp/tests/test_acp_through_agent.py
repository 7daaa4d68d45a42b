"""The ACP backend end to end: a real ACP agent through Agent.run/stream/prompt and the CLI."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import sys
from collections.abc import AsyncGenerator, Generator
from pathlib import Path
from typing import Any

import pytest
from oma_acp import PermissionRequest

from oma_core import (
    Agent,
    AgentConfig,
    InvalidMessageError,
    OpenMultiAgent,
    PluginHost,
    ToolResultBlock,
    ToolUseBlock,
    Usage,
    hookimpl,
    image_url,
)
from oma_core.errors import BackendError
from oma_core.testing import assert_holds_no_secret
from oma_core.toolkit import ModelCall, RunContext, TextDelta

AGENT = str(Path(__file__).with_name("acp_agent.py"))


def _agent(
    tmp_path: Path,
    system_prompt: str | None = None,
    plugins: PluginHost | None = None,
    **options: Any,
) -> Agent:
    backend = {
        "kind": "acp",
        "command": sys.executable,
        "args": [AGENT],
        "cwd": str(tmp_path),
        "kill_grace": 5.0,
        **options,
    }
    config = AgentConfig(name="acp", system_prompt=system_prompt, backend=backend)
    return Agent(config, plugins=plugins)


async def test_run_returns_the_agent_message(tmp_path: Path) -> None:
    async with _agent(tmp_path) as agent:
        result = await agent.run("stream")
    assert result.success, result.status
    assert result.output == "Hello, world"


async def test_stream_maps_reasoning_text_and_tool_events(tmp_path: Path) -> None:
    async with _agent(tmp_path, permission="allow") as agent:
        events = [event async for event in agent.stream("tool")]
        thoughts = [event async for event in agent.stream("stream")]
    kinds = [e.type for e in events]
    assert kinds[:3] == ["tool_use", "tool_result", "text"] and kinds[-1] == "done"
    assert isinstance(events[0].data, ToolUseBlock) and events[0].data.id == "call-1"
    assert isinstance(events[1].data, ToolResultBlock) and not events[1].data.is_error
    assert [e.data for e in thoughts if e.type == "reasoning"] == ["thinking"]


async def test_prompt_turns_share_one_session_and_the_system_prompt_goes_first_only(
    tmp_path: Path,
) -> None:
    async with _agent(tmp_path, system_prompt="SYS") as agent:
        first = json.loads((await agent.prompt("echo")).output)
        second = json.loads((await agent.prompt("echo")).output)
        fresh = json.loads((await agent.run("echo")).output)
    assert (first["text"], first["turn"]) == ("SYS\n\necho", 1)
    assert (second["text"], second["turn"]) == ("echo", 2)
    assert second["session"] == first["session"]
    assert fresh["text"] == "SYS\n\necho" and fresh["session"] != first["session"]
    assert [m.role for m in agent.get_history()] == ["user", "assistant", "user", "assistant"]


async def test_structured_input_is_refused_before_the_agent_starts(tmp_path: Path) -> None:
    log = tmp_path / "spawns.txt"
    async with _agent(tmp_path, env={"SPAWN_LOG": str(log)}) as agent:
        image = image_url("https://example.com/cat.png")
        structured = [{"role": "user", "content": [image, {"type": "text", "text": "hi"}]}]
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            await agent.run(structured)
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            agent.stream(structured)
        with pytest.raises(InvalidMessageError, match="accepts string prompts only"):
            await agent.prompt([image])
        assert not log.exists()
        assert (await agent.run("stream")).success
    assert log.read_text().count("spawned") == 1


class _SeesSleeping:
    """Call middleware setting ``sleeping`` when the agent's "sleeping" text passes: the turn
    has reached the agent (waited on, where a sleep would guess)."""

    def __init__(self) -> None:
        self.sleeping = asyncio.Event()

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._watched(events)

    async def _watched(self, events: Any) -> AsyncGenerator[Any, None]:
        async with contextlib.aclosing(events) as inner:
            async for event in inner:
                if event == TextDelta("sleeping"):
                    self.sleeping.set()
                yield event


async def test_cancelling_agent_run_cancels_the_turn_and_keeps_the_agent(tmp_path: Path) -> None:
    watcher = _SeesSleeping()
    host = PluginHost()
    host.register(watcher, name="sees-sleeping")
    async with _agent(tmp_path, plugins=host) as agent:
        pid = json.loads((await agent.run("pid")).output)["pid"]
        task = asyncio.ensure_future(agent.run("sleep"))
        await asyncio.wait_for(watcher.sleeping.wait(), 30)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        assert json.loads((await agent.run("pid")).output)["pid"] == pid


async def test_a_crash_fails_the_run_and_the_next_run_gets_a_fresh_agent(tmp_path: Path) -> None:
    async with _agent(tmp_path) as agent:
        failed = await agent.run("crash")
        assert not failed.success and failed.status.code == "error"
        assert isinstance(failed.status.error, BackendError)
        assert failed.status.error.exit_code == 3
        assert (await agent.run("stream")).output == "Hello, world"


async def test_agent_aclose_stops_the_agent_process_group(group_gone: Any, tmp_path: Path) -> None:
    agent = _agent(tmp_path)
    pid = json.loads((await agent.run("pid")).output)["pid"]
    await agent.aclose()
    group_gone(pid, pid)


def test_the_cli_runs_an_acp_backend(tmp_path: Path) -> None:
    command = [
        sys.executable, "-c", "from oma_core.cli import main; main()",
        "run", "--backend", "acp", "--command", sys.executable, f"--arg={AGENT}", "stream",
    ]  # fmt: skip
    done = subprocess.run(
        command, capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert "Hello, world" in done.stdout


def test_oma_plugins_lists_the_acp_backend_as_text_only() -> None:
    command = [sys.executable, "-c", "from oma_core.cli import main; main()", "plugins", "--json"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    backend = json.loads(done.stdout)["backends"]["acp"]
    assert backend["text_only"] is True
    assert backend["plugin"] == "acp" and backend["display_name"] == "ACP agent"


async def test_after_a_crash_prompt_turns_start_a_fresh_session_with_the_system_prompt(
    tmp_path: Path,
) -> None:
    async with _agent(tmp_path, system_prompt="SYS") as agent:
        first = json.loads((await agent.prompt("echo")).output)
        crashed = await agent.prompt("crash")
        assert crashed.status.code == "error"
        after = json.loads((await agent.prompt("echo")).output)
    assert (first["text"], first["turn"]) == ("SYS\n\necho", 1)
    assert (after["text"], after["turn"]) == ("SYS\n\necho", 1)
    assert [m.role for m in agent.get_history()] == ["user", "assistant"] * 2


async def test_run_agent_reports_progress_and_a_timeout_for_an_acp_agent(tmp_path: Path) -> None:
    events: list[Any] = []
    oma = OpenMultiAgent(on_progress=events.append)
    config = AgentConfig(
        name="acp",
        backend={"kind": "acp", "command": sys.executable, "args": [AGENT], "cwd": str(tmp_path)},
    )
    done = await oma.run_agent(config, "usage")
    assert done.success and done.output == "counted" and done.usage == Usage(10, 5)
    assert [e.type for e in events] == ["agent_start", "agent_complete"]
    assert events[0].data == {"prompt": "usage"}
    timed_out = await oma.run_agent(config, "sleep", timeout=0.5)
    assert timed_out.status.code == "timeout"


async def test_leaving_a_stream_with_a_permission_pending_waits_for_the_cancel(
    tmp_path: Path,
) -> None:
    asked = asyncio.Event()

    async def never_decides(request: PermissionRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "yes-once"

    async with _agent(tmp_path, permission=never_decides, kill_grace=30) as agent:
        async with agent.stream("guarded outcome.txt") as events:
            async for event in events:
                if event.type == "tool_use":
                    await asyncio.wait_for(asked.wait(), 30)
                    break
        # The agent wrote this before it ended the turn: leaving the block waited for it.
        assert (tmp_path / "outcome.txt").read_text() == "cancelled cancel=yes"
        assert (await agent.run("stream")).output == "Hello, world"


async def test_a_failed_run_holds_neither_the_prompt_nor_a_passed_secret(tmp_path: Path) -> None:
    secret, prompt = "agent-secret-value-4242", "the confidential plan for project nightingale"
    async with _agent(tmp_path, env={"AGENT_SECRET": secret}) as agent:
        crashed = await agent.run(f"{prompt}\nleak")
        refused = await agent.run(f"{prompt}\nfail-echo")
    for result in (crashed, refused):
        assert isinstance(result.status.error, BackendError), result.status
        assert_holds_no_secret(result.status.error, secret, prompt)
        assert_holds_no_secret(result.status, secret, prompt)
