"""The ACP backend driven through the Backend interface, against a real ACP agent process."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from acp_agent import MALFORMED
from oma_acp import AcpBackend, PermissionRequest, oma_register_backends

from oma_core import BackendSpec, Usage
from oma_core.errors import BackendError, RunTimeoutError
from oma_core.testing import assert_holds_no_secret
from oma_core.toolkit import (
    BackendRequest,
    BackendResult,
    BackendToolCall,
    BackendToolResult,
    ReasoningDelta,
    TextDelta,
)

#: Terminal control left in text: ESC, BEL, CR or any other C0/C1 control but tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def _result(events: list[Any]) -> BackendResult:
    assert isinstance(events[-1], BackendResult)
    return events[-1]


def _json(events: list[Any]) -> dict[str, Any]:
    return dict(json.loads(_result(events).output))


def _sleeping_turn(backend: AcpBackend) -> tuple[asyncio.Task[None], asyncio.Event]:
    """A "sleep" turn run in a task, and an event set once the agent says "sleeping": wait
    on that (the turn has reached the agent), never on a sleep, before disturbing the turn."""
    sleeping = asyncio.Event()

    async def consume() -> None:
        async for event in backend.run(BackendRequest("sleep")):
            if event == TextDelta("sleeping"):
                sleeping.set()

    return asyncio.create_task(consume()), sleeping


async def _wait_for(predicate: Any, seconds: float = 10.0) -> None:
    for _ in range(int(seconds / 0.02)):
        if predicate():
            return
        await asyncio.sleep(0.02)
    raise AssertionError("condition not reached in time")


def test_the_plugin_registers_a_text_only_acp_backend(tmp_path: Path) -> None:
    (spec,) = oma_register_backends()
    assert isinstance(spec, BackendSpec)
    assert (spec.kind, spec.display_name, spec.text_only) == ("acp", "ACP agent", True)
    backend = spec.factory({"command": "some-agent", "cwd": str(tmp_path)})
    assert (backend.kind, backend.display_name) == ("acp", "ACP agent")


def test_loading_the_plugin_does_not_import_the_acp_package() -> None:
    code = "import sys, oma_acp; oma_acp.oma_register_backends(); print('acp' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "False"


async def test_message_and_thought_chunks_stream_as_text_and_reasoning(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    events = await collect(backend, "stream")
    assert events[:-1] == [
        ReasoningDelta("thinking"),
        TextDelta("Hello"),
        TextDelta(", "),
        TextDelta("world"),
    ]
    assert _result(events).output == "Hello, world"
    assert _result(events).stop_reason == "end_turn"
    await backend.aclose()


async def test_a_tool_call_and_its_completion_become_tool_events(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(permission="allow")
    events = await collect(backend, "tool")
    assert events[0] == BackendToolCall("call-1", "write notes", {"n": 1})
    assert events[1] == BackendToolResult("call-1", "tool saw yes-once", is_error=False)
    assert _result(events).output == "permission: yes-once"
    await backend.aclose()


async def test_the_reject_policy_picks_a_reject_option_and_the_tool_fails(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(permission="reject")
    events = await collect(backend, "tool")
    assert BackendToolResult("call-1", "tool saw no-once", is_error=True) in events
    assert _result(events).output == "permission: no-once"
    await backend.aclose()


async def test_a_sync_permission_callable_sees_the_request_and_picks_the_option(
    make_backend: Any, collect: Any
) -> None:
    seen: list[PermissionRequest] = []

    def policy(request: PermissionRequest) -> str:
        seen.append(request)
        return "yes-always"

    backend = make_backend(permission=policy)
    events = await collect(backend, "tool")
    assert _result(events).output == "permission: yes-always"
    (request,) = seen
    assert request.tool_call_id == "call-1" and request.title == "write notes"
    assert [(o.id, o.kind) for o in request.options] == [
        ("yes-once", "allow_once"),
        ("yes-always", "allow_always"),
        ("no-once", "reject_once"),
    ]
    await backend.aclose()


async def test_an_async_permission_callable_may_answer_none_for_cancelled(
    make_backend: Any, collect: Any
) -> None:
    async def policy(request: PermissionRequest) -> None:
        await asyncio.sleep(0)

    backend = make_backend(permission=policy)
    events = await collect(backend, "tool")
    assert _result(events).output == "permission: cancelled"
    await backend.aclose()


async def test_a_raising_permission_callable_fails_the_turn(
    make_backend: Any, collect: Any
) -> None:
    def policy(request: PermissionRequest) -> str:
        raise RuntimeError("no user here")

    backend = make_backend(permission=policy)
    with pytest.raises(BackendError, match="permission callable raised RuntimeError"):
        await collect(backend, "tool")
    await backend.aclose()


async def test_a_permission_callable_choosing_an_unknown_option_fails_the_turn(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(permission=lambda request: "maybe")
    with pytest.raises(BackendError, match="unknown option 'maybe'"):
        await collect(backend, "tool")


async def test_usage_is_reported_when_the_agent_sends_it(make_backend: Any, collect: Any) -> None:
    backend = make_backend()
    assert _result(await collect(backend, "usage")).usage == Usage(10, 5)
    await backend.aclose()


async def test_continued_turns_share_a_session_and_send_the_system_prompt_once(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    first = _json(await collect(backend, "echo", system_prompt="SYS", continue_session=True))
    second = _json(await collect(backend, "echo", system_prompt="SYS", continue_session=True))
    assert first["text"] == "SYS\n\necho" and first["turn"] == 1
    assert second["text"] == "echo" and second["turn"] == 2
    assert second["session"] == first["session"]
    assert backend.spawn_count == 1
    await backend.aclose()


async def test_fresh_runs_get_a_fresh_session_with_the_system_prompt_each_time(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    first = _json(await collect(backend, "echo", system_prompt="SYS"))
    second = _json(await collect(backend, "echo", system_prompt="SYS"))
    assert first["text"] == second["text"] == "SYS\n\necho"
    assert first["session"] != second["session"]
    assert backend.spawn_count == 1
    await backend.aclose()


async def test_the_agent_reads_and_writes_files_inside_cwd(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    (tmp_path / "notes.txt").write_text("inside notes")
    backend = make_backend()
    assert _result(await collect(backend, f"read {tmp_path / 'notes.txt'}")).output == (
        "inside notes"
    )
    assert _result(await collect(backend, "write sub.txt hello there")).output == "written"
    assert (tmp_path / "sub.txt").read_text() == "hello there"
    await backend.aclose()


@pytest.mark.parametrize("path", ["../outside.txt", "/etc/hostname", "link/secret.txt"])
async def test_file_reads_outside_cwd_are_refused(
    make_backend: Any, collect: Any, tmp_path: Path, path: str
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text("top secret")
    (tmp_path / "outside.txt").write_text("top secret")
    (workdir / "link").symlink_to(outside)
    backend = make_backend(cwd=str(workdir))
    output = _result(await collect(backend, f"read {path}")).output
    assert output.startswith("error: path is outside")
    assert "top secret" not in output
    await backend.aclose()


async def test_file_writes_outside_cwd_are_refused_and_nothing_is_written(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    backend = make_backend(cwd=str(workdir))
    output = _result(await collect(backend, "write ../escaped.txt data")).output
    assert output.startswith("error: path is outside")
    assert not (tmp_path / "escaped.txt").exists()
    await backend.aclose()


async def test_read_only_fs_refuses_writes(make_backend: Any, collect: Any, tmp_path: Path) -> None:
    backend = make_backend(fs="read-only")
    output = _result(await collect(backend, "write notes.txt data")).output
    assert output.startswith("error:")
    assert not (tmp_path / "notes.txt").exists()
    await backend.aclose()


async def test_fs_none_refuses_reads(make_backend: Any, collect: Any, tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("private")
    backend = make_backend(fs="none")
    output = _result(await collect(backend, "read notes.txt")).output
    assert output.startswith("error:") and "private" not in output


async def test_closing_the_stream_early_cancels_the_turn_and_keeps_the_agent(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    stream = backend.run(BackendRequest("sleep"))
    assert await anext(stream) == TextDelta("sleeping")
    await asyncio.wait_for(stream.aclose(), 30)
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    assert backend.spawn_count == 1  # the agent ended the turn itself: no restart
    await backend.aclose()


async def test_a_cancelled_turn_stays_cancelled_when_the_agent_answers_with_an_error(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    started = asyncio.Event()

    async def consume() -> None:
        async for event in backend.run(BackendRequest("sleep-error")):
            if event == TextDelta("sleeping"):
                started.set()

    task = asyncio.create_task(consume())
    await asyncio.wait_for(started.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    await backend.aclose()


async def test_cancelling_answers_a_pending_permission_request_as_cancelled(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    asked = asyncio.Event()

    async def never_decides(request: PermissionRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "yes-once"

    backend = make_backend(permission=never_decides)
    task = asyncio.create_task(collect(backend, "ask outcome.txt"))
    await asyncio.wait_for(asked.wait(), 30)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert (tmp_path / "outcome.txt").read_text() == "cancelled"
    await backend.aclose()


async def test_an_agent_dying_mid_turn_fails_it_and_the_next_run_starts_a_fresh_agent(
    group_gone: Any, make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    first_pid = _json(await collect(backend, "pid"))["pid"]
    with pytest.raises(BackendError) as caught:
        await collect(backend, "crash")
    err = caught.value
    assert err.exit_code == 3
    assert "sk-leakedsecret123456" not in str(err)
    assert "sk-leakedsecret123456" not in (err.stderr_tail or "")
    assert "fatal" in (err.stderr_tail or "")
    group_gone(first_pid, first_pid)
    second_pid = _json(await collect(backend, "pid"))["pid"]
    assert second_pid != first_pid
    assert (backend.spawn_count, backend.restarts) == (2, 1)
    await backend.aclose()


async def test_an_error_answer_to_the_prompt_fails_the_turn_with_a_redacted_message(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    with pytest.raises(BackendError, match="session/prompt with error -32603") as caught:
        await collect(backend, "fail")
    assert "quota exhausted" in str(caught.value)
    assert "sk-agentsecret1234567" not in str(caught.value)
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    assert backend.spawn_count == 1


async def test_an_agent_dying_fails_every_pending_turn_at_once(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    sleeper, sleeping = _sleeping_turn(backend)
    await asyncio.wait_for(sleeping.wait(), 30)
    with pytest.raises(BackendError, match="exited with code 3"):
        await collect(backend, "crash")
    with pytest.raises(BackendError):
        await asyncio.wait_for(sleeper, 30)


async def test_restarts_stop_after_max_restarts(make_backend: Any, collect: Any) -> None:
    backend = make_backend(max_restarts=1)
    for _ in range(2):
        with pytest.raises(BackendError, match="exited with code 3"):
            await collect(backend, "crash")
    with pytest.raises(BackendError, match="max_restarts=1"):
        await collect(backend, "stream")
    assert backend.spawn_count == 2
    await backend.aclose()


async def test_non_json_lines_on_stdout_are_skipped_and_counted(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    assert _result(await collect(backend, "garbage")).output == "after garbage"
    assert backend.skipped_lines == 2
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    await backend.aclose()


async def test_an_oversized_message_fails_the_turn_and_stops_the_agent(
    group_gone: Any, make_backend: Any, collect: Any
) -> None:
    backend = make_backend(max_message_bytes=64 * 1024)
    pid = _json(await collect(backend, "pid"))["pid"]
    with pytest.raises(BackendError, match="max_message_bytes=65536"):
        await collect(backend, "huge 300000")
    group_gone(pid, pid)
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    await backend.aclose()


async def test_a_timeout_cancels_the_turn_and_raises_run_timeout(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(timeout=0.5)
    with pytest.raises(RunTimeoutError):
        await collect(backend, "sleep")
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    assert backend.spawn_count == 1
    await backend.aclose()


async def test_an_agent_that_misses_the_startup_timeout_is_stopped(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(startup_timeout=0.01)
    with pytest.raises(BackendError, match="startup_timeout"):
        await collect(backend, "stream")
    agent_process = backend._agent
    assert agent_process is None or not agent_process.usable
    await backend.aclose()


async def test_an_agent_that_ignores_cancel_is_stopped_and_replaced(
    group_gone: Any, make_backend: Any, collect: Any
) -> None:
    backend = make_backend(kill_grace=0.3)
    pid = _json(await collect(backend, "pid"))["pid"]
    with pytest.raises(RunTimeoutError):
        await collect(backend, "ignore-cancel", timeout=0.5)
    group_gone(pid, pid)
    assert _json(await collect(backend, "pid"))["pid"] != pid
    await backend.aclose()


async def test_aclose_stops_and_reaps_the_agent_process_group(
    group_gone: Any, make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    info = _json(await collect(backend, "pid"))
    assert info["pgid"] == info["pid"]
    await backend.aclose()
    group_gone(info["pid"], info["pid"])
    with pytest.raises(BackendError, match="closed"):
        await collect(backend, "stream")


async def test_parent_secrets_stay_out_of_the_agent_environment(
    make_backend: Any, collect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-123456")
    monkeypatch.setenv("GITHUB_TOKEN", "ghp-parent-secret")
    backend = make_backend(env={"AGENT_MODE": "test"})
    env = _json(await collect(backend, "env"))
    assert "OPENAI_API_KEY" not in env and "GITHUB_TOKEN" not in env
    assert env["AGENT_MODE"] == "test"
    await backend.aclose()


async def test_a_missing_agent_binary_raises_backend_error(collect: Any, tmp_path: Path) -> None:
    backend = AcpBackend({"command": str(tmp_path / "no-agent"), "cwd": str(tmp_path)})
    with pytest.raises(BackendError, match="cannot start 'no-agent'"):
        await collect(backend, "stream")
    await backend.aclose()


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({}, "command"),
        ({"command": sys.executable, "permission": "maybe"}, "permission"),
        ({"command": sys.executable, "fs": "all"}, "fs"),
        ({"command": sys.executable, "max_restarts": -1}, "max_restarts"),
        ({"command": sys.executable, "cwd": "/no/such/dir"}, "cwd"),
        ({"command": sys.executable, "permision": "allow"}, "unknown option"),
    ],
)
def test_invalid_options_are_refused_when_the_backend_is_made(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(BackendError, match=message):
        AcpBackend(options)


async def test_the_allow_policy_prefers_a_one_time_allow_whatever_the_order(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(permission="allow")
    events = await collect(backend, "ask-always-first")
    assert _result(events).output == "permission: yes-once"


async def test_a_reject_policy_never_allows_whatever_the_order(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(permission="reject")
    events = await collect(backend, "ask-always-first")
    assert _result(events).output == "permission: no-once"


async def test_a_fifo_inside_cwd_is_refused_without_blocking(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    os.mkfifo(tmp_path / "pipe")
    backend = make_backend()
    read = await asyncio.wait_for(collect(backend, "read pipe"), 30)
    assert _result(read).output.startswith("error:")
    write = await asyncio.wait_for(collect(backend, "write pipe data"), 30)
    assert _result(write).output.startswith("error:")
    assert _result(await collect(backend, "stream")).output == "Hello, world"


@pytest.mark.parametrize("path", ["link/planted.txt", "../planted.txt", "ABSOLUTE"])
async def test_file_writes_escaping_cwd_by_symlink_dots_or_absolute_path_are_refused(
    make_backend: Any, collect: Any, tmp_path: Path, path: str
) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    outside = tmp_path / "outside"
    outside.mkdir()
    (workdir / "link").symlink_to(outside)
    (workdir / "dangling").symlink_to(tmp_path / "planted.txt")
    target = str(outside / "planted.txt") if path == "ABSOLUTE" else path
    backend = make_backend(cwd=str(workdir))
    for attempt in (target, "dangling"):
        output = _result(await collect(backend, f"write {attempt} data")).output
        assert output.startswith("error: path is outside")
    assert not (outside / "planted.txt").exists()
    assert not (tmp_path / "planted.txt").exists()


async def test_aclose_during_a_turn_fails_it_as_closed_and_reaps_the_agent(
    group_gone: Any, make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    pid = _json(await collect(backend, "pid"))["pid"]
    task, sleeping = _sleeping_turn(backend)
    await asyncio.wait_for(sleeping.wait(), 30)
    await backend.aclose()
    with pytest.raises(BackendError, match="the backend was closed"):
        await asyncio.wait_for(task, 30)
    group_gone(pid, pid)


# -- leaving a turn early ----------------------------------------------------------------------


async def test_closing_the_stream_with_a_permission_pending_returns_after_the_cancel(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    asked = asyncio.Event()

    async def never_decides(request: PermissionRequest) -> str:
        asked.set()
        await asyncio.Event().wait()
        return "yes-once"

    backend = make_backend(permission=never_decides, kill_grace=30)  # generous: only a bound
    stream = backend.run(BackendRequest("guarded outcome.txt"))
    assert isinstance(await anext(stream), BackendToolCall)
    await asyncio.wait_for(asked.wait(), 30)
    await asyncio.wait_for(stream.aclose(), 60)
    # Written by the agent before it ended the turn: aclose() waited for that end.
    assert (tmp_path / "outcome.txt").read_text() == "cancelled cancel=yes"
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    assert backend.spawn_count == 1


# -- malformed JSON-RPC from the agent ---------------------------------------------------------


async def test_malformed_json_rpc_messages_are_skipped_and_counted_and_the_turn_goes_on(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend()
    assert _result(await collect(backend, "malformed")).output == "after malformed"
    assert backend.skipped_lines == len(MALFORMED)
    assert _result(await collect(backend, "stream")).output == "Hello, world"
    assert (backend.spawn_count, backend.restarts) == (1, 0)


# -- what an error shows and holds -------------------------------------------------------------

PROMPT_SECRET = "the confidential plan for project nightingale"
AGENT_SECRET = "agent-secret-value-4242"


async def test_an_agent_dying_with_noise_on_stderr_gives_an_error_with_plain_text_only(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(env={"AGENT_SECRET": AGENT_SECRET})
    with pytest.raises(BackendError) as caught:
        await collect(backend, f"{PROMPT_SECRET}\nleak", system_prompt="SYSTEM RULES FOR TEST")
    err = caught.value
    assert err.exit_code == 3
    for text in (str(err), err.stderr_tail or ""):
        assert "fatal:" in text
        assert not _CONTROL.search(text), repr(text)
    assert_holds_no_secret(err, PROMPT_SECRET, AGENT_SECRET, "SYSTEM RULES FOR TEST")


async def test_an_error_answer_quoting_the_prompt_and_a_secret_holds_neither(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(env={"AGENT_SECRET": AGENT_SECRET})
    with pytest.raises(BackendError, match="cannot do") as caught:
        await collect(backend, f"{PROMPT_SECRET}\nfail-echo")
    assert not _CONTROL.search(str(caught.value)), repr(str(caught.value))
    assert_holds_no_secret(caught.value, PROMPT_SECRET, AGENT_SECRET)


async def test_a_timeout_error_holds_neither_the_prompt_nor_a_secret(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend(env={"AGENT_SECRET": AGENT_SECRET}, timeout=0.5)
    with pytest.raises(RunTimeoutError) as caught:
        await collect(backend, f"{PROMPT_SECRET}\nsleep")
    assert_holds_no_secret(caught.value, PROMPT_SECRET, AGENT_SECRET)


async def test_a_missing_binary_error_holds_nothing_of_the_failed_start(
    collect: Any, tmp_path: Path
) -> None:
    backend = AcpBackend({"command": str(tmp_path / "no-agent"), "cwd": str(tmp_path)})
    with pytest.raises(BackendError) as caught:
        await collect(backend, PROMPT_SECRET)
    assert caught.value.__context__ is None and caught.value.__cause__ is None
    assert_holds_no_secret(caught.value, PROMPT_SECRET)
    await backend.aclose()


async def test_every_async_test_runs_with_the_leaked_generator_check() -> None:
    finalizer = sys.get_asyncgen_hooks().finalizer
    assert "generators_closed" in getattr(finalizer, "__qualname__", "")  # see conftest.py
