"""A gate for CI: a policy checked against an ``EvalReport`` (and, optionally, a baseline).

A policy is JSON, every key optional::

    {"min_samples": 20, "max_cost": 1.5, "max_regression": 0.05,
     "rules": [{"scorer": "contains", "config": "gpt", "metric": "pass_rate", "min": 0.9}]}

- ``min_samples``: each config has at least this many cases scored;
- ``max_cost``: the report spent at most this (runs and judges);
- ``rules``: the summary's ``metric`` (mean, p50, p95, pass_rate) of ``scorer`` is at least
  ``min``, on ``config`` or, without one, on every config; a rule with no scores fails;
- ``max_regression``: with a baseline report, no config's mean score falls more than this
  below the baseline's, for each scorer both reports have.

A policy that breaks these rules is an ``InvalidPolicyError`` naming the place.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping
from typing import Any

import attrs

from ._eval_report import METRICS, EvalReport
from .errors import UsageError

__all__ = ["GatePolicy", "GateRule", "InvalidPolicyError", "check_gate"]

_POLICY_KEYS = ("min_samples", "max_cost", "max_regression", "rules")
_RULE_KEYS = ("scorer", "config", "metric", "min")


class InvalidPolicyError(UsageError, ValueError):
    """A gate policy broke a rule; ``path`` names the place (``rules[1].metric``)."""

    code = "INVALID_POLICY"

    def __init__(self, path: str, reason: str) -> None:
        self.path = path
        self.reason = reason
        super().__init__(f"policy {path} {reason}" if path else f"policy {reason}")


@attrs.frozen
class GateRule:
    """``metric`` of ``scorer`` is at least ``min`` on ``config`` (None: every config)."""

    scorer: str
    metric: str
    min: float
    config: str | None = None


@attrs.frozen
class GatePolicy:
    """What a report must show to pass the gate: see the module docstring."""

    min_samples: int | None = None
    max_cost: float | None = None
    max_regression: float | None = None
    rules: tuple[GateRule, ...] = ()

    @classmethod
    def from_data(cls, data: object) -> GatePolicy:
        """The policy in ``data`` (parsed JSON), checked."""
        if not isinstance(data, Mapping):
            raise InvalidPolicyError("", "must be a JSON object")
        for key in data:
            if key not in _POLICY_KEYS:
                raise InvalidPolicyError(
                    str(key), f"is not a policy key ({', '.join(_POLICY_KEYS)})"
                )
        min_samples = data.get("min_samples")
        if min_samples is not None and (
            isinstance(min_samples, bool) or not isinstance(min_samples, int) or min_samples < 0
        ):
            raise InvalidPolicyError("min_samples", "must be a whole number >= 0")
        rules = data.get("rules", [])
        if not isinstance(rules, list):
            raise InvalidPolicyError("rules", "must be a list of rules")
        return cls(
            min_samples=min_samples,
            max_cost=_number(data, "max_cost", "max_cost"),
            max_regression=_number(data, "max_regression", "max_regression"),
            rules=tuple(_rule(rule, f"rules[{i}]") for i, rule in enumerate(rules)),
        )

    @classmethod
    def from_json(cls, text: str | bytes) -> GatePolicy:
        try:
            data = json.loads(text)
        except ValueError as error:
            raise InvalidPolicyError("", f"is not JSON: {error}") from None
        return cls.from_data(data)


def _number(data: Mapping[str, Any], key: str, where: str) -> float | None:
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise InvalidPolicyError(where, "must be a finite number")
    if value < 0:
        raise InvalidPolicyError(where, "must be >= 0")
    return float(value)


def _rule(rule: object, here: str) -> GateRule:
    if not isinstance(rule, Mapping):
        raise InvalidPolicyError(here, "must be an object")
    for key in rule:
        if key not in _RULE_KEYS:
            raise InvalidPolicyError(
                f"{here}.{key}", f"is not a rule key ({', '.join(_RULE_KEYS)})"
            )
    scorer, config, metric = rule.get("scorer"), rule.get("config"), rule.get("metric")
    if not isinstance(scorer, str) or not scorer:
        raise InvalidPolicyError(f"{here}.scorer", "must name a scorer")
    if config is not None and (not isinstance(config, str) or not config):
        raise InvalidPolicyError(f"{here}.config", "must name a config")
    if metric not in METRICS:
        raise InvalidPolicyError(f"{here}.metric", f"must be one of {', '.join(METRICS)}")
    if "min" not in rule:
        raise InvalidPolicyError(f"{here}.min", "is missing")
    minimum = rule["min"]
    if (
        isinstance(minimum, bool)
        or not isinstance(minimum, int | float)
        or not math.isfinite(minimum)
    ):
        raise InvalidPolicyError(f"{here}.min", "must be a finite number")
    return GateRule(scorer, metric, float(minimum), config)


def check_gate(
    report: EvalReport, policy: GatePolicy, baseline: EvalReport | None = None
) -> list[str]:
    """Each rule of ``policy`` that ``report`` breaks, said in a line naming the rule (an
    empty list: the gate holds)."""
    failed: list[str] = []
    if policy.min_samples is not None:
        for config in report.configs:
            count = report.scored(config)
            if count < policy.min_samples:
                failed.append(
                    f"min_samples: {config} has {count} cases scored, "
                    f"fewer than {policy.min_samples}"
                )
    if policy.max_cost is not None:
        if report.spent is None:
            failed.append("max_cost: the report has no cost (it was run without prices)")
        elif report.spent > policy.max_cost:
            failed.append(f"max_cost: spent {report.spent:g}, more than {policy.max_cost:g}")
    rows = report.summary()
    for index, rule in enumerate(policy.rules):
        failed += _rule_failures(index, rule, report, rows)
    if policy.max_regression is not None and baseline is not None:
        failed += _regressions(rows, baseline.summary(), policy.max_regression)
    return failed


def _rule_failures(
    index: int, rule: GateRule, report: EvalReport, rows: list[dict[str, Any]]
) -> list[str]:
    said = f"rules[{index}] ({rule.scorer} {rule.metric} >= {rule.min:g}"
    said += f" on {rule.config})" if rule.config else ")"
    configs = [rule.config] if rule.config else list(report.configs)
    failed: list[str] = []
    for config in configs:
        row = next((r for r in rows if r["config"] == config and r["scorer"] == rule.scorer), None)
        value = None if row is None else row[rule.metric]
        if value is None:
            failed.append(f"{said}: {config} has no {rule.scorer} scores")
        elif value < rule.min:
            failed.append(f"{said}: {config} has {value:.4g}")
    return failed


def _regressions(
    rows: list[dict[str, Any]], old_rows: list[dict[str, Any]], allowed: float
) -> list[str]:
    old = {(r["config"], r["scorer"]): r["mean"] for r in old_rows if r["mean"] is not None}
    failed: list[str] = []
    for row in rows:
        before = old.get((row["config"], row["scorer"]))
        now = row["mean"]
        if before is None or now is None:
            continue
        drop = before - now
        if drop > allowed + 1e-12:  # a float's rounding is not a regression
            failed.append(
                f"max_regression: {row['config']} {row['scorer']} mean {now:.4g} is "
                f"{drop:.4g} below the baseline's {before:.4g} (allowed {allowed:g})"
            )
    return failed
