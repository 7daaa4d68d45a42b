"""What online evaluation hands around: a scorer's ``Score``, the ``EvalCase`` it scores and
the ``EvalResult`` stored of it (public from ``oma_core.evaluation`` and ``oma_core``).

Apart from the evaluator so that the hook specifications can name ``EvalResult`` without
importing the evaluator (which finds scorers and sinks in the plugin host).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

if TYPE_CHECKING:
    from ._settings import RunSettings

__all__ = ["EvalCase", "EvalResult", "Score"]


@attrs.frozen
class Score:
    """A scorer's verdict: a number and, optionally, why."""

    value: float
    reason: str | None = None


@attrs.frozen
class EvalCase:
    """What a scorer sees of one run.

    ``input`` is the input as the policy allows (a placeholder or JSON text); ``output`` is the
    run's output text in every mode; ``status`` is the run's ``status.code``.

    ``store_payloads`` is the policy the case was made under: a scorer that sends the case
    out of the process (a ``judge``) sends only what it allows (a case built by hand is the
    caller's own data: ``"full"``). ``settings`` are what a scorer's own model runs go with
    (``agent.run(..., settings=case.settings)``): the case's ledger for the evaluation's cost
    and token budgets, its price (``estimate_cost``) and the orchestrator's tracer; None
    outside online evaluation.
    """

    input: str
    output: str
    run_id: str | None
    metadata: Mapping[str, Any] = attrs.field(factory=dict)
    status: str = "ok"
    agent: str | None = None
    store_payloads: str = attrs.field(default="full", kw_only=True, eq=False)
    settings: RunSettings | None = attrs.field(default=None, kw_only=True, eq=False, repr=False)


@attrs.frozen
class EvalResult:
    """What is stored of one evaluation: delivered to ``on_result`` and the result hooks.

    ``input``, ``output``, ``metadata`` and score reasons follow ``store_payloads``;
    ``errors`` maps a failed scorer's name to its (redacted) error text.
    """

    run_id: str | None
    agent: str | None
    status: str
    input: str
    output: str
    metadata: Mapping[str, Any]
    scores: Mapping[str, Score]
    errors: Mapping[str, str]
    store_payloads: str
