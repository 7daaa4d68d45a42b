"""One running ACP agent: its process group, its connection, its stderr, and how it ended."""

from __future__ import annotations

import asyncio
import collections
import contextlib
import os
from typing import cast

from acp import PROTOCOL_VERSION, Client
from acp.client.connection import ClientSideConnection
from acp.schema import ClientCapabilities, FileSystemCapabilities, Implementation

from oma_core.errors import BackendError
from oma_core.processes import (
    StderrTail,
    child_environment,
    close_pipes,
    configured_values,
    describe_exit,
    prompt_fragments,
    stop_process_group,
    wait_exit,
)

from ._client import OmaClient
from ._options import AcpOptions
from ._transport import LineTransport

__all__ = ["AgentProcess"]

#: How many of the latest prompts an agent's stderr tail is redacted of.
_REMEMBERED_PROMPTS = 16


class AgentProcess:
    """A started agent. ``usable`` turns False for good once it dies, misbehaves or is
    stopped: a dead connection is never reused."""

    def __init__(self, options: AcpOptions, process: asyncio.subprocess.Process) -> None:
        assert process.stdout is not None and process.stdin is not None
        assert process.stderr is not None
        self.options = options
        self.process = process
        self.transport = LineTransport(process.stdout, process.stdin, options.max_message_bytes)
        self.client = OmaClient(options)
        # OmaClient implements the methods of acp's Client protocol that oma offers, not all.
        self.connection = ClientSideConnection(cast(Client, self.client), self.transport)
        self.broken = False
        self.closed = False  # set by the backend's aclose: a failure then says so
        self._prompts: collections.deque[str] = collections.deque(maxlen=_REMEMBERED_PROMPTS)
        self._stderr = StderrTail(options.max_stderr_bytes)
        self._stderr_task = asyncio.create_task(self._stderr.drain(process.stderr))
        self._watcher = asyncio.create_task(self._watch())

    @classmethod
    async def start(cls, options: AcpOptions) -> AgentProcess:
        name = os.path.basename(options.command)
        try:
            process = await asyncio.create_subprocess_exec(
                options.command,
                *options.args,
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=child_environment(options.env),
                cwd=options.cwd,
                start_new_session=True,
                limit=options.max_message_bytes + 2,
            )
        except (OSError, ValueError) as exc:
            reason = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        else:
            return cls(options, process)
        # Raised out here, the error holds no reference to the OSError.
        raise BackendError(f"acp backend: cannot start {name!r}: {reason}", backend="acp")

    async def initialize(self) -> None:
        fs = self.options.fs
        await self.connection.initialize(
            protocol_version=PROTOCOL_VERSION,
            client_capabilities=ClientCapabilities(
                fs=FileSystemCapabilities(
                    read_text_file=fs != "none", write_text_file=fs == "read-write"
                ),
                terminal=False,
            ),
            client_info=Implementation(name="oma", version="0.1.0"),
        )

    def remember(self, *prompts: str | None) -> None:
        """Note what a turn sends the agent: an error's text never shows it (see ``secrets``)."""
        self._prompts.extend(p for p in prompts if p)

    def secrets(self) -> list[str]:
        """What errors about this agent must not show: the values ``env`` gives it, and the
        latest prompts it was sent (an agent may echo them to stderr or into an error)."""
        return configured_values(self.options.env) + prompt_fragments(*self._prompts)

    @property
    def usable(self) -> bool:
        return (
            not self.broken
            and self.process.returncode is None
            and not self.transport.ended.is_set()
        )

    async def failure(self, during: str) -> BackendError:
        """The error for a connection that broke ``during`` something; stops the agent."""
        self.broken = True
        grace = self.options.kill_grace
        if self.transport.failure is None and self.process.returncode is None:
            await wait_exit(self.process, max(grace, 0.5))
        returncode = self.process.returncode
        await self.stop()
        tail = self._stderr.text(self.secrets())
        exit_code = signal_number = None
        if self.closed:
            message = f"acp backend: the backend was closed during {during}"
        elif self.transport.failure is not None:
            message = f"acp backend: {self.transport.failure}; the agent was stopped"
        elif returncode is not None:
            how, exit_code, signal_number = describe_exit(returncode)
            message = f"acp backend: the agent {how} during {during}"
        else:
            message = f"acp backend: the agent closed the connection during {during}"
        if tail:
            message += f"; stderr ends with: {tail[-500:]}"
        return BackendError(
            message,
            backend="acp",
            exit_code=exit_code,
            signal=signal_number,
            stderr_tail=tail or None,
        )

    async def stop(self) -> None:
        """Close the connection (stdin EOF), stop the process group and reap it."""
        self.broken = True
        try:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self.connection.close(), 1.0)
        finally:
            await stop_process_group(self.process, self.options.kill_grace)
            # Both end by themselves once the process is gone (unless a grandchild that left
            # the group still holds stderr open): give them a moment, then cancel.
            tasks = (self._stderr_task, self._watcher)
            await asyncio.wait(tasks, timeout=1.0)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            close_pipes(self.process)

    async def _watch(self) -> None:
        """When the process ends, fail every request still waiting on it, at once."""
        await wait_exit(self.process, None, interval=0.2)
        self.broken = True
        with contextlib.suppress(Exception):
            await self.connection.close()
