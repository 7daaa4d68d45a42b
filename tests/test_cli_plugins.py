"""``oma plugins`` at any width: names never cut, key variable and default model shown."""

from __future__ import annotations

import functools
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@functools.cache  # the same command prints the same thing: run each once per process
def plugins(*args: str, columns: str | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}
    env["OMA_LOAD_PLUGINS"] = "testplugin"
    if columns is not None:
        env["COLUMNS"] = columns
    done = subprocess.run(
        [sys.executable, "-m", "oma_core.cli", "plugins", *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=ROOT,
        timeout=60,
        check=True,
    )
    return done.stdout


def names() -> list[str]:
    data = json.loads(plugins("--json"))
    return [*data["providers"], *(p["name"].rpartition(".")[2] for p in data["plugins"])]


@pytest.mark.parametrize("columns", [None, "80", "60", "40"])
def test_no_line_is_wider_than_the_terminal_and_no_name_is_cut(columns: str | None) -> None:
    out = plugins(columns=columns)
    width = int(columns or 80)  # piped: 80 columns
    assert max(len(line.rstrip()) for line in out.splitlines()) <= width
    words = set(re.findall(r"[\w.-]+", out))
    for name in names():
        assert name in words, (name, columns)
    assert "oma_register_providers" in words


def test_each_provider_shows_its_key_variable_and_default_model() -> None:
    data = json.loads(plugins("--json"))
    assert data["providers"]["echo"]["api_key_env"] == []
    out = plugins(columns="120")
    row = re.search(r"^ *shout +- +- *$", out, re.M)
    assert row, out


def test_the_json_lists_key_variable_default_model_and_base_url() -> None:
    data = json.loads(plugins("--json"))
    for entry in data["providers"].values():
        assert {"api_key_env", "default_model", "default_base_url"} <= set(entry)


def test_a_narrow_terminal_gets_the_thinking_and_caching_tables_as_labelled_lines() -> None:
    out = plugins(columns="40")
    thinking = out[out.index("Thinking and reasoning") : out.index("Prompt caching")]
    assert re.search(r"^  echo: thinking yes, reasoning yes,\n +model rules 0$", thinking, re.M)
    narrower = plugins(columns="30")  # the caching table is 31 columns wide
    caching = narrower[narrower.index("Prompt caching") :]
    assert re.search(r"^  echo: caching no, on -$", caching, re.M), caching
