"""Every check the project runs: a bare `nox` runs them all.

- `tests`: the core alone (plus the small plugin distributions its tests install);
- `plugin-NAME`: one plugin with the core and nothing else, running that plugin's tests;
- `all`: the core and every plugin installed together, every test suite;
- `lint` (ruff), `types` (mypy --strict), `docs` (mkdocs --strict).

uv creates the environments when it is installed (`pip install nox uv`), virtualenv otherwise.
"""

from __future__ import annotations

from pathlib import Path

import nox

nox.options.default_venv_backend = "uv|virtualenv"
nox.options.reuse_existing_virtualenvs = False
nox.options.error_on_missing_interpreters = True

ROOT = Path(__file__).parent
PLUGINS = sorted(p.name for p in (ROOT / "plugins").iterdir() if (p / "pyproject.toml").exists())
# Small distributions the core's tests install to prove discovery through entry points.
TEST_DISTRIBUTIONS = sorted(
    str(p) for p in (ROOT / "tests" / "plugins").glob("*") if (p / "pyproject.toml").exists()
)
PYTEST = ["pytest", "-q", "-p", "no:cacheprovider"]


def _install_core(session: nox.Session) -> None:
    session.install("-e", ".[test]")


@nox.session
def tests(session: nox.Session) -> None:
    """The core's tests, with only the core (and its test plugin distributions) installed."""
    _install_core(session)
    for dist in TEST_DISTRIBUTIONS:
        session.install("-e", dist)
    session.run(*PYTEST, "tests", *session.posargs)


def _plugin_session(plugin: str) -> None:
    @nox.session(name=f"plugin-{plugin.removeprefix('oma-')}")
    def run(session: nox.Session) -> None:
        _install_core(session)
        session.install("-e", f"plugins/{plugin}[test]")
        session.run(*PYTEST, f"plugins/{plugin}/tests", *session.posargs)

    run.__doc__ = f"{plugin} alone with the core."


for _plugin in PLUGINS:
    _plugin_session(_plugin)


@nox.session(name="all")
def all_together(session: nox.Session) -> None:
    """The core and every plugin installed together; every test suite."""
    _install_core(session)
    for plugin in PLUGINS:
        session.install("-e", f"plugins/{plugin}[test]")
    for dist in TEST_DISTRIBUTIONS:
        session.install("-e", dist)
    session.run(*PYTEST, "tests", *(f"plugins/{p}/tests" for p in PLUGINS), *session.posargs)


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree: lint rules and formatting."""
    session.install("ruff~=0.17.0")  # formatting changes between minor versions
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict over the core and every plugin's package."""
    session.install("mypy~=2.4", "-e", ".[test]")
    for plugin in PLUGINS:
        session.install("-e", f"plugins/{plugin}[test]")
    packages = [f"plugins/{p}/{p.replace('-', '_')}" for p in PLUGINS]
    session.run("mypy", "--strict", "oma_core", *packages)


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site; warnings are errors."""
    session.install("mkdocs-material>=9.5", "mkdocstrings-python>=1.10", "-e", ".")
    for plugin in PLUGINS:
        session.install("-e", f"plugins/{plugin}")
    site = Path(session.create_tmp()) / "site"
    session.run("mkdocs", "build", "--strict", "--site-dir", str(site))
