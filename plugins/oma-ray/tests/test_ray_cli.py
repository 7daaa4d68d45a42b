"""``oma tasks examples/PLAN.json --executor ray`` runs the example graph on the Ray cluster and
gives what the local executor gives: the same statuses, outputs, attempts and usage."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner

from oma_core.cli import cli

PLAN = Path(__file__).resolve().parents[3] / "examples" / "PLAN.json"


def _tasks(*options: str, home: Path) -> dict[str, Any]:
    done = CliRunner().invoke(
        cli, ["tasks", str(PLAN), "--json", *options], env={"OMA_HOME": str(home)}
    )
    assert done.exit_code == 0, done.output
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def test_the_example_plan_runs_on_ray_as_it_runs_locally(ray_cluster: str, tmp_path: Path) -> None:
    on_ray = _tasks("--executor", "ray", "--executor-option", "address", ray_cluster, home=tmp_path)
    local = _tasks(home=tmp_path)
    assert on_ray["success"] is True
    assert [task["status"] for task in on_ray["tasks"].values()] == ["completed"] * 3
    assert on_ray["tasks"] == local["tasks"]
    assert on_ray["usage"] == local["usage"]
