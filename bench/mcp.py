"""What a tool call costs when the tool lives in an MCP server rather than in-process.

Run: ``python bench/mcp.py`` (needs oma-mcp). The same echo tool is called ``CALLS`` times
one after another, first as a local ``@tool``, then through ``MCPToolset.stdio`` on
``examples/mcp_server.py`` (its ``shout`` tool), both the way a run calls tools
(``call_tool``: schema check, call, result conversion); each answer is checked before it
counts. Then the same for a whole agent run with one tool call (scripted provider), which
adds the listing of the server's tools (cached) to each model call. The server's start-up
(seconds: the SDK's import) is not counted. The client's CPU time per call is printed too: on
a loaded machine the wall time of a round trip between two processes swings by 2x.
Goals: <= 2 ms per call over a local tool; <= 3 ms per run.
"""

from __future__ import annotations

import sys
from pathlib import Path

# Run as a script, this file's folder comes first on sys.path, and this file is named "mcp":
# take the folder off, so "import mcp" finds the SDK, not this file.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).parent.resolve()]

import asyncio  # noqa: E402
import statistics  # noqa: E402
import time  # noqa: E402

from oma_mcp import MCPToolset  # noqa: E402

from oma_core import Agent, AgentConfig, PluginHost, tool  # noqa: E402
from oma_core.messages import ToolUseBlock  # noqa: E402
from oma_core.testing import ScriptedProvider  # noqa: E402
from oma_core.tools import call_tool  # noqa: E402

CALLS = 500
RUNS = 200
CALL_GOAL_MS = 2.0
RUN_GOAL_MS = 3.0
SERVER = Path(__file__).parent.parent / "examples" / "mcp_server.py"


@tool
def shout(text: str) -> str:
    """Return the text in capital letters."""
    return text.upper()


async def _calls(tools: dict[str, object]) -> tuple[float, float]:
    """Median wall seconds per call over ``CALLS`` calls, each answer checked; and this
    process's CPU seconds per call (the client's own work, which the machine's load does not
    inflate the way it inflates a round trip between two processes)."""
    times = []
    cpu = time.process_time()
    for i in range(CALLS):
        block = ToolUseBlock(f"c{i}", "shout", {"text": f"hi {i}"})
        start = time.perf_counter()
        result = await call_tool(tools, block)  # type: ignore[arg-type]
        times.append(time.perf_counter() - start)
        assert not result.is_error and result.content == f"HI {i}", result
    return statistics.median(times), (time.process_time() - cpu) / CALLS


async def _runs(tools: list[object]) -> float:
    """Median seconds per run (one tool call, then an answer), each result checked."""
    host = PluginHost(load_entrypoints=False)
    times = []
    for i in range(RUNS):
        use = {"type": "tool_use", "id": "c1", "name": "shout", "input": {"text": f"r{i}"}}
        provider = ScriptedProvider([{"role": "assistant", "content": [use]}, "done"])
        agent = Agent(AgentConfig(name="b", provider=provider, tools=tools), plugins=host)
        start = time.perf_counter()
        result = await agent.run("go")
        times.append(time.perf_counter() - start)
        sent = provider.requests[1].messages[-1].content[0]
        assert result.success and sent.content == f"R{i}", (result.status, sent)
    return statistics.median(times)


async def main() -> None:
    local, local_cpu = await _calls({"shout": shout})
    local_run = await _runs([shout])
    async with MCPToolset.stdio(sys.executable, [str(SERVER)]) as server:
        listed = {t.name: t for t in await server.list_tools()}
        remote, remote_cpu = await _calls(listed)
        remote_run = await _runs([server])
    call_over = (remote - local) * 1e3
    run_over = (remote_run - local_run) * 1e3
    print(f"tool call, local @tool:        {local * 1e6:8.1f} us (median of {CALLS})")
    print(f"tool call, MCP stdio server:   {remote * 1e6:8.1f} us")
    print(f"  MCP over local:              {call_over:8.2f} ms   goal <= {CALL_GOAL_MS} ms")
    print(
        f"  client CPU per call, local:  {local_cpu * 1e6:8.1f} us; MCP: {remote_cpu * 1e6:.1f} us"
    )
    print(f"agent run, local tool:         {local_run * 1e3:8.2f} ms (median of {RUNS})")
    print(f"agent run, MCP tool:           {remote_run * 1e3:8.2f} ms")
    print(f"  MCP over local:              {run_over:8.2f} ms   goal <= {RUN_GOAL_MS} ms")


if __name__ == "__main__":
    asyncio.run(main())
