"""The daily session of docs/cli.md ("A day with oma") is a real transcript: it runs again,
command by command, and prints what the page shows.

The block after ``<!-- daily-session -->`` runs line by line in bash through the real ``oma``
command, in one fresh ``$OMA_HOME`` and an empty working folder holding ``examples/cat.png``
(the session writes a plan file there), with the built-in providers and oma-openai. The page's
local server, ``http://127.0.0.1:8080/v1``, is the plugin's fake Chat Completions service on
a free port (the page's address is swapped for it in the commands and the expected output);
it takes only ``$LOCAL_KEY`` and answers ``REPLIES`` in order. In expected output a ``...``
line stands for any lines and ``...`` in a line for any characters, as in test_cli_docs.py.

``python tests/test_cli_daily.py`` prints the session as it runs now, to paste into the page.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "cli.md"
MARKER = "<!-- daily-session -->"
PAGE_ADDRESS = "127.0.0.1:8080"
LOCAL_KEY = "sk-local-not-a-real-key"
#: The ``--schema-multi breed`` answer: the object the page prints, as the model sends it.
MULTI_ANSWER = '{"items": [{"breed": "Persian"}, {"breed": "Maine Coon"}]}'
#: What the local server answers, in order (a streamed answer is streamed).
REPLIES = (
    "A grey cat on a sofa.",
    "Grey, with white paws.",
    "Beagle.",
    "Collie.",
    "Siamese.",
    MULTI_ANSWER,
    "Robin.",
)


def session_commands() -> list[tuple[int, str, str]]:
    """The daily session's ``$`` lines: (line number, command, expected output)."""
    text = PAGE.read_text(encoding="utf-8")
    start = text.index(MARKER)
    fence = text.index("```console\n", start) + len("```console\n")
    end = text.index("\n```", fence)
    first = text.count("\n", 0, fence) + 1
    commands: list[tuple[int, str, str]] = []
    for offset, line in enumerate(text[fence:end].splitlines()):
        if line.startswith("$ "):
            commands.append((first + offset, line[2:], ""))
        else:
            assert commands, f"docs/cli.md:{first + offset}: output before any command"
            number, command, expected = commands[-1]
            commands[-1] = (number, command, expected + line + "\n")
    return commands


def pattern(expected: str) -> re.Pattern[str]:
    parts = []
    for line in expected.splitlines():
        if line.strip() == "...":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(re.escape(line.rstrip()).replace(re.escape("..."), r"[^\n]*") + r"\n")
    return re.compile("".join(parts))


def environment(home: Path, bin_dir: Path) -> dict[str, str]:
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "oma"
    shim.write_text(f'#!/bin/sh\nexec "{sys.executable}" -m oma_core.cli "$@"\n')
    shim.chmod(0o755)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMA_", "OPENAI_"))}
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy"):
        env.pop(name, None)
    env.update(
        PATH=f"{bin_dir}{os.pathsep}{env.get('PATH', '')}",
        OMA_HOME=str(home),
        OMA_LOAD_PLUGINS="openai",
        LOCAL_KEY=LOCAL_KEY,
        COLUMNS="80",
    )
    return env


def workdir(folder: Path) -> Path:
    """The session's working folder: empty but for the page's picture."""
    (folder / "examples").mkdir(parents=True)
    shutil.copyfile(ROOT / "examples" / "cat.png", folder / "examples" / "cat.png")
    return folder


def run(command: str, env: dict[str, str], cwd: Path) -> tuple[int, str]:
    done = subprocess.run(
        ["bash", "-c", command],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        cwd=cwd,
        env=env,
        timeout=120,
        check=False,
    )
    return done.returncode, "".join(line.rstrip() + "\n" for line in done.stdout.splitlines())


@pytest.fixture
def local_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The page's local server: the fake Chat Completions service, taking ``LOCAL_KEY``."""
    oma_openai = pytest.importorskip("oma_openai", reason="the session uses oma-openai")
    monkeypatch.syspath_prepend(str(Path(oma_openai.__file__).parents[1] / "tests"))
    from fake_openai import FakeChatCompletions, Reply

    with FakeChatCompletions(api_key=LOCAL_KEY) as server:
        server.reply(*(Reply(text) for text in REPLIES))
        yield server


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_the_daily_session_runs_as_the_page_shows_it(local_server: Any, tmp_path: Path) -> None:
    address = local_server.url.removeprefix("http://")
    env = environment(tmp_path / "home", tmp_path / "bin")
    cwd = workdir(tmp_path / "work")
    commands = session_commands()
    assert len(commands) >= 10
    for number, command, expected in commands:
        status, output = run(command.replace(PAGE_ADDRESS, address), env, cwd)
        expected = expected.replace(PAGE_ADDRESS, address)
        failed = any(line.startswith("error: ") for line in expected.splitlines())
        assert (status != 0) == failed, f"docs/cli.md:{number}: $ {command}\n{output}"
        assert pattern(expected).fullmatch(output), (
            f"docs/cli.md:{number}: $ {command}\n--- expected\n{expected}--- got\n{output}"
        )
    # What the server saw: only its own key, the image again on -c, nothing misspelt sent.
    requests = local_server.requests
    assert len(requests) == len(REPLIES)
    assert {r.headers["authorization"] for r in requests} == {f"Bearer {LOCAL_KEY}"}
    first, second = requests[0].json, requests[1].json
    assert first["stream"] is True and first["messages"][0]["role"] == "system"
    image = first["messages"][1]["content"][1]
    assert second["messages"][1]["content"][1] == image  # -c resent the picture
    assert all("tempreature" not in r.json for r in requests)
    # The stored default model, without -m: the default's model, no template's system prompt.
    default_run = requests[REPLIES.index("Siamese.")].json
    assert default_run["model"] == "gpt-4o-mini"
    assert [m["role"] for m in default_run["messages"]] == ["user"]
    assert default_run["messages"][0]["content"] == "Name a cat breed."
    # --schema-multi asked the server for an object of items (strict, as OpenAI wants it).
    multi = requests[REPLIES.index(MULTI_ANSWER)].json
    schema = multi["response_format"]["json_schema"]["schema"]
    assert schema["required"] == ["items"]
    assert schema["properties"]["items"]["items"]["required"] == ["breed"]
    # oma tasks: the plan's agent found the key stored for the server's base URL.
    task_run = requests[REPLIES.index("Robin.")]
    assert task_run.headers["authorization"] == f"Bearer {LOCAL_KEY}"
    assert task_run.json["model"] == "gpt-4o-mini"
    assert "Name a bird." in json.dumps(task_run.json["messages"])


if __name__ == "__main__":  # print the session as it runs now
    sys.path.insert(0, str(ROOT / "plugins" / "oma-openai" / "tests"))
    import tempfile

    from fake_openai import FakeChatCompletions, Reply

    with tempfile.TemporaryDirectory() as folder, FakeChatCompletions(api_key=LOCAL_KEY) as fake:
        fake.reply(*(Reply(text) for text in REPLIES))
        address = fake.url.removeprefix("http://")
        env = environment(Path(folder) / "home", Path(folder) / "bin")
        cwd = workdir(Path(folder) / "work")
        for _line, command, _expected in session_commands():
            _status, output = run(command.replace(PAGE_ADDRESS, address), env, cwd)
            print(f"$ {command}\n{output.replace(address, PAGE_ADDRESS)}", end="")
