"""An opt-in pytest plugin with fixtures for testing provider plugins against fake servers.

Enable it in a ``conftest.py``::

    pytest_plugins = ["oma_core.testing.pytest_plugin"]

``fake_server_factory(ServerClass, **kwargs)`` starts a fake server (a ``FakeServer``
subclass) and returns it; every server it started is closed when the test ends, and a test
whose server's handler raised (a bug in the fake server, answered with a 500) fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pytest

from .fake_server import FakeServer

__all__ = ["fake_server_factory"]

S = TypeVar("S", bound=FakeServer)


@pytest.fixture
def fake_server_factory() -> Iterator[Callable[..., Any]]:
    """Start fake servers for one test; closes them all afterwards."""
    started: list[FakeServer] = []

    def start(server_class: type[S], /, **kwargs: Any) -> S:
        server = server_class(**kwargs)
        server.start()
        started.append(server)
        return server

    yield start
    errors = [e for s in started for e in s.handler_errors]
    for server in started:
        server.close()
    if errors:
        pytest.fail(f"a fake server's handler raised: {errors[0]!r}", pytrace=False)
