"""The two shapes a Bedrock provider can take, measured on the same fake Converse server.

A: botocore for credentials and SigV4, httpx (async) for transport — what oma-bedrock does;
B: boto3's ``bedrock-runtime`` client run off the event loop on a bounded thread pool.

For each: the per-call overhead over a bare httpx POST of the same body (the transport floor),
and whether cancelling an in-flight call frees its connection. Run with
``python plugins/oma-bedrock/bench/transport_shapes.py [calls]``; each figure is printed
beside its goal. Needs the plugin's test extra (boto3).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from fake_bedrock import ACCESS_KEY, REGION, SECRET_KEY, FakeBedrock

API_KEY = "bench-bedrock-api-key"
MODEL = "amazon.nova-lite-v1:0"
GOAL_OVERHEAD_MS = 1.0  # goal: the plugin adds at most 1 ms per call over the bare transport
GOAL_CANCEL_MS = 100.0  # goal: a cancelled call frees its connection within 100 ms


def environment() -> None:
    scratch = tempfile.mkdtemp()
    os.environ.update(
        AWS_ACCESS_KEY_ID=ACCESS_KEY,
        AWS_SECRET_ACCESS_KEY=SECRET_KEY,
        AWS_REGION=REGION,
        AWS_DEFAULT_REGION=REGION,
        AWS_EC2_METADATA_DISABLED="true",
        AWS_CONFIG_FILE=os.path.join(scratch, "none"),
        AWS_SHARED_CREDENTIALS_FILE=os.path.join(scratch, "none"),
    )
    for name in ("AWS_PROFILE", "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK"):
        os.environ.pop(name, None)


async def interleaved(calls: dict[str, Any], rounds: int) -> dict[str, float]:
    """Median wall time in ms of one awaited call of each shape; the shapes take turns, call
    by call, so that the machine's load falls on all of them alike."""
    for call in calls.values():
        for _ in range(10):  # warm-up: connections, imports, caches
            await call()
    samples: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            started = time.perf_counter()
            await call()
            samples[name].append((time.perf_counter() - started) * 1000)
    return {name: statistics.median(values) for name, values in samples.items()}


def bare(server: FakeBedrock, client: Any) -> Any:
    body = json.dumps({"messages": [{"role": "user", "content": [{"text": "hi"}]}]}).encode()
    url = f"{server.url}/model/{MODEL.replace(':', '%3A')}/converse"
    headers = {"content-type": "application/json", "authorization": f"Bearer {API_KEY}"}

    async def call() -> None:
        response = await client.post(url, content=body, headers=headers)
        assert response.status_code == 200, response.text
        json.loads(response.content)

    return call


def shape_a(provider: Any) -> Any:
    from oma_core import load_messages
    from oma_core.toolkit import ProviderRequest

    request = ProviderRequest(
        model=MODEL,
        messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
    )
    return lambda: provider.complete(request)


def boto3_client(server: FakeBedrock) -> Any:
    import boto3
    from botocore.config import Config

    config = Config(retries={"total_max_attempts": 1, "mode": "standard"},
                    max_pool_connections=10)  # fmt: skip
    return boto3.client("bedrock-runtime", endpoint_url=server.url, config=config)


def shape_b(client: Any, pool: concurrent.futures.ThreadPoolExecutor) -> Any:
    loop = asyncio.get_running_loop()
    messages = [{"role": "user", "content": [{"text": "hi"}]}]

    async def call() -> None:
        reply = await loop.run_in_executor(
            pool, lambda: client.converse(modelId=MODEL, messages=messages)
        )
        assert reply["output"]["message"]["content"]

    return call


async def cancel_a(server: FakeBedrock) -> tuple[bool, float]:
    from oma_bedrock import create_provider

    from oma_core import load_messages
    from oma_core.toolkit import ProviderRequest, ProviderSettings

    provider = create_provider(ProviderSettings(base_url=server.url))
    request = ProviderRequest(
        model=MODEL,
        messages=load_messages([{"role": "user", "content": [{"type": "text", "text": "hi"}]}]),
    )
    try:
        return await cancel(server, lambda: provider.complete(request))
    finally:
        await provider.aclose()


async def cancel_b(server: FakeBedrock) -> tuple[bool, float]:
    client = boto3_client(server)
    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    loop = asyncio.get_running_loop()
    messages = [{"role": "user", "content": [{"text": "hi"}]}]
    try:
        return await cancel(
            server,
            lambda: loop.run_in_executor(
                pool, lambda: client.converse(modelId=MODEL, messages=messages)
            ),
        )
    finally:
        pool.shutdown(wait=True)  # waits for the thread still blocked on the socket
        client.close()


async def cancel(server: FakeBedrock, start: Any) -> tuple[bool, float]:
    """Cancel a call the server holds for 3 s; whether (and how fast) its connection closed."""
    server.response_delay = 3.0
    try:
        task = asyncio.ensure_future(start())
        assert await server.async_wait_until(lambda: server.in_flight == 1)
        task.cancel()
        cancelled_at = time.perf_counter()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        freed = await server.async_wait_until(lambda: server.open_connections == 0, 1.0)
        return freed, (time.perf_counter() - cancelled_at) * 1000
    finally:
        server.response_delay = 0.0


def import_ms(statement: str, runs: int = 3) -> float:
    """Median wall time of ``statement`` in a fresh interpreter, in ms."""
    import subprocess

    code = f"import time; t = time.perf_counter(); {statement}; print(time.perf_counter() - t)"
    values = []
    for _ in range(runs):
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             check=True)  # fmt: skip
        values.append(float(out.stdout.strip().splitlines()[-1]) * 1000)
    return statistics.median(values)


def imports() -> None:
    core = import_ms("import oma_core.toolkit, oma_core.capabilities")
    plugin = import_ms("import oma_bedrock")
    provider = import_ms("import oma_bedrock.provider")
    boto3 = import_ms("import boto3; boto3.client('bedrock-runtime', region_name='us-east-1')")
    print("import times (fresh interpreter, median of 3):")
    print(f"  import oma_core (its plugin surface)       {core:8.1f} ms")
    print(f"  import oma_bedrock (the plugin)            {plugin:8.1f} ms   own share "
          f"{plugin - core:+.1f} ms (goal: <= 50 ms)")  # fmt: skip
    print(
        f"  import oma_bedrock.provider (first use)    {provider:8.1f} ms   "
        "(botocore auth + eventstream, httpx)"
    )
    print(f"  import boto3 + a bedrock-runtime client    {boto3:8.1f} ms   (shape B's first use)")


async def main(calls: int) -> None:
    import httpx
    from oma_bedrock import create_provider

    from oma_core.toolkit import ProviderSettings

    environment()
    with FakeBedrock(api_key=API_KEY) as server:
        with_key = create_provider(ProviderSettings(base_url=server.url, api_key=API_KEY))
        signed = create_provider(ProviderSettings(base_url=server.url))
        client = boto3_client(server)
        pool = concurrent.futures.ThreadPoolExecutor(max_workers=10)
        async with httpx.AsyncClient() as plain:
            medians = await interleaved(
                {
                    "bare": bare(server, plain),
                    "A botocore+httpx, API key": shape_a(with_key),
                    "A botocore+httpx, SigV4": shape_a(signed),
                    "B boto3 on a thread pool, SigV4": shape_b(client, pool),
                },
                calls,
            )
        await with_key.aclose()
        await signed.aclose()
        pool.shutdown(wait=True)
        client.close()
        floor = medians.pop("bare")
        print(f"median per call, {calls} rounds, shapes taking turns (same fake Converse server):")
        print(f"  bare httpx POST (bearer)            {floor:7.3f} ms   (the transport floor)")
        for name, value in medians.items():
            print(f"  {name:<35} {value:7.3f} ms   overhead {value - floor:+7.3f} ms"
                  f"   (goal: <= {GOAL_OVERHEAD_MS} ms)")  # fmt: skip
        freed_a, ms_a = await cancel_a(server)
        freed_b, ms_b = await cancel_b(server)
        print("cancelling an in-flight call (server holds it 3 s):")
        for name, freed, ms in (("A", freed_a, ms_a), ("B", freed_b, ms_b)):
            state = f"connection freed after {ms:.0f} ms" if freed else "connection still open"
            print(f"  {name}: {state}   (goal: freed within {GOAL_CANCEL_MS:.0f} ms)")


if __name__ == "__main__":
    imports()
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 300))
