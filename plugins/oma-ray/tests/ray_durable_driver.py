"""A Ray driver running a durable team run, left to be killed with task "second" in flight
(tests/test_ray_durable_team_runs.py kills it with SIGKILL and resumes the run itself).

``python ray_durable_driver.py DB RUN_ID WORKDIR ADDRESS``: ``run_tasks`` of
``ray_durable_parts.PLAN`` on the Ray cluster at ADDRESS, checkpointed into the SQLite store
in DB. Not collected by pytest (no ``test_`` prefix)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from ray_durable_parts import PLAN, make_team

from oma_core import OpenMultiAgent
from oma_core.stores import SQLiteRunStore


async def main(db: str, run_id: str, workdir: str, address: str) -> None:
    import ray._private.services as services

    services.resolve_ip_for_localhost = lambda host: host  # keep 127.0.0.1 (see conftest)
    store = SQLiteRunStore(Path(db))
    oma = OpenMultiAgent(store=store, executor="ray", executor_options={"address": address})
    await oma.run_tasks(make_team(workdir, hold=True), PLAN, run_id=run_id)


if __name__ == "__main__":
    asyncio.run(main(*sys.argv[1:5]))
