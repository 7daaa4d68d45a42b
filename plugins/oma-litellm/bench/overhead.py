"""What the LiteLLM bridge costs: import times, and per-call overhead over a bare httpx POST
of the same body to the same fake Chat Completions server (LiteLLM's ``openai/`` route).

Run with ``python plugins/oma-litellm/bench/overhead.py [calls]``; each figure is printed
beside its goal.
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_chat_completions import FakeChatCompletions

GOAL_PLUGIN_IMPORT_MS = 50.0  # goal: loading the plugin stays cheap (LiteLLM is not imported)
GOAL_OVERHEAD_MS = 5.0  # goal: the bridge adds at most 5 ms per call over the bare transport


def import_ms(statement: str, runs: int = 3) -> float:
    """Median wall time of ``statement`` in a fresh interpreter, in ms."""
    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    values = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env=env, check=True)  # fmt: skip
        values.append(float(out.stdout.strip().splitlines()[-1]) * 1000)
    return statistics.median(values)


async def interleaved(calls: dict[str, Any], rounds: int) -> dict[str, float]:
    for call in calls.values():
        for _ in range(10):
            await call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            await call()
            samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


async def per_call(rounds: int) -> tuple[float, float]:
    import httpx
    from oma_litellm import create_provider

    from oma_core import load_messages
    from oma_core.toolkit import ProviderRequest, ProviderSettings

    with FakeChatCompletions() as server:
        provider = create_provider(ProviderSettings(base_url=server.base_url, api_key="test-key"))
        request = ProviderRequest(
            model="openai/gpt-fake",
            messages=load_messages([{"role": "user", "content": [{"type": "text",
                                                                  "text": "hi"}]}]),
        )  # fmt: skip
        body = json.dumps(provider.render(request)).encode()
        headers = {"authorization": "Bearer test-key", "content-type": "application/json"}
        async with httpx.AsyncClient() as client:

            async def bare() -> None:
                response = await client.post(
                    server.base_url + "/chat/completions", content=body, headers=headers
                )
                assert response.status_code == 200
                json.loads(response.content)

            medians = await interleaved(
                {"bare": bare, "bridge": lambda: provider.complete(request)}, rounds
            )
        await provider.aclose()
    return medians["bare"], medians["bridge"]


def main(rounds: int) -> None:
    core = import_ms("import oma_core.toolkit, oma_core.capabilities")
    plugin = import_ms("import oma_litellm")
    litellm = import_ms("import litellm")
    goal = GOAL_PLUGIN_IMPORT_MS
    print("import times (fresh interpreter, median of 3):")
    print(f"  import oma_core (its plugin surface)   {core:8.1f} ms")
    print(f"  import oma_litellm (the plugin)        {plugin:8.1f} ms   the plugin's own share "
          f"{plugin - core:+.1f} ms (goal: <= {goal} ms)")  # fmt: skip
    print(
        f"  import litellm (on first use)          {litellm:8.1f} ms   (what the first call pays)"
    )
    bare, bridge = asyncio.run(per_call(rounds))
    print(f"median per call, {rounds} rounds taking turns (same fake Chat Completions server):")
    print(f"  bare httpx POST          {bare:7.3f} ms   (the transport floor)")
    print(f"  through litellm          {bridge:7.3f} ms   overhead {bridge - bare:+7.3f} ms"
          f"   (goal: <= {GOAL_OVERHEAD_MS} ms)")  # fmt: skip


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 300)
