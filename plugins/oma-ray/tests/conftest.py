"""One local Ray cluster for the whole session (starting one takes seconds), on 127.0.0.1,
without the dashboard or usage reporting; workers find this folder's test modules (the
providers and tools the tests pickle to them) through PYTHONPATH.

Ray swaps a loopback ``_node_ip_address`` for the machine's outward address by design
(``ray._private.services.resolve_ip_for_localhost``); the tests keep every socket on
127.0.0.1, so they turn that swap off for the cluster they start (and only here).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

# Every async test fails if it leaves an async generator to the garbage collector.
pytest_plugins = ["oma_core.testing.pytest_plugin", "oma_core.testing.closed_generators"]

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ["RAY_DISABLE_DOCKER_CPU_WARNING"] = "1"
HERE = str(Path(__file__).parent)
os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, os.environ.get("PYTHONPATH", "")) if p)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    import ray
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (see above)
    context = ray.init(
        num_cpus=2,
        include_dashboard=False,
        _node_ip_address="127.0.0.1",
        log_to_driver=False,
    )
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()


@pytest.fixture
def executor_options(ray_cluster: str) -> dict[str, object]:
    return {"address": ray_cluster}
