"""``oma run --schema``: the answer as a validated JSON object on stdout, from a JSON Schema
file, inline JSON or ``llm``'s concise form (whose parser is specified here too)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _builders import oma
from hypothesis import given
from hypothesis import strategies as st

from oma_core.cli._schema import (
    MAX_SCHEMA_BYTES,
    SchemaError,
    concise_schema,
    load_schema,
    multi_schema,
)

pytestmark = pytest.mark.usefixtures("cli_home")


def scripted(*responses: str) -> list[str]:
    return ["-p", "scripted", "-o", "responses", json.dumps(list(responses))]


# -- the concise form --------------------------------------------------------------------------


def test_the_concise_form_names_fields_types_and_descriptions() -> None:
    assert concise_schema("name, age int, bio: a short biography") == {
        "type": "object",
        "properties": {
            "name": {"type": "string"},
            "age": {"type": "integer"},
            "bio": {"type": "string", "description": "a short biography"},
        },
        "required": ["name", "age", "bio"],
    }


def test_newlines_separate_fields_so_descriptions_may_hold_commas() -> None:
    schema = concise_schema("title str: the title, in full\nscore float\nok bool")
    assert schema["properties"] == {
        "title": {"type": "string", "description": "the title, in full"},
        "score": {"type": "number"},
        "ok": {"type": "boolean"},
    }


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("", "empty"),
        ("age integer", "unknown type 'integer'"),
        ("two words here", "is not `name [type][: description]`"),
        ("a, a int", "twice"),
    ],
)
def test_a_bad_concise_form_is_refused_naming_the_field(text: str, said: str) -> None:
    with pytest.raises(SchemaError, match=said.replace("[", r"\[").replace("]", r"\]")):
        concise_schema(text)


_names = st.from_regex(r"[a-z_][a-z0-9_]{0,8}", fullmatch=True)


@given(st.dictionaries(_names, st.sampled_from(["str", "int", "float", "bool"]), min_size=1))
def test_every_field_of_the_concise_form_becomes_a_required_property(
    fields: dict[str, str],
) -> None:
    text = ", ".join(f"{name} {kind}" for name, kind in fields.items())
    schema = concise_schema(text)
    assert schema["required"] == list(fields)
    kinds = {"str": "string", "int": "integer", "float": "number", "bool": "boolean"}
    assert {n: p["type"] for n, p in schema["properties"].items()} == {
        n: kinds[k] for n, k in fields.items()
    }


def test_a_schema_file_and_inline_json_are_read_as_json(tmp_path: Path) -> None:
    schema: dict[str, Any] = {"type": "object", "properties": {"a": {"type": "integer"}}}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    assert load_schema(str(path)) == schema
    assert load_schema(json.dumps(schema)) == schema
    assert multi_schema(load_schema("a int")) == {
        "type": "object",
        "properties": {"items": {"type": "array", "items": load_schema("a int")}},
        "required": ["items"],
    }


def test_inline_json_that_does_not_parse_is_refused() -> None:
    with pytest.raises(SchemaError, match="not valid JSON"):
        load_schema('{"type": ')


# -- the command -------------------------------------------------------------------------------


def test_run_with_a_concise_schema_prints_the_validated_object() -> None:
    result = oma(
        "run", *scripted('Here: {"name": "Ada", "age": 36}'), "--schema", "name, age int", "who?"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"name": "Ada", "age": 36}


def test_run_with_schema_multi_takes_the_schema_and_prints_its_items_object() -> None:
    reply = '{"items": [{"name": "Ada"}, {"name": "Alan"}]}'
    result = oma("run", *scripted(reply), "--schema-multi", "name", "who?")
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"items": [{"name": "Ada"}, {"name": "Alan"}]}


def test_render_with_schema_multi_sends_the_items_object_schema() -> None:
    result = oma("render", "-m", "scripted:m", "--schema-multi", "name", "who?")
    assert result.exit_code == 0, result.stderr
    assert '"required":["items"]' in json.loads(result.stdout)["system"]


def test_run_with_a_schema_repairs_then_fails_with_exit_1() -> None:
    result = oma("run", *scripted("no", "still no"), "--schema", "name", "who?")
    assert result.exit_code == 1
    assert "not valid structured output" in result.stderr
    assert result.stdout == ""


def test_run_with_a_schema_and_an_attachment(tmp_path: Path) -> None:
    png = tmp_path / "invoice.png"
    png.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(92))
    reply = '{"number": "A-1", "total": 9.5}'
    result = oma(
        "run", *scripted(reply), "-a", str(png), "--schema", "number, total float", "extract"
    )
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"number": "A-1", "total": 9.5}


def test_run_json_carries_the_structured_output() -> None:
    result = oma("run", *scripted('{"name": "Ada"}'), "--schema", "name", "--json", "who?")
    assert json.loads(result.stdout)["structured"] == {"name": "Ada"}


@pytest.mark.parametrize(
    ("args", "said"),
    [
        (["--schema", "age number"], "unknown type 'number'"),
        (["--schema", '{"type": "object", "minimum": 1}'], "'minimum' is not supported"),
        (
            ["--schema", "name", "--schema-multi", "age"],
            "give --schema or --schema-multi, not both",
        ),
        (["--schema-multi", "age number"], "--schema-multi field 'age' has the unknown type"),
        (
            ["--schema", '{"type": "object", "minimum": 1}'],
            "error: --schema cannot be used: $: keyword 'minimum' is not supported",
        ),
    ],
)
def test_a_bad_schema_is_a_usage_error_before_anything_runs(args: list[str], said: str) -> None:
    result = oma("run", *scripted(), *args, "who?")
    assert result.exit_code == 2
    assert said in result.stderr


@pytest.mark.parametrize("name", ["nosuch.json", "schemas/person.json", "./person"])
def test_a_schema_file_that_is_missing_is_said_to_be_missing(name: str) -> None:
    result = oma("run", *scripted(), "--schema", name, "who?")
    assert result.exit_code == 2
    assert result.stderr == (
        f"error: --schema file {name} does not exist (SCHEMA is a JSON Schema file, inline "
        "JSON, or fields such as 'name, age int')\n"
    )


def test_a_schema_directory_a_deep_file_and_a_huge_file_are_one_line(tmp_path: Path) -> None:
    deep = tmp_path / "deep.json"
    deep.write_text('{"a": ' + "[" * 100_000 + "]" * 100_000 + "}")
    huge = tmp_path / "huge.json"
    huge.write_bytes(b"{" + b" " * MAX_SCHEMA_BYTES + b"}")
    for value, said in [
        (str(tmp_path), f"error: --schema file {tmp_path} is a directory"),
        (str(deep), f"error: --schema file {deep} is nested too deeply to read"),
        (str(huge), f"error: --schema file {huge} is larger than {MAX_SCHEMA_BYTES} bytes"),
    ]:
        result = oma("run", *scripted(), "--schema", value, "who?")
        assert result.exit_code == 2, result.output
        assert result.stderr.startswith(said) and result.stderr.count("\n") == 1


class Picky:
    """A provider whose service cannot take an open object, refusing it as OpenAI's strict
    mode does: an ``OutputTypeError`` from the provider, before anything is sent."""

    name = display_name = "picky"

    async def complete(self, request: Any) -> Any:
        from oma_core.errors import OutputTypeError

        raise OutputTypeError("output", "Picky cannot take $: an open dict; give it properties")

    async def aclose(self) -> None:
        pass


@pytest.fixture
def picky(cli_home: Path) -> Iterator[None]:
    from oma_core import Capabilities, ProviderSpec, hookimpl
    from oma_core.plugins import PluginHost

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            spec = ProviderSpec("picky", "Picky", lambda s: Picky(), Capabilities.everything())
            return [spec]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="picky-plugin")
    previous = PluginHost.set_default(host)
    yield
    PluginHost.set_default(previous)


@pytest.mark.usefixtures("picky")
@pytest.mark.parametrize("option", ["--schema", "--schema-multi"])
def test_a_schema_the_provider_cannot_take_is_said_in_the_commands_words(option: str) -> None:
    result = oma("run", "-p", "picky", "-m", "m", "--no-stream", option, "name", "who?")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: the schema given (--schema, --schema-multi) cannot be used: Picky cannot take "
        "$: an open dict; give it properties\n"
    )
