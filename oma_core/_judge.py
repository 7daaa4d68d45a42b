"""LLM judges: a scorer that asks a model, through the agent, for a structured verdict.

``judge(config, rubric)`` returns a ``Judge``: an async scorer (the evaluation's scorer
interface: an ``EvalCase`` in, a ``Score`` out). Each call is one ``Agent.run`` of ``config``
with ``output_type`` (``Verdict`` by default), so the verdict comes through the
structured-output machinery: the provider's native schema where it has one, validation, one
corrective turn. Under online evaluation the run goes with ``case.settings``: the case's
budget ledger (the evaluation's per-minute and per-hour caps), its price and the
orchestrator's tracer — so a judge call is traced as a run and charged like any other.

A judge sends only what the case's privacy policy lets out: the input as the policy stored
it and the output made the same way (``build_payload``); under ``"none"`` nothing may leave,
so it refuses (``PayloadWithheldError``) before any call.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import attrs

from ._eval_types import EvalCase, Score
from ._payloads import build_payload
from .errors import UsageError

if TYPE_CHECKING:
    from ._config import AgentConfig
    from .agent import Agent
    from .plugins import PluginHost

__all__ = ["JUDGE_PROMPT", "Judge", "PayloadWithheldError", "Verdict", "judge"]

JUDGE_PROMPT = """\
You are an impartial evaluator. You are given a rubric, the input an AI agent received and \
the output it gave. Judge the output against the rubric only. Give a score from 0 (does not \
meet the rubric at all) to 1 (fully meets it), and your reasons, each one short sentence."""


def _unit(_inst: object, _attribute: attrs.Attribute[float], value: float) -> None:
    if not 0 <= value <= 1:
        raise ValueError(f"score must be between 0 and 1, got {value!r}")


@attrs.frozen
class Verdict:
    """A judge's default answer: ``score`` in [0, 1] and the ``reasons`` for it.

    A score outside [0, 1] does not validate, so the model gets a corrective turn saying so.
    """

    score: float = attrs.field(validator=_unit)
    reasons: list[str]


class PayloadWithheldError(UsageError, ValueError):
    """A judge was asked to send a case whose privacy policy (``store_payloads``) withholds
    its input and output; ``policy`` is that policy. Nothing was sent."""

    code = "PAYLOAD_WITHHELD"

    def __init__(self, policy: str) -> None:
        self.policy = policy
        super().__init__(
            f'a judge sends the run\'s input and output to a model, and store_payloads="{policy}" '
            'withholds them: use "redacted" or "full" to judge runs'
        )


@attrs.frozen(eq=False)
class Judge:
    """A scorer that asks ``config``'s model to grade a run against ``rubric``.

    ``await judge(case)`` returns ``Score(verdict score, reasons joined)``; a failed judge
    run raises its error (the evaluation counts the scorer as failed, or the case as dropped
    for its budget when a ledger stopped it). ``sends_payloads`` tells the evaluation that
    this scorer sends cases out of the process (a policy of ``"none"`` is refused for it).
    """

    config: AgentConfig
    rubric: str
    name: str
    agent: Agent = attrs.field(repr=False)
    sends_payloads: bool = attrs.field(default=True, init=False)

    async def __call__(self, case: EvalCase) -> Score:
        if case.store_payloads == "none":
            raise PayloadWithheldError(case.store_payloads)
        result = await self.agent.run(self.prompt(case), settings=case.settings)
        if not result.success:
            error = result.status.error
            raise error if error is not None else RuntimeError("the judge's run failed")
        return verdict_score(result.structured)

    def prompt(self, case: EvalCase) -> str:
        """The judge's question about ``case``: the rubric, the input as the case's policy
        stored it, the output made the same way."""
        output = build_payload(case.output, case.store_payloads, kind="output")
        return (
            f"Rubric:\n{self.rubric}\n\n"
            f"The agent's input:\n{case.input}\n\n"
            f"The agent's output:\n{output}"
        )


def judge(
    config: AgentConfig,
    rubric: str,
    output_type: Any = None,
    *,
    name: str | None = None,
    plugins: PluginHost | None = None,
) -> Judge:
    """A scorer that asks ``config``'s model to grade each run against ``rubric``.

    ``output_type`` is the verdict's type (default ``Verdict``): any output type with a
    numeric ``score`` in [0, 1], and optionally ``reasons`` (a list of str) or ``reason``
    (a str) for the ``Score``'s reason. ``config.system_prompt`` defaults to
    ``JUDGE_PROMPT``. ``name`` names the scorer (default ``"judge_" + config.name``);
    ``plugins`` is the ``PluginHost`` its agent finds providers and hooks in (default: the
    process-wide one).
    Refused now (``TypeError``): a rubric that is not text, an output type without a
    numeric ``score``; an unknown provider raises as the agent is built.
    """
    from ._output import output_spec
    from .agent import Agent, AgentConfig

    if not isinstance(config, AgentConfig):
        raise TypeError(f"a judge's config must be an AgentConfig, got {type(config).__name__}")
    if not isinstance(rubric, str) or not rubric.strip():
        raise TypeError("a judge's rubric must be non-empty text")
    verdict_type = Verdict if output_type is None else output_type
    spec = output_spec(verdict_type)
    assert spec is not None
    score = (spec.schema.get("properties") or {}).get("score") or {}
    if score.get("type") not in ("number", "integer"):
        raise TypeError(
            f"a judge's output_type must have a numeric 'score' property; {spec.name} has none"
        )
    config = attrs.evolve(
        config,
        output_type=verdict_type,
        system_prompt=config.system_prompt or JUDGE_PROMPT,
    )
    agent = Agent(config, plugins=plugins, close_after_run=True)
    return Judge(config, rubric, name or f"judge_{config.name}", agent)


def verdict_score(verdict: Any) -> Score:
    """The ``Score`` of a verdict: its ``score`` (a number in [0, 1]) and its reasons."""

    def field(key: str) -> Any:
        if isinstance(verdict, Mapping):
            return verdict.get(key)
        return getattr(verdict, key, None)

    value = field("score")
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise ValueError(f"a verdict's score must be a number, got {type(value).__name__}")
    if not 0 <= value <= 1:
        raise ValueError(f"a verdict's score must be between 0 and 1, got {value!r}")
    reasons = field("reasons")
    if isinstance(reasons, list | tuple) and all(isinstance(r, str) for r in reasons):
        reason: str | None = "; ".join(reasons) or None
    else:
        single = field("reason")
        reason = single if isinstance(single, str) and single else None
    return Score(float(value), reason)
