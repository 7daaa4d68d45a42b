"""The client's side of MCP for one toolset: what a server may ask of oma.

A server may ask the client for its **roots** (the folders it may see), to **sample** a model,
and to **elicit** an answer from the user; each is off unless the toolset is given it
(``roots=[...]``, ``sampling=AgentConfig(...)``, ``elicitation=fn``), and an unconfigured
one is neither advertised nor served: the SDK answers such a request with an MCP error. The
server's **log** messages go to the ``oma.mcp.server`` logger at their level, and the
**progress** of a tool call to the run's observers as ``tool_progress`` events. Sampling is
bounded: each request's ``max_tokens`` is cut to ``sampling_max_tokens``, a server gets at
most ``max_samples`` answers over the toolset's life, and with ``sampling_budget`` (a
``Budget``, the same object the caller passes as ``run_agent(..., budget=)``) what sampling
spends counts against the caller's budget; past any of these each request is refused.
(Resources and prompts, which oma reads from the server: ``_resources``.)
"""

from __future__ import annotations

import asyncio
import contextvars
import inspect
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import attrs
import mcp_types as types
from mcp.shared.dispatcher import ProgressFnT
from pydantic import FileUrl

from oma_core import (
    AgentConfig,
    Budget,
    InvalidMessageError,
    LLMMessage,
    OmaError,
    OpenMultiAgent,
    TextBlock,
    audio_base64,
    image_base64,
)
from oma_core.errors import ToolError
from oma_core.progress import report_tool_progress

__all__ = ["ClientFeatures", "Elicitation", "ElicitationCallback", "progress_callback"]

_log = logging.getLogger("oma.mcp.server")

#: The longest log line or progress message taken from a server (characters); the rest is cut.
MAX_TEXT = 4000

#: MCP log levels as Python's (notice sits between info and warning).
_LEVELS = {
    "debug": logging.DEBUG,
    "info": logging.INFO,
    "notice": logging.INFO + 5,
    "warning": logging.WARNING,
    "error": logging.ERROR,
    "critical": logging.CRITICAL,
    "alert": logging.CRITICAL,
    "emergency": logging.CRITICAL,
}


@attrs.frozen
class Elicitation:
    """A server's question for the user, as the ``elicitation`` callback receives it.

    ``message`` is the question; in form mode ``schema`` is the JSON schema of the answer
    (flat: strings, numbers, booleans, enums), in URL mode ``url`` is the page the user is
    sent to (the answer happens there). The callback (async, or sync: run in a worker
    thread) returns the answer as a dict (``{}`` accepts in URL mode), ``None`` or
    ``"decline"`` to decline, ``"cancel"`` to cancel.
    """

    server: str
    message: str
    schema: Mapping[str, Any] | None = None
    url: str | None = None


ElicitationCallback = Callable[[Elicitation], Any]


class ClientFeatures:
    """A toolset's answers to what its server asks: roots, sampling, elicitation, logs."""

    def __init__(
        self,
        *,
        roots: Sequence[str | Path] | None = None,
        sampling: AgentConfig | None = None,
        sampling_max_tokens: int = 1024,
        max_samples: int = 20,
        sampling_budget: Budget | None = None,
        elicitation: ElicitationCallback | None = None,
    ) -> None:
        if sampling is not None and not isinstance(sampling, AgentConfig):
            raise ToolError(f"sampling must be an AgentConfig, got {type(sampling).__name__}")
        if sampling_budget is not None and not isinstance(sampling_budget, Budget):
            raise ToolError(
                f"sampling_budget must be a Budget, got {type(sampling_budget).__name__}"
            )
        for option, value in (
            ("sampling_max_tokens", sampling_max_tokens),
            ("max_samples", max_samples),
        ):
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ToolError(f"{option} must be a positive int, got {value!r}")
        if elicitation is not None and not callable(elicitation):
            raise ToolError(f"elicitation must be callable, got {elicitation!r}")
        self.roots = None if roots is None else tuple(_root(item) for item in _listed(roots))
        self.sampling = sampling
        self.sampling_max_tokens = sampling_max_tokens
        self.max_samples = max_samples
        self.sampling_budget = sampling_budget
        self.elicitation = elicitation
        self.samples = 0  # sampling requests answered or tried, over the toolset's life

    def session_options(self, server: str, scrub: Callable[[str], str]) -> dict[str, Any]:
        """The ``ClientSession`` callbacks for a connection to ``server``: None for what is
        not configured (the SDK then neither advertises nor serves it). ``scrub`` blanks
        the server's credentials out of what is logged."""

        async def log(params: types.LoggingMessageNotificationParams) -> None:
            level = _LEVELS.get(params.level, logging.INFO)
            if not _log.isEnabledFor(level):
                return
            data = params.data if isinstance(params.data, str) else _json(params.data)
            source = f"{server}:{params.logger}" if params.logger else server
            _log.log(level, "MCP server %r: %s", source, scrub(_cut(data)))

        async def roots(context: Any) -> types.ListRootsResult:
            return types.ListRootsResult(
                roots=[types.Root(uri=FileUrl(u), name=n) for u, n in self.roots or ()]
            )

        async def sample(context: Any, params: types.CreateMessageRequestParams) -> Any:
            return await self._sample(server, params)

        async def elicit(context: Any, params: types.ElicitRequestParams) -> Any:
            return await self._elicit(server, params)

        return {
            "logging_callback": log,
            "list_roots_callback": None if self.roots is None else roots,
            "sampling_callback": None if self.sampling is None else sample,
            "elicitation_callback": None if self.elicitation is None else elicit,
        }

    async def _sample(
        self, server: str, params: types.CreateMessageRequestParams
    ) -> types.CreateMessageResult | types.ErrorData:
        config = self.sampling
        assert config is not None
        if self.samples >= self.max_samples:
            return types.ErrorData(
                code=types.INVALID_REQUEST,
                message=f"oma refuses sampling: this server has had its {self.max_samples} "
                "requests (raise the toolset's max_samples)",
            )
        if params.tools or params.tool_choice is not None:
            return types.ErrorData(
                code=types.INVALID_PARAMS, message="oma's sampling does not take tools"
            )
        budget = self.sampling_budget
        if budget is not None and (spent := budget.exhausted()) is not None:
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=f"oma refuses sampling: {spent}"
            )
        self.samples += 1
        max_tokens = min(
            params.max_tokens, self.sampling_max_tokens, config.max_tokens or params.max_tokens
        )
        try:
            messages = [
                _sampling_message(m, f"messages[{i}]") for i, m in enumerate(params.messages)
            ]
            config = attrs.evolve(
                config,
                tools=(),
                history=(),
                output_type=None,
                before_run=None,
                max_turns=1,
                max_tokens=max(max_tokens, 1),
                system_prompt=params.system_prompt or config.system_prompt,
                temperature=config.temperature
                if params.temperature is None
                else params.temperature,
                stop=params.stop_sequences or config.stop,
            )
            async with OpenMultiAgent() as oma:  # the shared budget is charged as any run's
                result = await oma.run_agent(config, messages, budget=budget)
        except (OmaError, ValueError, TypeError) as error:  # input oma refuses, a bad setting
            return types.ErrorData(
                code=types.INVALID_PARAMS, message=f"oma refuses the request: {_reason(error)}"
            )
        # A budget is a soft cap (checked before and after a call): an answer that passed
        # it is still the answer paid for; the next request is refused above.
        overshot = result.status.code == "budget_exhausted" and bool(result.output)
        if result.status.code == "budget_exhausted" and not overshot:
            return types.ErrorData(
                code=types.INVALID_REQUEST, message=f"oma refuses sampling: {result.status.error}"
            )
        if not result.success and not overshot:
            _log.warning("sampling for MCP server %r failed: %s", server, result.status.code)
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message=f"oma's model failed ({result.status.code})"
            )
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(text=result.output),
            model=config.model or config.provider_name,
        )

    async def _elicit(
        self, server: str, params: types.ElicitRequestParams
    ) -> types.ElicitResult | types.ErrorData:
        callback = self.elicitation
        assert callback is not None
        if isinstance(params, types.ElicitRequestURLParams):
            question = Elicitation(server, params.message, url=params.url)
        else:
            question = Elicitation(server, params.message, schema=params.requested_schema)
        try:
            if inspect.iscoroutinefunction(callback):
                answer = await callback(question)
            else:  # a sync callback may wait for a person (input()): not on the loop
                answer = await asyncio.to_thread(callback, question)
            if inspect.isawaitable(answer):
                answer = await answer
        except Exception as error:
            _log.warning(
                "the elicitation callback failed for MCP server %r: %s", server, _reason(error)
            )
            return types.ErrorData(
                code=types.INTERNAL_ERROR, message="oma's elicitation callback failed"
            )
        try:
            return _elicit_result(answer)
        except (TypeError, ValueError) as error:
            _log.warning(
                "the elicitation callback answered MCP server %r with %s", server, _reason(error)
            )
            return types.ErrorData(
                code=types.INTERNAL_ERROR,
                message="oma's elicitation callback gave an answer that is not a flat dict",
            )


def progress_callback() -> ProgressFnT:
    """A ``progress_callback`` for a ``tools/call`` made now: the server's progress becomes
    ``tool_progress`` events of the tool call being run (if any), from the SDK's task."""
    context = contextvars.copy_context()

    async def on_progress(progress: float, total: float | None, message: str | None) -> None:
        try:
            context.run(
                report_tool_progress, progress, total, None if message is None else _cut(message)
            )
        except ToolError as error:  # NaN, infinity: dropped
            _log.debug("dropped an MCP progress notification: %s", error)

    return on_progress


# -- helpers ---------------------------------------------------------------------------------


def _listed(roots: Any) -> Sequence[Any]:
    if isinstance(roots, str | Path) or not isinstance(roots, Sequence):
        raise ToolError(f"roots must be a list of folders, got {roots!r}")
    return roots


def _root(item: Any) -> tuple[str, str]:
    """A root as (file URI, name): a path (made absolute) or a ``file://`` URI."""
    if isinstance(item, str) and item.startswith("file://"):
        return item, item.rstrip("/").rsplit("/", 1)[-1]
    if not isinstance(item, str | Path) or not str(item) or "://" in str(item):
        raise ToolError(f"a root must be a local folder (a path or a file:// URI), got {item!r}")
    path = Path(item).expanduser().absolute()
    return path.as_uri(), path.name or str(path)


def _sampling_message(message: types.SamplingMessage, where: str) -> LLMMessage:
    content = message.content if isinstance(message.content, list) else [message.content]
    blocks: list[Any] = []
    for index, item in enumerate(content):
        if isinstance(item, types.TextContent):
            blocks.append(TextBlock(item.text))
        elif isinstance(item, types.ImageContent):
            blocks.append(image_base64(item.data, item.mime_type))
        elif isinstance(item, types.AudioContent):
            blocks.append(audio_base64(item.data, item.mime_type))
        else:
            raise InvalidMessageError(
                f"{where}.content[{index}]", "oma's sampling takes text, images and audio"
            )
    return LLMMessage(message.role, blocks)


def _elicit_result(answer: Any) -> types.ElicitResult:
    """The callback's answer for the server; pydantic refuses values that are not flat."""
    if answer is None or answer == "decline":
        return types.ElicitResult(action="decline")
    if answer == "cancel":
        return types.ElicitResult(action="cancel")
    if not isinstance(answer, Mapping):
        raise TypeError(f"a {type(answer).__name__}")
    return types.ElicitResult(action="accept", content=dict(answer) or None)


def _reason(error: BaseException) -> str:
    reason = getattr(error, "reason", None)
    text = reason if isinstance(reason, str) else str(error).splitlines()[0] if str(error) else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _json(value: Any) -> str:
    try:
        return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)
    except (TypeError, ValueError):
        return repr(value)


def _cut(text: str) -> str:
    return text if len(text) <= MAX_TEXT else text[:MAX_TEXT] + f"... [{len(text) - MAX_TEXT} more]"
