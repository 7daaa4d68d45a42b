"""A real ACP agent for the oma-acp tests, built on the agent-client-protocol package.

The last line of each prompt picks the behaviour (its first word) and its arguments:

echo               reply {"text": <whole prompt>, "session": id, "turn": n} as JSON
stream             a thought, then "Hello", ", ", "world" as separate chunks
tool               start a tool call, ask permission, finish the call; reply the chosen option
ask FILE           ask permission and write the outcome to FILE (relative to the session cwd)
ask-always-first   ask permission offering allow_always before allow_once; reply the outcome
read PATH          read PATH through the client; reply its text or "error: <message>"
write PATH TEXT    write TEXT to PATH through the client; reply "written" or "error: ..."
guarded FILE       start a tool call, ask permission, wait (60 s at most) for session/cancel;
                   write "<outcome> cancel=yes|no" to FILE, then end the turn
malformed          write malformed JSON-RPC messages to stdout, then reply "after malformed"
leak               write terminal control sequences, the prompt and $AGENT_SECRET to stderr,
                   exit with code 3
fail-echo          answer the prompt with a JSON-RPC error quoting the prompt and
                   $AGENT_SECRET, with terminal control sequences
sleep              wait for session/cancel, then stop with stopReason "cancelled"
sleep-error        wait for session/cancel, then answer the prompt with an error
ignore-cancel      sleep 30 s whatever happens
fail               answer the prompt with a JSON-RPC error (its message holds an sk- key)
crash              send a chunk, write a secret-looking line to stderr, exit with code 3
garbage            write two non-JSON lines to stdout, then reply "after garbage"
huge N             send one message chunk of N bytes
usage              reply "counted" with usage 10 in / 5 out
pid                reply {"pid", "pgid"} as JSON
env                reply the agent's environment as JSON

With SPAWN_LOG set, each start appends a line to that file (the tests count spawns with it).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any, cast

from acp import (
    PROTOCOL_VERSION,
    RequestError,
    run_agent,
    start_tool_call,
    update_agent_message_text,
    update_agent_thought_text,
    update_tool_call,
)
from acp.schema import (
    AgentCapabilities,
    ContentToolCallContent,
    InitializeResponse,
    NewSessionResponse,
    PermissionOption,
    PromptResponse,
    TextContentBlock,
    ToolCallUpdate,
    Usage,
)

#: Messages that are JSON objects but not valid JSON-RPC 2.0: each one must be skipped.
MALFORMED = (
    {"jsonrpc": "2.0", "id": [2], "result": {}},
    {"jsonrpc": "2.0", "id": {"n": 2}, "result": {}},
    {"jsonrpc": "2.0", "id": True, "result": {}},
    {"jsonrpc": "2.0", "id": 2.5, "result": {}},
    # Equal to the first turn's prompt request id (2) as a dict key: it would answer that turn.
    {"jsonrpc": "2.0", "id": 2.0, "result": {"stopReason": "end_turn"}},
    {"jsonrpc": "2.0", "id": 9999, "result": {}, "error": {"code": 1, "message": "x"}},
    {"jsonrpc": "2.0", "id": 9999},
    {"jsonrpc": "2.0", "id": 9999, "error": "boom"},
    {"jsonrpc": "2.0", "id": 9999, "error": {"code": "1", "message": "x"}},
    {"jsonrpc": "2.0", "id": None, "result": {}},
    {"jsonrpc": "2.0", "id": 7, "method": 42, "params": {}},
    {"jsonrpc": "2.0", "method": ["session/update"], "params": {}},
    {"jsonrpc": "2.0", "method": "session/update", "params": "text"},
    {"jsonrpc": "1.0", "id": 9999, "result": {}},
    {"id": 9999, "result": {}},
    {"jsonrpc": "2.0"},
)


class TestAgent:
    """Behaviour chosen by the prompt; see the module docstring."""

    def __init__(self) -> None:
        self._conn: Any = None
        self._sessions: dict[str, dict[str, Any]] = {}

    def on_connect(self, conn: Any) -> None:
        self._conn = conn

    async def initialize(self, protocol_version: int, **kwargs: Any) -> InitializeResponse:
        return InitializeResponse(
            protocol_version=PROTOCOL_VERSION, agent_capabilities=AgentCapabilities()
        )

    async def new_session(self, cwd: str, **kwargs: Any) -> NewSessionResponse:
        session_id = f"session-{len(self._sessions) + 1}"
        self._sessions[session_id] = {"cwd": cwd, "turns": 0, "cancel": asyncio.Event()}
        return NewSessionResponse(session_id=session_id)

    async def cancel(self, session_id: str, **kwargs: Any) -> None:
        self._sessions[session_id]["cancel"].set()

    async def prompt(self, prompt: list[Any], session_id: str, **kwargs: Any) -> PromptResponse:
        state = self._sessions[session_id]
        state["turns"] += 1
        state["cancel"] = asyncio.Event()
        text = "".join(block.text for block in prompt if isinstance(block, TextContentBlock))
        words = text.splitlines()[-1].split(" ", 2) if text else [""]
        command, args = words[0], words[1:]

        async def say(message: str) -> None:
            await self._conn.session_update(session_id, update_agent_message_text(message))

        if command == "echo":
            await say(json.dumps({"text": text, "session": session_id, "turn": state["turns"]}))
        elif command == "stream":
            await self._conn.session_update(session_id, update_agent_thought_text("thinking"))
            for piece in ("Hello", ", ", "world"):
                await say(piece)
        elif command == "tool":
            await self._conn.session_update(
                session_id,
                start_tool_call(
                    "call-1", "write notes", kind="edit", status="pending", raw_input={"n": 1}
                ),
            )
            outcome = await self._ask(session_id, "call-1")
            allowed = outcome.startswith("yes")
            await self._conn.session_update(
                session_id,
                update_tool_call(
                    "call-1",
                    status="completed" if allowed else "failed",
                    content=[
                        ContentToolCallContent(
                            type="content",
                            content=TextContentBlock(type="text", text=f"tool saw {outcome}"),
                        )
                    ],
                ),
            )
            await say(f"permission: {outcome}")
        elif command == "ask":
            outcome = await self._ask(session_id, "call-ask")
            _write(os.path.join(state["cwd"], args[0]), outcome)
            await say(f"permission: {outcome}")
        elif command == "ask-always-first":
            outcome = await self._ask(session_id, "call-ask", always_first=True)
            await say(f"permission: {outcome}")
        elif command == "read":
            try:
                response = await self._conn.read_text_file(session_id=session_id, path=args[0])
                await say(response.content)
            except RequestError as exc:
                await say(f"error: {exc}")
        elif command == "write":
            try:
                await self._conn.write_text_file(
                    session_id=session_id, path=args[0], content=args[1]
                )
                await say("written")
            except RequestError as exc:
                await say(f"error: {exc}")
        elif command == "guarded":
            await self._conn.session_update(
                session_id, start_tool_call("call-g", "guarded", kind="edit", status="pending")
            )
            outcome = await self._ask(session_id, "call-g")
            try:
                await asyncio.wait_for(state["cancel"].wait(), 60)
                heard = "yes"
            except TimeoutError:
                heard = "no"
            _write(os.path.join(state["cwd"], args[0]), f"{outcome} cancel={heard}")
            return PromptResponse(stop_reason="cancelled")
        elif command == "malformed":
            lines = b"".join(json.dumps(m).encode() + b"\n" for m in MALFORMED)
            os.write(1, lines)
            await say("after malformed")
        elif command == "leak":
            noise = "\x1b[2J\x1b]0;pwned title\x07\x1b[31mfatal:\x1b[0m"
            sys.stderr.write(f"{noise} {text} {os.environ['AGENT_SECRET']}\r\n")
            sys.stderr.flush()
            os._exit(3)
        elif command == "fail-echo":
            message = f"\x1b]0;pwned\x07\x1b[2Jcannot do {text} with {os.environ['AGENT_SECRET']}"
            raise RequestError(-32603, message, {"prompt": text})
        elif command in ("sleep", "sleep-error"):
            await say("sleeping")
            await asyncio.wait_for(state["cancel"].wait(), 30)
            if command == "sleep-error":
                raise RequestError(-32603, "interrupted while sleeping")
            return PromptResponse(stop_reason="cancelled")
        elif command == "ignore-cancel":
            await say("ignoring")
            await asyncio.sleep(30)
        elif command == "fail":
            raise RequestError(-32603, "quota exhausted for key sk-agentsecret1234567")
        elif command == "crash":
            await say("about to crash")
            sys.stderr.write("fatal: OPENAI_API_KEY=sk-leakedsecret123456 went wrong\n")
            sys.stderr.flush()
            os._exit(3)
        elif command == "garbage":
            os.write(1, b"this is not json\n{also not json\n")
            await say("after garbage")
        elif command == "huge":
            await say("x" * int(args[0]))
        elif command == "usage":
            await say("counted")
            return PromptResponse(
                stop_reason="end_turn",
                usage=Usage(total_tokens=15, input_tokens=10, output_tokens=5),
            )
        elif command == "env":
            await say(json.dumps(dict(os.environ)))
        elif command == "pid":
            await say(json.dumps({"pid": os.getpid(), "pgid": os.getpgid(0)}))
        else:
            await say(f"unknown command {command!r}")
        return PromptResponse(stop_reason="end_turn")

    async def _ask(self, session_id: str, call_id: str, always_first: bool = False) -> str:
        options = [
            PermissionOption(option_id="yes-once", name="Allow once", kind="allow_once"),
            PermissionOption(option_id="yes-always", name="Always", kind="allow_always"),
            PermissionOption(option_id="no-once", name="Reject", kind="reject_once"),
        ]
        if always_first:
            options = [options[1], options[2], options[0]]
        response = await self._conn.request_permission(
            session_id=session_id,
            tool_call=ToolCallUpdate(tool_call_id=call_id, title="write notes", kind="edit"),
            options=options,
        )
        outcome = response.outcome
        return outcome.option_id if outcome.outcome == "selected" else "cancelled"


def _write(path: str, text: str) -> None:
    with open(path, "w") as handle:
        handle.write(text)


if __name__ == "__main__":
    if os.environ.get("SPAWN_LOG"):
        with open(os.environ["SPAWN_LOG"], "a") as log:
            log.write("spawned\n")
    asyncio.run(run_agent(cast(Any, TestAgent())))
