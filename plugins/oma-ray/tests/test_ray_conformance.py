"""The executor conformance suite on a real local Ray cluster."""

from __future__ import annotations

from typing import Any

import pytest

from oma_core.testing.executors import ExecutorConformance


class TestRayConformance(ExecutorConformance):
    executor_name = "ray"

    @pytest.fixture
    def executor_options(self, ray_cluster: str) -> dict[str, Any]:
        return {"address": ray_cluster}
