"""An MCP server (the SDK's ``MCPServer``) that uses the client's side of the protocol: it
reports progress, logs, asks for the client's roots, samples the client's model and elicits
from its user; and it has resources and prompts to read. For ``test_mcp_client.py``.

Run as ``python client_features_server.py`` (stdio). Each tool answers with what the client
answered (JSON), or ``refused: <the client's error>`` when the client refused the request.
"""

from __future__ import annotations

import base64
import json
import os
import warnings
from typing import Any

import mcp_types as types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import AssistantMessage, UserMessage
from mcp.shared.exceptions import MCPError
from pydantic import BaseModel

# Sampling, roots and logging are marked deprecated for the 2026-07-28 revision; this server
# speaks 2025-11-25 (the handshake revision), where they are current.
warnings.simplefilter("ignore")

# A 1x1 transparent PNG.
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)

server = MCPServer("client-features")


@server.tool()
async def steps(n: int, ctx: Context) -> str:
    """Report progress n times (i of n, 'step i'), then answer."""
    for i in range(1, n + 1):
        await ctx.report_progress(i, n, f"step {i}")
    return "stepped"


@server.tool()
async def chatty(ctx: Context) -> str:
    """Send one log message at each of four levels."""
    await ctx.debug("a debug line", logger_name="toy")
    await ctx.info("an info line", logger_name="toy")
    await ctx.warning({"disk": "low"}, logger_name="toy")
    await ctx.error("an error line")
    return "logged"


@server.tool()
async def roots(ctx: Context) -> str:
    """The client's roots, as [[uri, name], ...]."""
    try:
        listed = await ctx.session.list_roots()
    except MCPError as error:
        return f"refused: {error}"
    return json.dumps([[str(root.uri), root.name] for root in listed.roots])


@server.tool()
async def ask_model(question: str, max_tokens: int, ctx: Context) -> str:
    """Sample the client's model: {text, model, stop_reason}."""
    message = types.SamplingMessage(role="user", content=types.TextContent(text=question))
    try:
        result = await ctx.session.create_message(
            [message], max_tokens=max_tokens, system_prompt="Answer briefly.", temperature=0.5
        )
    except MCPError as error:
        return f"refused: {error}"
    content = result.content
    text = content.text if isinstance(content, types.TextContent) else repr(content)
    return json.dumps({"text": text, "model": result.model, "stop_reason": result.stop_reason})


@server.tool()
async def ask_model_with_image(ctx: Context) -> str:
    """Sample with a user turn of text and an image, and an earlier assistant turn."""
    picture = types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png")
    messages = [
        types.SamplingMessage(role="user", content=types.TextContent(text="hello")),
        types.SamplingMessage(role="assistant", content=types.TextContent(text="hi")),
        types.SamplingMessage(
            role="user", content=[types.TextContent(text="what is this?"), picture]
        ),
    ]
    try:
        result = await ctx.session.create_message(messages, max_tokens=50)
    except MCPError as error:
        return f"refused: {error}"
    content = result.content
    return content.text if isinstance(content, types.TextContent) else repr(content)


class Person(BaseModel):
    name: str
    age: int


@server.tool()
async def ask_user(question: str, ctx: Context) -> str:
    """Elicit a person (name, age) from the user: {action, data}."""
    try:
        result = await ctx.elicit(question, Person)
    except MCPError as error:
        return f"refused: {error}"
    data = result.data.model_dump() if result.action == "accept" else None
    return json.dumps({"action": result.action, "data": data})


@server.tool()
async def ask_url(ctx: Context) -> str:
    """Elicit in URL mode: the user's action."""
    try:
        result = await ctx.elicit_url("Sign in, please", "https://example.com/login", "e1")
    except MCPError as error:
        return f"refused: {error}"
    return json.dumps({"action": result.action})


@server.tool()
async def loud(size: int, ctx: Context) -> str:
    """Log a line of ``size`` x's and report progress with a message of ``size`` y's."""
    await ctx.info("x" * size)
    await ctx.report_progress(1, 1, "y" * size)
    return "loud"


@server.tool()
async def leak(name: str, ctx: Context) -> str:
    """Log the value of the environment variable ``name`` (as a careless server might)."""
    await ctx.warning(f"using token {os.environ.get(name, '<unset>')} now")
    return "leaked"


@server.tool()
async def ask_model_with_tools(ctx: Context) -> str:
    """Sample, offering the model a tool."""
    tool = types.Tool(name="lookup", input_schema={"type": "object"})
    message = types.SamplingMessage(role="user", content=types.TextContent(text="q"))
    try:
        await ctx.session.create_message([message], max_tokens=10, tools=[tool])
    except MCPError as error:
        return f"refused: {error}"
    return "sampled"


@server.resource(
    "file:///notes.txt", name="notes", description="Some notes", mime_type="text/plain"
)
def notes() -> str:
    return "remember the milk"


@server.resource("file:///pixel.png", name="pixel", mime_type="image/png")
def pixel() -> bytes:
    return PNG


@server.resource("file:///data.bin", name="data", mime_type="application/octet-stream")
def data() -> bytes:
    return b"\x00\x01\x02"


@server.resource("greeting://{name}", name="greeting", mime_type="text/plain")
def greeting(name: str) -> str:
    return f"Hello, {name}!"


@server.resource("file:///crash", name="crash")
def crash() -> str:
    """Exit the server while it is being read."""
    os._exit(3)


@server.prompt(description="Review a piece of code.")
def review(code: str, language: str = "python") -> str:
    return f"Please review this {language} code:\n{code}"


@server.prompt()
def debate(topic: str) -> list[Any]:
    return [
        UserMessage(f"Argue for {topic}."),
        AssistantMessage("I will."),
        UserMessage(types.ImageContent(data=base64.b64encode(PNG).decode(), mime_type="image/png")),
    ]


if __name__ == "__main__":
    server.run()
