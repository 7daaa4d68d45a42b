"""OpenMultiAgent and run_agent: their signatures, fresh runs, run ids and shared providers."""

from __future__ import annotations

import inspect

from oma_core import OpenMultiAgent


def test_open_multi_agent_signature_has_the_contract_parameters() -> None:
    params = inspect.signature(OpenMultiAgent).parameters
    expected = [
        "on_progress",
        "evaluation",
        "max_retries",
        "retry_delay",
        "retry_backoff",
        "max_token_budget",
        "max_cost_budget",
        "estimate_cost",
    ]
    assert list(params)[: len(expected)] == expected
    assert all(params[name].default is None for name in expected)


def test_run_agent_signature_has_the_contract_parameters() -> None:
    params = inspect.signature(OpenMultiAgent.run_agent).parameters
    assert list(params)[:3] == ["self", "config", "input"]
    for name in (
        "run_id",
        "metadata",
        "max_retries",
        "max_token_budget",
        "max_cost_budget",
        "budget",
        "timeout",
        "call_timeout",
    ):
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, name
        assert params[name].default is None, name
