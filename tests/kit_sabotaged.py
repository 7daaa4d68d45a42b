"""The reference kit once per sabotage (run by ``tests/test_kit_catches_sabotage.py`` in a
subprocess; not collected by the suite itself)."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from kit_reference import SABOTAGES, KitchatConformance

#: The sabotages to try (``OMA_KIT_SABOTAGES``, comma-separated; all by default).
TRIED = tuple(s for s in os.environ.get("OMA_KIT_SABOTAGES", "").split(",") if s) or SABOTAGES


class TestSabotagedKitchat(KitchatConformance):
    @pytest.fixture(autouse=True, params=TRIED)
    def _sabotaged(
        self, request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
    ) -> Iterator[None]:
        monkeypatch.setenv("OMA_KIT_SABOTAGE", request.param)
        yield
