"""The conformance kit's checks of reasoning provenance (``ReasoningBlock.provider``).

A reasoning model's signed reasoning (Anthropic's thinking signature and redacted thinking,
Gemini's ``thoughtSignature``, the Responses API's encrypted reasoning items) must come back to
the service that issued it exactly as it came, or the service refuses the request or loses its
train of thought; reasoning another provider signed must never reach the wire, as the service
cannot read it (``oma_core``'s runner leaves it out; a plugin may send its text where its
``provider_options`` ask, ``foreign_reasoning_as_text``).

A plugin whose service issues signed reasoning declares that it echoes it by supplying
``script_reasoning`` (the fake server's next reply: signed reasoning, then a text or a tool
call); ``ProviderConformance`` then runs these checks. Without the hook they are left out,
with a warning when the provider declares reasoning blocks. ``reasoning_on_wire`` says which
strings of a block must reach the wire verbatim (its signature and redacted data by default).
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import pytest

from ..agent import Agent, RunResult
from ..capabilities import ProviderSpec
from ..messages import LLMMessage, ReasoningBlock, TextBlock, user_text
from ..serialization import dump_messages
from ..validation import load_messages
from .fake_server import FakeServer, RecordedRequest
from .kit_requests import kit_tools

__all__ = ["REASONING", "ReasoningConformance", "wire_strings"]

#: The reasoning the kit scripts: two paragraphs, so a service that streams parts apart is
#: held to joining them as the block's text does.
REASONING = "The user asks about Paris.\n\nI should look the weather up first."


def wire_strings(body: Any) -> Iterator[str]:
    """Every string in a JSON body (keys and values, at any depth)."""
    stack = [body]
    while stack:
        value = stack.pop()
        if isinstance(value, str):
            yield value
        elif isinstance(value, Mapping):
            stack.extend(value.keys())
            stack.extend(value.values())
        elif isinstance(value, list | tuple):
            stack.extend(value)


class ReasoningConformance:
    """The reasoning-provenance checks, mixed into ``ProviderConformance``."""

    provider_name: str
    #: The ``provider_options`` that make the provider send another provider's reasoning as
    #: text (None: the provider leaves it out, as the runner does).
    foreign_reasoning_as_text: ClassVar[Mapping[str, Any] | None] = None

    #: The checks ``script_reasoning`` enables.
    _REASONING_CHECKS: ClassVar[tuple[str, ...]] = (
        "test_signed_reasoning_goes_back_unchanged",
        "test_reasoning_another_provider_signed_never_reaches_the_wire",
    )

    def script_reasoning(
        self,
        server: Any,
        reasoning: str,
        *,
        text: str = "",
        call: tuple[str, str, Mapping[str, Any]] | None = None,
    ) -> None:
        """Make the server's next reply ``reasoning``, signed as the service signs it (the
        fake server must check the signature when it comes back, as the service does),
        followed by ``text`` or by the tool call ``call`` (id, name, arguments)."""
        raise NotImplementedError

    def reasoning_on_wire(self, block: ReasoningBlock) -> tuple[str, ...]:
        """The strings of ``block`` that must reach the wire verbatim when it goes back to its
        provider: its ``signature`` and ``redacted_data`` by default (a plugin that wraps the
        service's tokens in its signature names the tokens themselves)."""
        return tuple(t for t in (block.signature, block.redacted_data) if t is not None)

    if TYPE_CHECKING:  # the hooks and helpers of ProviderConformance

        def spec(self) -> ProviderSpec: ...
        def agent(self, server: FakeServer, **config: Any) -> Agent: ...
        def script_text(self, server: Any, text: str) -> None: ...

    @classmethod
    def _reasoning_left_out(cls) -> set[str]:
        """The checks to leave out: all of them without ``script_reasoning``."""
        if cls.script_reasoning is ReasoningConformance.script_reasoning:
            return set(cls._REASONING_CHECKS)
        return set()

    # -- the checks

    @pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
    @pytest.mark.parametrize("turn", ["tool-loop", "next-turn"])
    async def test_signed_reasoning_goes_back_unchanged(
        self, server: FakeServer, streaming: bool, turn: str
    ) -> None:
        """Signed reasoning the provider issued, in a tool loop (the next request of the same
        run) and in the next turn (after ``dump_messages`` / ``load_messages``), reaches the
        wire with its tokens unchanged; streamed, its text came as ``reasoning`` events."""
        lookup = kit_tools(self.spec().capabilities)["lookup"]
        if turn == "tool-loop":
            call = ("call_kit_think", "lookup", {"q": "weather in Paris"})
            self.script_reasoning(server, REASONING, call=call)
        else:
            self.script_reasoning(server, REASONING, text="It is sunny in Paris.")
        self.script_text(server, "Sunny, 21 degrees.")
        question = [{"role": "user", "content": [{"type": "text", "text": "Weather in Paris?"}]}]
        async with self.agent(server, tools=[lookup]) as agent:
            first, reasoned = await _run(agent, question, streaming)
            block = _first_reasoning(first)
            assert block.provider == self.provider_name, (
                f"the reasoning block names {block.provider!r} as its provider, not "
                f"{self.provider_name!r}: it cannot be told apart from another provider's"
            )
            assert first.success, repr(first.status.error)
            if turn == "next-turn":
                assert len(server.requests) == 1
                history = [*question, *dump_messages(first.messages)]
                again = [*load_messages(history), user_text("And tomorrow?")]
                second, _ = await _run(agent, again, streaming)
                assert second.success, repr(second.status.error)
        assert len(server.requests) == 2, f"{len(server.requests)} requests for two calls"
        tokens = self.reasoning_on_wire(block)
        assert tokens, "the provider's reasoning block holds no signature nor redacted data"
        _assert_sent(server.requests[1], tokens, block)
        if streaming:
            assert reasoned == block.text, (
                f"the reasoning events join into {reasoned!r}, not the block's {block.text!r}"
            )

    @pytest.mark.parametrize("token", ["signature", "redacted_data"])
    async def test_reasoning_another_provider_signed_never_reaches_the_wire(
        self, server: FakeServer, token: str
    ) -> None:
        """A conversation moved from another provider: that provider's signed or redacted
        reasoning is left out of the request (or sent as its text where
        ``foreign_reasoning_as_text`` asks), never its token."""
        secret = f"kit-foreign-{token}-" + secrets.token_hex(16)
        thought = "Thoughts of another provider, kit " + secrets.token_hex(4)
        block = ReasoningBlock(thought, **{token: secret}, provider="kit-another-provider")
        conversation = [
            user_text("Weather in Paris?"),
            LLMMessage("assistant", (block, TextBlock("Sunny."))),
            user_text("And tomorrow?"),
        ]
        variants: list[Mapping[str, Any] | None] = [None]
        if self.foreign_reasoning_as_text is not None:
            variants.append(self.foreign_reasoning_as_text)
        for options in variants:
            server.reset()
            self.script_text(server, "Rain.")
            config = {} if options is None else {"provider_options": dict(options)}
            async with self.agent(server, **config) as agent:
                result = await agent.run(conversation)
            assert result.success, repr(result.status.error)
            assert len(server.requests) == 1
            request = server.requests[0]
            assert secret.encode() not in request.body, (
                f"another provider's {token} reached the wire"
            )
            if options is not None:
                assert any(thought in s for s in wire_strings(request.json)), (
                    "foreign_reasoning_as_text: the reasoning's text is not on the wire"
                )


async def _run(agent: Agent, conversation: Any, streaming: bool) -> tuple[RunResult, str]:
    """The run's result and, streamed, the text of its ``reasoning`` events joined."""
    if not streaming:
        return await agent.run(conversation), ""
    async with agent.stream(conversation) as events:
        seen = [e async for e in events]
    reasoned = "".join(e.data for e in seen if e.type == "reasoning")
    return seen[-1].data, reasoned


def _first_reasoning(result: RunResult) -> ReasoningBlock:
    for message in result.messages:
        for block in message.content:
            if isinstance(block, ReasoningBlock):
                return block
    raise AssertionError("the reply's reasoning is not in the run's messages")


def _assert_sent(request: RecordedRequest, tokens: tuple[str, ...], block: ReasoningBlock) -> None:
    strings = set(wire_strings(request.json))
    for token in tokens:
        assert token in strings, (
            f"the reasoning's token {token[:40]!r}... did not reach the wire unchanged "
            f"(the block of {block.provider!r} was dropped or altered)"
        )
