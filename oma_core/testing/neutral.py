"""The kit's neutral views of the wire: a request as the service sees it (what a plugin's
wire reader returns) and a reply the kit asks the fake server for.

The conformance kit cannot read every wire, so a plugin's kit supplies one small *wire
reader*, ``read_request(body) -> NeutralRequest``, written from the service's documentation:
given a JSON body as the service receives it, what does the service understand? The kit then
compares that view with what the core asked for (``NeutralRequest.of(request)``) through
``differences``, which allows exactly the freedoms a wire legitimately takes and nothing else:

- turns may be split (a Chat Completions ``tool`` message per result, then a ``user``
  message): consecutive messages of one role are compared as one turn;
- tool-call ids may be rewritten (Mistral's nine characters), consistently: a result must
  answer the id its call got on the wire;
- a tool result's media parts may travel beside the result in the same turn (services whose
  tool results hold text only), and a turn may carry extra text (a note introducing them);
- a turn's texts may arrive joined into one, in order (a wire whose message holds one
  string), and a tool result's text parts joined into one;
- with ``error_flag=False`` (a wire without an error flag on tool results) an error result
  may be plain text that says more than the tool's words (``"Error: ..."``).

Everything else must arrive as sent: the system prompt, each text in order, each image
(document, audio clip, ...) in order, among the texts where it was sent, every one of several
in a turn or a tool result, each tool call's name and input, each tool result's text, the
tool definitions (name, description and schema, nested parts included), ``tool_choice``,
``temperature``, ``max_tokens``, ``stop`` and the output schema. Reasoning blocks, and any
block that is neither text, media (a family in ``oma_core.messages.BLOCK_TYPES``) nor a
tool's, are not compared (yet).

Structured output is compared as the service sees it, not as the core names it: in native
mode the schema the service holds the reply's text to (``output_schema``); in tool mode one
more tool (the output tool, after the request's own) with the tool choice forced to it, or to
"some tool" when the request has tools of its own; in prompted mode only the instructions in
the system prompt. ``NeutralRequest.of`` makes that view of a ``ProviderRequest``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import attrs

from ..messages import (
    BLOCK_TYPES,
    ContentBlock,
    LLMMessage,
    TextBlock,
    ToolResultBlock,
    ToolUseBlock,
    thaw_json,
)
from ..providers import OutputRequest, ProviderRequest, ToolDefinition, Usage
from ..validation import load_messages

__all__ = ["NeutralRequest", "ScriptedCall", "ScriptedReply", "differences"]


def _messages(value: Iterable[Any]) -> tuple[LLMMessage, ...]:
    """Messages as objects or section-2 dicts, mixed (validated like any input)."""
    return load_messages(list(value), allow_empty=True)


def _tools(value: Iterable[Any]) -> tuple[ToolDefinition, ...]:
    tools = []
    for item in value:
        if isinstance(item, Mapping):
            item = ToolDefinition(
                item["name"], item.get("description") or "", item.get("input_schema") or {}
            )
        tools.append(item)
    return tuple(tools)


def _stop(value: Sequence[str] | None) -> tuple[str, ...] | None:
    if value is None:
        return None
    return (value,) if isinstance(value, str) else tuple(value)


@attrs.frozen
class NeutralRequest:
    """What a service receives, in the core's terms.

    ``messages`` takes ``LLMMessage`` objects or section-2 dicts (``{"role": "user",
    "content": [...]}``); ``tools`` takes ``ToolDefinition`` objects or dicts with ``name``,
    ``description`` and ``input_schema``. ``tool_choice`` is ``"auto"``, ``"none"``,
    ``"required"`` (some tool must be called) or the name of the one tool that must be; None
    when the body says nothing. ``stop`` takes a string or a list. ``output_schema`` is the
    JSON schema the service holds the reply's text to (its native structured output, e.g.
    OpenAI's ``response_format`` ``json_schema``), None when the body sets none; a forced
    output tool is read as any tool, into ``tools`` and ``tool_choice``.
    """

    messages: tuple[LLMMessage, ...] = attrs.field(default=(), converter=_messages)
    system_prompt: str | None = None
    tools: tuple[ToolDefinition, ...] = attrs.field(default=(), converter=_tools)
    tool_choice: str | None = None
    temperature: float | None = None
    max_tokens: int | None = None
    stop: tuple[str, ...] | None = attrs.field(default=None, converter=_stop)
    output_schema: Mapping[str, Any] | None = None

    @classmethod
    def of(cls, request: ProviderRequest, *, tool_choice: str | None = None) -> NeutralRequest:
        """The neutral view of what the core asked for (``tool_choice`` is a provider option,
        so the caller names it; an output in tool mode forces its own)."""
        tools, schema = request.tools, None
        if request.output is not None and request.output.mode == "native":
            schema = request.output.schema
        elif request.output is not None:
            tools, tool_choice = _with_output_tool(request.tools, request.output)
        return cls(
            messages=request.messages,
            system_prompt=request.system_prompt,
            tools=tools,
            tool_choice=tool_choice,
            temperature=request.temperature,
            max_tokens=request.max_tokens,
            stop=request.stop,
            output_schema=schema,
        )


def _with_output_tool(
    tools: tuple[ToolDefinition, ...], output: OutputRequest
) -> tuple[tuple[ToolDefinition, ...], str]:
    """Tool mode as the service sees it: the output tool after the request's own, the choice
    forced to it, or to "some tool" beside tools of the request's own (``OutputRequest``)."""
    tool = ToolDefinition(output.name, output.description or "", output.schema)
    return (*tools, tool), "required" if tools else output.name


_SCALARS = ("system_prompt", "tool_choice", "temperature", "max_tokens", "stop")


def differences(
    seen: NeutralRequest,
    sent: NeutralRequest,
    *,
    error_flag: bool = True,
    media_among_texts: bool = True,
) -> list[str]:
    """How ``seen`` (the reader's view of the wire) falls short of ``sent``, one line each;
    empty when the service sees everything that was sent (see the module docstring).
    ``media_among_texts=False``: the wire keeps a turn's media apart from its text (Ollama's
    ``images`` beside ``content``), so their places among the texts are not compared (their
    number and order still are)."""
    found: list[str] = []
    for name in _SCALARS:
        want, got = getattr(sent, name), getattr(seen, name)
        if want is not None and got != want:
            found.append(f"{name}: sent {want!r}, the service sees {got!r}")
    want, got = sent.output_schema, seen.output_schema
    if (want is None) != (got is None) or thaw_json(want) != thaw_json(got):
        found.append(
            f"output_schema: sent {thaw_json(want)}, the service sees {thaw_json(got)}"
            if want is not None
            else f"output_schema: sent none, the service sees {thaw_json(got)}"
        )
    found.extend(_tool_differences(seen.tools, sent.tools))
    found.extend(_message_differences(seen.messages, sent.messages, error_flag, media_among_texts))
    return found


def _tool_differences(
    seen: Sequence[ToolDefinition], sent: Sequence[ToolDefinition]
) -> Iterable[str]:
    seen_by_name = {t.name: t for t in seen}
    if [t.name for t in seen] != [t.name for t in sent]:
        yield f"tools: sent {[t.name for t in sent]}, the service sees {[t.name for t in seen]}"
    for tool in sent:
        other = seen_by_name.get(tool.name)
        if other is None:
            continue
        if other.description != tool.description:
            yield f"tools[{tool.name}].description: sent {tool.description!r}, " + (
                f"the service sees {other.description!r}"
            )
        if thaw_json(other.input_schema) != thaw_json(tool.input_schema):
            yield f"tools[{tool.name}].input_schema: sent {thaw_json(tool.input_schema)}, " + (
                f"the service sees {thaw_json(other.input_schema)}"
            )


def _turns(messages: Sequence[LLMMessage]) -> list[tuple[str, list[Any]]]:
    """Consecutive messages of one role as one turn (role, blocks)."""
    turns: list[tuple[str, list[Any]]] = []
    for message in messages:
        if turns and turns[-1][0] == message.role:
            turns[-1][1].extend(message.content)
        else:
            turns.append((message.role, list(message.content)))
    return turns


def _is_media(block: ContentBlock) -> bool:
    """Whether the block is media (an image, a document...): its registry entry names a
    family (``oma_core.messages.BLOCK_TYPES``)."""
    return BLOCK_TYPES[block.type].family is not None


def _result_texts(block: ToolResultBlock) -> str:
    if isinstance(block.content, str):
        return block.content
    return "".join(p.text for p in block.content if isinstance(p, TextBlock))


def _result_media(block: ToolResultBlock) -> list[Any]:
    if isinstance(block.content, str):
        return []
    return [p for p in block.content if not isinstance(p, TextBlock)]


def _message_differences(
    seen: Sequence[LLMMessage], sent: Sequence[LLMMessage], error_flag: bool, interleaved: bool
) -> Iterable[str]:
    seen_turns, sent_turns = _turns(seen), _turns(sent)
    roles_seen = [role for role, _ in seen_turns]
    roles_sent = [role for role, _ in sent_turns]
    if roles_seen != roles_sent:
        yield f"turns: sent the roles {roles_sent}, the service sees {roles_seen}"
        return
    ids: dict[str, str] = {}
    for index, ((role, got), (_, want)) in enumerate(zip(seen_turns, sent_turns, strict=True)):
        where = f"turn {index} ({role})"
        yield from _turn_differences(where, got, want, ids, error_flag, interleaved)


def _turn_differences(
    where: str,
    got: list[Any],
    want: list[Any],
    ids: dict[str, str],
    error_flag: bool,
    interleaved: bool,
) -> Iterable[str]:
    texts = [("text", b.text) for b in got if isinstance(b, TextBlock)]
    for block in want:
        if isinstance(block, TextBlock) and not any(block.text in t for _, t in texts):
            yield f"{where}: the text {block.text[:60]!r} is missing"
    wanted_texts = [("text", b.text) for b in want if isinstance(b, TextBlock)]
    texts_in_order = _in_order(wanted_texts, texts)
    if not texts_in_order:
        yield f"{where}: the texts arrive out of order (or altered): sent " + (
            f"{[t[:40] for _, t in wanted_texts]}, the service sees {[t[:40] for _, t in texts]}"
        )
    calls_got = [b for b in got if isinstance(b, ToolUseBlock)]
    calls_want = [b for b in want if isinstance(b, ToolUseBlock)]
    if len(calls_got) != len(calls_want):
        yield f"{where}: sent {len(calls_want)} tool calls, the service sees {len(calls_got)}"
    for call, other in zip(calls_want, calls_got, strict=False):
        if (other.name, thaw_json(other.input)) != (call.name, thaw_json(call.input)):
            yield f"{where}: the call {call.name}({thaw_json(call.input)}) arrives as " + (
                f"{other.name}({thaw_json(other.input)})"
            )
        if not other.id:
            yield f"{where}: the call {call.id!r} arrives without an id"
        elif ids.setdefault(call.id, other.id) != other.id or (
            list(ids.values()).count(other.id) > 1
        ):
            yield f"{where}: the call {call.id!r} arrives with the id {other.id!r}, used twice"
    results_got = [b for b in got if isinstance(b, ToolResultBlock)]
    results_want = [b for b in want if isinstance(b, ToolResultBlock)]
    if len(results_got) != len(results_want):
        yield f"{where}: sent {len(results_want)} tool results, the service sees " + (
            f"{len(results_got)}"
        )
    media_pool = [b for b in got if _is_media(b)]
    for result, answer in zip(results_want, results_got, strict=False):
        yield from _result_differences(where, result, answer, ids, error_flag)
        media_pool.extend(_result_media(answer))
    wanted_media = [b for b in want if _is_media(b)]
    for result in results_want:
        wanted_media.extend(_result_media(result))
    missing = False
    for block in wanted_media:
        if block in media_pool:
            media_pool.remove(block)
        else:
            missing = True
            yield f"{where}: the {block.type} ({_describe(block)}) is missing"
    if missing:
        return
    seen_media = [b for b in _flat_media(got) if b in wanted_media]
    if seen_media != _flat_media(want):
        yield f"{where}: the media arrive in another order: sent " + (
            f"{[_describe(b) for b in _flat_media(want)]}, the service sees "
            f"{[_describe(b) for b in seen_media]}"
        )
    elif interleaved and texts_in_order and not _in_order(_items(want), _items(got)):
        yield f"{where}: the texts and media arrive interleaved otherwise: sent " + (
            f"{_shown(_items(want))}, the service sees {_shown(_items(got))}"
        )


def _unspaced(text: str) -> str:
    return "".join(text.split())


def _flat_media(blocks: Iterable[Any]) -> list[Any]:
    """A turn's media in order: its own, and each tool result's parts in place."""
    out: list[Any] = []
    for block in blocks:
        if isinstance(block, ToolResultBlock):
            out.extend(_result_media(block))
        elif _is_media(block):
            out.append(block)
    return out


def _items(blocks: Iterable[Any]) -> list[tuple[str, Any]]:
    """A turn's own texts and media (not those inside tool results), in order."""
    return [
        ("text", b.text) if isinstance(b, TextBlock) else ("media", b)
        for b in blocks
        if isinstance(b, TextBlock) or _is_media(b)
    ]


def _shown(items: list[tuple[str, Any]]) -> list[str]:
    return [value[:30] if kind == "text" else _describe(value) for kind, value in items]


def _in_order(want: Sequence[tuple[str, Any]], got: Sequence[tuple[str, Any]]) -> bool:
    """Whether ``want`` (texts and media) arrives in ``got`` in order, each text as a text
    of its own or as the next piece of texts joined into one (a wire whose turn holds one
    string), with anything else (a note, a result's relocated media) between."""
    position, rest = 0, ""
    for kind, value in want:
        if kind == "text" and rest.strip() and rest.lstrip().startswith(value):
            rest = rest.lstrip()[len(value) :]
            continue
        rest = ""
        while position < len(got):
            got_kind, got_value = got[position]
            position += 1
            if got_kind != kind:
                continue
            if got_value == value:
                break
            if kind == "text" and got_value.startswith(value):
                rest = got_value[len(value) :]
                break
        else:
            return False
    return True


def _result_differences(
    where: str,
    result: ToolResultBlock,
    other: ToolResultBlock,
    ids: dict[str, str],
    error_flag: bool,
) -> Iterable[str]:
    expected_id = ids.get(result.tool_use_id, result.tool_use_id)
    if other.tool_use_id != expected_id:
        yield f"{where}: the result for {result.tool_use_id!r} answers {other.tool_use_id!r}" + (
            f" on the wire (its call is {expected_id!r})"
        )
    # a result's text parts may arrive joined, with or without whitespace between them
    text, got = _unspaced(_result_texts(result)), _unspaced(_result_texts(other))
    if result.is_error and not error_flag and not other.is_error:
        if text not in got or got == text:
            yield f"{where}: the error result {text!r} arrives as {got!r}, not marked as an error"
        return
    if other.is_error != result.is_error:
        yield f"{where}: the result for {result.tool_use_id!r} has is_error={other.is_error}, " + (
            f"sent {result.is_error}"
        )
    if got != text:
        yield f"{where}: the result for {result.tool_use_id!r} reads " + (
            f"{_result_texts(other)!r}, sent {_result_texts(result)!r}"
        )


def _describe(block: Any) -> str:
    source = getattr(block, "source", None)
    if source is None:
        return "?"
    return f"{source.type} {source.media_type}"


@attrs.frozen
class ScriptedCall:
    """One tool call of a scripted reply; ``id`` None: the service gives the call no id."""

    name: str
    arguments: Mapping[str, Any]
    id: str | None = None


@attrs.frozen
class ScriptedReply:
    """A reply the kit asks the fake server for, in the core's terms.

    The plugin's ``script_reply`` writes it in the service's shape: ``text`` (may be empty),
    ``tool_calls`` in order, ``usage`` as the service counts it (input, output), and
    ``stop_reason`` in oma's vocabulary (``"end_turn"``, ``"max_tokens"``, ``"tool_use"``)
    turned into the service's own value.
    """

    text: str = ""
    tool_calls: tuple[ScriptedCall, ...] = ()
    usage: Usage = Usage(3, 2)
    stop_reason: str = "end_turn"
