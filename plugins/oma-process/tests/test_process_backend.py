"""The process backend driven through the Backend interface, with real subprocesses."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from oma_process import ProcessBackend, oma_register_backends

from oma_core import BackendSpec
from oma_core.errors import BackendError, RunTimeoutError
from oma_core.testing import assert_holds_no_secret
from oma_core.toolkit import BackendRequest, BackendResult, TextDelta


def _output(events: list[Any]) -> str:
    assert isinstance(events[-1], BackendResult)
    return str(events[-1].output)


def _echo(events: list[Any]) -> dict[str, Any]:
    return dict(json.loads(_output(events)))


def test_the_plugin_registers_a_text_only_process_backend() -> None:
    (spec,) = oma_register_backends()
    assert isinstance(spec, BackendSpec)
    assert (spec.kind, spec.display_name, spec.text_only) == ("process", "Process", True)
    backend = spec.factory({"command": "true"})
    assert (backend.kind, backend.display_name) == ("process", "Process")


async def test_prompt_with_shell_metacharacters_arrives_byte_exact_and_runs_nothing(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    marker = tmp_path / "pwned"
    prompt = f"$(touch {marker}); rm -rf ~; | & > < `touch {marker}` \"'\\ * ? ~ \n\t end"
    events = await collect(make_backend("echo"), prompt)
    assert _echo(events)["stdin"] == prompt
    assert not marker.exists()


async def test_system_prompt_and_prompt_are_joined_by_a_blank_line(
    make_backend: Any, collect: Any
) -> None:
    events = await collect(make_backend("echo"), "question", system_prompt="be brief")
    assert _echo(events)["stdin"] == "be brief\n\nquestion"


async def test_a_five_mib_prompt_round_trips_through_stdin(make_backend: Any, collect: Any) -> None:
    prompt = ("0123456789abcdef" * 65536 * 5)[: 5 * 1024 * 1024]
    events = await collect(make_backend("cat"), prompt)
    assert _output(events) == prompt
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == prompt


async def test_parent_secrets_stay_out_of_the_child_environment(
    make_backend: Any, collect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-parent-secret-123456")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-parent-secret")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-parent-secret")
    monkeypatch.setenv("PASSED_THROUGH", "inherited")
    monkeypatch.setenv("LANG", "C.UTF-8")
    backend = make_backend("echo", env={"MY_SETTING": "42", "PASSED_THROUGH": None})
    env = _echo(await collect(backend, "hi"))["env"]
    assert "OPENAI_API_KEY" not in env
    assert "ANTHROPIC_API_KEY" not in env
    assert "AWS_SECRET_ACCESS_KEY" not in env
    assert env["MY_SETTING"] == "42"
    assert env["PASSED_THROUGH"] == "inherited"
    assert env["LANG"] == "C.UTF-8"
    assert env["PATH"] == os.environ["PATH"]


async def test_argument_mode_passes_the_prompt_as_the_last_argument(
    make_backend: Any, collect: Any
) -> None:
    prompt = "-rf --flag $(echo hi) ; | >"
    events = await collect(make_backend("echo", input="argument"), prompt, system_prompt="sys")
    echoed = _echo(events)
    assert echoed["argv"] == ["echo", f"sys\n\n{prompt}"]
    assert echoed["stdin"] == ""


async def test_none_mode_sends_nothing(make_backend: Any, collect: Any) -> None:
    echoed = _echo(await collect(make_backend("echo", input="none"), "secret prompt"))
    assert echoed["stdin"] == ""
    assert echoed["argv"] == ["echo"]


async def test_cwd_option_sets_the_working_directory(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    echoed = _echo(await collect(make_backend("echo", cwd=str(tmp_path)), "hi"))
    assert echoed["cwd"] == str(tmp_path)  # pytest gives tmp_path fully resolved


async def test_stdout_streams_as_text_deltas_with_utf8_split_across_chunks(
    make_backend: Any, collect: Any
) -> None:
    events = await collect(make_backend("chunks"), "")
    deltas = [e.text for e in events if isinstance(e, TextDelta)]
    assert len(deltas) >= 2
    assert "".join(deltas) == "alpha beta gamma \u00e9"
    assert _output(events) == "alpha beta gamma \u00e9"


async def test_non_zero_exit_raises_with_exit_code_and_a_redacted_stderr_tail(
    make_backend: Any, collect: Any
) -> None:
    noise = (
        "boom: OPENAI_API_KEY=sk-abcdefghijklmnop Authorization: Bearer eyJhbGciOi.x.y "
        "db_password: hunter2 configured-value-xyz"
    )
    backend = make_backend("fail", "3", noise, env={"MY_TOKEN": "configured-value-xyz"})
    with pytest.raises(BackendError) as caught:
        await collect(backend, "hi")
    err = caught.value
    assert err.exit_code == 3 and err.signal is None
    assert err.stderr_tail is not None and "boom" in err.stderr_tail
    for secret in ("sk-abcdefghijklmnop", "eyJhbGciOi", "hunter2", "configured-value-xyz"):
        assert secret not in str(err)
        assert secret not in err.stderr_tail
    assert "exited with code 3" in str(err)


async def test_an_inherited_variable_value_is_redacted_from_errors(
    make_backend: Any, collect: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SERVICE_CREDENTIAL", "inherited-credential-value")
    backend = make_backend(
        "fail", "1", "auth failed for inherited-credential-value", env={"SERVICE_CREDENTIAL": None}
    )
    with pytest.raises(BackendError) as caught:
        await collect(backend, "hi")
    assert "inherited-credential-value" not in str(caught.value)
    assert "auth failed for [REDACTED]" in (caught.value.stderr_tail or "")


async def test_death_by_signal_is_reported_with_the_signal(make_backend: Any, collect: Any) -> None:
    with pytest.raises(BackendError) as caught:
        await collect(make_backend("signal", "SIGKILL"), "hi")
    assert caught.value.signal == signal.SIGKILL
    assert caught.value.exit_code is None
    assert "SIGKILL" in str(caught.value)


async def test_a_missing_binary_raises_backend_error(collect: Any, tmp_path: Path) -> None:
    backend = ProcessBackend({"command": str(tmp_path / "no-such-cli")})
    with pytest.raises(BackendError, match="cannot start 'no-such-cli'"):
        await collect(backend, "hi")
    assert backend.spawn_count == 0


async def test_timeout_stops_the_whole_group_and_reaps_the_child(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("hang", str(info_file), timeout=0.8, kill_grace=0.2)
    with pytest.raises(RunTimeoutError):
        await collect(backend, "")
    info = json.loads(info_file.read_text())
    assert info["pgid"] == info["pid"]
    group_gone(info["pgid"], info["pid"])


async def test_a_background_child_holding_stdout_does_not_keep_the_run_going(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pgid.json"
    loop = asyncio.get_running_loop()
    started = loop.time()
    events = await collect(make_backend("linger", str(info_file), kill_grace=0.3), "")
    assert _output(events) == "parent done"
    assert loop.time() - started < 40  # a hang bound: the child holds stdout for 600 s
    group_gone(json.loads(info_file.read_text())["pgid"])


async def test_the_request_timeout_applies_when_shorter(make_backend: Any, collect: Any) -> None:
    backend = make_backend("sleep", "30", timeout=60)
    with pytest.raises(RunTimeoutError) as caught:
        await collect(backend, "", timeout=0.5)
    assert caught.value.timeout == 0.5  # which limit fired, not how fast: no wall clock


async def test_closing_the_stream_early_stops_the_process_group(
    group_gone: Any, make_backend: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    stream = make_backend("hang", str(info_file), kill_grace=0.2).run(BackendRequest(""))
    first = await anext(stream)
    assert first == TextDelta("ready")
    await stream.aclose()
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_cancelling_the_consuming_task_stops_the_process_group(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    task, ready = _consume(make_backend("hang", str(info_file), kill_grace=0.2))
    await asyncio.wait_for(ready.wait(), 30)  # the group is whole: pids written, "ready" said
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_backend_aclose_stops_a_run_left_suspended(
    group_gone: Any, make_backend: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("hang", str(info_file), kill_grace=0.2)
    stream = backend.run(BackendRequest(""))
    assert await anext(stream) == TextDelta("ready")
    await backend.aclose()
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])
    await stream.aclose()
    with pytest.raises(BackendError, match="closed"):
        await anext(backend.run(BackendRequest("")))


async def test_a_chatty_stderr_does_not_deadlock_and_its_tail_is_bounded(
    make_backend: Any, collect: Any
) -> None:
    events = await asyncio.wait_for(
        collect(make_backend("stderr-flood", str(8 * 1024 * 1024), timeout=20)), 30
    )
    assert _output(events) == "done"


async def test_stderr_tail_keeps_only_the_last_max_stderr_bytes(
    make_backend: Any, collect: Any
) -> None:
    text = "a" * 5000 + "THE END"
    with pytest.raises(BackendError) as caught:
        await collect(make_backend("fail", "1", text, max_stderr_bytes=100), "")
    tail = caught.value.stderr_tail or ""
    assert tail.endswith("THE END")
    assert len(tail) <= 110


async def test_output_past_the_cap_fails_the_run_and_stops_the_child(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend("flood", str(50 * 1024 * 1024), max_output_bytes=1024 * 1024)
    with pytest.raises(BackendError, match="max_output_bytes"):
        await collect(backend, "")
    assert not backend._running


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"command": ""}, "command"),
        ({"command": "x", "args": "-p"}, "args"),
        ({"command": "x", "input": "file"}, "input"),
        ({"command": "x", "timeout": -1}, "timeout"),
        ({"command": "x", "comand": "typo"}, "unknown option"),
        ({"command": "x", "env": {"A": 1}}, "env"),
    ],
)
def test_invalid_options_are_refused_when_the_backend_is_made(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(BackendError, match=message):
        ProcessBackend(options)


async def test_each_run_starts_a_fresh_process(make_backend: Any, collect: Any) -> None:
    backend = make_backend("echo")
    first = await collect(backend, "one", continue_session=True)
    second = await collect(backend, "two", continue_session=True)
    assert _echo(first)["stdin"] == "one" and _echo(second)["stdin"] == "two"
    assert backend.spawn_count == 2


@pytest.mark.parametrize(
    "prompt",
    [
        "-rf --help",
        "--version",
        "Grüße, 世界 🚀 \u00e9\u0301 \u200b",
        "-n\n$HOME `id` $(id) '\"\\ \x00 nul inside",
    ],
)
async def test_stdin_prompts_arrive_byte_exact_and_never_become_arguments(
    make_backend: Any, collect: Any, prompt: str
) -> None:
    echoed = _echo(await collect(make_backend("echo"), prompt))
    assert echoed["stdin"] == prompt
    assert echoed["argv"] == ["echo"]


async def test_argument_mode_passes_non_ascii_as_one_exact_utf8_argument(
    make_backend: Any, collect: Any
) -> None:
    prompt = "-x Grüße 世界 🚀 $(id) * ?"
    echoed = _echo(await collect(make_backend("echo", input="argument"), prompt))
    assert echoed["argv"] == ["echo", prompt]


async def test_a_prompt_with_a_lone_surrogate_is_refused_before_any_spawn(
    make_backend: Any, collect: Any
) -> None:
    for mode in ("stdin", "argument"):
        backend = make_backend("echo", input=mode)
        with pytest.raises(BackendError, match="not valid Unicode"):
            await collect(backend, "bad \ud800 text")
        assert backend.spawn_count == 0


async def test_a_nul_byte_cannot_be_an_argument_and_nothing_is_spawned(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend("echo", input="argument")
    with pytest.raises(BackendError, match="NUL byte"):
        await collect(backend, "a\x00b")
    assert backend.spawn_count == 0


async def test_a_missing_cwd_is_named_in_the_error(make_backend: Any, collect: Any) -> None:
    backend = make_backend("echo", cwd="/no/such/directory")
    with pytest.raises(BackendError, match="cwd is not a directory: /no/such/directory"):
        await collect(backend, "hi")


async def test_ten_mib_of_stderr_interleaved_with_stdout_never_deadlocks(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend("interleave", str(10 * 1024 * 1024), timeout=30)
    events = await asyncio.wait_for(collect(backend, ""), 40)
    output = _output(events)
    assert output.endswith("end")
    assert output.count("o") == 100_000 * 16  # 160 blocks of stderr: stdout after every tenth


async def test_a_grandchild_that_left_the_group_cannot_keep_the_run_going(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "escaped.json"
    loop = asyncio.get_running_loop()
    started = loop.time()
    try:
        events = await collect(make_backend("escape", str(info_file), kill_grace=0.2), "")
        assert _output(events) == "parent done"
        assert loop.time() - started < 40  # a hang bound: it holds stdout and stderr 60 s
    finally:
        grandchild = json.loads(info_file.read_text())["grandchild"]
        with contextlib.suppress(ProcessLookupError):
            os.kill(grandchild, signal.SIGKILL)  # out of the backend's reach, as documented
        with contextlib.suppress(ChildProcessError):
            await asyncio.to_thread(os.waitpid, grandchild, 0)  # ours to reap as subreaper


async def test_the_grace_period_passes_before_sigkill_for_a_child_ignoring_sigterm(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    loop = asyncio.get_running_loop()
    backend = make_backend("hang", str(info_file), timeout=0.5, kill_grace=1.0)
    started = loop.time()
    with pytest.raises(RunTimeoutError):
        await collect(backend, "")
    assert loop.time() - started >= 1.4  # the timeout, then the whole grace period
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_credentials_of_common_shapes_are_redacted_from_the_stderr_tail(
    make_backend: Any, collect: Any
) -> None:
    secrets = (
        "json-quoted-value-123",
        "AKIAABCDEFGHIJKLMNOP",
        "ghp_abcdefghijklmnopqrstuvwx1234",
        "eyJhbGciOiJI.eyJzdWIiOiIx.c2lnbmF0dXJl",
        "ghs-short-token",
    )
    noise = (
        f'config {{"api_key": "{secrets[0]}"}} aws {secrets[1]} gh {secrets[2]} '
        f"jwt {secrets[3]} GITHUB_TOKEN={secrets[4]} but /usr/lib/python3/x.py stays"
    )
    with pytest.raises(BackendError) as caught:
        await collect(make_backend("fail", "2", noise), "")
    tail = caught.value.stderr_tail or ""
    assert "/usr/lib/python3/x.py stays" in tail
    for secret in secrets:
        assert secret not in tail and secret not in str(caught.value)


async def test_aclose_during_a_run_fails_it_as_closed_and_stops_the_group(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("hang", str(info_file), kill_grace=0.2)
    task, ready = _consume(backend)
    await asyncio.wait_for(ready.wait(), 30)
    await backend.aclose()
    with pytest.raises(BackendError, match="the backend was closed"):
        await asyncio.wait_for(task, 30)
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


async def test_a_credential_cut_in_half_by_the_tail_limit_is_not_shown(
    make_backend: Any, collect: Any
) -> None:
    secret_end = "TAILOFSECRET0123456789"
    text = "OPENAI_API_KEY=sk-" + "k" * 200 + secret_end + "\nlast line of the error"
    with pytest.raises(BackendError) as caught:
        await collect(make_backend("fail", "1", text, max_stderr_bytes=60), "")
    tail = caught.value.stderr_tail or ""
    assert tail.endswith("last line of the error")
    assert secret_end not in tail and secret_end not in str(caught.value)


# -- a command that closes stdout and lingers --------------------------------------------------


async def test_a_command_that_closes_stdout_and_lingers_is_stopped_after_exit_grace(
    group_gone: Any, make_backend: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("close-stdout", str(info_file), exit_grace=0.5, kill_grace=0.2)
    events: list[Any] = []

    async def run() -> None:
        async for event in backend.run(BackendRequest("")):
            events.append(event)

    with pytest.raises(BackendError) as caught:
        await asyncio.wait_for(run(), 60)  # no timeout option: exit_grace alone ends it
    assert "closed stdout but had not exited exit_grace=0.5 s later" in str(caught.value)
    assert "process group was stopped" in str(caught.value)
    assert caught.value.exit_code is None and caught.value.signal is None
    assert events == [TextDelta("answer")]  # what it wrote was streamed, not kept as a result
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])
    assert not backend._running


async def test_a_command_that_closes_stdout_then_exits_within_exit_grace_succeeds(
    make_backend: Any, collect: Any
) -> None:
    events = await collect(make_backend("close-then-exit", exit_grace=60), "")
    assert _output(events) == "answer"


async def test_a_timeout_during_the_exit_grace_stops_the_group(
    group_gone: Any, make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("close-stdout", str(info_file), exit_grace=600, kill_grace=0.2)
    with pytest.raises(RunTimeoutError):
        await asyncio.wait_for(collect(backend, "", timeout=0.5), 60)
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])


def _suspended_in(generator: Any, name: str) -> bool:
    """Whether the async ``generator`` is suspended in the function ``name``, directly or
    through the coroutines it awaits (its chain of ``ag_await`` and ``cr_await``)."""
    awaiting = generator.ag_await
    while awaiting is not None:
        code = getattr(awaiting, "cr_code", None)
        if code is not None and code.co_name == name:
            return True
        awaiting = getattr(awaiting, "cr_await", None)
    return False


async def test_cancelling_during_the_exit_grace_stops_the_group(
    group_gone: Any, make_backend: Any, tmp_path: Path
) -> None:
    info_file = tmp_path / "pids.json"
    backend = make_backend("close-stdout", str(info_file), exit_grace=600, kill_grace=0.2)
    stream = backend.run(BackendRequest(""))
    events: list[Any] = []

    async def run() -> None:
        async for event in stream:
            events.append(event)

    task = asyncio.create_task(run())
    loop = asyncio.get_running_loop()
    deadline = loop.time() + 30  # a bound on a hang only
    while not _suspended_in(stream, "wait_exit"):  # stdout has ended: the exit grace runs
        assert loop.time() < deadline, "the run never reached the exit grace"
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert events == [TextDelta("answer")]
    info = json.loads(info_file.read_text())
    group_gone(info["pgid"], info["pid"])
    assert not backend._running


def test_exit_grace_must_be_a_number_of_seconds() -> None:
    for value in (-1, "5", True):
        with pytest.raises(BackendError, match="exit_grace"):
            ProcessBackend({"command": "x", "exit_grace": value})
    assert ProcessBackend({"command": "x", "exit_grace": 0}).options.exit_grace == 0


# -- what an error shows and holds -------------------------------------------------------------

PROMPT_SECRET = "the confidential plan for project nightingale"
ENV_SECRET = "child-secret-value-4242"
#: Terminal control left in text: ESC, BEL, CR or any other C0/C1 control but tab and newline.
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


async def test_terminal_control_from_the_child_never_reaches_the_error(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend("leak", "CHILD_SECRET", env={"CHILD_SECRET": ENV_SECRET})
    with pytest.raises(BackendError) as caught:
        await collect(backend, "hi there")
    tail = caught.value.stderr_tail or ""
    for text in (str(caught.value), tail):
        assert not _CONTROL.search(text), repr(text)
    assert "fatal:" in tail and "pwned title" not in tail
    assert tail.endswith("last\tline")  # tabs and newlines stay


async def test_an_error_holds_neither_the_echoed_prompt_nor_the_env_value(
    make_backend: Any, collect: Any
) -> None:
    backend = make_backend("leak", "CHILD_SECRET", env={"CHILD_SECRET": ENV_SECRET})
    with pytest.raises(BackendError) as caught:
        await collect(backend, f"{PROMPT_SECRET}\nsecond line", system_prompt="SYSTEM RULES 42")
    assert "fatal:" in (caught.value.stderr_tail or "")
    assert_holds_no_secret(caught.value, PROMPT_SECRET, ENV_SECRET, "SYSTEM RULES 42")


@pytest.mark.parametrize(
    ("mode", "options", "error"),
    [
        (("signal", "SIGKILL"), {}, BackendError),
        (("sleep", "30"), {"timeout": 0.3}, RunTimeoutError),
        (("flood", str(4 * 1024 * 1024)), {"max_output_bytes": 1024}, BackendError),
    ],
    ids=["crash", "timeout", "too-much-output"],
)
async def test_errors_of_every_kind_hold_neither_the_prompt_nor_the_env_value(
    make_backend: Any, collect: Any, mode: tuple[str, ...], options: Any, error: type[Exception]
) -> None:
    backend = make_backend(*mode, env={"CHILD_SECRET": ENV_SECRET}, kill_grace=0.2, **options)
    with pytest.raises(error) as caught:
        await collect(backend, PROMPT_SECRET)
    assert_holds_no_secret(caught.value, PROMPT_SECRET, ENV_SECRET)


async def test_refusals_before_the_spawn_hold_nothing_of_what_failed(
    make_backend: Any, collect: Any, tmp_path: Path
) -> None:
    surrogate = f"{PROMPT_SECRET} \ud800"
    with pytest.raises(BackendError) as refused:
        await collect(make_backend("echo"), surrogate)
    missing = ProcessBackend({"command": str(tmp_path / "no-such-cli"), "input": "argument"})
    with pytest.raises(BackendError) as not_started:
        await collect(missing, PROMPT_SECRET)
    for caught in (refused, not_started):
        assert caught.value.__context__ is None and caught.value.__cause__ is None
        assert_holds_no_secret(caught.value, PROMPT_SECRET)  # a part of the surrogate prompt


async def test_every_async_test_runs_with_the_leaked_generator_check() -> None:
    finalizer = sys.get_asyncgen_hooks().finalizer
    assert "generators_closed" in getattr(finalizer, "__qualname__", "")  # see conftest.py


def _consume(backend: ProcessBackend) -> tuple[asyncio.Task[None], asyncio.Event]:
    """A task consuming one run of ``backend``, and the event it sets once the command has
    said "ready" (the fake CLI's ``hang`` mode says it once its group is complete)."""
    ready = asyncio.Event()

    async def consume() -> None:
        said = ""
        async for event in backend.run(BackendRequest("")):
            if isinstance(event, TextDelta):
                said += event.text
                if "ready" in said:
                    ready.set()

    return asyncio.create_task(consume()), ready
