"""A raw stdio MCP server that misbehaves on purpose, where the SDK's server would not.

Run as ``python hostile_server.py MODE [PIDFILE]``. It answers ``initialize`` and offers one
tool, ``go``; the mode decides how it answers ``tools/list`` or ``tools/call``:

- ``list-mute``: never answers tools/list.
- ``list-deep``: answers tools/list with a result nested 400 deep (the SDK cannot read it).
- ``list-endless``: answers tools/list with bytes and no newline, forever.
- ``garbage``: writes 20,000 lines of junk, then answers as it should.
- ``fork-mid-call``: on a call, forks a child that holds stdout open (its pid in PIDFILE),
  then exits.
- ``setsid-before-init``: before reading anything, starts a child in a session of its own
  (its pid in PIDFILE) and exits.
- ``setsid-child``: starts a child in a session of its own (its pid in PIDFILE), then
  serves as it should.
- ``error-32000`` / ``error-32001``: answers each call with that JSON-RPC error code.
- ``exit-after-call``: answers a call, then exits (between calls), once: while PIDFILE does
  not exist (it creates it).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

MODE = sys.argv[1]
PIDFILE = Path(sys.argv[2]) if len(sys.argv) > 2 else None
TOOL = {"name": "go", "description": "Go.", "inputSchema": {"type": "object"}}


def send(message: dict[str, object]) -> None:
    sys.stdout.write(json.dumps(message) + "\n")
    sys.stdout.flush()


def sleeper(**options: object) -> int:
    child = subprocess.Popen(
        [sys.executable, "-c", "import time; time.sleep(600)"],
        stdin=subprocess.DEVNULL,
        **options,  # type: ignore[call-overload]
    )
    assert PIDFILE is not None
    PIDFILE.write_text(str(child.pid))
    return int(child.pid)


def main() -> None:
    if MODE == "setsid-before-init":
        sleeper(start_new_session=True)  # holds stdout open, out of the group
        os._exit(5)
    if MODE == "setsid-child":
        sleeper(start_new_session=True, stdout=subprocess.DEVNULL)
    for line in sys.stdin:
        message = json.loads(line)
        method, ident = message.get("method"), message.get("id")
        if ident is None:
            continue  # a notification
        if method == "initialize":
            version = message["params"]["protocolVersion"]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "hostile", "version": "0"},
            }
            send({"jsonrpc": "2.0", "id": ident, "result": result})
        elif method == "tools/list":
            list_tools(ident)
        elif method == "tools/call":
            call(ident)
        else:
            send({"jsonrpc": "2.0", "id": ident, "result": {}})


def list_tools(ident: object) -> None:
    if MODE == "list-mute":
        return
    if MODE == "list-deep":
        deep = "[" * 400 + "]" * 400
        sys.stdout.write(f'{{"jsonrpc": "2.0", "id": {json.dumps(ident)}, "result": {deep}}}\n')
        sys.stdout.flush()
        return
    if MODE == "list-endless":
        chunk = b"x" * 65536
        while True:
            sys.stdout.buffer.write(chunk)
            sys.stdout.buffer.flush()
    if MODE == "garbage":
        sys.stdout.write("this is not JSON-RPC {oops\n" * 20_000)
    send({"jsonrpc": "2.0", "id": ident, "result": {"tools": [TOOL]}})


def call(ident: object) -> None:
    if MODE == "fork-mid-call":
        sleeper()  # inherits stdout: the pipe stays open after this process is gone
        os._exit(6)
    if MODE.startswith("error-"):
        code = -int(MODE.removeprefix("error-"))
        send({"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": "busy, retry"}})
        return
    send({"jsonrpc": "2.0", "id": ident, "result": {"content": [{"type": "text", "text": "ok"}]}})
    if MODE == "exit-after-call" and PIDFILE is not None and not PIDFILE.exists():
        PIDFILE.write_text("exited")  # once: the server started again stays
        os._exit(7)


if __name__ == "__main__":
    main()
