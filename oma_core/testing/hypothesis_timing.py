"""An opt-in pytest plugin: Hypothesis without its wall-clock checks.

Hypothesis times each example (``deadline``) and the generation of its inputs (the
``too_slow`` health check) by the wall clock, which a loaded machine stretches: a suite that
must pass on any machine, however busy, turns both off. Enable it in a ``conftest.py``::

    pytest_plugins = ["oma_core.testing.hypothesis_timing"]
"""

from __future__ import annotations

from hypothesis import HealthCheck, settings

settings.register_profile("oma-loaded", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("oma-loaded")
