"""``oma templates`` and ``-t NAME``/``--save NAME``: agent settings kept by name, never a key,
through the command."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from _builders import oma
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from oma_core.cli._agent import AgentOptions, split_options
from oma_core.cli._templates import Template, checked_name, template_path, templates_dir

pytestmark = pytest.mark.usefixtures("cli_home")


def saved(*args: str) -> None:
    result = oma("templates", "save", *args)
    assert result.exit_code == 0, result.output


def test_a_saved_template_is_one_json_file_of_mode_0600(cli_home: Path) -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.", "-o", "temperature", "0.2")
    path = cli_home / "templates" / "brief.json"
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {
        "provider": "echo",
        "system": "Be brief.",
        "options": {"temperature": 0.2},
    }
    assert [p.name for p in path.parent.iterdir()] == ["brief.json"]  # no temporary left


def test_run_t_uses_the_templates_system_prompt_and_provider() -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.")
    result = oma("run", "-t", "brief", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'system: "Be brief."\nuser: text "hi"\n'


def test_the_default_command_takes_t() -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.")
    result = oma("-t", "brief", "hi")
    assert result.stdout == 'system: "Be brief."\nuser: text "hi"\n'


def test_render_t_shows_the_body_the_templated_run_sends() -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.", "-o", "temperature", "0.2")
    result = oma("render", "-t", "brief", "hi")
    assert result.exit_code == 0, result.output
    body = json.loads(result.stdout)
    assert (body["system"], body["temperature"]) == ("Be brief.", 0.2)


def test_options_given_on_the_command_line_win() -> None:
    saved("script", "-p", "scripted", "-o", "responses", '["from the template"]')
    assert oma("run", "-t", "script", "hi").stdout == "from the template\n"
    overridden = oma("run", "-t", "script", "-o", "responses", '["from the command"]', "hi")
    assert overridden.stdout == "from the command\n"


def test_a_system_prompt_given_again_wins() -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.")
    result = oma("run", "-t", "brief", "-s", "Be long.", "hi")
    assert result.stdout == 'system: "Be long."\nuser: text "hi"\n'


def test_a_provider_given_again_replaces_the_templates_provider_and_model() -> None:
    saved("script", "-m", "scripted:m1", "-s", "Be brief.")
    result = oma("run", "-t", "script", "-p", "echo", "hi")
    assert result.stdout == 'system: "Be brief."\nuser: text "hi"\n'


def test_chat_t_uses_the_template() -> None:
    saved("brief", "-p", "echo", "-s", "Be brief.")
    result = oma("chat", "-t", "brief", input="hi\n")
    assert result.exit_code == 0, result.output
    assert result.stdout == 'system: "Be brief."\nuser: text "hi"\n'


def test_run_save_stores_the_options_instead_of_running(cli_home: Path) -> None:
    result = oma("run", "--save", "cheese", "-s", "You are a cheesecake.", "-m", "echo:m1")
    assert (result.exit_code, result.stdout) == (0, "")
    assert "saved template cheese" in result.stderr
    shown = oma("templates", "show", "cheese")
    assert json.loads(shown.stdout) == {"model": "echo:m1", "system": "You are a cheesecake."}
    assert not (cli_home / "logs.db").exists()  # nothing ran


def test_run_save_with_a_prompt_is_refused() -> None:
    result = oma("run", "--save", "x", "-s", "sys", "hello")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: --save keeps -m, -p, -s, --base-url and -o only; it cannot be used with PROMPT\n"
    )
    assert oma("templates", "list").stdout == ""


def test_run_save_refuses_an_api_key_and_writes_nothing(cli_home: Path) -> None:
    result = oma("run", "--save", "x", "-p", "echo", "--api-key", "sk-secret-value-1234567890")
    assert result.exit_code == 2
    assert "a template never holds a key" in result.stderr
    assert "sk-secret" not in result.output
    assert not (cli_home / "templates" / "x.json").exists()


@pytest.mark.parametrize(
    ("where", "command"),
    [
        ([], "oma keys set scripted"),
        (
            ["--base-url", "http://127.0.0.1:9/v1"],
            "oma keys set scripted --base-url http://127.0.0.1:9",
        ),
    ],
)
def test_a_refused_key_names_the_keys_set_command_for_the_host_in_use(
    where: list[str], command: str
) -> None:
    model = ["-m", "scripted:m", *where]
    given = oma("run", "--save", "x", *model, "--api-key", "sk-secret-value-1234567890")
    in_options = oma("templates", "save", "x", *model, "-o", "api_key", "abc")
    for result in (given, in_options):
        assert result.exit_code == 2
        assert result.stderr.count("error: ") == 1
        assert f"`{command}`" in result.stderr, result.stderr


def test_a_wrong_portable_option_is_refused_when_saved(cli_home: Path) -> None:
    result = oma("templates", "save", "hot", "-p", "echo", "-o", "temperature", "hot")
    assert result.exit_code == 2
    assert result.stderr == "error: -o temperature must be a number >= 0, not text 'hot'\n"
    assert not (cli_home / "templates" / "hot.json").exists()


def test_a_refused_key_of_no_known_provider_says_provider() -> None:
    result = oma("templates", "save", "x", "-s", "hi", "-o", "api_key", "abc")
    assert result.exit_code == 2
    assert "`oma keys set PROVIDER`" in result.stderr


def test_templates_save_has_no_api_key_option() -> None:
    result = oma("templates", "save", "x", "--api-key", "k")
    assert result.exit_code == 2
    assert "No such option" in result.stderr


@pytest.mark.parametrize(
    ("option", "value"),
    [("api_key", "abc"), ("auth_token", "abc"), ("header", "sk-abcdefghijklmnopqrstuvwxyz")],
)
def test_an_option_that_looks_like_a_credential_is_refused(option: str, value: str) -> None:
    result = oma("templates", "save", "x", "-p", "echo", "-o", option, value)
    assert result.exit_code == 2
    assert f"-o {option} looks like a key or secret" in result.stderr
    assert value not in result.output


def test_a_base_url_with_user_info_is_refused() -> None:
    result = oma("templates", "save", "x", "-p", "echo", "--base-url", "http://u:pw@127.0.0.1/")
    assert result.exit_code == 2
    assert "--base-url" in result.stderr and "pw@" not in result.stderr


def test_a_template_file_holding_a_key_is_refused(cli_home: Path) -> None:
    directory = cli_home / "templates"
    directory.mkdir(parents=True)
    (directory / "hand.json").write_text('{"provider": "echo", "api_key": "sk-x"}')
    result = oma("run", "-t", "hand", "hi")
    assert result.exit_code == 2
    assert "unknown field 'api_key' (a template never holds a key)" in result.stderr
    assert "sk-x" not in result.output


@pytest.mark.parametrize("name", ["../evil", "a/b", ".hidden", "", "x" * 65, "a\\b"])
def test_a_name_that_is_not_a_plain_name_is_refused(name: str, cli_home: Path) -> None:
    result = oma("templates", "save", name, "-s", "x")
    assert result.exit_code == 2
    assert "no path separators" in result.stderr
    assert not (cli_home.parent / "evil.json").exists()


def test_an_unknown_template_names_the_nearest() -> None:
    saved("brief", "-s", "Be brief.")
    result = oma("run", "-t", "brif", "hi")
    assert result.exit_code == 2
    assert (
        result.stderr == "error: no template brif (did you mean brief? see `oma templates list`)\n"
    )


def test_a_template_with_a_model_of_no_provider_is_refused_when_saved() -> None:
    result = oma("templates", "save", "x", "-m", "gpt-4o")
    assert result.exit_code == 2
    assert "names no provider" in result.stderr


def test_list_shows_each_name_and_what_it_sets() -> None:
    saved("brief", "-m", "echo:m1", "-s", "Be brief.")
    saved("hot", "-p", "echo", "-o", "temperature", "0.9")
    assert oma("templates").stdout == (
        "brief  echo:m1  system: Be brief.\nhot  echo  -o temperature 0.9\n"
    )


def test_saving_again_replaces_the_template() -> None:
    saved("t", "-s", "first")
    saved("t", "-s", "second")
    assert json.loads(oma("templates", "show", "t").stdout) == {"system": "second"}


def test_rm_removes_a_template_and_a_missing_one_is_an_error(cli_home: Path) -> None:
    saved("t", "-s", "x")
    assert oma("templates", "rm", "t").exit_code == 0
    assert not (cli_home / "templates" / "t.json").exists()
    again = oma("templates", "rm", "t")
    assert again.exit_code == 2 and "no template t" in again.stderr


def test_path_is_the_templates_directory_beside_the_keys(cli_home: Path) -> None:
    assert oma("templates", "path").stdout == f"{cli_home / 'templates'}\n"
    assert Path(oma("keys", "path").stdout.strip()).parent == cli_home


def test_a_template_that_is_not_a_regular_file_is_refused(cli_home: Path) -> None:
    directory = cli_home / "templates"
    directory.mkdir(parents=True)
    os.mkfifo(directory / "pipe.json")
    result = oma("run", "-t", "pipe", "hi")
    assert result.exit_code == 2
    assert "is not a regular file" in result.stderr


def test_an_empty_template_is_refused() -> None:
    result = oma("templates", "save", "nothing")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: template nothing would be empty")


def test_list_shows_the_good_templates_beside_a_broken_one(cli_home: Path) -> None:
    saved("good", "-s", "fine")
    (cli_home / "templates" / "bad.json").write_text("{not json")
    result = oma("templates", "list")
    assert result.exit_code == 2
    assert result.stdout == "good  system: fine\n"
    assert result.stderr.startswith("error: template bad (") and "is not JSON" in result.stderr


JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(), inner, max_size=3),
    max_leaves=8,
)


@given(value=JSON_VALUES)
def test_an_option_value_comes_back_from_the_template_file_as_given(value: object) -> None:
    stored = json.loads(json.dumps(Template("t", options={"x": value}).as_json()))
    applied = Template("t", options=stored["options"]).applied(AgentOptions())
    _, provider_options = split_options(applied.options)
    assert provider_options == {"x": value}


@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(name=st.text(max_size=80))
def test_a_template_name_never_leaves_the_templates_directory(name: str) -> None:
    try:
        checked_name(name)
    except SystemExit as exit:
        assert exit.code == 2
        return
    path = template_path(name)
    assert path.parent == templates_dir()
    assert path.name == f"{name}.json" and not name.startswith(".")


# -- refused when saved; a file nested past any reader's depth -------------------------------


@pytest.mark.parametrize("save", [("templates", "save", "t"), ("run", "--save", "t")])
def test_an_option_the_provider_does_not_take_is_refused_when_saved(
    cli_home: Path, save: tuple[str, ...]
) -> None:
    at_run = oma("run", "-p", "echo", "-o", "tempreature", "1", "hi")
    assert at_run.exit_code == 2
    assert "did you mean 'temperature'?" in at_run.stderr
    saving = oma(*save, "-p", "echo", "-o", "tempreature", "1")
    assert (saving.exit_code, saving.stderr) == (2, at_run.stderr)
    assert not (cli_home / "templates" / "t.json").exists()
    assert oma(*save, "-p", "echo", "-o", "temperature", "1").exit_code == 0


@pytest.fixture
def typed_provider(cli_home: Path) -> Iterator[None]:
    """A provider ``typed`` whose one option, ``seed``, is an integer."""
    from oma_core import Capabilities, ProviderSpec, hookimpl
    from oma_core.plugins import PluginHost

    class Plugin:
        @hookimpl
        def oma_register_providers(self) -> list[ProviderSpec]:
            return [
                ProviderSpec(
                    "typed",
                    "Typed",
                    lambda settings: None,
                    Capabilities.text_only(),
                    provider_options={"seed": int},
                )
            ]

    host = PluginHost(load_entrypoints=False)
    host.register(Plugin(), name="typed-plugin")
    previous = PluginHost.set_default(host)
    yield
    PluginHost.set_default(previous)


@pytest.mark.usefixtures("typed_provider")
def test_a_value_of_the_wrong_type_is_refused_when_saved_as_at_run_time() -> None:
    at_run = oma("render", "-p", "typed", "-o", "seed", "high", "hi")
    saving = oma("templates", "save", "t", "-p", "typed", "-o", "seed", "high")
    assert at_run.exit_code == saving.exit_code == 2
    assert saving.stderr == at_run.stderr
    assert saving.stderr.startswith("error: -o seed for typed must be an integer, not text (")
    assert oma("templates", "save", "t", "-p", "typed", "-o", "seed", "7").exit_code == 0


def test_a_template_nested_100000_deep_is_one_error_line(cli_home: Path) -> None:
    directory = cli_home / "templates"
    directory.mkdir(parents=True)
    path = directory / "deep.json"
    path.write_text('{"options": {"a": ' + "[" * 100_000 + "]" * 100_000 + "}}")
    (directory / "shallow.json").write_text('{"options": {"a": ' + "[" * 40 + "]" * 40 + "}}")
    said = f"error: template deep ({path}) nests deeper than 32 levels\n"
    for args in (("templates", "show", "deep"), ("run", "-t", "deep", "hi")):
        result = oma(*args)
        assert (result.exit_code, result.stderr) == (2, said), result.output
    listed = oma("templates", "list")
    assert listed.exit_code == 2
    assert listed.stderr.splitlines() == [
        said.strip(),
        f"error: template shallow ({directory / 'shallow.json'}) nests deeper than 32 levels",
    ]


def test_saving_an_option_nested_past_the_limit_is_refused(cli_home: Path) -> None:
    deep = oma("templates", "save", "t", "-p", "scripted", "-o", "responses", "[" * 40 + "]" * 40)
    assert deep.exit_code == 2
    assert deep.stderr == "error: template t: an -o value nests deeper than 32 levels\n"
    assert not (cli_home / "templates").exists()
