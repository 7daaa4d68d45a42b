"""``oma run`` against a fake Chat Completions server, through the real command: the stored
key is used and never logged, ``-c`` continues a logged conversation, retries are shown,
a connection error names the host."""

from __future__ import annotations

import base64
import json
import os
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fake_openai import API_KEY, FakeChatCompletions, Reply

from oma_core.testing.fake_server import Delay, HTTPError

#: A real PNG (the PNG signature, an IHDR chunk, then padding), so the content is sniffed.
PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(180))
PNG_B64 = base64.b64encode(PNG).decode("ascii")


@pytest.fixture
def server() -> Iterator[FakeChatCompletions]:
    with FakeChatCompletions(mode="strict") as srv:
        yield srv  # type: ignore[misc]


@pytest.fixture
def home(tmp_path: Path) -> Path:
    return tmp_path / "home"


def oma(
    home: Path, *args: str, input: bytes = b"", env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("OMA_")}
    base.pop("OPENAI_API_KEY", None)
    base["OMA_HOME"] = str(home)
    env = {**base, **(env or {})}
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", *args],
        input=input,
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    return subprocess.CompletedProcess(
        done.args, done.returncode, done.stdout.decode(), done.stderr.decode()
    )


def logged(home: Path) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = json.loads(oma(home, "logs", "-n", "0", "--json").stdout)
    return runs


@pytest.fixture
def default_host() -> Iterator[tuple[FakeChatCompletions, dict[str, str]]]:
    """A second fake standing in for the provider's default host (api.openai.com), and the
    environment that routes that host to it: the SDK's HTTP client honours ``HTTPS_PROXY``,
    so a request for the default host arrives here as a ``CONNECT`` (127.0.0.1 goes direct)."""
    with FakeChatCompletions(mode="strict") as srv:
        proxy = srv.url
        env = {"HTTPS_PROXY": proxy, "HTTP_PROXY": proxy, "ALL_PROXY": proxy}
        yield srv, {**env, "NO_PROXY": "127.0.0.1,localhost"}  # type: ignore[misc]


@pytest.fixture
def stored_key(home: Path, server: FakeChatCompletions) -> None:
    """``API_KEY`` stored for the provider's own host and for the fake's (a provider-wide
    key is never sent to another host)."""
    for where in ([], ["--base-url", server.base_url]):
        done = oma(home, "keys", "set", "openai", *where, input=f"{API_KEY}\n".encode())
        assert done.returncode == 0, done.stderr


@pytest.mark.usefixtures("stored_key")
def test_continue_sends_the_logged_conversation_to_the_service(
    server: FakeChatCompletions, home: Path, tmp_path: Path
) -> None:
    picture = tmp_path / "cat.png"
    picture.write_bytes(PNG)
    server.reply(Reply("A cat."), Reply("Grey."))
    base = ["--base-url", server.base_url]
    first = oma(home, "run", "-m", "openai:gpt-4o", *base, "what is it?", "-a", str(picture))
    assert first.returncode == 0, first.stderr
    assert first.stdout == "A cat.\n"
    second = oma(home, "run", "-c", *base, "and its colour?")
    assert second.returncode == 0, second.stderr
    assert (second.stdout, second.stderr) == ("Grey.\n", "")

    assert [r.headers["authorization"] for r in server.requests] == [f"Bearer {API_KEY}"] * 2
    sent = server.requests[1].json
    assert sent["model"] == "gpt-4o"  # the logged model, with the logged provider
    roles = [m["role"] for m in sent["messages"]]
    assert roles == ["user", "assistant", "user"]
    first_turn = sent["messages"][0]["content"]
    assert first_turn[0] == {"type": "text", "text": "what is it?"}
    image_url = f"data:image/png;base64,{PNG_B64}"
    assert first_turn[1]["image_url"]["url"] == image_url  # the image, byte for byte, again
    assert base64.b64decode(first_turn[1]["image_url"]["url"].split(",", 1)[1]) == PNG
    assert sent["messages"][1]["content"] in ("A cat.", [{"type": "text", "text": "A cat."}])
    assert server.requests[0].json["messages"][0]["content"][1]["image_url"]["url"] == image_url

    one, two = logged(home)
    assert one["conversation_id"] == two["conversation_id"]
    assert (one["provider"], one["model"], two["model"]) == ("openai", "gpt-4o", "gpt-4o")
    assert (two["input_tokens"], two["output_tokens"]) == (12, 7)
    database = Path(oma(home, "logs", "path").stdout.strip()).read_bytes()
    for secret in (API_KEY, PNG_B64, PNG_B64[:20], f"Bearer {API_KEY}"):
        assert secret.encode() not in database


@pytest.mark.usefixtures("stored_key")
def test_continue_talks_to_the_logged_base_url_never_the_default_host(
    server: FakeChatCompletions,
    home: Path,
    default_host: tuple[FakeChatCompletions, dict[str, str]],
) -> None:
    sentinel, env = default_host
    server.reply(Reply("Two."), Reply("Four."))
    first = oma(
        home, "run", "-m", "openai:gpt-4o", "--base-url", server.base_url, "-o", "temperature",
        "0.25", "-o", "seed", "7", "-o", "max_tokens", "50", "1+1?", env=env,
    )  # fmt: skip
    assert first.returncode == 0, first.stderr
    second = oma(home, "run", "-c", "and doubled?", env=env)
    assert second.returncode == 0, second.stderr
    assert second.stdout == "Four.\n"
    assert sentinel.requests == []
    assert len(server.requests) == 2
    sent = server.requests[1]
    assert sent.headers["authorization"] == f"Bearer {API_KEY}"
    assert sent.json["messages"] == [
        {"role": "user", "content": "1+1?"},
        {"role": "assistant", "content": "Two."},
        {"role": "user", "content": "and doubled?"},
    ]
    body = sent.json
    assert (body["model"], body["temperature"], body["seed"]) == ("gpt-4o", 0.25, 7)
    assert body["max_completion_tokens"] == 50
    one, two = logged(home)
    assert one["base_url"] == two["base_url"] == server.base_url
    assert two["settings"]["provider_options"] == {"seed": 7}
    database = Path(oma(home, "logs", "path").stdout.strip()).read_bytes()
    assert API_KEY.encode() not in database


@pytest.mark.usefixtures("stored_key")
def test_continue_with_a_new_provider_does_not_reuse_the_old_base_url(
    server: FakeChatCompletions,
    home: Path,
    default_host: tuple[FakeChatCompletions, dict[str, str]],
) -> None:
    sentinel, env = default_host
    first = oma(home, "run", "-m", "openai:gpt-4o", "--base-url", server.base_url, "hi", env=env)
    assert first.returncode == 0, first.stderr
    again = oma(home, "run", "-c", "-m", "openai:gpt-4o-mini", "more", "--no-stream", env=env)
    assert again.returncode == 1  # the default host (the sentinel) answers no CONNECT
    assert len(server.requests) == 1
    assert sentinel.requests and sentinel.requests[0].method == "CONNECT"
    assert sentinel.requests[0].path == "api.openai.com:443"


@pytest.mark.usefixtures("stored_key")
def test_continue_refuses_a_base_url_whose_secrets_were_not_logged(
    server: FakeChatCompletions,
    home: Path,
    default_host: tuple[FakeChatCompletions, dict[str, str]],
) -> None:
    sentinel, env = default_host
    url = server.base_url.replace("http://", "http://proxy-user:proxy-secret@")
    # (The URL's user info becomes basic auth, which the fake refuses: the run is logged all
    # the same, and a failed run can be continued.)
    oma(home, "run", "-m", "openai:gpt-4o", "--base-url", url, "hi", env=env)
    (run,) = logged(home)
    assert run["base_url"] == server.base_url and run["settings"]["not_kept"] == ["base_url"]
    again = oma(home, "run", "-c", "more", env=env)
    assert again.returncode == 2
    assert again.stderr == (
        f"error: the conversation talked to {server.base_url} with credentials or a query the "
        "log does not keep: give --base-url again\n"
    )
    assert sentinel.requests == [] and len(server.requests) == 1
    resumed = oma(home, "run", "-c", "--base-url", server.base_url, "more", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert len(server.requests) == 2
    database = Path(oma(home, "logs", "path").stdout.strip()).read_bytes()
    assert b"proxy-secret" not in database


@pytest.mark.usefixtures("stored_key")
def test_a_retry_is_shown_on_stderr_as_it_happens(server: FakeChatCompletions, home: Path) -> None:
    server.enqueue(HTTPError(503, "overloaded", retry_after=0))
    done = oma(home, "run", "-m", "openai:gpt-4o", "--base-url", server.base_url, "hi")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "Hello from the fake service.\n"
    (line,) = done.stderr.splitlines()
    assert line.startswith("retrying: attempt 1 failed (")
    assert "503" in line and line.endswith("; waiting 0.0s")
    assert API_KEY not in done.stderr
    (run,) = logged(home)
    assert run["attempts"] == 2 and run["error"] is None


@pytest.mark.usefixtures("stored_key")
def test_a_connection_error_names_the_host_never_the_key(home: Path) -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    oma(home, "keys", "set", "openai", "--base-url", url, input=f"{API_KEY}\n".encode())
    done = oma(home, "run", "-m", "openai:gpt-4o", "--base-url", url, "hi")
    assert done.returncode == 1
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: ") and f"127.0.0.1:{port}" in last
    assert all(line.startswith("retrying: ") for line in done.stderr.splitlines()[:-1])
    assert API_KEY not in done.stderr and "Traceback" not in done.stderr
    (run,) = logged(home)
    assert run["answer"] is None and "connection" in run["error"].lower()


@pytest.mark.usefixtures("stored_key")
def test_ctrl_c_during_a_request_exits_130_quietly_and_closes_the_connection(
    server: FakeChatCompletions, home: Path
) -> None:
    server.enqueue(Delay(60))
    env = {k: v for k, v in os.environ.items() if not k.startswith("OMA_")}
    env["OMA_HOME"] = str(home)
    command = ["run", "-m", "openai:gpt-4o", "--base-url", server.base_url, "hi"]
    with subprocess.Popen(
        [sys.executable, "-m", "oma_core.cli", *command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env,
        # A runner started in the background ignores SIGINT, and a child inherits that: give
        # the command Python's usual handling, as a terminal would.
        preexec_fn=_default_sigint,
    ) as process:
        for _ in range(6000):  # until the request has arrived (the server holds it)
            if server.requests or process.poll() is not None:
                break
            time.sleep(0.01)
        assert server.requests, "the request never arrived"
        process.send_signal(signal.SIGINT)
        out, err = process.communicate(timeout=60)
    assert process.returncode == 130
    assert (out, err) == (b"", b"")
    assert server.wait_idle(timeout=30), "a connection was left open"
    (run,) = logged(home)
    assert run["error"] == "interrupted"


def _default_sigint() -> None:
    signal.signal(signal.SIGINT, signal.SIG_DFL)
