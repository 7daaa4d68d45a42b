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
from typing import Any

import pytest

# Every async test fails if it leaves an async generator to the garbage collector.
pytest_plugins = ["oma_core.testing.pytest_plugin", "oma_core.testing.closed_generators"]

os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
os.environ["RAY_DISABLE_DOCKER_CPU_WARNING"] = "1"
HERE = str(Path(__file__).parent)


@pytest.fixture(scope="session")
def ray_cluster() -> Iterator[str]:
    import ray
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (see above)
    given = os.environ.get("PYTHONPATH")
    # The cluster's processes inherit this environment when they start (only they need it).
    os.environ["PYTHONPATH"] = os.pathsep.join(p for p in (HERE, given) if p)
    context = _start(ray)
    if given is None:
        del os.environ["PYTHONPATH"]
    else:
        os.environ["PYTHONPATH"] = given
    try:
        yield context.address_info["address"]
    finally:
        ray.shutdown()


def _start(ray: Any) -> Any:
    """``ray.init``, tried again when the cluster did not register in time: Ray waits a fixed
    30 s for its raylet (``ray._private.node``), which a busy machine can overrun."""
    for attempt in range(3):
        try:
            return ray.init(
                num_cpus=2,
                include_dashboard=False,
                _node_ip_address="127.0.0.1",
                log_to_driver=False,
            )
        except Exception as error:
            if attempt == 2 or "timed out during startup" not in str(error):
                raise
            ray.shutdown()
    raise AssertionError("unreachable")


@pytest.fixture
def executor_options(ray_cluster: str) -> dict[str, object]:
    return {"address": ray_cluster}
