"""LiteLLM never reaches the network on its own: importing it through the plugin and running a
call and a stream opens no connection and resolves no name other than 127.0.0.1.

The check runs in a fresh interpreter (LiteLLM fetches its cost map when it is imported, so
only a first import can show it), with an audit hook (PEP 578) that records every
``socket.connect`` and ``socket.getaddrinfo`` and refuses any that is not loopback.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

SCRIPT = r"""
import asyncio, json, sys

seen = []

def audit(event, args):
    if event == "socket.getaddrinfo":
        host = args[0].decode() if isinstance(args[0], bytes) else str(args[0])
    elif event == "socket.connect":
        address = args[1]
        host = str(address[0]) if isinstance(address, tuple) else str(address)
    else:
        return
    seen.append([event, host])
    if host not in ("127.0.0.1", "localhost"):
        raise OSError(f"blocked: {event} {host}")

sys.addaudithook(audit)
sys.path.insert(0, sys.argv[1])

from fake_chat_completions import FakeChatCompletions
from oma_core import Agent, AgentConfig

async def main():
    with FakeChatCompletions() as server:
        config = AgentConfig(name="n", provider="litellm", model="openai/gpt-fake",
                             base_url=server.base_url, api_key="test-key", max_retries=0)
        async with Agent(config) as agent:
            ran = await agent.run("hi")
            async with agent.stream("hi") as events:
                streamed = [e async for e in events][-1].data
        return ran.success and streamed.success

ok = asyncio.run(main())
import os
print(json.dumps({"ok": ok, "seen": seen,
                  "cost_map": os.environ.get("LITELLM_LOCAL_MODEL_COST_MAP")}))
"""


def test_no_connection_or_lookup_leaves_loopback() -> None:
    env = {k: v for k, v in os.environ.items() if not k.startswith("LITELLM")}
    out = subprocess.run(
        [sys.executable, "-c", SCRIPT, str(Path(__file__).parent)],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        check=False,
    )
    assert out.returncode == 0, out.stderr[-3000:]
    report = json.loads(out.stdout.strip().splitlines()[-1])
    assert report["ok"] is True
    assert report["cost_map"] == "True"
    connects = [host for event, host in report["seen"] if event == "socket.connect"]
    assert connects, "the audit hook saw no connection at all: it is not watching"
    assert {host for _, host in report["seen"]} <= {"127.0.0.1"}, report["seen"]
