"""The ACP backend: an Agent Client Protocol agent, spawned once and prompted per turn.

One agent process serves the backend's runs. ``continue_session=True`` turns (``Agent.prompt``)
share one ACP session, with the system prompt sent on its first turn only; other runs get a
fresh session each. An agent that dies (or breaks the protocol) is never reused: the next run
starts a fresh one, at most ``max_restarts`` times over the backend's life.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, TypeVar

import attrs
from acp import RequestError, text_block
from pydantic import ValidationError

from oma_core import Usage
from oma_core.errors import BackendError, RunTimeoutError
from oma_core.processes import redact, strip_terminal_controls
from oma_core.toolkit import BackendEvent, BackendRequest, BackendResult

from ._agent_process import AgentProcess
from ._client import PolicyFailed, Turn
from ._options import AcpOptions

__all__ = ["AcpBackend"]

T = TypeVar("T")


@attrs.define(eq=False)
class _Session:
    id: str
    agent: AgentProcess
    prompted: bool = False


class AcpBackend:
    """Drives one ACP agent process; see the module docstring.

    ``spawn_count`` counts agent processes started, ``restarts`` the starts after the first,
    and ``skipped_lines`` the lines the agents wrote to stdout that were not valid JSON-RPC 2.0
    messages (skipped, not fatal).
    """

    kind = "acp"
    display_name = "ACP agent"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.options = AcpOptions.from_mapping(options)
        self.spawn_count = 0
        self.restarts = 0
        self._agent: AgentProcess | None = None
        self._session: _Session | None = None
        self._skipped_before = 0
        self._start_lock = asyncio.Lock()
        self._session_lock = asyncio.Lock()
        self._closed = False

    def __repr__(self) -> str:
        return f"AcpBackend(command={self.options.command!r})"

    @property
    def skipped_lines(self) -> int:
        current = self._agent.transport.skipped_lines if self._agent is not None else 0
        return self._skipped_before + current

    async def run(self, request: BackendRequest) -> AsyncIterator[BackendEvent]:
        """One prompt turn. Closing the generator early (or cancelling the task) sends
        ``session/cancel`` and ends the turn as cancelled."""
        if self._closed:
            raise BackendError("acp backend: the backend is closed", backend=self.kind)
        loop = asyncio.get_running_loop()
        limit = request.timeout
        deadline = None if limit is None else loop.time() + limit
        if request.continue_session:
            await self._session_lock.acquire()
        try:
            agent = await self._ensure_agent(deadline, limit)
            agent.remember(request.system_prompt, request.prompt)
            session = await self._open_session(agent, request.continue_session, deadline, limit)
            text = request.prompt
            if request.system_prompt and not session.prompted:
                text = f"{request.system_prompt}\n\n{request.prompt}"
            own = self.options.timeout  # bounds the prompt turn itself, not the agent's start
            if own is not None and (deadline is None or loop.time() + own < deadline):
                limit, deadline = own, loop.time() + own
            # Closed here, not by the garbage collector: leaving this generator early waits
            # for the turn's session/cancel and the answers to its permission requests.
            async with contextlib.aclosing(self._turn(session, text, deadline, limit)) as turn:
                async for event in turn:
                    yield event
        finally:
            if request.continue_session:
                self._session_lock.release()

    async def aclose(self) -> None:
        """Stop the agent process group and forget its sessions."""
        self._closed = True
        agent, self._agent = self._agent, None
        self._session = None
        if agent is not None:
            self._skipped_before += agent.transport.skipped_lines
            agent.closed = True
            await agent.stop()

    # -- the agent and its sessions ---------------------------------------------------------

    async def _ensure_agent(self, deadline: float | None, limit: float | None) -> AgentProcess:
        async with self._start_lock:
            agent = self._agent
            if agent is not None and agent.usable:
                return agent
            if agent is not None:
                self._agent = None
                self._session = None
                self._skipped_before += agent.transport.skipped_lines
                await agent.stop()
            if self.spawn_count > 0:
                if self.restarts >= self.options.max_restarts:
                    raise BackendError(
                        f"acp backend: the agent stopped and max_restarts="
                        f"{self.options.max_restarts} restarts are used up",
                        backend=self.kind,
                    )
                self.restarts += 1
            agent = await AgentProcess.start(self.options)
            self.spawn_count += 1
            self._agent = agent
            loop = asyncio.get_running_loop()
            startup = loop.time() + self.options.startup_timeout
            if deadline is None or startup < deadline:
                on_timeout: Callable[[], Exception] = lambda: BackendError(  # noqa: E731
                    "acp backend: the agent did not answer initialize within "
                    f"startup_timeout={self.options.startup_timeout:g} s",
                    backend=self.kind,
                )
                deadline = startup
            else:
                on_timeout = lambda: RunTimeoutError("run", limit or 0.0)  # noqa: E731
            try:
                await self._call(agent, agent.initialize(), "initialize", deadline, on_timeout)
            except BaseException:
                await agent.stop()
                raise
            return agent

    async def _open_session(
        self, agent: AgentProcess, persistent: bool, deadline: float | None, limit: float | None
    ) -> _Session:
        if persistent and self._session is not None and self._session.agent is agent:
            return self._session
        response = await self._call(
            agent,
            agent.connection.new_session(cwd=self.options.cwd, mcp_servers=[]),
            "session/new",
            deadline,
            lambda: RunTimeoutError("run", limit or 0.0),
        )
        session = _Session(response.session_id, agent)
        if persistent:
            self._session = session
        return session

    async def _call(
        self,
        agent: AgentProcess,
        awaitable: Awaitable[T],
        what: str,
        deadline: float | None,
        on_timeout: Callable[[], Exception],
    ) -> T:
        """Await one request to the agent, mapping every way it can fail to oma's errors."""
        error: Exception | None = None
        try:
            if deadline is None:
                return await awaitable
            remaining = max(deadline - asyncio.get_running_loop().time(), 0.0)
            return await asyncio.wait_for(awaitable, remaining)
        except TimeoutError:
            error = on_timeout()
        except RequestError as exc:
            error = _refused(what, exc, agent.secrets())
        except ValidationError:
            error = BackendError(
                f"acp backend: the agent's answer to {what} is malformed", backend=self.kind
            )
        except (ConnectionError, OSError):
            pass
        # Raised out here, the error holds no reference to what acp raised (the agent's error
        # data, a pydantic error quoting the agent's values) as its __context__.
        if error is None:
            error = await agent.failure(what)
        raise error

    # -- one turn ---------------------------------------------------------------------------

    async def _turn(
        self, session: _Session, text: str, deadline: float | None, limit: float | None
    ) -> AsyncGenerator[BackendEvent, None]:
        agent = session.agent
        loop = asyncio.get_running_loop()
        turn = Turn()
        agent.client.attach(session.id, turn)
        prompt = asyncio.ensure_future(
            agent.connection.prompt(session_id=session.id, prompt=[text_block(text)])
        )
        session.prompted = True
        getter: asyncio.Future[Any] | None = None
        try:
            while True:
                getter = asyncio.ensure_future(turn.events.get())
                remaining = None if deadline is None else max(deadline - loop.time(), 0.0)
                done, _ = await asyncio.wait(
                    {getter, prompt}, timeout=remaining, return_when=asyncio.FIRST_COMPLETED
                )
                if getter in done:
                    item, getter = getter.result(), None
                    yield _checked(item)
                    continue
                getter.cancel()
                getter = None
                if not done:
                    raise RunTimeoutError("run", limit or 0.0)
                break
            # The acp client answers the prompt only after every update before it was handled.
            while not turn.events.empty():
                yield _checked(turn.events.get_nowait())
            response = await self._call(
                agent, prompt, "session/prompt", None, lambda: RuntimeError("unreachable")
            )
            usage = Usage()
            if response.usage is not None:
                usage = Usage(response.usage.input_tokens, response.usage.output_tokens)
            yield BackendResult(
                output="".join(turn.output), usage=usage, stop_reason=response.stop_reason
            )
        finally:
            if getter is not None:
                getter.cancel()
            try:
                if not prompt.done():
                    await self._cancel_turn(session, turn, prompt)
                elif not prompt.cancelled():
                    prompt.exception()  # seen: a cancelled turn's error is not reported
            finally:
                agent.client.detach(session.id, turn)

    async def _cancel_turn(
        self, session: _Session, turn: Turn, prompt: asyncio.Future[Any]
    ) -> None:
        """Send session/cancel, answer pending permission requests "cancelled", and wait for
        the agent to end the turn; an agent that does not is stopped (and later replaced)."""
        agent = session.agent
        grace = max(self.options.kill_grace, 0.1)
        turn.cancelled.set()
        try:
            if agent.usable:
                with contextlib.suppress(Exception):  # an agent that cannot hear it is replaced
                    await asyncio.wait_for(agent.connection.cancel(session_id=session.id), grace)
            await asyncio.wait({prompt}, timeout=grace)
        finally:
            if not prompt.done():
                prompt.cancel()
                await agent.stop()
            elif not prompt.cancelled():
                prompt.exception()


def _checked(item: BackendEvent | PolicyFailed) -> BackendEvent:
    if isinstance(item, PolicyFailed):
        raise BackendError(f"acp backend: {item}", backend="acp") from item.__cause__
    return item


def _refused(what: str, exc: RequestError, secrets: list[str]) -> BackendError:
    detail = redact(strip_terminal_controls(str(exc)), secrets)[:500]
    return BackendError(
        f"acp backend: the agent answered {what} with error {exc.code}: {detail}",
        backend="acp",
    )
