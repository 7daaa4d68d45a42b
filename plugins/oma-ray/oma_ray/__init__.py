"""oma-ray: run the agent runs of a team's task graph on a Ray cluster.

``OpenMultiAgent(executor="ray", executor_options={...})``; see ``docs/distributed.md``.
Importing this package (which ``PluginHost`` does when plugins load) imports no Ray: Ray is
imported when a team run first opens the executor's session.
"""

from __future__ import annotations

from oma_core import hookimpl
from oma_core.toolkit import ExecutorSpec

from ._executor import RayExecutor, RayExecutorStats

__version__ = "0.1.0"  # the distribution's version (hatch reads it here)

__all__ = ["RayExecutor", "RayExecutorStats", "oma_register_executors"]


@hookimpl
def oma_register_executors() -> list[ExecutorSpec]:
    return [
        ExecutorSpec(
            "ray",
            RayExecutor,
            supports={"progress", "shared_budget", "cancel"},
            description="each task's agent run as a Ray task on a Ray cluster",
        )
    ]
