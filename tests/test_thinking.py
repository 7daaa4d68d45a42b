"""``AgentConfig.thinking``: the values it takes, its refusal before any request where the
provider or the model cannot think, ``ModelRules`` (which settings a model family refuses, left
out with a one-line note) and ``oma plugins`` showing thinking and reasoning per provider."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from _builders import oma
from hypothesis import given
from hypothesis import strategies as st

from oma_core import Agent, AgentConfig, Capabilities
from oma_core.capabilities import THINKING_KINDS, ModelRules, UnsupportedSettingError
from oma_core.errors import UsageError
from oma_core.testing import ScriptedProvider

LEVELS = ("off", "low", "medium", "high")

# -- the setting's values ---------------------------------------------------------------------


def _valid(value: object) -> bool:
    if value is None or (isinstance(value, str) and value in LEVELS):
        return True
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


@given(
    st.one_of(
        st.none(),
        st.sampled_from(LEVELS),
        st.text(max_size=8),
        st.integers(min_value=-(2**40), max_value=2**40),
        st.booleans(),
        st.floats(allow_nan=True),
        st.lists(st.integers(), max_size=2),
    )
)
def test_thinking_takes_a_level_a_positive_budget_or_none(value: Any) -> None:
    if _valid(value):
        assert AgentConfig(name="a", thinking=value).thinking == value
    else:
        with pytest.raises(ValueError, match="thinking must be"):
            AgentConfig(name="a", thinking=value)


# -- refused before any request ---------------------------------------------------------------


async def _run(provider: ScriptedProvider, thinking: object, model: str | None = None) -> Any:
    async with Agent(
        AgentConfig(name="a", provider=provider, model=model, thinking=thinking)
    ) as agent:
        return await agent.run("hi")


@pytest.mark.parametrize("thinking", ["low", "high", 2048])
async def test_a_provider_without_thinking_refuses_it_before_any_request(thinking: object) -> None:
    provider = ScriptedProvider(["never sent"], capabilities=Capabilities.text_only())
    result = await _run(provider, thinking)
    assert not result.success
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError) and isinstance(error, UsageError)
    assert (error.provider, error.setting, error.value) == ("Scripted", "thinking", thinking)
    assert str(error).startswith(f"Scripted cannot take thinking={thinking!r}")
    assert provider.requests == []


@pytest.mark.parametrize("thinking", [None, "off"])
async def test_no_thinking_or_off_runs_on_a_provider_without_thinking(thinking: object) -> None:
    provider = ScriptedProvider(["done"], capabilities=Capabilities.text_only())
    result = await _run(provider, thinking)
    assert result.success and result.output == "done"
    assert provider.requests[0].thinking == thinking


RULED = Capabilities(
    Capabilities.everything().blocks,
    thinking=True,
    models=(
        ModelRules("plain-*", thinking="never"),
        ModelRules(("deep-*", "sage"), thinking="always", budget=False),
        ModelRules("*"),
    ),
)


@pytest.mark.parametrize(
    ("model", "thinking", "reason"),
    [
        ("plain-1", "low", "the model cannot think"),
        ("plain-1", 4096, "the model cannot think"),
        ("deep-2", "off", "the model always thinks"),
        ("sage", 4096, "not a token budget"),
    ],
)
async def test_a_model_family_that_cannot_take_the_thinking_is_refused(
    model: str, thinking: object, reason: str
) -> None:
    provider = ScriptedProvider(["never sent"], capabilities=RULED)
    result = await _run(provider, thinking, model)
    error = result.status.error
    assert isinstance(error, UnsupportedSettingError), result.status
    assert error.model == model and reason in error.reason
    assert f"for model {model}" in str(error)
    assert provider.requests == []


@pytest.mark.parametrize(
    ("model", "thinking"),
    [("plain-1", "off"), ("deep-2", "high"), ("other", 4096), ("other", "off"), ("sage", "low")],
)
async def test_what_a_model_family_takes_is_sent(model: str, thinking: object) -> None:
    provider = ScriptedProvider(["done"], capabilities=RULED)
    result = await _run(provider, thinking, model)
    assert result.success, result.status
    assert provider.requests[0].thinking == thinking


def test_the_first_family_that_matches_applies() -> None:
    assert RULED.rules_for("plain-x") is RULED.models[0]
    assert RULED.rules_for("sage") is RULED.models[1]
    assert RULED.rules_for("sage-2") is RULED.models[2]
    assert RULED.rules_for(None) is None
    assert Capabilities.text_only().rules_for("any") is None


def test_a_family_takes_only_documented_thinking_kinds() -> None:
    assert THINKING_KINDS == ("never", "optional", "always")
    with pytest.raises(ValueError, match="thinking"):
        ModelRules("x", thinking="sometimes")


# -- settings a model refuses -----------------------------------------------------------------

SETTINGS = ("temperature", "top_p", "top_k", "stop")


@given(
    st.lists(st.sampled_from(SETTINGS), unique=True),
    st.frozensets(st.sampled_from(SETTINGS)),
    st.frozensets(st.sampled_from(SETTINGS)),
    st.lists(st.sampled_from(SETTINGS), unique=True),
    st.booleans(),
)
def test_the_refused_settings_are_those_the_family_names(
    given_: list[str],
    refuses: frozenset[str],
    while_thinking: frozenset[str],
    exclusive: list[str],
    thinking: bool,
) -> None:
    rules = ModelRules(
        "m", refuses=refuses, refuses_while_thinking=while_thinking, exclusive=exclusive
    )
    refused = rules.refused(given_, thinking=thinking)
    kept = [name for name in given_ if name not in refused]
    assert len(set(refused)) == len(refused) and set(refused) <= set(given_)
    assert not set(kept) & refuses
    assert not (thinking and set(kept) & while_thinking)
    assert len([name for name in kept if name in exclusive]) <= 1
    for name in refused:  # nothing is left out without a rule that says so
        assert name in refuses or (thinking and name in while_thinking) or name in exclusive


def test_a_refused_setting_is_left_out_with_a_one_line_note(
    caplog: pytest.LogCaptureFixture,
) -> None:
    rules = ModelRules(
        "m-*",
        refuses={"top_k"},
        refuses_while_thinking={"temperature"},
        exclusive=("temperature", "top_p"),
    )
    names = {
        "temperature": "temperature",
        "top_p": "top_p",
        "top_k": "top_k",
        "stop": "stop_sequences",
    }
    logger = logging.getLogger("oma_test.provider")
    body = {"temperature": 0.2, "top_p": 0.9, "top_k": 5, "stop_sequences": ["X"], "model": "m-1"}
    with caplog.at_level(logging.WARNING, logger="oma_test.provider"):
        left_out = rules.leave_out(body, names, thinking=False, model="m-1", logger=logger)
    assert left_out == ["top_k", "top_p"]
    assert body == {"temperature": 0.2, "stop_sequences": ["X"], "model": "m-1"}
    assert [r.getMessage() for r in caplog.records] == [
        "m-1: top_k left out: the model does not take it",
        "m-1: top_p left out: the model takes only one of temperature, top_p",
    ]
    caplog.clear()
    body = {"temperature": 0.2, "top_p": 0.9}
    with caplog.at_level(logging.WARNING, logger="oma_test.provider"):
        rules.leave_out(body, names, thinking=True, model="m-1", logger=logger)
    assert body == {"top_p": 0.9}  # temperature goes while thinking, so top_p is the one kept
    assert [r.getMessage() for r in caplog.records] == [
        "m-1: temperature left out: the model does not take it while it thinks"
    ]


# -- oma plugins ------------------------------------------------------------------------------


@pytest.mark.usefixtures("cli_home")
def test_oma_plugins_shows_thinking_and_reasoning_per_provider(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OMA_LOAD_PLUGINS", "testplugin")
    data = json.loads(oma("plugins", "--json").stdout)
    echo, shout = data["providers"]["echo"], data["providers"]["shout"]
    assert (echo["thinking"], echo["reasoning"], echo["model_rules"]) == (True, "native", [])
    assert (shout["thinking"], shout["reasoning"]) == (False, "refused")
    out = oma("plugins").stdout
    assert "Thinking and reasoning" in out
    lines = out[out.index("Thinking and reasoning") :].splitlines()
    assert any(line.split()[:3] == ["echo", "yes", "yes"] for line in lines), out
    assert any(line.split()[:3] == ["shout", "no", "no"] for line in lines), out
