"""The run log: every ``oma run`` in SQLite, ``oma logs``, and ``oma run -c`` from it."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import sqlite3
import stat
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from _builders import oma
from _waiting import until
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, PluginHost, RunLog, RunSettings
from oma_core._run_log import MalformedRunError

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(200))
PNG_B64 = base64.b64encode(PNG).decode("ascii")
KEY = "sk-test-logkey-0123456789abcdef"


pytestmark = pytest.mark.usefixtures("cli_home")


def logged() -> list[dict[str, Any]]:
    result = oma("logs", "-n", "0", "--json")
    assert result.exit_code == 0, result.output
    runs: list[dict[str, Any]] = json.loads(result.stdout)
    return runs


def scripted(*answers: str) -> list[str]:
    return ["-p", "scripted", "-o", "responses", json.dumps(list(answers))]


@pytest.fixture
def png(tmp_path: Path) -> str:
    path = tmp_path / "cat.png"
    path.write_bytes(PNG)
    return str(path)


def test_every_run_is_logged_with_provider_model_conversation_answer_and_usage() -> None:
    assert oma("run", "hi", "-s", "be brief").exit_code == 0
    answer = 'system: "be brief"\nuser: text "hi"'
    (run,) = logged()
    assert run["provider"] == "echo"
    assert run["system"] == "be brief"
    assert run["messages"] == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]
    assert run["answer"] == {
        "role": "assistant",
        "content": [{"type": "text", "text": answer}],
    }
    assert run["output"] == answer
    assert run["input_tokens"] > 0 and run["output_tokens"] > 0
    assert (run["calls"], run["attempts"], run["error"]) == (1, 1, None)
    assert run["duration_ms"] >= 0
    assert run["conversation_id"]


def test_the_database_is_in_the_data_directory_with_mode_0600(tmp_path: Path) -> None:
    oma("run", "hi")
    path = Path(oma("logs", "path").stdout.strip())
    assert path == tmp_path / "home" / "logs.db"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


def test_media_is_logged_as_type_size_and_sha256_never_payload_or_key(png: str) -> None:
    result = oma("run", "what is it?", "-a", png, "--api-key", KEY, "--no-stream")
    assert result.exit_code == 0, result.output
    (run,) = logged()
    image = run["messages"][0]["content"][1]
    assert image == {
        "type": "image",
        "source": {
            "media_type": "image/png",
            "bytes": len(PNG),
            "sha256": hashlib.sha256(PNG).hexdigest(),
        },
    }
    raw = Path(oma("logs", "path").stdout.strip()).read_bytes()
    for secret in (KEY, PNG_B64, PNG_B64[:24], PNG_B64[-24:]):
        assert secret.encode() not in raw
    assert PNG[16:80] not in raw


def test_a_failed_run_is_logged_with_its_error_and_exits_1() -> None:
    result = oma("run", "hi", "-p", "scripted")
    assert result.exit_code == 1
    (run,) = logged()
    assert run["answer"] is None
    assert "ScriptedProvider is exhausted" in run["error"]


def test_logs_off_stops_logging_and_on_resumes() -> None:
    assert oma("logs", "off").exit_code == 0
    oma("run", "one")
    assert logged() == []
    assert oma("logs", "status").stdout.startswith("logging is off; 0 runs in ")
    oma("logs", "on")
    oma("run", "two")
    assert [r["messages"][0]["content"][0]["text"] for r in logged()] == ["two"]
    assert oma("logs", "status").stdout.startswith("logging is on; 1 run in ")


def test_no_log_skips_one_run() -> None:
    oma("run", "--no-log", "one")
    assert logged() == []


def test_logs_shows_the_last_n_and_searches() -> None:
    for prompt in ("alpha", "beta", "gamma", "delta"):
        oma("run", prompt)
    text = oma("logs").stdout
    assert "> alpha" not in text
    assert [line for line in text.splitlines() if line.startswith("> ")] == [
        "> beta",
        "> gamma",
        "> delta",
    ]
    one = oma("logs", "-n", "1", "--json")
    assert [r["output"] for r in json.loads(one.stdout)] == ['user: text "delta"']
    found = json.loads(oma("logs", "-q", "gam", "--json").stdout)
    assert [r["output"] for r in found] == ['user: text "gamma"']


@pytest.mark.parametrize(
    ("example", "shown"),
    [
        ("cat.png", "[image image/png]"),
        ("report.pdf", "[document application/pdf]"),
        ("voice.wav", "[audio audio/wav]"),
    ],
)
def test_logs_names_each_media_block_of_the_prompt(example: str, shown: str) -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / example
    assert oma("run", "what is in it?", "-a", str(path)).exit_code == 0
    prompts = [line for line in oma("logs").stdout.splitlines() if line.startswith("> ")]
    assert prompts == [f"> what is in it? {shown}"]


# -- -q: full-text search (FTS5), and LIKE where SQLite has no FTS5


@pytest.fixture(params=["fts5", "like"])
def search_mode(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each search test twice: with SQLite's FTS5, and as on a SQLite without it."""
    import oma_core._run_log

    if request.param == "like":
        monkeypatch.setattr(oma_core._run_log, "_FTS5", False)
    else:
        assert oma_core._run_log._has_fts5(), "this SQLite has no FTS5"
    return str(request.param)


def found(*query: str) -> list[str]:
    result = oma("logs", "-n", "0", "--json", "-q", *query)
    assert result.exit_code == 0, result.output
    return [r["messages"][-1]["content"][0]["text"] for r in json.loads(result.stdout)]


def indexed_rows(tmp_path: Path) -> list[tuple[int, str]]:
    with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
        return [(rowid, text) for rowid, text in db.execute("SELECT rowid, text FROM runs_fts")]


def test_q_keeps_runs_holding_every_word_of_prompt_system_or_answer(search_mode: str) -> None:
    oma("run", *scripted("Noted."), "the quick brown fox", "-s", "be terse")
    oma("run", *scripted("Woof."), "lazy dogs")
    oma("run", *scripted("Paris is the capital."), "gamma question")
    assert found("quick fox") == ["the quick brown fox"]
    assert found("BROWN") == ["the quick brown fox"]  # any case
    assert found("terse") == ["the quick brown fox"]  # the system prompt
    assert found("capital") == ["gamma question"]  # the answer
    assert found("gam") == ["gamma question"]  # the start of a word
    assert found("quick dogs") == []  # every word
    assert found("lazy") == ["lazy dogs"]


@pytest.mark.parametrize("query", ['"', "AND", "*", "NEAR(", "a OR b", "col:x", "-", "100%", "_"])
def test_q_takes_the_text_literally_never_as_query_syntax(query: str, search_mode: str) -> None:
    oma("run", *scripted("ok"), "plain words")
    assert found(query) == []


def test_q_indexes_no_media_and_no_digest(png: str, tmp_path: Path) -> None:
    oma("run", *scripted("ok"), "look closely", "-a", png)
    digest = hashlib.sha256(PNG).hexdigest()
    assert found("look") == ["look closely"]
    for query in ("png", "image", digest[:12], digest, "media_type", "sha256"):
        assert found(query) == [], query
    ((_, text),) = indexed_rows(tmp_path)
    assert text == "look closely\nok"


def test_the_index_follows_rm_and_prune(search_mode: str, tmp_path: Path) -> None:
    cid = json.loads(oma("run", "--json", *scripted("a1"), "apple one").stdout)["conversation_id"]
    oma("run", *scripted("b1"), "banana one")
    oma("run", *scripted("c1"), "cherry one")
    assert oma("logs", "rm", cid).exit_code == 0
    assert found("one") == ["banana one", "cherry one"]
    assert oma("logs", "prune", "--keep", "1").exit_code == 0
    assert found("one") == ["cherry one"]
    if search_mode == "fts5":
        with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
            ids = [row[0] for row in db.execute("SELECT id FROM runs")]
        assert [rowid for rowid, _ in indexed_rows(tmp_path)] == ids


def test_a_log_written_without_fts5_is_indexed_by_the_next_write_with_it(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    import oma_core._run_log

    with monkeypatch.context() as without:
        without.setattr(oma_core._run_log, "_FTS5", False)
        oma("run", *scripted("x"), "written without")
        oma("run", *scripted("y"), "the index")
        assert found("without") == ["written without"]  # by LIKE
    with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
        tables = [row[0] for row in db.execute("SELECT name FROM sqlite_master")]
    assert "runs_fts" not in tables
    oma("run", *scripted("z"), "then with it")
    assert found("without") == ["written without"]
    assert [text for _, text in indexed_rows(tmp_path)] == [
        "written without\nx",
        "the index\ny",
        "then with it\nz",
    ]


def test_each_run_is_indexed_once_a_continued_one_with_the_history_it_sent(
    tmp_path: Path,
) -> None:
    oma("run", *scripted("first"), "hello there")
    cid = logged()[0]["conversation_id"]
    oma("run", "--cid", cid, *scripted("second"), "and again")
    assert found("hello") == ["hello there", "and again"]  # the history sent holds it too
    assert found("again") == ["and again"]
    assert [text for _, text in indexed_rows(tmp_path)] == [
        "hello there\nfirst",
        "hello there\nfirst\nand again\nsecond",
    ]


@settings(max_examples=60, deadline=None)
@given(query=st.text(max_size=20), fts5=st.booleans())
@example(query="0\x00", fts5=True)  # SQLite ends a query string at NUL
@example(query="plain\x00words", fts5=False)
def test_any_query_text_searches_without_error(query: str, fts5: bool) -> None:
    import tempfile

    import oma_core._run_log

    previous = oma_core._run_log._FTS5
    with tempfile.TemporaryDirectory() as directory:
        log = RunLog(Path(directory) / "logs.db")
        try:
            oma_core._run_log._FTS5 = None if fts5 else False
            row = {"run_id": "r1", "conversation_id": "c1", "datetime_utc": "2026-01-01"}
            text = [{"role": "user", "content": [{"type": "text", "text": "plain words"}]}]
            log.write({**row, "provider": "echo", "messages": text, "output": "an answer"})
            found = log.runs(None, search=query)
        finally:
            oma_core._run_log._FTS5 = previous
    words = query.split()
    assert len(found) <= 1
    if words and all(word.lower() in ("plain", "words", "an", "answer") for word in words):
        assert len(found) == 1


def test_logs_refuses_a_negative_count() -> None:
    oma("run", "one")
    result = oma("logs", "-n", "-1")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Invalid value for '-n' / '--count': -1 is not in the range x>=0. "
        "(see `oma logs --help`)\n"
    )
    assert result.stdout == ""


def test_logs_filters_by_model() -> None:
    oma("run", "one", *scripted("One."), "-m", "alpha")
    oma("run", "two", *scripted("Two."), "-m", "beta")
    oma("run", "three")
    found = json.loads(oma("logs", "-m", "alpha", "--json").stdout)
    assert [r["output"] for r in found] == ["One."]
    found = json.loads(oma("logs", "-m", "scripted:beta", "--json").stdout)
    assert [r["output"] for r in found] == ["Two."]
    assert json.loads(oma("logs", "-m", "gamma", "--json").stdout) == []


def test_logs_since_keeps_the_runs_logged_since_an_age_or_a_date(tmp_path: Path) -> None:
    oma("run", "old")
    with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
        db.execute("UPDATE runs SET datetime_utc = '2020-01-01T00:00:00+00:00'")
    oma("run", "new")
    for since in ("2h", "7d", "2021-01-01", "2021-01-01T10:00:00+02:00"):
        found = json.loads(oma("logs", "--since", since, "--json").stdout)
        assert [r["messages"][0]["content"][0]["text"] for r in found] == ["new"], since
    assert len(json.loads(oma("logs", "--since", "2019-12-31", "--json").stdout)) == 2
    bad = oma("logs", "--since", "yesterday")
    assert bad.exit_code == 2
    assert bad.stderr.startswith("error: --since 'yesterday' is neither an age")


def test_logs_usage_sums_tokens_per_model_over_all_runs() -> None:
    for prompt in ("one", "two", "three", "four"):
        oma("run", prompt)
    oma("run", "five", *scripted("Five."), "-m", "tiny")
    runs = logged()
    echo = [r for r in runs if r["provider"] == "echo"]
    table = json.loads(oma("logs", "-u", "--json").stdout)
    assert table["runs"] == 5
    assert table["input_tokens"] == sum(r["input_tokens"] for r in runs)
    assert [(m["model"], m["runs"]) for m in table["models"]] == [
        (f"echo:{echo[0]['model']}" if echo[0]["model"] else "echo", 4),
        ("scripted:tiny", 1),
    ]
    text = oma("logs", "-u").stdout.splitlines()
    assert text[-1] == (f"total  5 runs, {table['input_tokens']} in, {table['output_tokens']} out")


def test_run_json_names_the_conversation_and_logs_cid_filters_it() -> None:
    first = json.loads(oma("run", "--json", "first").stdout)["conversation_id"]
    oma("run", "second")
    (run,) = json.loads(oma("logs", "--cid", first, "--json").stdout)
    assert run["output"] == 'user: text "first"'


# -- -c: continue a conversation --------------------------------------------------------------


def test_continue_sends_the_logged_conversation_as_history(png: str) -> None:
    first = oma("run", "what is it?", "-a", png, *scripted("A cat."))
    assert first.exit_code == 0, first.output
    second = oma("run", "-c", "and its colour?", *scripted("Grey."))
    assert second.exit_code == 0, second.output
    assert (second.stdout, second.stderr) == ("Grey.\n", "")
    one, two = logged()
    assert one["conversation_id"] == two["conversation_id"]
    sent = two["messages"]
    assert [m["role"] for m in sent] == ["user", "assistant", "user"]
    assert sent[0]["content"] == one["messages"][0]["content"]  # the image, sent again
    assert sent[0]["content"][1]["source"]["sha256"] == hashlib.sha256(PNG).hexdigest()
    assert sent[1]["content"] == [{"type": "text", "text": "A cat."}]
    assert sent[2]["content"] == [{"type": "text", "text": "and its colour?"}]


# -- the media store ---------------------------------------------------------------------------


def media_dir(tmp_path: Path) -> Path:
    return tmp_path / "home" / "media"


def test_media_are_kept_by_hash_in_a_private_store_beside_the_log(png: str, tmp_path: Path) -> None:
    assert oma("run", "what is it?", "-a", png).exit_code == 0
    store = media_dir(tmp_path)
    (kept,) = store.iterdir()
    assert kept.name == hashlib.sha256(PNG).hexdigest()
    assert kept.read_bytes() == PNG
    assert stat.S_IMODE(store.stat().st_mode) == 0o700
    assert stat.S_IMODE(kept.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("example", "kind"),
    [("report.pdf", "document"), ("memo.md", "document"), ("voice.wav", "audio")],
)
def test_documents_and_audio_are_kept_and_resent_on_c(
    example: str, kind: str, tmp_path: Path
) -> None:
    path = Path(__file__).resolve().parents[1] / "examples" / example
    first = oma("run", "what is in it?", "-a", str(path))
    assert first.exit_code == 0, first.output
    assert f"; {kind} " in first.stdout
    (kept,) = media_dir(tmp_path).iterdir()
    assert kept.read_bytes() == path.read_bytes()
    again = oma("run", "-c", "and then?")
    assert again.exit_code == 0, again.output
    assert again.stderr == ""  # nothing left out
    # echo describes the whole conversation: the first turn comes back with its media
    assert again.stdout.startswith(f'user: text "what is in it?"; {kind} ')
    assert again.stdout.endswith('user: text "and then?"\n')


def test_a_loose_media_store_is_tightened_to_0700(png: str, tmp_path: Path) -> None:
    media_dir(tmp_path).mkdir(parents=True, mode=0o755)
    media_dir(tmp_path).chmod(0o755)
    assert oma("run", "what is it?", "-a", png).exit_code == 0
    assert stat.S_IMODE(media_dir(tmp_path).stat().st_mode) == 0o700


def test_logs_off_keeps_neither_the_run_nor_its_media(png: str, tmp_path: Path) -> None:
    assert oma("logs", "off").exit_code == 0
    result = oma("run", "what is it?", "-a", png)
    assert result.exit_code == 0, result.output
    assert "image image/png" in result.stdout  # the picture was sent
    assert logged() == []
    assert not media_dir(tmp_path).exists() or not any(media_dir(tmp_path).iterdir())


def test_no_log_keeps_neither_the_run_nor_its_media(png: str, tmp_path: Path) -> None:
    result = oma("run", "--no-log", "what is it?", "-a", png)
    assert result.exit_code == 0, result.output
    assert "image image/png" in result.stdout
    assert logged() == []
    assert not media_dir(tmp_path).exists() or not any(media_dir(tmp_path).iterdir())


def test_no_keep_media_logs_the_run_but_keeps_no_media(png: str, tmp_path: Path) -> None:
    assert oma("run", "what is it?", "-a", png, "--no-keep-media").exit_code == 0
    assert len(logged()) == 1
    assert not media_dir(tmp_path).exists() or not any(media_dir(tmp_path).iterdir())
    again = oma("run", "-c", "and now?")
    assert again.exit_code == 0
    assert again.stderr.startswith("note: 1 media block of the logged conversation is not in ")
    placeholder = logged()[-1]["messages"][0]["content"][1]["text"]
    assert placeholder.startswith(f"[image image/png, {len(PNG)} bytes, sha256 ")


def test_a_changed_media_file_is_not_sent_again(png: str, tmp_path: Path) -> None:
    oma("run", "what is it?", "-a", png)
    (kept,) = media_dir(tmp_path).iterdir()
    kept.write_bytes(PNG[:-1] + b"!")  # same size, other bytes
    again = oma("run", "-c", "and now?")
    assert again.exit_code == 0
    assert "is not in the media store" in again.stderr and "or changed since" in again.stderr
    assert logged()[-1]["messages"][0]["content"][1]["type"] == "text"


def test_a_url_without_a_query_is_sent_again_one_with_a_query_is_not() -> None:
    plain = "https://example.com/cat.png"
    signed = "https://example.com/dog.png?sig=abc123secret"
    first = oma("run", "two pictures", "-a", plain, "-a", signed, *scripted("Two."))
    assert first.exit_code == 0, first.output
    (run,) = logged()
    assert run["messages"][0]["content"][1]["source"]["url"] == plain
    assert run["messages"][0]["content"][2]["source"] == {
        "type": "url",
        "media_type": "image/png",
        "url": "https://example.com/dog.png",
        "redacted": True,
    }
    again = oma("run", "-c", "which is nicer?")
    assert again.exit_code == 0, again.output
    assert again.stderr.startswith("note: 1 media block of the logged conversation had a URL ")
    content = logged()[-1]["messages"][0]["content"]
    assert content[1]["source"]["url"] == plain
    assert content[2] == {
        "type": "text",
        "text": "[image image/png at https://example.com/dog.png: sent earlier, its query "
        "not kept]",
    }


def test_logs_rm_removes_one_conversation_and_its_media(png: str, tmp_path: Path) -> None:
    other = tmp_path / "other.png"
    other.write_bytes(PNG + b"other")
    cid = json.loads(oma("run", "--json", "one", "-a", png).stdout)["conversation_id"]
    oma("run", "-c", "more")
    oma("run", "two", "-a", str(other))
    done = oma("logs", "rm", cid)
    assert done.exit_code == 0, done.output
    assert done.stdout == "removed 2 runs and 1 media file\n"
    assert [r["messages"][-1]["content"][0]["text"] for r in logged()] == ["two"]
    names = [p.name for p in media_dir(tmp_path).iterdir()]
    assert names == [hashlib.sha256(PNG + b"other").hexdigest()]
    unknown = oma("logs", "rm", cid)
    assert unknown.exit_code == 2
    assert unknown.stderr == f"error: no logged conversation {cid} (see `oma logs`)\n"


def test_logs_prune_keeps_the_newest_runs_and_their_media(png: str, tmp_path: Path) -> None:
    other = tmp_path / "other.png"
    other.write_bytes(PNG + b"other")
    oma("run", "one", "-a", png)
    oma("run", "two", "-a", str(other))
    oma("run", "three")
    done = oma("logs", "prune", "--keep", "2")
    assert done.stdout == "removed 1 run and 1 media file\n"
    assert len(logged()) == 2
    names = [p.name for p in media_dir(tmp_path).iterdir()]
    assert names == [hashlib.sha256(PNG + b"other").hexdigest()]


def test_logs_prune_older_than_removes_old_runs(png: str, tmp_path: Path) -> None:
    oma("run", "old", "-a", png)
    with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
        db.execute("UPDATE runs SET datetime_utc = '2020-01-01T00:00:00+00:00'")
    oma("run", "new")
    done = oma("logs", "prune", "--older-than", "30")
    assert done.stdout == "removed 1 run and 1 media file\n"
    assert [r["messages"][0]["content"][0]["text"] for r in logged()] == ["new"]
    assert list(media_dir(tmp_path).iterdir()) == []


def test_logs_prune_with_no_option_removes_only_unreferenced_media(
    png: str, tmp_path: Path
) -> None:
    oma("run", "one", "-a", png)
    stray = media_dir(tmp_path) / ("0" * 64)
    stray.write_bytes(b"left behind")
    assert oma("logs", "prune").stdout == "removed 0 runs and 1 media file\n"
    assert [p.name for p in media_dir(tmp_path).iterdir()] == [hashlib.sha256(PNG).hexdigest()]


# -- -c: continue a conversation (settings) ----------------------------------------------------


def test_continue_uses_the_logged_provider_and_system_prompt_unless_given() -> None:
    oma("run", "hi", "-s", "be terse")
    again = oma("run", "-c", "more")
    assert again.exit_code == 0
    runs = logged()
    assert runs[1]["provider"] == "echo" and runs[1]["system"] == "be terse"
    assert len(runs[1]["messages"]) == 3


def test_continue_reuses_the_logged_provider_options_and_portable_settings() -> None:
    first = oma("run", "hi", *scripted("Same."), "-o", "temperature", "0.5", "-o", "stop", "END")
    assert first.exit_code == 0, first.output
    again = oma("run", "-c", "more")
    assert again.exit_code == 0, again.output
    assert again.stdout == "Same.\n"  # the logged script, played again by a new process
    one, two = logged()
    assert two["provider"] == "scripted"
    assert (
        two["settings"]
        == one["settings"]
        == {
            "model": None,
            "temperature": 0.5,
            "stop": ["END"],
            "provider_options": {"responses": ["Same."]},
        }
    )


def test_continue_with_a_new_provider_keeps_only_the_portable_settings() -> None:
    oma("run", "hi", *scripted("One."), "-o", "max_tokens", "9")
    again = oma("run", "-c", "-p", "echo", "more")
    assert again.exit_code == 0, again.output
    assert logged()[-1]["settings"] == {"model": None, "max_tokens": 9}


def test_a_secret_looking_provider_option_is_not_logged_and_must_be_given_again() -> None:
    token = "sk-option-secret-0123456789abcdef"
    assert oma("run", "hi", *scripted(token)).exit_code == 0
    (run,) = logged()
    assert run["settings"]["provider_options"]["responses"] == "[REDACTED]"
    assert run["settings"]["not_kept"] == ["provider_options.responses"]
    assert token.encode() not in Path(oma("logs", "path").stdout.strip()).read_bytes()
    again = oma("run", "-c", "more")
    assert again.stderr.startswith(
        "note: the provider option responses of the conversation looked like a secret and was "
        "not logged: give it again with -o responses VALUE\n"
    )


def test_a_database_of_an_older_oma_gains_the_new_columns(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    with sqlite3.connect(home / "logs.db") as db:
        db.execute(
            "CREATE TABLE runs (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL UNIQUE, "
            "conversation_id TEXT NOT NULL, datetime_utc TEXT NOT NULL, agent TEXT, "
            "provider TEXT NOT NULL, model TEXT, system TEXT, messages TEXT NOT NULL, "
            "answer TEXT, output TEXT, input_tokens INTEGER NOT NULL DEFAULT 0, "
            "output_tokens INTEGER NOT NULL DEFAULT 0, duration_ms INTEGER NOT NULL DEFAULT 0, "
            "calls INTEGER NOT NULL DEFAULT 0, attempts INTEGER NOT NULL DEFAULT 0, error TEXT)"
        )
        db.execute(
            "INSERT INTO runs (run_id, conversation_id, datetime_utc, provider, messages, answer)"
            " VALUES ('r1', 'c1', '2026-01-01T00:00:00+00:00', 'echo', ?, ?)",
            (
                json.dumps([{"role": "user", "content": [{"type": "text", "text": "old"}]}]),
                json.dumps({"role": "assistant", "content": [{"type": "text", "text": "Old."}]}),
            ),
        )
    (old,) = logged()
    assert (old["base_url"], old["settings"]) == (None, {})
    again = oma("run", "-c", "new")
    assert again.exit_code == 0, again.output
    assert [m["content"][0]["text"] for m in logged()[-1]["messages"]] == ["old", "Old.", "new"]
    with sqlite3.connect(home / "logs.db") as db:
        columns = {row[1] for row in db.execute("PRAGMA table_info(runs)")}
    assert {"base_url", "settings"} <= columns


def test_cid_continues_a_chosen_conversation() -> None:
    first = json.loads(oma("run", "--json", "one").stdout)["conversation_id"]
    oma("run", "other")
    assert oma("run", "--cid", first, "two").exit_code == 0
    last = logged()[-1]
    assert last["conversation_id"] == first
    texts = [m["content"][0]["text"] for m in last["messages"]]
    assert texts == ["one", 'user: text "one"', "two"]


def test_continue_with_nothing_logged_is_a_usage_error() -> None:
    result = oma("run", "-c", "hello?")
    assert result.exit_code == 2
    assert result.stderr == "error: no logged conversation to continue (see `oma logs`)\n"
    unknown = oma("run", "--cid", "nope", "hello?")
    assert unknown.exit_code == 2
    assert "no logged conversation nope" in unknown.stderr


# -- the library: off unless enabled ------------------------------------------------------------


def test_library_runs_are_not_logged_by_default() -> None:
    from oma_core.default_plugins import DEFAULT_PLUGINS

    assert "oma_core.default_plugins.logs" not in DEFAULT_PLUGINS
    names = [info.name for info in PluginHost(load_entrypoints=False).plugin_info()]
    assert not any("logs" in name or "RunLogger" in name for name in names)


async def test_a_library_run_is_logged_when_its_host_has_the_log_plugin(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs.db")
    host = PluginHost(load_entrypoints=False)
    host.register(log.plugin())
    agent = Agent(AgentConfig("lib", provider="scripted", provider_options={"responses": ["ok"]}),
                  plugins=host)  # fmt: skip
    settings = RunSettings(metadata={"conversation_id": "c-1"})
    result = await agent.run("hello", settings=settings)
    await agent.aclose()
    assert result.success
    (run,) = log.runs()
    assert (run.agent, run.provider, run.conversation_id, run.output) == (
        "lib",
        "scripted",
        "c-1",
        "ok",
    )
    with sqlite3.connect(log.path) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (1,)


def test_a_log_that_cannot_be_written_never_fails_the_run(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "logs.db").write_bytes(b"this is not a database" * 100)
    (home / "logs.db").chmod(0o600)
    result = oma("run", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'user: text "hi"\n'
    assert result.stderr.startswith(f"note: the run log {home / 'logs.db'} was not written (")


def test_a_broken_log_database_is_one_line_for_logs_and_continue(tmp_path: Path) -> None:
    home = tmp_path / "home"
    home.mkdir()
    (home / "logs.db").write_bytes(b"this is not a database" * 100)
    for args in (["logs"], ["logs", "status"], ["run", "-c", "more"]):
        result = oma(*args)
        assert result.exit_code == 2, args
        assert result.stderr.startswith(f"error: cannot read the run log {home / 'logs.db'} (")
        assert result.stderr.count("\n") == 1
        assert "(SQLite: file is not a database)" in result.stderr  # not Python's class names


def test_continue_after_a_failed_run_does_not_resend_its_unanswered_prompt() -> None:
    oma("run", "one", *scripted("First."))
    assert oma("run", "-c", "two", "-p", "scripted").exit_code == 1  # nothing scripted: fails
    again = oma("run", "-c", "three", *scripted("Third."))
    assert again.exit_code == 0, again.output
    assert "the last run of the conversation failed" in again.stderr
    texts = [m["content"][0]["text"] for m in logged()[-1]["messages"]]
    assert texts == ["one", "First.", "three"]


# -- the log under load: never on the event loop, never a lost row ------------------------------

#: Holds the log's write lock (a write transaction) until a line arrives on stdin.
LOCKER = """
import sqlite3, sys
db = sqlite3.connect(sys.argv[1], isolation_level=None)
db.execute("BEGIN IMMEDIATE")
db.execute("INSERT INTO runs (run_id, conversation_id, datetime_utc, provider, messages) "
           "VALUES ('locker', 'locker', '2026-01-01T00:00:00+00:00', 'none', '[]')")
print("locked", flush=True)
sys.stdin.readline()
db.execute("COMMIT")
"""

#: Writes 100 rows through ``RunLog.write``, as concurrent ``oma`` processes do.
WRITER = """
import sys
from oma_core import RunLog
log = RunLog(sys.argv[1])
for i in range(100):
    log.write({"run_id": f"{sys.argv[2]}-{i}", "conversation_id": sys.argv[2],
               "datetime_utc": "2026-01-01T00:00:00+00:00", "provider": "p", "messages": []})
"""


def a_row(run_id: str) -> dict[str, Any]:
    return {
        "run_id": run_id,
        "conversation_id": run_id,
        "datetime_utc": "2026-01-01T00:00:00+00:00",
        "provider": "p",
        "messages": [],
    }


@contextmanager
def write_lock_held(path: Path) -> Iterator[Callable[[], None]]:
    """Another process holds ``path``'s write lock until the yielded ``release()``."""
    with subprocess.Popen(
        [sys.executable, "-c", LOCKER, str(path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    ) as locker:
        assert locker.stdout is not None and locker.stdin is not None
        try:
            assert locker.stdout.readline() == "locked\n"

            def release() -> None:
                assert locker.stdin is not None
                if not locker.stdin.closed:
                    locker.stdin.write("\n")
                    locker.stdin.close()

            yield release
            release()
            assert locker.wait(timeout=60) == 0
        finally:
            if locker.poll() is None:
                locker.kill()


async def test_runs_waiting_on_a_locked_log_leave_the_event_loop_free(tmp_path: Path) -> None:
    # The bound is far above what the passing case waits, and keeps a loop that blocks on
    # SQLite (the failure this test is for) to 5 x 20 s.
    log = RunLog(tmp_path / "runs.db", timeout=20)
    log.write(a_row("seed"))
    host = PluginHost(load_entrypoints=False)
    host.register(log.plugin())
    ticks = 0

    async def heartbeat() -> None:
        nonlocal ticks
        while True:
            await asyncio.sleep(0.001)
            ticks += 1

    async def one_run(name: str) -> bool:
        config = AgentConfig(name, provider="scripted", provider_options={"responses": ["ok"]})
        agent = Agent(config, plugins=host)
        try:
            return (await agent.run("hi")).success
        finally:
            await agent.aclose()

    with write_lock_held(log.path) as release:
        beat = asyncio.create_task(heartbeat())
        runs = [asyncio.create_task(one_run(f"agent-{i}")) for i in range(5)]
        await until(lambda: ticks >= 50, within=100)  # the loop runs while the runs wait
        assert not any(run.done() for run in runs)  # all five still wait for the lock
        release()
        assert await asyncio.wait_for(asyncio.gather(*runs), 120) == [True] * 5
        beat.cancel()
    agents = sorted(run.agent for run in log.runs(None) if run.agent)
    assert agents == [f"agent-{i}" for i in range(5)]


async def test_an_idle_log_holds_no_thread(tmp_path: Path) -> None:
    import threading

    log = RunLog(tmp_path / "runs.db")
    host = PluginHost(load_entrypoints=False)
    host.register(log.plugin())
    config = AgentConfig("a", provider="scripted", provider_options={"responses": ["ok"]})
    agent = Agent(config, plugins=host)
    assert (await agent.run("hi")).success
    await agent.aclose()
    assert [run.output for run in log.runs()] == ["ok"]  # written before the run returned
    writers = [t for t in threading.enumerate() if t.name == "oma-run-log"]
    for writer in writers:  # the writer ends once its queue is empty
        writer.join(timeout=30)
    assert not any(writer.is_alive() for writer in writers)


async def test_a_write_waits_for_the_lock_no_longer_than_its_bound(tmp_path: Path) -> None:
    log = RunLog(tmp_path / "runs.db", timeout=0.2)
    log.write(a_row("seed"))
    host = PluginHost(load_entrypoints=False)
    host.register(log.plugin())
    warnings: list[str] = []
    config = AgentConfig("a", provider="scripted", provider_options={"responses": ["ok"]})
    agent = Agent(config, plugins=host)
    settings = RunSettings(
        progress=lambda kind, data: warnings.append(data["message"]) if kind == "warning" else None
    )
    with write_lock_held(log.path):
        result = await agent.run("hi", settings=settings)
        await agent.aclose()
    assert result.success and result.output == "ok"
    (warning,) = warnings
    assert (
        warning == f"the run log {log.path} was not written (OperationalError: database is locked)"
    )


def test_twenty_processes_writing_at_once_lose_no_row(tmp_path: Path) -> None:
    path = tmp_path / "runs.db"
    writers = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(path), f"p{n}"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(20)
    ]
    try:
        outcomes = [writer.communicate(timeout=600) for writer in writers]
    finally:
        for writer in writers:
            if writer.poll() is None:
                writer.kill()
    assert [(w.returncode, err) for w, (_, err) in zip(writers, outcomes, strict=True)] == [
        (0, "")
    ] * 20
    with sqlite3.connect(path) as db:
        assert db.execute("SELECT count(*) FROM runs").fetchone() == (2000,)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_a_database_readable_by_others_is_tightened_to_0600(tmp_path: Path) -> None:
    oma("run", "hi")
    path = tmp_path / "home" / "logs.db"
    path.chmod(0o644)
    assert oma("run", "again").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    path.chmod(0o644)
    assert oma("logs").exit_code == 0
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize(
    ("column", "value", "reason"),
    [
        ("messages", '{"role": "user"}', "messages is not a list of messages"),
        ("messages", '[{"role": "user", "content": "hi"}]', "messages is not a list of messages"),
        ("messages", '[{"role": "user", "content": [{"type": "image", "source": "x"}]}]',
         "messages is not a list of messages"),
        ("messages", "[1", "messages is not valid JSON"),
        ("answer", "[1]", "answer is not a message"),
        ("settings", "[]", "settings is not an object of settings"),
        ("settings", '{"not_kept": "base_url"}', "settings is not an object of settings"),
        ("input_tokens", "'many'", "input_tokens is not an integer"),
    ],
)  # fmt: skip
def test_a_malformed_row_is_one_line_for_logs_and_continue(
    tmp_path: Path, column: str, value: str, reason: str
) -> None:
    oma("run", "hi")
    path = tmp_path / "home" / "logs.db"
    with sqlite3.connect(path) as db:
        literal = value if column == "input_tokens" else "'" + value.replace("'", "''") + "'"
        db.execute(f"UPDATE runs SET {column} = {literal}")
    (run_id,) = sqlite3.connect(path).execute("SELECT run_id FROM runs").fetchone()
    for args in (["logs"], ["logs", "--json"], ["run", "-c", "more"]):
        result = oma(*args)
        assert result.exit_code == 2, (args, result.output)
        assert result.stderr.count("\n") == 1, result.stderr
        assert result.stderr.startswith(f"error: cannot read the run log {path} (")
        assert f"the logged run {run_id}: {reason}" in result.stderr


JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(
            st.sampled_from(["role", "content", "type", "source", "text", "sha256", "model"]),
            inner,
            max_size=4,
        )
    ),
    max_leaves=12,
)


@settings(
    max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(column=st.sampled_from(["messages", "answer", "settings"]), value=JSON)
def test_any_json_in_a_row_reads_back_or_is_a_malformed_run_error(
    tmp_path: Path, column: str, value: Any
) -> None:
    import tempfile

    log = RunLog(Path(tempfile.mkdtemp(dir=tmp_path)) / "fuzz.db")  # one per example
    log.write(a_row("fuzz"))
    with sqlite3.connect(log.path) as db:
        db.execute(f"UPDATE runs SET {column} = ?", (json.dumps(value),))
    try:
        (run,) = log.runs()
    except MalformedRunError as exc:
        assert (exc.run_id, exc.column) == ("fuzz", column)
    else:
        assert isinstance(run.messages, list) and isinstance(run.settings, dict)


def test_a_media_store_that_is_a_symlink_gets_nothing(png: str, tmp_path: Path) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "home").mkdir()
    media_dir(tmp_path).symlink_to(elsewhere)
    result = oma("run", "what is it?", "-a", png)
    assert result.exit_code == 0
    assert result.stderr.startswith("note: a media file was not kept in MediaStore(")
    assert list(elsewhere.iterdir()) == []
    assert len(logged()) == 1


# -- a log of any size, and rows that cannot be read ------------------------------------------


def test_a_malformed_row_is_marked_and_the_other_runs_are_listed(tmp_path: Path) -> None:
    for prompt in ("one", "two", "three"):
        oma("run", prompt)
    path = tmp_path / "home" / "logs.db"
    with sqlite3.connect(path) as db:
        db.execute("UPDATE runs SET messages = '[1' WHERE id = 2")
        (bad,) = db.execute("SELECT run_id FROM runs WHERE id = 2").fetchone()
    error = (
        f"error: cannot read the run log {path} (the logged run {bad}: messages is not valid "
        "JSON; marked in the listing)\n"
    )
    listed = oma("logs")
    assert (listed.exit_code, listed.stderr) == (2, error)
    assert [line for line in listed.stdout.splitlines() if line.startswith(">")] == [
        "> one",
        "> three",
    ]
    assert f"## run {bad}: cannot be read (messages is not valid JSON)\n" in listed.stdout
    as_json = oma("logs", "--json")
    assert (as_json.exit_code, as_json.stderr) == (2, error)
    runs = json.loads(as_json.stdout)
    assert runs[1] == {"run_id": bad, "unreadable": "messages is not valid JSON"}
    assert [r["output"] for r in (runs[0], runs[2])] == ['user: text "one"', 'user: text "three"']
    usage = oma("logs", "-u", "--json")
    assert (usage.exit_code, usage.stderr) == (2, error)
    assert json.loads(usage.stdout)["runs"] == 2


def test_the_json_listing_is_the_text_json_dumps_writes() -> None:
    for prompt in ("one", "tw\u00f6", 'th"ree\n'):
        oma("run", prompt)
    listed = oma("logs", "--json")
    assert (
        listed.stdout == json.dumps(json.loads(listed.stdout), ensure_ascii=False, indent=2) + "\n"
    )
    assert oma("logs", "--json", "-q", "nothing").stdout == "[]\n"


def test_a_moment_past_the_last_date_lists_nothing_and_nan_days_are_refused() -> None:
    oma("run", "one")
    late = oma("logs", "--since", "9999-12-31T23:59-14:00")
    assert (late.exit_code, late.stdout, late.stderr) == (0, "", "")
    nan = oma("logs", "prune", "--older-than", "nan")
    assert nan.exit_code == 2
    assert nan.stderr == "error: --older-than DAYS takes a number of days >= 0, not nan\n"
    assert len(logged()) == 1


@pytest.mark.parametrize(
    "args",
    [
        ("logs", "-n", "99999999999999999999"),
        ("logs", "--since", "99999999999999999999999w"),
        ("logs", "--since", "0001-01-01T00:00+14:00"),
        ("logs", "prune", "--keep", "99999999999999999999"),
        ("logs", "prune", "--older-than", "1e300"),
    ],
)
def test_numbers_past_what_sqlite_and_dates_hold_are_no_traceback(args: tuple[str, ...]) -> None:
    oma("run", "one")
    oma("run", "two")
    result = oma(*args)
    assert result.exit_code == 0, result.output
    assert result.exception is None or isinstance(result.exception, SystemExit)
    if args[1] == "prune":
        assert result.stderr == "" and result.stdout == "removed 0 runs and 0 media files\n"
    else:
        shown = [line for line in result.stdout.splitlines() if line.startswith(">")]
        assert shown == ["> one", "> two"]


#: Rows of the generated log, and the text of each row's prompt: 2,000 rows of 20 kB, 40 MB
#: of text, which listed all at once (the rows fetched, their JSON read) take well over 100 MB.
ROWS, PROMPT_BYTES = 2000, 20_000


def test_logs_n_0_lists_a_large_log_in_the_memory_of_a_row(tmp_path: Path) -> None:
    import contextlib
    import tracemalloc

    from oma_core.cli import cli

    log = RunLog(tmp_path / "home" / "logs.db")
    log.write(a_row("first"))
    row = a_row("x")
    messages = json.dumps(
        [{"role": "user", "content": [{"type": "text", "text": "x" * PROMPT_BYTES}]}]
    )
    with sqlite3.connect(log.path) as db:
        db.executemany(
            "INSERT INTO runs (run_id, conversation_id, datetime_utc, provider, messages) "
            "VALUES (?, ?, ?, ?, ?)",
            ((f"r{i}", f"c{i}", row["datetime_utc"], "p", messages) for i in range(ROWS)),
        )
    assert log.path.stat().st_size > ROWS * PROMPT_BYTES
    listing = tmp_path / "listing.txt"
    with listing.open("w", encoding="utf-8") as out, contextlib.redirect_stdout(out):
        tracemalloc.start()
        try:
            cli.main(["logs", "-n", "0"], prog_name="oma", standalone_mode=False)
            _, peak = tracemalloc.get_traced_memory()
        finally:
            tracemalloc.stop()
    assert peak < 16 * 2**20, f"peak {peak / 2**20:.1f} MiB"
    with listing.open(encoding="utf-8") as shown:
        assert sum(line.startswith("## ") for line in shown) == ROWS + 1


def test_a_row_whose_text_is_not_utf8_is_listed_with_replacement_characters(
    tmp_path: Path,
) -> None:
    oma("run", "one")
    oma("run", "two")
    with sqlite3.connect(tmp_path / "home" / "logs.db") as db:
        db.execute("UPDATE runs SET output = CAST(x'ff41' AS TEXT) WHERE id = 1")
    listed = oma("logs")
    assert (listed.exit_code, listed.stderr) == (0, "")
    assert "\n\ufffdA\n" in listed.stdout
    assert listed.stdout.endswith('> two\nuser: text "two"\n')
