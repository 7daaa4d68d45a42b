"""The conformance kit's checks of structured output, per output mode a provider declares.

``ProviderConformance`` inherits them; a plugin states the modes its provider declares in
``output_modes`` (a check holds it to ``Capabilities.output_modes``) and the kit leaves out the
checks of the modes it does not declare. Prompted mode is every provider's, so its checks
always run. Per mode:

- the wire, through the plugin's reader (``read_request``), both as ``render`` gives it and as
  the fake server received it (complete and stream): native, the schema in the service's
  structured-output place (``NeutralRequest.output_schema``); tool, one more tool with the
  schema and the tool choice forced to it (to "some tool" beside the agent's own tools);
  prompted, no schema anywhere but the instructions in the system prompt;
- the round trip, through ``Agent(AgentConfig(..., output_type=KitInvoice))`` and scripted
  replies (``script_reply``): a nested object, an enum and a list come back as the typed
  ``result.structured``; a reply that fails validation gets exactly one corrective turn (one
  more request, the errors in it) and then succeeds, the usage of both attempts counted; with
  ``output_retries`` spent, ``OutputValidationError``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar

import attrs
import pytest

from .._output import output_spec
from ..agent import Agent, AgentConfig, RunResult
from ..errors import OutputValidationError
from .kit_requests import INVALID_INVOICE, INVOICE, TYPED_INVOICE, KitInvoice, kit_requests
from .neutral import NeutralRequest, ScriptedCall, ScriptedReply, differences

if TYPE_CHECKING:
    from ..capabilities import ProviderSpec
    from .fake_server import FakeServer

__all__ = ["OutputConformance", "schema_past_limits", "streamed_partials"]

_STREAMING = pytest.mark.parametrize("streaming", [False, True], ids=["complete", "stream"])
_QUESTION = "Read the invoice, please."


class OutputConformance:
    """The structured-output checks (see the module docstring); mixed into
    ``ProviderConformance``, whose hooks they use."""

    #: The output modes the provider declares (``Capabilities.output_modes``): the kit checks
    #: each, and holds this to the declaration (a mode left out here fails that check).
    output_modes: ClassVar[frozenset[str]] = frozenset({"prompted"})
    #: The forced tool a bridge's library turns native output into (e.g. LiteLLM's
    #: ``json_tool_call`` on its ``anthropic/`` route): the native schema must then arrive as
    #: that tool's schema, with the choice forced to it. None: in the service's native place.
    native_output_tool: ClassVar[str | None] = None

    #: The checks of each mode that needs declaring (prompted mode's always run).
    _MODE_CHECKS: ClassVar[Mapping[str, tuple[str, ...]]] = {
        "native": (
            "test_native_output_schema_reaches_the_service",
            "test_native_output_comes_back_typed",
            "test_native_output_gets_one_corrective_turn",
            "test_native_output_fails_when_its_retries_are_spent",
        ),
        "tool": (
            "test_tool_output_is_a_forced_tool",
            "test_tool_output_comes_back_typed",
            "test_tool_output_gets_one_corrective_turn",
            "test_tool_output_fails_when_its_retries_are_spent",
        ),
    }
    #: Output checks that need the wire reader.
    _OUTPUT_READER_CHECKS = (
        "test_native_output_schema_reaches_the_service",
        "test_tool_output_is_a_forced_tool",
        "test_prompted_output_is_instructions_only",
    )
    #: Output checks that need scripted replies.
    _OUTPUT_REPLY_CHECKS = tuple(
        f"test_{mode}_output_{check}"
        for mode in ("native", "tool", "prompted")
        for check in (
            "comes_back_typed",
            "gets_one_corrective_turn",
            "fails_when_its_retries_are_spent",
        )
    )

    if TYPE_CHECKING:  # the hooks and helpers of ProviderConformance
        render_is_the_wire: bool
        tool_error_flag: bool
        media_apart_from_text: bool

        def spec(self) -> ProviderSpec: ...
        def agent(self, server: FakeServer, **config: Any) -> Agent: ...
        def read_request(self, body: Mapping[str, Any]) -> NeutralRequest: ...
        def script_reply(self, server: Any, reply: ScriptedReply) -> None: ...

    # -- helpers -----------------------------------------------------------------------------

    def _output_config(self, mode: str, with_tools: bool = False) -> dict[str, Any]:
        """The kit's one-question request (system prompt, sampling settings; its tool only
        ``with_tools``) asking for a ``KitInvoice`` in ``mode``."""
        config = dict(kit_requests(self.spec().capabilities)[1].config)
        if not with_tools:
            config.pop("tools")
        return {**config, "output_type": KitInvoice, "output_mode": mode}

    def _output_reply(self, agent: Agent, value: Mapping[str, Any], call_id: str) -> ScriptedReply:
        """A reply carrying ``value`` as ``agent``'s output: a call of its output tool in tool
        mode (of ``native_output_tool`` in native mode, when set), the JSON text otherwise."""
        output = agent.build_request(_QUESTION).output
        name = None
        if output is not None:
            name = output.name if output.mode == "tool" else self.native_output_tool
        if name is not None:
            call = ScriptedCall(name, dict(value), call_id)
            return ScriptedReply(tool_calls=(call,), stop_reason="tool_use")
        return ScriptedReply(text=json.dumps(value))

    def _seen_output(self, seen: NeutralRequest) -> NeutralRequest:
        """The reader's view, with a bridge's native-output tool read back as the native
        schema it stands for (``native_output_tool``)."""
        name = self.native_output_tool
        carrier = [t for t in seen.tools if t.name == name]
        if name is None or not carrier or seen.tool_choice != name:
            return seen
        return attrs.evolve(
            seen,
            tools=[t for t in seen.tools if t.name != name],
            tool_choice=None,
            output_schema=carrier[0].input_schema,
        )

    def _assert_output_seen(self, body: Mapping[str, Any], sent: NeutralRequest, what: str) -> None:
        seen = self._seen_output(self.read_request(body))
        found = differences(
            seen,
            sent,
            error_flag=self.tool_error_flag,
            media_among_texts=not self.media_apart_from_text,
        )
        assert not found, f"{what}: the service does not see what was sent:\n  " + "\n  ".join(
            found
        )

    async def _output_wire(self, server: FakeServer, mode: str, with_tools: bool) -> NeutralRequest:
        """Send the kit's output request in ``mode`` (rendered, completed and streamed) and
        hold what the reader sees each time to what the core asked for; that view."""
        async with self.agent(server, **self._output_config(mode, with_tools)) as agent:
            request = agent.build_request(_QUESTION)
            sent = NeutralRequest.of(request)
            if self.render_is_the_wire:
                body = agent.provider().render(request)
                self._assert_output_seen(body, sent, f"{mode} output, as rendered")
            for streaming in (False, True):
                server.reset()
                self.script_reply(server, self._output_reply(agent, INVOICE, "kitout001"))
                result = await _outcome(agent, _QUESTION, streaming)
                assert result.success, (mode, streaming, result.status.error)
                assert len(server.requests) == 1, (mode, streaming)
                how = "streamed" if streaming else "completed"
                self._assert_output_seen(server.requests[0].json, sent, f"{mode} output, {how}")
        return sent

    async def _typed(self, server: FakeServer, mode: str, streaming: bool) -> None:
        async with self.agent(server, **self._output_config(mode)) as agent:
            self.script_reply(server, self._output_reply(agent, INVOICE, "kitout001"))
            result = await _outcome(agent, _QUESTION, streaming)
        assert result.success, result.status.error
        assert result.structured == TYPED_INVOICE, result.structured
        assert isinstance(result.structured, KitInvoice)
        assert len(server.requests) == 1

    async def _corrected(self, server: FakeServer, mode: str) -> None:
        async with self.agent(server, **self._output_config(mode)) as agent:
            self.script_reply(server, self._output_reply(agent, INVALID_INVOICE, "kitout001"))
            self.script_reply(server, self._output_reply(agent, INVOICE, "kitout002"))
            result = await agent.run(_QUESTION)
        assert result.success, result.status.error
        assert result.structured == TYPED_INVOICE
        assert len(server.requests) == 2, "one corrective turn, one more request"
        assert b"$.kind" in server.requests[1].body, "the corrective turn names what was wrong"
        each = ScriptedReply().usage  # the usage every scripted reply reports
        assert result.usage == each + each, f"usage {result.usage}: both attempts count"

    async def _spent(self, server: FakeServer, mode: str) -> None:
        config = {**self._output_config(mode), "output_retries": 1}
        async with self.agent(server, **config) as agent:
            self.script_reply(server, self._output_reply(agent, INVALID_INVOICE, "kitout001"))
            self.script_reply(server, self._output_reply(agent, INVALID_INVOICE, "kitout002"))
            result = await agent.run(_QUESTION)
        error = result.status.error
        assert isinstance(error, OutputValidationError), repr(error)
        assert any("$.kind" in e for e in error.errors), error.errors
        assert result.structured is None
        assert len(server.requests) == 2, "the first reply and one corrective turn, no more"

    # -- the checks ----------------------------------------------------------------------------

    def test_the_kit_checks_every_declared_output_mode(self) -> None:
        declared = self.spec().capabilities.output_modes
        assert frozenset(self.output_modes) == declared, (
            f"the provider declares the output modes {sorted(declared)}: set output_modes = "
            f"frozenset({sorted(declared)}) on the kit class, so the kit checks each"
        )

    async def test_native_output_schema_reaches_the_service(self, server: FakeServer) -> None:
        sent = await self._output_wire(server, "native", with_tools=True)
        assert sent.output_schema is not None and "lookup" in [t.name for t in sent.tools]

    async def test_tool_output_is_a_forced_tool(self, server: FakeServer) -> None:
        alone = await self._output_wire(server, "tool", with_tools=False)
        assert alone.output_schema is None
        assert [t.name for t in alone.tools] == [alone.tool_choice], "forced to the output tool"
        beside = await self._output_wire(server, "tool", with_tools=True)
        assert [t.name for t in beside.tools] == ["lookup", alone.tool_choice]
        assert beside.tool_choice == "required", "beside the agent's tools: some tool"

    async def test_prompted_output_is_instructions_only(self, server: FakeServer) -> None:
        sent = await self._output_wire(server, "prompted", with_tools=True)
        assert sent.output_schema is None and [t.name for t in sent.tools] == ["lookup"]
        spec = output_spec(KitInvoice)
        assert spec is not None and sent.system_prompt is not None
        assert spec.instructions in sent.system_prompt, "the instructions are in the system prompt"

    @_STREAMING
    async def test_native_output_comes_back_typed(
        self, server: FakeServer, streaming: bool
    ) -> None:
        await self._typed(server, "native", streaming)

    @_STREAMING
    async def test_tool_output_comes_back_typed(self, server: FakeServer, streaming: bool) -> None:
        await self._typed(server, "tool", streaming)

    @_STREAMING
    async def test_prompted_output_comes_back_typed(
        self, server: FakeServer, streaming: bool
    ) -> None:
        await self._typed(server, "prompted", streaming)

    async def test_native_output_gets_one_corrective_turn(self, server: FakeServer) -> None:
        await self._corrected(server, "native")

    async def test_tool_output_gets_one_corrective_turn(self, server: FakeServer) -> None:
        await self._corrected(server, "tool")

    async def test_prompted_output_gets_one_corrective_turn(self, server: FakeServer) -> None:
        await self._corrected(server, "prompted")

    async def test_native_output_fails_when_its_retries_are_spent(self, server: FakeServer) -> None:
        await self._spent(server, "native")

    async def test_tool_output_fails_when_its_retries_are_spent(self, server: FakeServer) -> None:
        await self._spent(server, "tool")

    async def test_prompted_output_fails_when_its_retries_are_spent(
        self, server: FakeServer
    ) -> None:
        await self._spent(server, "prompted")


async def _outcome(agent: Agent, run_input: Any, streaming: bool) -> RunResult:
    """The result of ``agent.run(run_input)``, or of the ``done`` event of its stream."""
    if streaming:
        async with agent.stream(run_input) as events:
            return [e async for e in events][-1].data  # type: ignore[no-any-return]
    return await agent.run(run_input)


# -- helpers for a plugin's own structured-output tests ---------------------------------------


async def streamed_partials(config: AgentConfig, prompt: str) -> tuple[list[Any], RunResult]:
    """Stream one run of ``config``: the ``partial`` events' data in order, and the result.

    For a plugin whose fake splits the output tool's arguments into pieces (tool mode streams
    them as partial output). The output call is never handed on as a ``tool_use`` event.
    """
    partials: list[Any] = []
    async with Agent(config) as agent, agent.stream(prompt) as events:
        async for event in events:
            assert event.type != "tool_use", "the output call was handed on as a tool call"
            if event.type == "partial":
                partials.append(event.data)
            elif event.type == "done":
                result: RunResult = event.data
    return partials, result


def schema_past_limits(*, closed: bool = False) -> dict[str, Any]:
    """A schema past the documented limits of OpenAI (10 levels of nesting) and Anthropic
    (24 optional properties, 16 with a union type) at once: what a provider whose service
    documents no limit must send as it is. ``closed``: every object says
    ``"additionalProperties": false`` (for a service that requires it)."""
    schema: dict[str, Any] = {"type": "object", "properties": {"v": {"type": "string"}}}
    for _ in range(11):
        schema = {"type": "object", "properties": {"n": schema}}
        if closed:
            schema["additionalProperties"] = False
    nullable = {"anyOf": [{"type": "string"}, {"type": "null"}]}
    schema["properties"] |= {f"o{i:02d}": nullable for i in range(30)}
    return schema
