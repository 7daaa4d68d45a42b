"""Builders shared by the core's tests (plain helpers, not fixtures; fixtures live in conftest.py).

- message shapes of DESIGN.md section 2 as plain dicts: ``user(...)``/``assistant(...)`` wrap
  blocks into a message; ``text``, ``image``, ``video``, ``tool_use`` and ``tool_result`` build
  blocks with small valid defaults; ``refused``/``refused_saying`` load data that must be refused
  and check the error's path and wording;
- the same shapes as the reference pages write them: ``user_turn``, ``assistant_turn``,
  ``assistant_text``, ``text_block``, ``png_block``, ``video_block``, ``named_image``,
  ``tool_call_turn``, and ``sent_dicts`` (what a ``ScriptedProvider`` received, as dicts);
- agents on a ``ScriptedProvider``: ``make``, ``make_replying_ok``, ``scripted_agent``,
  ``vision_agent``; hosts with the built-in plugins only (``builtin_host``); orchestrators that
  never really sleep (``make_orchestrator``); ``start`` runs an agent with ``RunSettings``;
- small fake providers, backends, call middleware (``Recorder``), and sleeps that several
  behaviour files use; ``oma(...)`` runs the command in process.
"""

from __future__ import annotations

import asyncio
import base64
import enum
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Generator, Mapping
from contextlib import aclosing
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, settings

from oma_core import (
    Agent,
    AgentConfig,
    BackendSpec,
    EvalCase,
    InvalidMessageError,
    OnlineEvaluationConfig,
    OpenMultiAgent,
    PluginHost,
    RunSettings,
    StreamEvent,
    dump_messages,
    hookimpl,
    load_messages,
    tool,
)
from oma_core.backends import BackendRequest, BackendResult
from oma_core.evaluation import StorePayloads
from oma_core.messages import LLMMessage, TextBlock, ToolResultBlock
from oma_core.providers import (
    ProviderRequest,
    ProviderResponse,
    ResponseComplete,
    TextDelta,
    ToolCall,
    Usage,
)
from oma_core.retry import RetryPolicy
from oma_core.testing import ScriptedProvider
from oma_core.toolkit import CallEvent, ModelCall, RunContext, ToolInvocation

PNG_B64 = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNk"
    "+M9QDwADhgGAWjR9awAAAABJRU5ErkJggg=="
)


IMG_URL = "https://example.com/cat.png"


VID_URL = "https://example.com/clip.mp4"


def user(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": list(blocks)}


def assistant(*blocks: Any) -> dict[str, Any]:
    return {"role": "assistant", "content": list(blocks)}


def text(value: Any = "hi") -> dict[str, Any]:
    return {"type": "text", "text": value}


def url_source(url: str = IMG_URL, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "url", "media_type": media_type, "url": url}


def b64_source(data: str = PNG_B64, media_type: str = "image/png") -> dict[str, Any]:
    return {"type": "base64", "media_type": media_type, "data": data}


def image(source: dict[str, Any] | None = None, **extra: Any) -> dict[str, Any]:
    return {"type": "image", "source": source or url_source(), **extra}


def video(source: dict[str, Any] | None = None) -> dict[str, Any]:
    return {"type": "video", "source": source or url_source(VID_URL, "video/mp4")}


def tool_use(input_: Any = None, **over: Any) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "t1", "name": "zoom", "input": input_ or {"q": "x"}}
    block.update(over)
    return block


def tool_result(content: Any = "done", **over: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "t1", "content": content}
    block.update(over)
    return block


def refused(data: Any, path: str | None = None, phrase: str | None = None) -> InvalidMessageError:
    """Load `data`, expect InvalidMessageError, and check the `f"{path} {reason}"` form."""
    with pytest.raises(InvalidMessageError) as info:
        load_messages(data)
    err = info.value
    assert isinstance(err.path, str) and err.path.startswith("messages")
    assert str(err).startswith(err.path + " "), str(err)
    if path is not None:
        assert err.path == path, (err.path, str(err))
    if phrase is not None:
        assert phrase in str(err), str(err)
    return err


def full_conversation() -> list[dict[str, Any]]:
    return [
        user(
            text("What is shown?"),
            image(url_source()),
            image(b64_source(), detail="low"),
            video(b64_source("AAAA", "video/mp4")),
            video(),
        ),
        assistant(
            {"type": "reasoning", "text": "Look closer.", "signature": "sig"},
            {"type": "reasoning", "text": "", "redacted_data": "opaque"},
            text("Let me zoom."),
            tool_use({"factor": 2, "nested": {"list": [1, 2.5, True, None, "s"]}}),
        ),
        user(
            tool_result(
                [
                    text("zoomed"),
                    {"type": "image", "source": b64_source()},
                    {
                        "type": "file",
                        "filename": "report.pdf",
                        "source": b64_source("JVBERi0=", "application/pdf"),
                    },
                ]
            ),
            tool_result("failed", is_error=True, tool_use_id="t2"),
            text("thanks"),
        ),
    ]


def nested(depth: int) -> Any:
    value: Any = "leaf"
    for _ in range(depth):
        value = {"k": value}
    return value


ROOT = Path(__file__).parent.parent


def make(host: PluginHost, *responses: object, **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    return Agent(AgentConfig(name="a", provider=provider, **config), plugins=host), provider


def load_video(data: Any, media_type: Any = "video/mp4") -> Any:
    source = {"type": "base64", "media_type": media_type, "data": data}
    return load_messages([{"role": "user", "content": [{"type": "video", "source": source}]}])


def text_msg(role: str, text: str) -> dict[str, Any]:
    return {"role": role, "content": [{"type": "text", "text": text}]}


URL_SOURCE = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}


def named_image(name: str) -> dict[str, Any]:
    return {
        "type": "image",
        "source": {"type": "url", "media_type": "image/png", "url": f"https://example.com/{name}"},
    }


def tool_call(input: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": "t1", "name": "f", "input": input}


def refused_saying(data: Any, message: str, path: str | None = None) -> InvalidMessageError:
    with pytest.raises(InvalidMessageError) as info:
        load_messages(data)
    assert message in str(info.value)
    if path is not None:
        assert info.value.path == path
        assert str(info.value).startswith(path + " ")
    return info.value


class Color(enum.Enum):
    RED = "red"
    BLUE = "blue"


VIDEO_SOURCE = {"type": "url", "media_type": "video/mp4", "url": "https://example.com/a.mp4"}


def text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def collecting_scorer(into: list[Any]) -> Callable[[EvalCase], float]:
    """A scorer that keeps every case it sees."""

    def scorer(case: EvalCase) -> float:
        into.append(case)
        return 1.0

    return scorer


def user_turn(*blocks: Any) -> dict[str, Any]:
    return {"role": "user", "content": [text_block(b) if isinstance(b, str) else b for b in blocks]}


class TinyBackend:
    kind = "tiny"
    display_name = "Tiny"

    def __init__(self, log: list[BackendRequest]) -> None:
        self.log = log
        self.closed = 0
        self.turn_closed = 0
        self.started = asyncio.Event()

    async def run(self, request: BackendRequest) -> AsyncIterator[Any]:
        self.log.append(request)
        try:
            yield TextDelta("re:" + request.prompt)
            if request.prompt == "hang":
                self.started.set()
                await asyncio.sleep(30)
            yield BackendResult(output="re:" + request.prompt)
        finally:
            self.turn_closed += 1

    async def aclose(self) -> None:
        self.closed += 1


def assistant_turn(*blocks: Any) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [text_block(b) if isinstance(b, str) else b for b in blocks],
    }


def tool_call_turn(name: str, args: dict[str, Any], call_id: str = "c1") -> dict[str, Any]:
    return assistant_turn({"type": "tool_use", "id": call_id, "name": name, "input": args})


def scripted_agent(
    responses: list[Any], host: PluginHost | None = None, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="a", provider=provider, **config), plugins=host)
    return agent, provider


class HookRecorder:
    """An in-process plugin recording before_run and progress calls."""

    def __init__(self) -> None:
        self.before_run: list[Any] = []
        self.progress: list[Any] = []

    @hookimpl
    def oma_before_run(self, ctx: Any) -> None:
        self.before_run.append(ctx)

    @hookimpl
    def oma_progress(self, event: Any) -> None:
        self.progress.append(event)


REFERENCE_MP4 = base64.b64encode(b"\x00\x00\x00\x18ftypmp42" + bytes(range(100))).decode("ascii")


def sent_dicts(provider: ScriptedProvider, index: int = 0) -> list[dict[str, Any]]:
    return dump_messages(provider.requests[index].messages)


@tool
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


class ClosingProvider:
    """Streams many chunks and records whether its stream was closed."""

    name = display_name = "closing"

    def __init__(self, chunks: int = 100) -> None:
        self.chunks = chunks
        self.opened = 0
        self.closed = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return ProviderResponse(LLMMessage("assistant", (TextBlock("x"),)))

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.opened += 1
        try:
            for _ in range(self.chunks):
                yield TextDelta("x")
                await asyncio.sleep(0)
            message = LLMMessage("assistant", (TextBlock("x" * self.chunks),))
            yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))
        finally:
            self.closed += 1


class TinyBackendPlugin:
    def __init__(self) -> None:
        self.requests: list[BackendRequest] = []
        self.built = 0
        self.backend: TinyBackend | None = None
        self.made = asyncio.Event()

    def _factory(self, options: Mapping[str, Any]) -> TinyBackend:
        self.built += 1
        self.backend = TinyBackend(self.requests)
        self.made.set()
        return self.backend

    @hookimpl
    def oma_register_backends(self) -> list[BackendSpec]:
        return [BackendSpec(kind="tiny", display_name="Tiny", factory=self._factory)]


def video_block(kind: str = "url") -> dict[str, Any]:
    if kind == "base64":
        source = {"type": "base64", "media_type": "video/mp4", "data": REFERENCE_MP4}
    else:
        source = {
            "type": "url",
            "media_type": "video/mp4",
            "url": "https://example.com/clip.mp4",
        }
    return {"type": "video", "source": source}


class CostlyProvider:
    """A provider reporting 100 + 100 tokens per call, always calling the ``add`` tool."""

    name = "costly"
    display_name = "Costly"

    def __init__(self, tool_calls: bool = True) -> None:
        self.calls = 0
        self.tool_calls = tool_calls

    def _response(self) -> ProviderResponse:
        self.calls += 1
        if self.tool_calls:
            message = load_messages([tool_call_turn("add", {"a": 1, "b": 1}, f"c{self.calls}")])[0]
        else:
            message = load_messages([assistant_turn("fine")])[0]
        return ProviderResponse(message=message, usage=Usage(100, 100))

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        return self._response()

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        response = self._response()
        for block in response.message.content:
            if block.type == "tool_use":
                yield ToolCall(block)
            elif isinstance(block, TextBlock):
                yield TextDelta(block.text)
        yield ResponseComplete(response)

    def render(self, request: ProviderRequest) -> dict[str, Any]:
        return {}

    async def aclose(self) -> None:
        return None


PNG = "iVBORw0KGgo="


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


REFERENCE_PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(range(60))).decode("ascii")


def assistant_text(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [text_block(text)]}


async def evaluated_case(input: Any, store_payloads: StorePayloads) -> EvalCase:
    cases: list[EvalCase] = []
    oma = OpenMultiAgent(
        evaluation=OnlineEvaluationConfig(
            scorers=[collecting_scorer(cases)], store_payloads=store_payloads
        ),
        plugins=builtin_host(),
    )
    result = await oma.run_agent(AgentConfig(name="v"), input)
    await oma.evaluation.flush()
    (case,) = cases
    assert case.output == result.output  # scorers see the output in every mode
    return case


def png_block(kind: str = "base64") -> dict[str, Any]:
    if kind == "base64":
        source = {"type": "base64", "media_type": "image/png", "data": REFERENCE_PNG}
    else:
        source = {"type": "url", "media_type": "image/png", "url": "https://example.com/a.png"}
    return {"type": "image", "source": source}


class SlowStream:
    """Streams one chunk, then stalls (or fails, or finishes); records calls and closing."""

    name = display_name = "slow"

    def __init__(
        self,
        *,
        fail_first: BaseException | None = None,
        fail_after_text: BaseException | None = None,
        stall: bool = True,
    ) -> None:
        self.fail_first = fail_first
        self.fail_after_text = fail_after_text
        self.stall = stall
        self.calls = 0
        self.closed = 0

    async def complete(self, request: ProviderRequest) -> ProviderResponse:
        raise NotImplementedError

    async def stream(self, request: ProviderRequest) -> AsyncIterator[Any]:
        self.calls += 1
        try:
            if self.fail_first is not None and self.calls == 1:
                raise self.fail_first
            yield TextDelta("partial ")
            if self.fail_after_text is not None:
                raise self.fail_after_text
            if self.stall:
                await asyncio.sleep(30)
            message = LLMMessage("assistant", (TextBlock("partial"),))
            yield ResponseComplete(ProviderResponse(message, Usage(1, 1)))
        finally:
            self.closed += 1


def reference_conversation() -> list[dict[str, Any]]:
    """The conversation of the page's first example."""
    return [
        user_turn("Keep answers concise."),
        assistant_text("Understood."),
        user_turn("What is shown here?", png_block()),
    ]


def builtin_host(*plugins: object) -> PluginHost:
    """Built-in plugins only (no installed package adds hooks), plus ``plugins``."""
    host = PluginHost(load_entrypoints=False)
    for plugin in plugins:
        host.register(plugin)
    return host


def vision_agent(responses: list[Any], **config: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses)
    agent = Agent(AgentConfig(name="vision", provider=provider, **config), plugins=builtin_host())
    return agent, provider


async def stream_events(agent: Agent, input: Any) -> list[StreamEvent]:
    return [event async for event in agent.stream(input)]


def agent_config(provider: Any, **kwargs: Any) -> AgentConfig:
    return AgentConfig("vision", provider=provider, **kwargs)


def tool_round(index: int) -> dict[str, Any]:
    return {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": f"t{index}", "name": "missing", "input": {}}],
    }


def make_replying_ok(
    host: PluginHost, *responses: object, **config: Any
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(responses or ("ok",))
    return Agent(AgentConfig(name="a", provider=provider, **config), plugins=host), provider


class FakeSleep:
    def __init__(self) -> None:
        self.waits: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


class Recorder:
    """Call middleware that records every call, retry and tool call it sees."""

    def __init__(self) -> None:
        self.log: list[tuple[Any, ...]] = []

    @hookimpl(wrapper=True)
    def oma_model_call(self, call: ModelCall, run: RunContext) -> Generator[None, Any, Any]:
        events = yield
        return self._around(events, call)

    async def _around(
        self, events: AsyncGenerator[CallEvent, None], call: ModelCall
    ) -> AsyncGenerator[CallEvent, None]:
        if call.retry_of is not None:
            self.log.append(("on_retry", call.attempt - 1, call.retry_delay))
        self.log.append(("before_call",))
        partial: list[str] = []
        usage = Usage()
        try:
            async with aclosing(events) as inner:
                async for event in inner:
                    if isinstance(event, TextDelta):
                        partial.append(event.text)
                    elif isinstance(event, ResponseComplete):
                        usage = event.response.usage
                    yield event
        except Exception as error:
            self.log.append(("after_call", Usage(), type(error).__name__, "".join(partial)))
            raise
        self.log.append(("after_call", usage, None, ""))

    @hookimpl(wrapper=True)
    def oma_tool_call(self, call: ToolInvocation, run: RunContext) -> Generator[None, Any, Any]:
        result = yield
        return self._tool(result, call)

    async def _tool(self, result: Awaitable[ToolResultBlock], call: ToolInvocation) -> Any:
        self.log.append(("before_tool", call.block.id))
        outcome = await result
        self.log.append(("after_tool", call.block.id, outcome.content))
        return outcome


def start(
    agent: Agent,
    input: Any,
    *,
    mode: str = "run",
    observers: tuple[object, ...] = (),
    **settings: Any,
) -> Any:
    """Run ``agent`` with ``settings`` and the ``observers`` (middleware) registered."""
    settings.setdefault("retry", RetryPolicy(sleep=FakeSleep(), random=lambda: 1.0))
    for observer in observers:
        agent.plugins.register(observer)
    run_settings = RunSettings(**settings)
    if mode == "stream":
        return agent.stream(input, settings=run_settings)
    return agent.run(input, settings=run_settings)


IMAGE = base64.b64encode(bytes(range(200))).decode()


def three_turn_conversation() -> list[dict[str, Any]]:
    return [
        {"role": "user", "content": [{"type": "text", "text": "Keep answers short."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Understood."}]},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "What is shown?"},
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": IMAGE},
                },
            ],
        },
    ]


async def instant_sleep(seconds: float) -> None:
    return None


def make_orchestrator(**kwargs: Any) -> OpenMultiAgent:
    kwargs.setdefault("plugins", PluginHost(load_entrypoints=False))
    kwargs.setdefault("retry_policy", RetryPolicy(sleep=instant_sleep))
    return OpenMultiAgent(**kwargs)


def png_image(data: str = PNG) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": data}}


def oma(*args: str, input: str | bytes | None = None) -> Any:
    """The ``oma`` command run in this process through click's ``CliRunner`` (its
    ``exit_code``, ``stdout`` and ``stderr``); with the ``cli_home`` fixture for a clean world."""
    from click.testing import CliRunner

    from oma_core.cli import cli

    return CliRunner().invoke(cli, list(args), input=input)
