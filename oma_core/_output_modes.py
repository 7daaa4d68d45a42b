"""How a run holds the model to its output: one object per mode.

``TextOutput`` (no output type: the reply's text is the output), ``PromptedOutput`` (the
schema in the system prompt, the reply's text checked), ``NativeOutput`` (the service
enforces the schema; its JSON text checked) and ``ToolOutput`` (a forced tool call whose
arguments are the output). The run asks its mode three things, and nothing else about output:

- ``request``: the model call held to the output (instructions, or ``ProviderRequest.output``);
- ``partials``: when streaming, a reader that turns the call's events into what the caller
  sees, ``partial`` events included (None: the events pass as they are);
- ``judge``: whether a reply is the answer (a ``Verdict``), or None: its tool calls are run.

The shared parts (schema, parsing, checks) are ``_output``'s; this module only decides.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

import attrs

from ._output import (
    OutputInvalid,
    OutputMode,
    OutputSpec,
    PartialText,
    StreamedOutputCall,
    stopped_short,
)
from ._results import StreamEvent
from .errors import OutputValidationError
from .messages import LLMMessage, TextBlock, ToolResultBlock, ToolUseBlock, user_text
from .providers import ProviderRequest, ToolCallDelta

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = [
    "NativeOutput",
    "OutputHandler",
    "Partials",
    "TEXT_OUTPUT",
    "PromptedOutput",
    "TextOutput",
    "ToolOutput",
    "Verdict",
    "output_handler",
    "with_instructions",
]

#: What ``Partials.read`` hands on: events for the caller, in order.
Shown = tuple[Any, ...]
_NOTHING: Shown = ()


@attrs.frozen
class Verdict:
    """A reply judged as the run's output.

    ``errors`` None: the reply is the answer and ``structured`` the validated output.
    Otherwise ``correction`` is the turn that asks the model again. ``output`` (when not
    None) replaces the run's output text; ``kept`` (when not None) replaces the reply in the
    turns the run hands back.
    """

    errors: list[str] | None = None
    structured: Any = None
    correction: LLMMessage | None = None
    output: str | None = None
    kept: LLMMessage | None = None


_ANSWERED = Verdict()


class Partials:
    """One streamed call's events as the caller sees them, with the output so far shown as
    ``partial`` events (each value once, when it changed)."""

    #: Whether the call should hand on the provider's ``ToolCallDelta`` events.
    deltas = False

    def __init__(self) -> None:
        self._shown: Any = None

    def read(self, event: Any) -> Shown:
        """The events to hand on for one event of the call."""
        return (event,)

    def flush(self) -> Shown:
        """The events to hand on once the call ended."""
        return _NOTHING

    def answered(self, calls: Sequence[ToolUseBlock], emitted: set[str]) -> Shown:
        """The events to hand on once the reply was found to be the answer."""
        return _NOTHING

    def _show(self, partial: Any) -> Shown:
        if partial is None or partial == self._shown:
            return _NOTHING
        self._shown = partial
        return (StreamEvent("partial", partial),)


class _TextPartials(Partials):
    """Prompted and native modes: the reply's text read as the JSON value so far
    (``unwrap``: native mode, where the text is the wire value)."""

    def __init__(self, spec: OutputSpec | None) -> None:
        super().__init__()
        self._text = PartialText()
        self._unwrap = None if spec is None else spec.wire_partial

    def read(self, event: Any) -> Shown:
        if event.type != "text":
            return (event,)
        return (event, *self._unwrapped(self._text.feed(event.data)))

    def flush(self) -> Shown:
        # the end of the text, which the throttled reading may have skipped
        return self._unwrapped(self._text.flush())

    def _unwrapped(self, partial: Any) -> Shown:
        if partial is not None and self._unwrap is not None:
            partial = self._unwrap(partial)
        return self._show(partial)


class _CallPartials(Partials):
    """Tool mode: the output call's argument pieces read as the output so far; the output
    tool's whole call is shown as a partial, never as a tool call."""

    deltas = True

    def __init__(self, spec: OutputSpec, name: str) -> None:
        super().__init__()
        self._spec = spec
        self._name = name
        self._pieces = StreamedOutputCall(spec, name)

    def read(self, event: Any) -> Shown:
        if isinstance(event, ToolCallDelta):
            return self._show(self._pieces.feed(event))
        if event.type == "tool_use" and event.data.name == self._name:
            return self._whole(event.data)
        return (event,)

    def answered(self, calls: Sequence[ToolUseBlock], emitted: set[str]) -> Shown:
        outputs = [block for block in calls if block.name == self._name]
        if not outputs or outputs[0].id in emitted:
            return _NOTHING  # shown already, as its call came
        return self._whole(outputs[0])

    def _whole(self, block: ToolUseBlock) -> Shown:
        whole = self._spec.wire_partial(block.input)
        if whole == self._shown:  # its pieces may have shown it all already
            return _NOTHING
        self._shown = whole
        return (StreamEvent("partial", whole),)


class OutputHandler:
    """What every mode answers; as it is, text mode (no output type): the request as it
    is, no partials, and a reply without tool calls is the answer."""

    mode: str = "text"
    #: The output tool's name (tool mode: its calls are the output, never run).
    output_tool: str | None = None

    def request(self, request: ProviderRequest) -> ProviderRequest:
        """The model call held to the output."""
        return request

    def partials(self) -> Partials | None:
        """A reader for one streamed call (None: its events pass as they are)."""
        return None

    def judge(
        self, message: LLMMessage, calls: list[ToolUseBlock], output: str, stop_reason: str | None
    ) -> Verdict | None:
        """Whether ``message`` (with its tool ``calls``; ``output`` its text) is the answer;
        None: its tool calls are run. With an output type, a reply cut at ``max_tokens`` or
        refused is never parsed: ``OutputValidationError`` ends the run at once (asking
        again would be cut or refused the same way)."""
        return None if calls else _ANSWERED


class TextOutput(OutputHandler):
    """Text mode: no output type, the reply's text is the output."""


class PromptedOutput(OutputHandler):
    """Prompted mode: the output type's instructions after the system prompt; the reply's
    text checked (bare JSON, or a fenced block)."""

    mode = "prompted"

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec

    def request(self, request: ProviderRequest) -> ProviderRequest:
        return with_instructions(request, self.spec)

    def partials(self) -> Partials | None:
        return _TextPartials(None)

    def judge(
        self, message: LLMMessage, calls: list[ToolUseBlock], output: str, stop_reason: str | None
    ) -> Verdict | None:
        return None if calls else self.check(output, stop_reason)

    def check(self, output: str, stop_reason: str | None) -> Verdict:
        """The verdict on a reply whose text is ``output`` (no tool calls)."""
        _refuse_short(stop_reason, output)
        try:
            return Verdict(structured=self._validate(output))
        except OutputInvalid as invalid:
            correction = user_text(self.spec.corrective_prompt(invalid.errors))
            return Verdict(invalid.errors, correction=correction)

    def _validate(self, output: str) -> Any:
        return self.spec.validate_text(output)


class NativeOutput(PromptedOutput):
    """Native mode: ``ProviderRequest.output`` for the provider to map; the service's JSON
    text checked as the wire value (unwrapped)."""

    mode = "native"

    def request(self, request: ProviderRequest) -> ProviderRequest:
        return attrs.evolve(request, output=self.spec.request("native"))

    def partials(self) -> Partials | None:
        return _TextPartials(self.spec)

    def _validate(self, output: str) -> Any:
        return self.spec.validate_native(output)


class ToolOutput(OutputHandler):
    """Tool mode: a forced output tool whose first call's arguments are the output."""

    mode = "tool"

    def __init__(self, spec: OutputSpec) -> None:
        self.spec = spec
        self.output_tool = spec.request("tool").name

    def request(self, request: ProviderRequest) -> ProviderRequest:
        return attrs.evolve(request, output=self.spec.request("tool"))

    def partials(self) -> Partials | None:
        assert self.output_tool is not None
        return _CallPartials(self.spec, self.output_tool)

    def judge(
        self, message: LLMMessage, calls: list[ToolUseBlock], output: str, stop_reason: str | None
    ) -> Verdict | None:
        """Valid, the output is kept, ``RunResult.output`` becomes its JSON text and the
        reply's output call becomes that text in the turns (so a history never holds a call
        nobody answered). A turn with no output call is wrong too, unless it calls other
        tools (they are run)."""
        outputs = [block for block in calls if block.name == self.output_tool]
        if calls and not outputs:
            return None
        _refuse_short(stop_reason, output)
        spec = self.spec
        if not outputs:
            errors = [f"the reply did not call {self.output_tool}: give the answer by calling it"]
            return Verdict(errors, correction=self._correction(calls, outputs, errors))
        arguments = dict(outputs[0].input)
        # the output's raw text: the arguments as JSON (unwrapped when the output is wrapped)
        text = json.dumps(spec.wire_partial(arguments), ensure_ascii=False)
        try:
            structured = spec.validate_wire(arguments)
        except OutputInvalid as invalid:
            correction = self._correction(calls, outputs, invalid.errors)
            return Verdict(invalid.errors, correction=correction, output=text)
        kept = tuple(b for b in message.content if not isinstance(b, ToolUseBlock))
        kept = tuple(b for b in kept if not (isinstance(b, TextBlock) and not b.text))
        return Verdict(
            structured=structured,
            output=text,
            kept=LLMMessage("assistant", (*kept, TextBlock(text))),
        )

    def _correction(
        self, calls: list[ToolUseBlock], outputs: list[ToolUseBlock], errors: list[str]
    ) -> LLMMessage:
        """The corrective turn: each output call answered with an error result carrying the
        validation errors, any other call of the same turn with a not-run result (the turn
        was meant to be the answer); a turn with no call at all gets a user text."""
        if not calls:
            return user_text(self.spec.corrective_prompt(errors) + f" Call {self.output_tool}.")
        correction = self.spec.tool_correction(errors)
        results = [
            ToolResultBlock(
                block.id,
                correction if block in outputs else "not run: give the final answer instead",
                True,
            )
            for block in calls
        ]
        return LLMMessage("user", tuple(results))


def output_handler(spec: OutputSpec | None, mode: OutputMode = "prompted") -> OutputHandler:
    """The object that holds a run to ``spec`` in ``mode`` (text mode without a spec)."""
    if spec is None:
        return TEXT_OUTPUT
    if mode == "tool":
        return ToolOutput(spec)
    if mode == "native":
        return NativeOutput(spec)
    return PromptedOutput(spec)


#: Text mode (no output type): one object for every run.
TEXT_OUTPUT = TextOutput()


def with_instructions(request: ProviderRequest, spec: OutputSpec) -> ProviderRequest:
    """``request`` with the output type's instructions after its system prompt (prompted
    mode: what every provider and backend can do)."""
    system = request.system_prompt
    instructions = spec.instructions
    return attrs.evolve(
        request, system_prompt=instructions if not system else f"{system}\n\n{instructions}"
    )


def _refuse_short(stop_reason: str | None, output: str) -> None:
    if stopped_short(stop_reason):
        raise OutputValidationError(
            [f"the reply stopped early ({stop_reason}): it is not a whole answer"], output
        )
