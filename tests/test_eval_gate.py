"""The gate: a policy checked against crafted reports, each rule passing and failing, the
regression against a baseline, too few samples, and bad policies refused."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from oma_core.errors import UsageError
from oma_core.evaluation import (
    CaseResult,
    EvalReport,
    GatePolicy,
    InvalidPolicyError,
    Score,
    check_gate,
)


def report(scores: dict[str, list[float]], spent: float | None = 1.0) -> EvalReport:
    """A report whose config ``name`` scored ``values`` with "exact", one case each."""
    cases = [
        CaseResult(f"c{i}", config, "q", scores={"exact": Score(value)}, latency=1.0)
        for config, values in scores.items()
        for i, value in enumerate(values)
    ]
    return EvalReport("d", list(scores), ["exact"], cases, spent=spent)


def gate(
    policy: dict[str, Any], checked: EvalReport, baseline: EvalReport | None = None
) -> list[str]:
    return check_gate(checked, GatePolicy.from_data(policy), baseline)


def test_an_empty_policy_holds() -> None:
    assert gate({}, report({"a": [0.0]})) == []


@pytest.mark.parametrize("metric", ["mean", "p50", "p95", "pass_rate"])
def test_a_rule_holds_at_its_minimum_and_fails_below_it(metric: str) -> None:
    checked = report({"a": [1.0, 1.0, 0.0, 1.0]})  # mean .75, p50 1, p95 1, pass rate .75
    value = {"mean": 0.75, "p50": 1.0, "p95": 1.0, "pass_rate": 0.75}[metric]
    rule = {"scorer": "exact", "metric": metric}
    assert gate({"rules": [{**rule, "min": value}]}, checked) == []
    (failed,) = gate({"rules": [{**rule, "min": value + 0.01}]}, checked)
    assert failed.startswith(f"rules[0] (exact {metric} >= ") and "a has" in failed


def test_a_rule_without_a_config_applies_to_every_config() -> None:
    checked = report({"good": [1.0], "bad": [0.0]})
    failed = gate({"rules": [{"scorer": "exact", "metric": "mean", "min": 0.5}]}, checked)
    assert len(failed) == 1 and "bad has 0" in failed[0]
    rule = {"scorer": "exact", "config": "good", "metric": "mean", "min": 0.5}
    assert gate({"rules": [rule]}, checked) == []


def test_a_rule_with_no_scores_fails() -> None:
    failed = gate({"rules": [{"scorer": "judge", "metric": "mean", "min": 0}]}, report({"a": [1]}))
    assert failed == ["rules[0] (judge mean >= 0): a has no judge scores"]


def test_too_few_samples_fail() -> None:
    checked = report({"a": [1.0, 1.0], "b": [1.0]})
    assert gate({"min_samples": 2}, checked) == ["min_samples: b has 1 cases scored, fewer than 2"]


def test_max_cost_fails_when_more_was_spent_or_nothing_was_priced() -> None:
    assert gate({"max_cost": 1.0}, report({"a": [1]}, spent=1.0)) == []
    assert gate({"max_cost": 0.5}, report({"a": [1]}, spent=1.0)) == [
        "max_cost: spent 1, more than 0.5"
    ]
    (failed,) = gate({"max_cost": 5}, report({"a": [1]}, spent=None))
    assert "no cost" in failed


def test_a_regression_past_the_allowed_drop_fails_against_the_baseline() -> None:
    baseline = report({"a": [1.0, 1.0], "b": [0.5, 0.5]})
    fine = report({"a": [1.0, 0.9], "b": [0.5, 0.6]})
    assert gate({"max_regression": 0.05}, fine, baseline) == []
    worse = report({"a": [1.0, 0.7], "b": [0.5, 0.5]})
    (failed,) = gate({"max_regression": 0.05}, worse, baseline)
    assert failed.startswith("max_regression: a exact mean 0.85 is 0.15 below")
    assert gate({"max_regression": 0.05}, worse) == []  # no baseline: nothing to compare


@pytest.mark.parametrize(
    ("policy", "path"),
    [
        ([], ""),
        ({"min_sample": 3}, "min_sample"),
        ({"min_samples": -1}, "min_samples"),
        ({"min_samples": 2.5}, "min_samples"),
        ({"max_cost": "1"}, "max_cost"),
        ({"max_regression": -0.1}, "max_regression"),
        ({"rules": {}}, "rules"),
        ({"rules": [{"metric": "mean", "min": 1}]}, "rules[0].scorer"),
        ({"rules": [{"scorer": "x", "metric": "median", "min": 1}]}, "rules[0].metric"),
        ({"rules": [{"scorer": "x", "metric": "mean"}]}, "rules[0].min"),
        ({"rules": [{"scorer": "x", "metric": "mean", "min": 1, "max": 2}]}, "rules[0].max"),
        ({"rules": [{"scorer": "x", "config": 3, "metric": "mean", "min": 1}]}, "rules[0].config"),
    ],
)
def test_a_bad_policy_is_refused_naming_the_place(policy: Any, path: str) -> None:
    with pytest.raises(InvalidPolicyError) as caught:
        GatePolicy.from_data(policy)
    assert caught.value.path == path
    assert isinstance(caught.value, UsageError)


def test_policy_text_that_is_not_json_is_refused() -> None:
    with pytest.raises(InvalidPolicyError, match="not JSON"):
        GatePolicy.from_json("{rules")


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.sampled_from(["scorer", "config", "metric", "min", "x"]), inner)
    ),
    max_leaves=12,
)


@given(
    data=st.dictionaries(
        st.sampled_from(["min_samples", "max_cost", "max_regression", "rules", "other"]),
        json_values,
    )
)
def test_any_policy_is_read_or_refused_with_a_policy_error(data: dict[str, Any]) -> None:
    try:
        policy = GatePolicy.from_data(json.loads(json.dumps(data)))
    except InvalidPolicyError as error:
        assert error.reason
    except ValueError:  # NaN cannot be JSON text: nothing to check
        return
    else:
        check_gate(report({"a": [0.5]}), policy)  # a valid policy checks without error
