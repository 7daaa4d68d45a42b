"""``oma run``: which provider and model run, the ``-o`` options and the key they get."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import attrs
import pytest
from _builders import oma
from click.testing import CliRunner

from oma_core import Capabilities, LLMMessage, ProviderSpec, TextBlock, hookimpl
from oma_core.cli import cli
from oma_core.plugins import PluginHost
from oma_core.providers import ProviderRequest, ProviderResponse, ProviderSettings

#: What the recording provider saw: ("settings", ProviderSettings) and ("request", ...).
SEEN: list[tuple[str, Any]] = []
KEY_ENV = "OMA_TEST_RECORDER_KEY"
ROOT = Path(__file__).resolve().parent.parent


class Recorder:
    name = display_name = "recorder"

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        SEEN.append(("request", request))
        return ProviderResponse(LLMMessage("assistant", (TextBlock("ok"),)), model=request.model)

    async def aclose(self) -> None:
        pass


class RecorderPlugin:
    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        def factory(settings: ProviderSettings) -> Recorder:
            SEEN.append(("settings", settings))
            return Recorder()

        return [
            ProviderSpec(
                "recorder",
                "Recorder",
                factory,
                Capabilities.everything(),
                default_model="rec-1",
                api_key_env=KEY_ENV,
                known_models=("rec-1", "rec-big", "rec-mini", "rec-audio", "rec-old"),
            )
        ]


@pytest.fixture(autouse=True)
def _host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    monkeypatch.setenv("OMA_HOME", str(tmp_path / "home"))
    for name in ("OMA_PROVIDER", "OMA_MODEL", KEY_ENV):
        monkeypatch.delenv(name, raising=False)
    host = PluginHost(load_entrypoints=False)
    host.register(RecorderPlugin(), name="recorder-plugin")
    previous = PluginHost.set_default(host)
    SEEN.clear()
    yield
    PluginHost.set_default(previous)


def request() -> ProviderRequest:
    (found,) = [value for kind, value in SEEN if kind == "request"]
    assert isinstance(found, ProviderRequest)
    return found


def settings() -> ProviderSettings:
    (found,) = [value for kind, value in SEEN if kind == "settings"]
    assert isinstance(found, ProviderSettings)
    return found


# -- provider and model -------------------------------------------------------------------------


def test_provider_colon_model_picks_the_provider_and_the_model() -> None:
    result = oma("run", "-m", "recorder:rec-big", "hi")
    assert result.exit_code == 0, result.output
    assert result.stdout == "ok\n"
    assert request().model == "rec-big"


def test_a_model_alone_is_a_usage_error_naming_the_fix_never_echo() -> None:
    result = oma("run", "-m", "claude-sonnet-4-6", "hi")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith("error: -m claude-sonnet-4-6 names no provider")
    assert "write -m anthropic:claude-sonnet-4-6 or add -p PROVIDER" in result.stderr
    assert "installed providers: echo, recorder, scripted" in result.stderr
    assert SEEN == []


@pytest.mark.parametrize("env", [False, True])
def test_a_provider_given_as_the_model_is_named_a_provider_with_a_few_of_its_models(
    env: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    if env:
        monkeypatch.setenv("OMA_MODEL", "recorder")
    result = oma("run", *([] if env else ["-m", "recorder"]), "hi")
    assert result.exit_code == 2
    where = "$OMA_MODEL=recorder" if env else "-m recorder"
    assert result.stderr == (
        f"error: {where} names the provider recorder, not a model: write -m recorder:MODEL "
        "(its models include rec-1, rec-big, rec-mini, rec-audio; oma models recorder lists "
        "them), or -p recorder alone for its default model rec-1\n"
    )
    assert "PROVIDER:recorder" not in result.stderr
    assert SEEN == []


def test_a_model_with_p_is_the_model_as_the_provider_spells_it() -> None:
    result = oma("run", "-p", "recorder", "-m", "ft:rec-1:acme", "hi")
    assert result.exit_code == 0, result.output
    assert request().model == "ft:rec-1:acme"


def test_a_model_alone_without_a_guess_names_the_spelling() -> None:
    result = oma("run", "-m", "my-model", "hi")
    assert result.exit_code == 2
    assert "write -m PROVIDER:my-model or add -p PROVIDER" in result.stderr


def test_an_uninstalled_provider_prefix_says_what_to_install() -> None:
    result = oma("run", "-m", "anthropic:claude-sonnet-4-6", "hi")
    assert result.exit_code == 2
    assert "oma-anthropic" in result.stderr
    assert result.stderr.count("\n") == 1


def test_oma_model_sets_the_default_model(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_MODEL", "recorder:rec-env")
    assert oma("run", "hi").exit_code == 0
    assert request().model == "rec-env"


def test_oma_model_without_a_provider_is_a_usage_error_naming_the_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_MODEL", "rec-env")
    result = oma("run", "hi")
    assert result.exit_code == 2
    assert "$OMA_MODEL=rec-env names no provider" in result.stderr


def test_oma_provider_with_a_model_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OMA_PROVIDER", "recorder")
    assert oma("run", "-m", "rec-2", "hi").exit_code == 0
    assert request().model == "rec-2"


def test_the_provider_alone_runs_its_default_model() -> None:
    assert oma("run", "-p", "recorder", "hi").exit_code == 0
    assert request().model == "rec-1"


def test_echo_answers_when_neither_provider_nor_model_is_given() -> None:
    result = oma("run", "hi")
    assert result.exit_code == 0
    assert result.stdout == 'user: text "hi"\n'


def test_an_unknown_provider_prefix_is_a_usage_error_from_the_core() -> None:
    result = oma("run", "-m", "recordr:x", "hi")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: ")
    assert "recordr" in result.stderr
    assert "Traceback" not in result.output


# -- -o options ---------------------------------------------------------------------------------


def test_portable_options_reach_the_request_typed_from_json() -> None:
    result = oma(
        "run", "-p", "recorder", "-o", "temperature", "0.2", "-o", "max_tokens", "500",
        "-o", "stop", "END", "hi",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    sent = request()
    assert (sent.temperature, sent.max_tokens, sent.stop) == (0.2, 500, ("END",))


def test_a_json_list_of_stop_sequences() -> None:
    assert oma("run", "-p", "recorder", "-o", "stop", '["a", "b"]', "hi").exit_code == 0
    assert request().stop == ("a", "b")


def test_other_options_go_to_provider_options_json_or_string() -> None:
    result = oma(
        "run", "-p", "recorder", "-o", "seed", "7", "-o", "user", "alice",
        "-o", "extra", '{"a": [1, true]}', "hi",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert dict(settings().options) == {"seed": 7, "user": "alice", "extra": {"a": [1, True]}}


@pytest.mark.parametrize(
    ("name", "value", "says"),
    [
        ("temperature", "hot", "temperature must be a number >= 0, not text 'hot'"),
        ("max_tokens", "-3", "max_tokens must be a whole number >= 1, not -3"),
        ("stop", "5", "stop must be text or a JSON list of texts, not 5"),
    ],
)
def test_a_bad_portable_option_is_a_usage_error_naming_it(name: str, value: str, says: str) -> None:
    result = oma("run", "-p", "recorder", "-o", name, value, "hi")
    assert result.exit_code == 2
    assert result.stderr.startswith(f"error: -o {says}"), result.stderr
    assert SEEN == []


def test_echo_refuses_a_misspelt_option_with_a_did_you_mean_and_answers_nothing() -> None:
    result = oma("run", "-p", "echo", "-o", "tempreature", "0.3", "hi")
    assert result.exit_code == 2
    assert "unknown provider_options for echo: 'tempreature'" in result.stderr
    assert "(did you mean 'temperature'? give -o temperature VALUE)" in result.stderr
    assert result.stdout == ""


def test_echo_refuses_an_option_it_does_not_declare() -> None:
    result = oma("run", "-p", "echo", "-o", "seed", "7", "hi")
    assert result.exit_code == 2
    assert result.stderr == "error: unknown provider_options for echo: 'seed'; echo accepts: none\n"


def test_echo_takes_the_portable_options() -> None:
    result = oma(
        "run", "-p", "echo", "-o", "temperature", "0.3", "-o", "max_tokens", "50",
        "-o", "stop", "END", "hi",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert result.stdout == 'user: text "hi"\n'


# -- keys ---------------------------------------------------------------------------------------


def test_a_stored_key_reaches_the_provider(tmp_path: Path) -> None:
    assert (
        CliRunner().invoke(cli, ["keys", "set", "recorder"], input="sk-stored-123\n").exit_code == 0
    )
    assert oma("run", "-p", "recorder", "hi").exit_code == 0
    assert settings().api_key == "sk-stored-123"


def test_the_environment_variable_overrides_a_stored_key(monkeypatch: pytest.MonkeyPatch) -> None:
    CliRunner().invoke(cli, ["keys", "set", "recorder"], input="sk-stored-123\n")
    monkeypatch.setenv(KEY_ENV, "sk-from-env")
    assert oma("run", "-p", "recorder", "hi").exit_code == 0
    assert settings().api_key is None  # the plugin reads its own variable


def test_api_key_overrides_both(monkeypatch: pytest.MonkeyPatch) -> None:
    CliRunner().invoke(cli, ["keys", "set", "recorder"], input="sk-stored-123\n")
    monkeypatch.setenv(KEY_ENV, "sk-from-env")
    assert oma("run", "-p", "recorder", "--api-key", "sk-flag", "hi").exit_code == 0
    assert settings().api_key == "sk-flag"


def test_a_keys_file_others_can_read_warns_and_its_key_is_used(tmp_path: Path) -> None:
    CliRunner().invoke(cli, ["keys", "set", "recorder"], input="sk-stored-123\n")
    path = Path(oma("keys", "path").stdout.strip())
    path.chmod(0o644)
    result = oma("run", "-p", "recorder", "hi")
    assert result.exit_code == 0, result.output
    assert result.stderr == (
        f"warning: {path} can be read by others (mode 644); run: chmod 600 {path}\n"
    )
    assert settings().api_key == "sk-stored-123"
    assert "sk-stored-123" not in result.output
    assert stat.S_IMODE(path.stat().st_mode) == 0o644


class HostedPlugin:
    """A provider with a key variable and a default host (``https://api.hosted.test/v1``)."""

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        def factory(settings: ProviderSettings) -> Recorder:
            SEEN.append(("settings", settings))
            return Recorder()

        spec = ProviderSpec(
            "hosted",
            "Hosted",
            factory,
            Capabilities.everything(),
            default_base_url="https://api.hosted.test/v1",
            api_key_env="HOSTED_TEST_KEY",
        )
        return [spec]


def store(*args: str, key: str) -> None:
    done = CliRunner().invoke(cli, ["keys", "set", *args], input=f"{key}\n")
    assert done.exit_code == 0, done.output


@pytest.mark.parametrize(
    "base_url", [None, "https://api.hosted.test/v1", "HTTPS://API.Hosted.test:443/other/"]
)
def test_the_provider_key_reaches_the_provider_default_host(
    base_url: str | None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTED_TEST_KEY", raising=False)
    PluginHost.default().register(HostedPlugin(), name="hosted-plugin")
    store("hosted", key="sk-provider-wide")
    given = [] if base_url is None else ["--base-url", base_url]
    result = oma("run", "-p", "hosted", *given, "hi")
    assert result.exit_code == 0, result.output
    assert settings().api_key == "sk-provider-wide"
    assert result.stderr == ""


@pytest.mark.parametrize(
    "base_url", ["http://api.hosted.test/v1", "https://api.hosted.test:8443/v1", "https://x.test"]
)
def test_the_provider_key_never_reaches_another_host_and_a_note_says_why(
    base_url: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTED_TEST_KEY", raising=False)
    PluginHost.default().register(HostedPlugin(), name="hosted-plugin")
    store("hosted", key="sk-provider-wide")
    result = oma("run", "-p", "hosted", "--base-url", base_url, "hi")
    assert result.exit_code == 0, result.output
    assert settings().api_key is None
    assert "sk-provider-wide" not in result.output
    assert result.stderr.startswith("note: the key stored for hosted is sent only to its default")
    assert "oma keys set hosted --base-url " in result.stderr


@pytest.mark.parametrize(
    ("base_url", "store_with"),
    [
        (None, "oma keys set hosted"),
        ("http://u:pw@127.0.0.1:9/v1", "oma keys set hosted --base-url http://127.0.0.1:9"),
    ],
)
def test_api_key_warns_that_other_processes_can_read_it_and_names_the_safer_ways(
    base_url: str | None, store_with: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("HOSTED_TEST_KEY", raising=False)
    PluginHost.default().register(HostedPlugin(), name="hosted-plugin")
    given = [] if base_url is None else ["--base-url", base_url]
    result = oma("run", "-p", "hosted", *given, "--api-key", "sk-on-the-line", "hi")
    assert result.exit_code == 0, result.output
    assert settings().api_key == "sk-on-the-line"
    assert result.stderr == (
        "warning: --api-key puts the key on the command line, where other processes of your "
        "user (an MCP server, say) can read it from /proc; store it instead with: "
        f"{store_with} (or set HOSTED_TEST_KEY)\n"
    )


@pytest.mark.parametrize("command", ["run", "render", "chat"])
def test_the_api_key_help_says_other_processes_can_read_it_and_names_keys_set(
    command: str,
) -> None:
    result = CliRunner().invoke(cli, [command, "--help"], terminal_width=80)
    assert result.exit_code == 0, result.output
    text = " ".join(result.output.split())
    start = text.index("--api-key TEXT")
    said = text[start : text.index(" --", start + 1)]
    assert "other processes of your user can read it" in said, said
    assert "`oma keys set PROVIDER [--base-url URL]`" in said, said


def test_no_api_key_no_warning() -> None:
    result = oma("run", "-p", "recorder", "hi")
    assert result.exit_code == 0, result.output
    assert result.stderr == ""


def test_a_key_stored_for_the_host_beats_the_environment_variable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    PluginHost.default().register(HostedPlugin(), name="hosted-plugin")
    store("hosted", "--base-url", "http://127.0.0.1:9/v1", key="sk-for-the-host")
    monkeypatch.setenv("HOSTED_TEST_KEY", "sk-from-env")
    assert oma("run", "-p", "hosted", "--base-url", "http://127.0.0.1:9/v2", "hi").exit_code == 0
    assert settings().api_key == "sk-for-the-host"


def test_a_keyless_provider_takes_a_key_stored_for_its_host() -> None:
    store("echo", "--base-url", "http://127.0.0.1:9", key="sk-for-echo-host")
    assert oma("run", "-p", "recorder", "--base-url", "http://127.0.0.1:9", "hi").exit_code == 0
    assert settings().api_key is None  # another provider's host key is not this one's
    SEEN.clear()
    store("recorder", "--base-url", "http://127.0.0.1:9", key="sk-for-recorder-host")
    assert oma("run", "-p", "recorder", "--base-url", "http://127.0.0.1:9/v1", "hi").exit_code == 0
    assert settings().api_key == "sk-for-recorder-host"


def test_render_never_shows_a_stored_key() -> None:
    CliRunner().invoke(cli, ["keys", "set", "echo"], input="sk-stored-123\n")
    result = oma("render", "hi")
    assert result.exit_code == 0, result.output
    assert "sk-stored-123" not in result.output
    assert json.loads(result.stdout)["messages"][0]["content"][0]["text"] == "hi"


class PickyPlugin:
    """A provider that refuses an option and needs a key, as the core's checks do."""

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        from oma_core.errors import PluginError, UsageError

        def factory(settings: ProviderSettings) -> Recorder:
            if "bogus" in settings.options:
                raise PluginError("the picky provider has no option 'bogus'; did you mean 'bogs'?")
            if settings.api_key is None:
                raise UsageError("the picky provider needs a key: set PICKY_API_KEY")
            return Recorder()

        return [ProviderSpec("picky", "Picky", factory, Capabilities.everything())]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["-o", "bogus", "1"], "no option 'bogus'; did you mean 'bogs'?"),
        ([], "needs a key: set PICKY_API_KEY"),
    ],
)
def test_a_configuration_error_at_run_start_is_one_line_and_exit_2(
    args: list[str], says: str
) -> None:
    PluginHost.default().register(PickyPlugin(), name="picky-plugin")
    result = oma("run", "-p", "picky", *args, "hi")
    assert result.exit_code == 2, result.output
    assert result.stdout == ""
    assert result.stderr.startswith("error: ") and says in result.stderr
    assert result.stderr.count("\n") == 1


class LimitedPlugin:
    """A provider whose images may hold 100 bytes each, with a render()."""

    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        from oma_core.toolkit import MediaLimit

        class Renders(Recorder):
            def render(self, request: ProviderRequest) -> dict[str, Any]:
                return {"messages": len(request.messages)}

        capabilities = attrs.evolve(
            Capabilities.everything(), limits=(MediaLimit(100, name="image limit"),)
        )
        return [ProviderSpec("limited", "Limited", lambda s: Renders(), capabilities)]


def test_render_warns_on_a_size_limit_and_a_run_refuses_before_sending(tmp_path: Path) -> None:
    PluginHost.default().register(LimitedPlugin(), name="limited-plugin")
    picture = tmp_path / "big.png"
    picture.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(300))
    rendered = oma("render", "-p", "limited", "-a", str(picture))
    assert rendered.exit_code == 0, rendered.output
    assert json.loads(rendered.stdout) == {"messages": 1}
    assert rendered.stderr.startswith("warning: ") and "image limit" in rendered.stderr
    ran = oma("run", "-p", "limited", "-a", str(picture))
    assert ran.exit_code == 2
    assert ran.stderr.startswith("error: ") and "image limit" in ran.stderr
    assert [kind for kind, _ in SEEN if kind == "request"] == []


class KeyedPlugin:
    @hookimpl
    def oma_register_providers(self) -> list[ProviderSpec]:
        def factory(settings: ProviderSettings) -> Recorder:
            SEEN.append(("settings", settings))
            return Recorder()

        spec = ProviderSpec(
            "keyed",
            "Keyed",
            factory,
            Capabilities.everything(),
            api_key_env=("KEYED_API_KEY", "KEYED_TOKEN"),
            requires_api_key=True,
        )
        return [spec]


def test_a_missing_key_is_one_line_naming_the_variables_and_oma_keys_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("KEYED_API_KEY", "KEYED_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    PluginHost.default().register(KeyedPlugin(), name="keyed-plugin")
    result = oma("run", "-p", "keyed", "hi")
    assert result.exit_code == 2
    assert result.stderr == (
        "error: Keyed needs an API key and has none: set KEYED_API_KEY or KEYED_TOKEN in the "
        "environment or store one with `oma keys set keyed` (--api-key KEY is the last resort)\n"
    )
    assert [kind for kind, _ in SEEN] == []  # nothing built, nothing sent
    CliRunner().invoke(cli, ["keys", "set", "keyed"], input="sk-keyed-1\n")
    assert oma("run", "-p", "keyed", "hi").exit_code == 0
    assert settings().api_key == "sk-keyed-1"
    SEEN.clear()
    monkeypatch.setenv("KEYED_TOKEN", "sk-from-second-variable")
    assert oma("run", "-p", "keyed", "hi").exit_code == 0
    assert settings().api_key is None  # any of the provider's variables wins over the store


def test_a_missing_key_for_a_base_url_names_the_command_for_that_host(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("KEYED_API_KEY", "KEYED_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    PluginHost.default().register(KeyedPlugin(), name="keyed-plugin")
    url = "http://user:pw@127.0.0.1:9/v1?token=t0k"
    fix = "`oma keys set keyed --base-url http://127.0.0.1:9`"
    result = oma("run", "-p", "keyed", "--base-url", url, "hi")
    assert result.exit_code == 2
    assert result.stderr.startswith("error: Keyed needs an API key and has none")
    assert fix in result.stderr
    assert "pw" not in result.stderr and "t0k" not in result.stderr
    CliRunner().invoke(cli, ["keys", "set", "keyed"], input="sk-keyed-wide\n")
    again = oma("run", "-p", "keyed", "--base-url", url, "hi")  # the key for its own host
    assert again.exit_code == 2
    note, error = again.stderr.splitlines()
    assert note.startswith("note: the key stored for keyed is sent only to its default host")
    assert fix in error and "`oma keys set keyed`" not in error
    assert [kind for kind, _ in SEEN] == []
    CliRunner().invoke(cli, ["keys", "set", "keyed", "--base-url", url], input="sk-keyed-at\n")
    assert oma("run", "-p", "keyed", "--base-url", url, "hi").exit_code == 0
    assert settings().api_key == "sk-keyed-at"
    got = oma("keys", "get", "keyed", "--base-url", "http://127.0.0.1:9/v1")
    assert got.stdout == "sk-keyed-at\n"


# -- options checked against the provider's declaration, before any request


@pytest.fixture
def openai_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """The oma-openai plugin, registered, and its fake Chat Completions service on 127.0.0.1
    (compatible mode: fields it does not know are accepted and recorded)."""
    oma_openai = pytest.importorskip("oma_openai")
    monkeypatch.syspath_prepend(str(Path(oma_openai.__file__).parents[1] / "tests"))
    from fake_openai import API_KEY, FakeChatCompletions

    PluginHost.default().register(oma_openai, name="openai")
    monkeypatch.setenv("OPENAI_API_KEY", API_KEY)
    with FakeChatCompletions(mode="compatible") as server:
        yield server


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_misspelt_option_exits_2_with_a_did_you_mean_and_nothing_is_sent(
    openai_server: Any,
) -> None:
    url = openai_server.base_url
    result = oma("run", "-p", "openai", "--base-url", url, "-o", "tempreature", "0.3", "hi")
    assert result.exit_code == 2
    assert "did you mean 'temperature'" in result.stderr
    assert openai_server.requests == []


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_an_option_of_the_wrong_type_exits_2_naming_the_type_and_nothing_is_sent(
    openai_server: Any,
) -> None:
    url = openai_server.base_url
    result = oma("run", "-p", "openai", "--base-url", url, "-o", "seed", "high", "hi")
    assert result.exit_code == 2
    assert "-o seed for openai must be an integer, not text" in result.stderr
    assert openai_server.requests == []


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_extra_body_fields_reach_the_wire_as_body_fields(openai_server: Any) -> None:
    url = openai_server.base_url
    extra = '{"top_k": 5, "min_p": 0.1}'
    result = oma("run", "-p", "openai", "--base-url", url, "-o", "extra_body", extra, "hi")
    assert result.exit_code == 0, result.stderr
    (sent,) = openai_server.requests
    assert sent.json["top_k"] == 5 and sent.json["min_p"] == 0.1
    assert "extra_body" not in sent.json


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_audio_refused_by_a_provider_names_the_providers_that_take_audio(
    openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", os.environ["OPENAI_API_KEY"])  # the fake's key
    voice = str(ROOT / "examples" / "voice.wav")
    url = openai_server.base_url
    result = oma("run", "-m", "deepseek:deepseek-chat", "--base-url", url, "-a", voice, "hi")
    assert result.exit_code == 2
    assert result.stderr.startswith('error: DeepSeek cannot represent the "audio" content block')
    assert result.stderr.endswith(
        "; providers that take audio: openai, openai-compatible, openrouter, vllm\n"
    )
    assert openai_server.requests == []
    ran = oma("run", "-m", "deepseek:deepseek-chat", "--base-url", url, "hi")
    assert ran.exit_code == 0, ran.stderr  # the provider itself is fine


# -- a key per host, against two real loopback servers


@pytest.fixture
def two_hosts(monkeypatch: pytest.MonkeyPatch) -> Iterator[tuple[Any, Any]]:
    """The oma-openai plugin and two fake Chat Completions services on 127.0.0.1, each
    taking only its own key; ``$OPENAI_API_KEY`` unset."""
    oma_openai = pytest.importorskip("oma_openai")
    monkeypatch.syspath_prepend(str(Path(oma_openai.__file__).parents[1] / "tests"))
    from fake_openai import FakeChatCompletions

    PluginHost.default().register(oma_openai, name="openai")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with (
        FakeChatCompletions(api_key="sk-for-one") as one,
        FakeChatCompletions(api_key="sk-for-two") as two,
    ):
        yield one, two


def keys_sent(server: Any) -> list[str]:
    return [request.headers.get("authorization", "") for request in server.requests]


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_each_host_receives_only_the_key_stored_for_it(two_hosts: tuple[Any, Any]) -> None:
    one, two = two_hosts
    store("openai", key="sk-provider-wide")
    store("openai", "--base-url", one.base_url, key="sk-for-one")
    store("openai", "--base-url", two.base_url, key="sk-for-two")
    for server in (one, two, one):
        result = oma("run", "-m", "openai:gpt-4o", "--base-url", server.base_url, "hi")
        assert result.exit_code == 0, result.output
    assert keys_sent(one) == ["Bearer sk-for-one"] * 2
    assert keys_sent(two) == ["Bearer sk-for-two"]
    continued = oma("run", "-c", "more")  # the logged host, and its key
    assert continued.exit_code == 0, continued.output
    assert keys_sent(one) == ["Bearer sk-for-one"] * 3
    assert len(two.requests) == 1


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_the_provider_wide_key_is_never_sent_to_a_custom_host(two_hosts: tuple[Any, Any]) -> None:
    one, two = two_hosts
    store("openai", key="sk-for-one")  # even the very key that host would take
    result = oma("run", "-m", "openai:gpt-4o", "--base-url", one.base_url, "hi")
    assert result.exit_code == 2
    assert one.requests == [] and two.requests == []
    note, error = result.stderr.splitlines()
    origin = one.base_url.removesuffix("/v1")
    assert note == (
        f"note: the key stored for openai is sent only to its default host, not to {origin}; "
        f"store one for that host with: oma keys set openai --base-url {origin}"
    )
    assert error.startswith("error: OpenAI needs an API key and has none")
    assert f"`oma keys set openai --base-url {origin}`" in error


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
@pytest.mark.parametrize("where", ["store", "environment", "option"])
def test_a_refused_key_says_where_it_came_from_and_how_to_replace_it(
    where: str, two_hosts: tuple[Any, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    one, _ = two_hosts
    origin = one.base_url.removesuffix("/v1")
    wrong = "sk-wrong-0123456789"
    given: list[str] = []
    if where == "store":
        store("openai", "--base-url", one.base_url, key=wrong)
    elif where == "environment":
        monkeypatch.setenv("OPENAI_API_KEY", wrong)
    else:
        given = ["--api-key", wrong]
    result = oma("run", "-m", "openai:gpt-4o", "--base-url", one.base_url, *given, "hi")
    assert result.exit_code == 1
    assert keys_sent(one) == [f"Bearer {wrong}"]
    assert wrong not in result.output
    error = result.stderr.splitlines()[-1]
    assert error.startswith("error: ") and "401" in error
    said = {
        "store": (
            f"the key stored for openai {origin} was refused; replace it with: "
            f"oma keys set openai --base-url {origin}"
        ),
        "environment": (
            "the key in $OPENAI_API_KEY was refused; set OPENAI_API_KEY to a valid key, or "
            f"store one for this host with: oma keys set openai --base-url {origin}"
        ),
        "option": (
            "the key given with --api-key was refused; give a valid one, or store it with: "
            f"oma keys set openai --base-url {origin}"
        ),
    }[where]
    assert error.endswith(f"({said})")


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_chat_turn_refused_for_its_key_says_which_key(two_hosts: tuple[Any, Any]) -> None:
    one, _ = two_hosts
    origin = one.base_url.removesuffix("/v1")
    store("openai", "--base-url", one.base_url, key="sk-wrong-for-chat")
    result = oma("chat", "-m", "openai:gpt-4o", "--base-url", one.base_url, input="hi\n")
    assert "sk-wrong-for-chat" not in result.output
    assert (
        f"(the key stored for openai {origin} was refused; replace it with: "
        f"oma keys set openai --base-url {origin})"
    ) in result.stderr


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_a_keyless_run_refused_by_its_host_says_no_key_was_given(
    two_hosts: tuple[Any, Any],
) -> None:
    one, _ = two_hosts
    origin = one.base_url.removesuffix("/v1")
    result = oma("run", "-m", "openai-compatible:m", "--base-url", one.base_url, "hi")
    assert result.exit_code == 1
    assert result.stderr.splitlines()[-1].endswith(
        "(no key was given; store one for this host with: oma keys set openai-compatible "
        f"--base-url {origin})"
    )


@pytest.fixture
def closed_port() -> int:
    """A loopback port nothing listens on (bound, then closed: a connection is refused)."""
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
@pytest.mark.parametrize("as_json", [False, True])
def test_a_task_s_connection_error_names_the_host(
    as_json: bool, closed_port: int, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    oma_openai = pytest.importorskip("oma_openai")
    PluginHost.default().register(oma_openai, name="openai")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-not-sent-anywhere")
    agent = {
        "name": "namer",
        "provider": "openai",
        "base_url": f"http://127.0.0.1:{closed_port}/v1",
        "max_retries": 0,
    }
    plan = tmp_path / "plan.json"
    plan.write_text(
        json.dumps(
            {
                "agents": [agent],
                "tasks": [{"title": "bird", "description": "Name a bird.", "assignee": "namer"}],
            }
        )
    )
    result = oma("tasks", *(["--json"] if as_json else []), str(plan))
    assert result.exit_code == 1
    if as_json:
        error = json.loads(result.stdout)["tasks"]["bird"]["error"]
    else:
        (error,) = [line for line in result.stdout.splitlines() if "failed" in line]
    assert "connection error" in error
    assert error.endswith(f"(connecting to 127.0.0.1:{closed_port})")


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
@pytest.mark.parametrize("where", ["store", "plan"])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_task_refused_for_its_key_says_which_key_and_how_to_replace_it(
    where: str, as_json: bool, two_hosts: tuple[Any, Any], tmp_path: Path
) -> None:
    one, _ = two_hosts
    origin = one.base_url.removesuffix("/v1")
    wrong = "sk-wrong-for-a-task-0123"
    agent = {"name": "namer", "provider": "openai", "base_url": one.base_url, "max_retries": 0}
    if where == "store":
        store("openai", "--base-url", one.base_url, key=wrong)
    else:
        agent["api_key"] = wrong
    plan = tmp_path / "plan.json"
    task = {"title": "bird", "description": "Name a bird.", "assignee": "namer"}
    plan.write_text(json.dumps({"agents": [agent], "tasks": [task]}))
    result = oma("tasks", *(["--json"] if as_json else []), str(plan))
    assert result.exit_code == 1
    assert keys_sent(one) == [f"Bearer {wrong}"]
    assert wrong not in result.output
    if as_json:
        error = json.loads(result.stdout)["tasks"]["bird"]["error"]
    else:
        (error,) = [line for line in result.stdout.splitlines() if "failed" in line]
    assert "401" in error
    said = {
        "store": (
            f"the key stored for openai {origin} was refused; replace it with: "
            f"oma keys set openai --base-url {origin}"
        ),
        "plan": (
            "the key given in the agent's api_key was refused; give a valid one, or store it "
            f"with: oma keys set openai --base-url {origin}"
        ),
    }[where]
    assert error.endswith(f"({said})"), error


# -- render: the body a run sends, streaming or not


PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(64))


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
@pytest.mark.parametrize("stream", [True, False])
def test_render_prints_the_body_the_run_sends_byte_for_byte(
    stream: bool, openai_server: Any, tmp_path: Path
) -> None:
    picture = tmp_path / "cat.png"
    picture.write_bytes(PNG)
    args = [
        "-m", "openai:gpt-4o", "--base-url", openai_server.base_url, "-s", "be brief",
        "-o", "seed", "7", "-o", "temperature", "0.2", "-o", "max_tokens", "50",
        "what is it?", "-a", str(picture), *([] if stream else ["--no-stream"]),
    ]  # fmt: skip
    rendered = oma("render", "--full", *args)
    assert rendered.exit_code == 0, rendered.output
    assert rendered.stderr == ""
    assert openai_server.requests == []  # render sends nothing to the service
    ran = oma("run", *args)
    assert ran.exit_code == 0, ran.output
    (sent,) = openai_server.requests
    printed = json.dumps(json.loads(sent.body), ensure_ascii=False, indent=2) + "\n"
    assert rendered.stdout == printed
    body = json.loads(rendered.stdout)
    if stream:
        assert body["stream"] is True and body["stream_options"] == {"include_usage": True}
    else:
        assert "stream" not in body and "stream_options" not in body


@pytest.mark.combination  # needs oma-openai: run by `nox -s all`
def test_render_of_a_streaming_run_sends_the_key_nowhere(
    openai_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    from oma_core.cli._capture import PLACEHOLDER_KEY

    monkeypatch.setenv("OPENAI_API_KEY", "sk-real-never-sent")
    monkeypatch.setenv("HTTP_PROXY", openai_server.url)  # a proxy would see the request
    monkeypatch.setenv("ALL_PROXY", openai_server.url)
    rendered = oma("render", "-m", "openai:gpt-4o", "hi")
    assert rendered.exit_code == 0, rendered.output
    assert json.loads(rendered.stdout)["stream"] is True
    assert openai_server.requests == []
    assert "sk-real-never-sent" not in rendered.output and PLACEHOLDER_KEY not in rendered.output
