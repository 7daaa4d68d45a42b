"""An agent with an MCP stdio server in a team on Ray: the worker that runs the task starts
the server (the toolset travels as its settings; the server's parent is a Ray worker, not the
driver) and stops it when the attempt ends. Needs
oma-mcp beside oma-ray, so it runs in `nox -s all` (marked `combination`)."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest

from oma_core import AgentConfig, OpenMultiAgent, PluginHost, TaskSpec, Team
from oma_core.testing.executors import ToolCallingProvider

pytestmark = pytest.mark.combination  # needs oma-mcp beside oma-ray: run by `nox -s all`

oma_mcp = pytest.importorskip("oma_mcp")

EXAMPLE = Path(__file__).parents[3] / "examples" / "mcp_server.py"


async def test_a_task_on_ray_calls_the_mcp_server_its_worker_started(ray_cluster: str) -> None:
    server = oma_mcp.MCPToolset.stdio(sys.executable, [str(EXAMPLE)])
    agent = AgentConfig("ann", provider=ToolCallingProvider(), tools=[server], max_retries=0)
    team = Team("mcp-on-ray", [agent])
    tasks = [TaskSpec("a", "Shout this."), TaskSpec("b", "And this.", depends_on="a")]
    options: dict[str, Any] = {"address": ray_cluster}
    async with OpenMultiAgent(
        plugins=PluginHost.default(), executor="ray", executor_options=options
    ) as oma:
        result = await oma.run_tasks(team, tasks)

    assert result.success, {t: r.error for t, r in result.tasks.items()}
    assert [r.output for r in result.tasks.values()] == ["SHOUT THIS.", "AND THIS."]


#: An MCP server whose ``shout`` answers with the pid and the title of the process that
#: started it (read during the call, while that process is surely alive); on Linux oma-mcp
#: runs a stdio server under a small supervisor of its own, which is passed over.
PARENT_SERVER = """
import json, os
from pathlib import Path
from mcp.server.mcpserver import MCPServer

server = MCPServer("parent")


def _stat(pid):
    return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()


@server.tool()
def shout(text: str) -> str:
    \"\"\"This server's parent process: its pid and command line.\"\"\"
    parent = os.getppid()
    title = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace")
    if "oma_mcp/_supervise.py" in title:
        parent = int(_stat(parent)[1])
        title = Path(f"/proc/{parent}/cmdline").read_bytes().decode(errors="replace")
    return json.dumps({"pid": parent, "title": title})


server.run()
"""


async def test_the_stdio_server_is_a_child_of_the_ray_worker_not_of_the_driver(
    ray_cluster: str, tmp_path: Path
) -> None:
    script = tmp_path / "parent_server.py"
    script.write_text(PARENT_SERVER)
    server = oma_mcp.MCPToolset.stdio(sys.executable, [str(script)])
    agent = AgentConfig("ann", provider=ToolCallingProvider(), tools=[server], max_retries=0)
    options: dict[str, Any] = {"address": ray_cluster}
    async with OpenMultiAgent(
        plugins=PluginHost.default(), executor="ray", executor_options=options
    ) as oma:
        result = await oma.run_tasks(Team("mcp-on-ray", [agent]), [TaskSpec("a", "Who?")])

    assert result.success, {t: r.error for t, r in result.tasks.items()}
    parent = json.loads(result.tasks["a"].output)
    assert parent["pid"] != os.getpid()
    assert parent["title"].startswith("ray::")  # a Ray worker's title (ray::IDLE, ray::run...)
