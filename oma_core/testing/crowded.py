"""Conversations crowded with blocks, for the conformance kit's ordering checks.

The kit's samples carry one block each in the smallest conversation, so a provider that
drops the second of two images in one turn, or sends a turn's images in another order,
passes every one of them. These conversations hold several blocks of each declared type in
one turn and in one tool result, each block distinct (its own URL, or its own bytes after
the media type's signature), between texts, and a long multi-turn conversation mixing them;
the kit sends each and compares, in order, what the service sees with what was sent
(through the plugin's wire reader for texts, images and tools; block by block through its
``assert_on_wire`` for the other media, which a wire may not carry back as sent).

``usable(sample)`` says whether the kit may send a block (the provider declares it, the
service takes it for the kit's model): only such blocks are used.
"""

from __future__ import annotations

import base64
from collections.abc import Callable, Iterator, Mapping
from typing import Any

import attrs

from ..capabilities import IN_TOOL_RESULT
from .samples import MEDIA_SAMPLES, Sample

__all__ = ["CrowdedConversation", "crowded_conversations"]

#: The media types tried per block family (the kit's samples' range).
_FAMILIES: Mapping[str, tuple[str, ...]] = {
    "image": ("image/png", "image/jpeg", "image/gif", "image/webp", "image/bmp"),
    "video": ("video/mp4",),
    "document": ("application/pdf", "text/plain", "text/markdown"),
    "audio": ("audio/wav", "audio/mpeg"),
}
_IN_RESULTS: Mapping[str, tuple[str, ...]] = {
    "image": ("image/png", "image/jpeg", "image/bmp"),
    "file": ("application/pdf", "text/plain"),
}
#: How many blocks of one type a crowded turn or tool result holds.
SEVERAL = 3


#: The media every wire reader reads (the kit's mapping requests carry them): crowds of
#: these are compared whole through the reader; crowds of the other types block by block,
#: through the plugin's ``assert_on_wire`` at each block's place (a reader may not read
#: documents or audio back as sent: a text document becomes text on some wires).
READ_FAMILIES = frozenset({"image"})


@attrs.frozen
class CrowdedConversation:
    """One conversation the kit sends whole: ``name`` says what it crowds. ``located``: the
    blocks to hold with ``assert_on_wire``, each at its place (empty: the conversation is
    compared whole through the wire reader)."""

    name: str
    conversation: tuple[Mapping[str, Any], ...]
    located: tuple[Sample, ...] = ()

    @property
    def calls_tools(self) -> bool:
        """Whether the conversation holds tool calls (it is sent with the kit's ``lookup``
        tool declared: a wire may need the tools of the calls in its history)."""
        return any(block["type"] == "tool_use" for m in self.conversation for block in m["content"])


def _crowd(
    name: str, family: str, where: str, conversation: tuple[Mapping[str, Any], ...]
) -> CrowdedConversation:
    """``conversation`` with, for a family the reader need not read, a sample per block of
    ``family`` (its place in the conversation) for ``assert_on_wire``."""
    if family in READ_FAMILIES:
        return CrowdedConversation(name, conversation)
    located: list[tuple[int, int, int | None, Any]] = []
    for m, message in enumerate(conversation):
        for b, block in enumerate(message["content"]):
            parts = block.get("content") if block["type"] == "tool_result" else None
            if isinstance(parts, list):
                located += [(m, b, p, part) for p, part in enumerate(parts)]
            else:
                located.append((m, b, None, block))
    samples = tuple(
        Sample(family, where, block["source"]["type"], block["source"]["media_type"],
               conversation, (m, b, p))
        for m, b, p, block in located
        if block["type"] == family
    )  # fmt: skip
    return CrowdedConversation(name, conversation, samples)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _user(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def _assistant(*blocks: Mapping[str, Any]) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def _call(number: int) -> dict[str, Any]:
    """A call of the kit's ``lookup`` tool (``kit_requests.kit_tools``)."""
    return {
        "type": "tool_use",
        "id": f"call_crowd_{number}",
        "name": "lookup",
        "input": {"q": f"question {number}"},
    }


def _result(number: int, content: Any) -> dict[str, Any]:
    return {"type": "tool_result", "tool_use_id": f"call_crowd_{number}", "content": content}


def _media(family: str, kind: str, media_type: str, marker: str, nth: int) -> dict[str, Any]:
    """A block of ``family``, distinct per ``marker`` and ``nth`` (a URL of its own, or the
    media type's sample with bytes of its own after the signature)."""
    if kind == "base64":
        extra = f"\npart {nth}\n".encode() if media_type.startswith("text/") else bytes(nth)
        data = base64.b64encode(MEDIA_SAMPLES[media_type] + extra).decode()
        source = {"type": "base64", "media_type": media_type, "data": data}
    else:
        tail = media_type.rsplit("/", 1)[1]
        url = f"https://example.com/oma-conformance/crowd-{marker}-{nth}.{tail}"
        source = {"type": "url", "media_type": media_type, "url": url}
    block: dict[str, Any] = {"type": family, "source": source}
    if family == "file" or (family == "document" and kind == "base64"):
        # names of their own (a wire may require distinct ones, e.g. Converse's), in the
        # letters, digits and hyphens every wire takes
        block["filename"] = f"{family}-{kind}-{nth}.{media_type.rsplit('/', 1)[1]}"
    return block


def _probe(family: str, where: str, kind: str, media_type: str) -> Sample:
    """The one-block sample for a candidate (the kit's shape for the place)."""
    block = _media(family, kind, media_type, "probe", 0)
    if where == "user":
        return Sample(
            family, where, kind, media_type, (_user(_text("what?"), block),), (0, 1, None)
        )
    if where == "assistant":
        conversation = (_user(_text("show me")), _assistant(block), _user(_text("thanks")))
        return Sample(family, where, kind, media_type, conversation, (1, 0, None))
    rounds = (_user(_text("use it")), _assistant(_call(1)), _user(_result(1, [_text("x"), block])))
    return Sample(family, where, kind, media_type, rounds, (2, 0, 1))


def _several(
    family: str, where: str, usable: Callable[[Sample], bool], marker: str, count: int = SEVERAL
) -> list[dict[str, Any]]:
    """``count`` distinct blocks of ``family`` the kit may send in ``where`` (none if none)."""
    kinds = [
        (kind, media_type)
        for media_type in (_IN_RESULTS if where == IN_TOOL_RESULT else _FAMILIES)[family]
        for kind in ("base64", "url")
        if usable(_probe(family, where, kind, media_type))
    ]
    if not kinds:
        return []
    return [
        _media(family, *kinds[n % len(kinds)], marker=f"{marker}-{where}", nth=n)
        for n in range(count)
    ]


def _between_texts(blocks: list[dict[str, Any]], label: str) -> list[dict[str, Any]]:
    """``blocks`` with texts around and between them: text, block, text, block, block, ..."""
    out = [_text(f"{label}: before"), blocks[0]]
    if len(blocks) > 1:
        out += [_text(f"{label}: between"), *blocks[1:]]
    return out


def _tools_usable(usable: Callable[[Sample], bool]) -> bool:
    rounds = (_user(_text("use it")), _assistant(_call(1)), _user(_result(1, "answer")))
    calls = Sample("tool_use", "assistant", None, None, rounds, (1, 0, None))
    results = Sample("tool_result", "user", None, None, rounds, (2, 0, None))
    return usable(calls) and usable(results)


def crowded_conversations(usable: Callable[[Sample], bool]) -> list[CrowdedConversation]:
    """Several blocks of each usable type in one turn (user and assistant) and in one tool
    result, several tool calls and results in one turn, and one long conversation mixing
    them all (see the module docstring)."""
    texts = [_text(f"text number {n}") for n in range(SEVERAL)]
    found = [
        CrowdedConversation("three texts in one user turn", (_user(*texts),)),
        CrowdedConversation(
            "three texts in one assistant turn",
            (_user(_text("say three things")), _assistant(*texts), _user(_text("thanks"))),
        ),
    ]
    for family in _FAMILIES:
        if blocks := _several(family, "user", usable, family):
            found.append(
                _crowd(
                    f"three {family} blocks in one user turn",
                    family,
                    "user",
                    (_user(*_between_texts(blocks, family)),),
                )
            )
        if blocks := _several(family, "assistant", usable, family):
            turn = _assistant(*_between_texts(blocks, family))
            found.append(
                _crowd(
                    f"three {family} blocks in one assistant turn",
                    family,
                    "assistant",
                    (_user(_text("show me")), turn, _user(_text("thanks"))),
                )
            )
    tools = _tools_usable(usable)
    if tools:
        calls = [_call(n) for n in range(1, SEVERAL + 1)]
        results = [_result(n, f"the answer to question {n}") for n in range(1, SEVERAL + 1)]
        found.append(
            CrowdedConversation(
                "three tool calls in one turn and their results in the next",
                (
                    _user(_text("use them")),
                    _assistant(_text("three calls:"), *calls),
                    _user(*results),
                ),
            )
        )
        for family in _IN_RESULTS:
            if blocks := _several(family, IN_TOOL_RESULT, usable, family):
                parts = _between_texts(blocks, f"{family} result")
                result = {"type": "tool_result", "tool_use_id": "call_conf_1", "content": parts}
                call = {"type": "tool_use", "id": "call_conf_1", "name": "lookup",
                        "input": {"q": "x"}}  # fmt: skip
                found.append(
                    _crowd(
                        f"three {family} parts in one tool result",
                        family,
                        IN_TOOL_RESULT,
                        (_user(_text("use it")), _assistant(call), _user(result)),
                    )
                )
    found.append(CrowdedConversation("a long conversation mixing them", tuple(_long(usable))))
    return found


def _long(usable: Callable[[Sample], bool]) -> Iterator[dict[str, Any]]:
    """A dozen turns or more, compared through the reader: texts, images (two per turn),
    tool rounds with several calls, and results with several image parts."""

    def media(where: str, round_: int) -> list[dict[str, Any]]:
        families = _IN_RESULTS if where == IN_TOOL_RESULT else _FAMILIES
        out: list[dict[str, Any]] = []
        for family in sorted(READ_FAMILIES & set(families)):
            blocks = _several(family, where, usable, f"long{round_}-{family}", count=2)
            if blocks:
                out += [_text(f"round {round_}: two {family} blocks"), *blocks]
        return out

    tools = _tools_usable(usable)
    call = 10
    for round_ in range(3):
        yield _user(_text(f"round {round_}: hello"), *media("user", round_))
        yield _assistant(
            _text(f"round {round_}: a reply"),
            *media("assistant", round_),
            _text(f"round {round_}: the reply's end"),
        )
        if not tools:
            yield _user(_text(f"round {round_}: go on"))
            yield _assistant(_text(f"round {round_}: going on"))
            continue
        yield _user(_text(f"round {round_}: use the tools"))
        first, second = call, call + 1
        call += 2
        yield _assistant(_text(f"round {round_}: two calls"), _call(first), _call(second))
        parts = [_text(f"round {round_}: the result's text"), *media(IN_TOOL_RESULT, round_)]
        yield _user(
            _result(first, parts),
            _result(second, f"round {round_}: a plain answer"),
            _text(f"round {round_}: the results are in"),
        )
        yield _assistant(_text(f"round {round_}: noted"), _text(f"round {round_}: and more"))
    yield _user(_text("the end: summarise"), *media("user", 3))
