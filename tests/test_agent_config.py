"""AgentConfig: its parameters, their order and their defaults."""

from __future__ import annotations

import inspect
from typing import Any

from oma_core import AgentConfig

AGENT_CONFIG_PARAMS: list[tuple[str, Any]] = [
    ("name", inspect.Parameter.empty),
    ("model", None),
    ("provider", "echo"),
    ("base_url", None),
    ("api_key", None),
    ("system_prompt", None),
    ("description", None),
    ("history", ()),
    ("before_run", None),
    ("tools", ()),
    ("max_turns", 10),
    ("max_history_tokens", None),
    ("max_retries", None),
    ("retry_delay", None),
    ("retry_backoff", None),
    ("backend", None),
    ("provider_options", {}),
]


def test_agent_config_signature_lists_the_contract_parameters_in_order() -> None:
    params = list(inspect.signature(AgentConfig).parameters)
    names = [name for name, _ in AGENT_CONFIG_PARAMS]
    assert params[: len(names)] == names


def test_agent_config_defaults_are_the_contract_defaults() -> None:
    config = AgentConfig(name="n")
    for name, default in AGENT_CONFIG_PARAMS[1:]:
        value = getattr(config, name)
        if isinstance(default, tuple):
            assert tuple(value) == default, name
        elif isinstance(default, dict):
            assert dict(value) == default, name
        else:
            assert value == default, name


def test_agent_config_takes_name_model_provider_positionally() -> None:
    config = AgentConfig("n", "m", "scripted")
    assert (config.name, config.model, config.provider) == ("n", "m", "scripted")
