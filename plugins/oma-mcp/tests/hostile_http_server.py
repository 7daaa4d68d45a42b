"""A raw streamable-HTTP MCP server that misbehaves where the SDK's server would not.

Run as ``python hostile_http_server.py [DECODED_MIB] PORT``: it answers ``initialize`` (with
a new session id each time) and notifications as it should. ``tools/list`` gets
``Content-Encoding: gzip`` and a body that inflates to DECODED_MIB MiB (default 128) of one
JSON reply, unless DECODED_MIB is 0 (then the tools ``down`` and ``forget``). A call to
``down`` gets an HTTP 500 in plain text; ``forget`` makes the server forget every session (as
a restart does), and a call in a forgotten session gets a plain-text 400 that says so.
"""

from __future__ import annotations

import itertools
import json
import sys
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[-1])
DECODED_MIB = int(sys.argv[1]) if len(sys.argv) > 2 else 128
SESSION = ["s0"]
INITIALIZED = itertools.count(1)
TOOLS = [
    {"name": "down", "description": "Fails.", "inputSchema": {"type": "object"}},
    {"name": "forget", "description": "Forgets.", "inputSchema": {"type": "object"}},
]


def bomb(ident: object) -> bytes:
    head = json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": [], "pad": ""}})
    before, after = head.rsplit('""', 1)
    gzip = zlib.compressobj(1, zlib.DEFLATED, 31)
    parts = [gzip.compress(before.encode() + b'"')]
    block = b"a" * (1024 * 1024)
    parts.extend(gzip.compress(block) for _ in range(DECODED_MIB))
    parts.append(gzip.compress(b'"' + after.encode()))
    parts.append(gzip.flush())
    return b"".join(parts)


class Handler(BaseHTTPRequestHandler):
    def do_POST(self) -> None:
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        ident, method = message.get("id"), message.get("method")
        if ident is None:
            self.send_response(202)
            self.end_headers()
            return
        if method == "tools/call":
            if self.headers.get("mcp-session-id") != SESSION[0]:
                self.plain(400, "Bad Request: unknown session id; initialize again")
            elif message["params"]["name"] == "forget":
                SESSION[0] = "forgotten"
                done = {"content": [{"type": "text", "text": "forgotten"}]}
                self.reply(json.dumps({"jsonrpc": "2.0", "id": ident, "result": done}).encode())
            else:
                self.plain(500, "database is down; try again in an hour")
            return
        if method == "initialize":
            SESSION[0] = f"s{INITIALIZED.__next__()}"
            version = message["params"]["protocolVersion"]
            result = {
                "protocolVersion": version,
                "capabilities": {"tools": {}},
                "serverInfo": {"name": "bomb", "version": "0"},
            }
            self.reply(json.dumps({"jsonrpc": "2.0", "id": ident, "result": result}).encode())
            return
        if method == "tools/list" and DECODED_MIB:
            self.reply(bomb(ident), gzip=True)
            return
        if method == "tools/list":
            tools = json.dumps({"jsonrpc": "2.0", "id": ident, "result": {"tools": TOOLS}})
            self.reply(tools.encode())
            return
        self.reply(json.dumps({"jsonrpc": "2.0", "id": ident, "result": {}}).encode())

    def do_GET(self) -> None:
        self.send_response(405)
        self.end_headers()

    def do_DELETE(self) -> None:
        self.send_response(200)
        self.end_headers()

    def plain(self, status: int, text: str) -> None:
        self.send_response(status)
        self.send_header("content-type", "text/plain")
        self.send_header("content-length", str(len(text)))
        self.end_headers()
        self.wfile.write(text.encode())

    def reply(self, body: bytes, gzip: bool = False) -> None:
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("mcp-session-id", SESSION[0])
        if gzip:
            self.send_header("content-encoding", "gzip")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: object) -> None:
        pass


if __name__ == "__main__":
    ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
