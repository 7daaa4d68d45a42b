"""Every check the project runs: a bare `nox` runs them all.

- `tests`: the core alone (plus the small plugin distributions its tests install), every core
  test but those marked `combination`;
- `plugin-NAME`: one plugin with the core and nothing else, running that plugin's tests but
  those marked `combination`;
- `all`: the core and every plugin installed together, running only what needs them together:
  the tests marked `combination` (installed providers' tables, cross-plugin contracts,
  entry-point discovery and `oma plugins` over every plugin), in `tests/` and in every plugin's
  suite: a plugin test that needs another plugin is marked, since its plugin's session
  installs no other;
- `every-test-ran`: every test of every suite (as collected with everything installed) passed
  in at least one of the sessions above; none is skipped, deselected or missing everywhere;
- `lint` (ruff), `types` (mypy --strict), `docs` (mkdocs --strict).

The suites run on every core (pytest-xdist), but Ray's: its one cluster per run is shared by
its tests. A fresh `nox` uses about 18 minutes of CPU (measured: `tests` 3.4, `plugin-openai`
3.2, `plugin-anthropic` 2.8, `plugin-litellm` 1.8, `plugin-acp` 1.5, `all` 1.1, `types` 1, the
other plugins under 1 each): about 15 minutes on an idle 2-core machine (README.md).

uv creates the environments when it is installed (`pip install nox uv`), virtualenv otherwise.
"""

from __future__ import annotations

import json
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
PARALLEL = ["-n", "auto"]  # pytest-xdist: one worker per core
SERIAL = {"oma-ray"}  # one Ray cluster for the whole run, started once
# What each test session ran (pytest-reportlog), read by `every-test-ran`.
REPORTS = ROOT / ".nox" / "test-reports"
EVERY_TEST = REPORTS / "every-test.txt"  # every test id, collected with everything installed


def _install_core(session: nox.Session, *others: str) -> None:
    """The core with its test extras and ``others`` (editable), in one resolution."""
    editable = [arg for path in others for arg in ("-e", path)]
    session.install("-e", ".[test]", "pytest-reportlog~=1.0", *editable)


def _pytest(session: nox.Session, *args: str, parallel: bool = True) -> None:
    """pytest, its outcomes logged for `every-test-ran` (a stale log is removed first)."""
    REPORTS.mkdir(parents=True, exist_ok=True)
    log = REPORTS / f"{session.name}.jsonl"
    log.unlink(missing_ok=True)
    workers = PARALLEL if parallel else []
    session.run(*PYTEST, *workers, f"--report-log={log}", *args, *session.posargs)


@nox.session
def tests(session: nox.Session) -> None:
    """The core's tests, with only the core (and its test plugin distributions) installed."""
    _install_core(session, *TEST_DISTRIBUTIONS)
    _pytest(session, "-m", "not combination", "tests")


def _plugin_session(plugin: str) -> None:
    @nox.session(name=f"plugin-{plugin.removeprefix('oma-')}")
    def run(session: nox.Session) -> None:
        _install_core(session, f"plugins/{plugin}[test]")
        suite = f"plugins/{plugin}/tests"
        _pytest(session, "-m", "not combination", suite, parallel=plugin not in SERIAL)

    run.__doc__ = f"{plugin} alone with the core."


for _plugin in PLUGINS:
    _plugin_session(_plugin)


@nox.session(name="all")
def all_together(session: nox.Session) -> None:
    """The core and every plugin installed together: the tests marked `combination`."""
    _install_core(session, *(f"plugins/{p}[test]" for p in PLUGINS), *TEST_DISTRIBUTIONS)
    suites = ["tests", *(f"plugins/{p}/tests" for p in PLUGINS)]
    _pytest(session, "-m", "combination", *suites)
    # Every test id of every suite, for `every-test-ran` (only here can every suite be collected).
    listed = session.run(*PYTEST, "--collect-only", *suites, silent=True)
    EVERY_TEST.write_text(
        "".join(f"{line}\n" for line in str(listed).splitlines() if "::" in line),
        encoding="utf-8",
    )


def _passed(session_name: str) -> set[str]:
    """The ids of the tests that passed in one session's log, relative to the repository."""
    prefix = ""
    if session_name.startswith("plugin-"):  # a plugin's suite runs from the plugin's folder
        prefix = f"plugins/oma-{session_name.removeprefix('plugin-')}/"
    passed: set[str] = set()
    lines = (REPORTS / f"{session_name}.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        report = json.loads(line)
        if report.get("$report_type") != "TestReport" or report["when"] != "call":
            continue
        if report["outcome"] == "passed":
            passed.add(prefix + report["nodeid"])
    return passed


@nox.session(name="every-test-ran", python=False)
def every_test_ran(session: nox.Session) -> None:
    """Every test of every suite passed in some session of this run; none was skipped,
    deselected or lost everywhere. Reads the logs of `tests`, `plugin-*` and `all`."""
    sessions = ["tests", *(f"plugin-{p.removeprefix('oma-')}" for p in PLUGINS), "all"]
    missing = [name for name in sessions if not (REPORTS / f"{name}.jsonl").exists()]
    if missing or not EVERY_TEST.exists():
        session.error(f"no test log of {', '.join(missing) or 'all'}: run those sessions first")
    passed = set().union(*(_passed(name) for name in sessions))
    every = EVERY_TEST.read_text(encoding="utf-8").splitlines()
    if not every:
        session.error(f"{EVERY_TEST} lists no test: the collection in `all` failed")
    lost = [test for test in every if test not in passed]
    if lost:
        shown = "\n  ".join(lost[:50])
        session.error(f"{len(lost)} tests passed in no session (skipped or not run):\n  {shown}")
    session.log(f"each of the {len(every)} tests passed in at least one session")


@nox.session
def lint(session: nox.Session) -> None:
    """ruff over the whole tree: lint rules and formatting."""
    session.install("ruff~=0.17.0")  # formatting changes between minor versions
    session.run("ruff", "check", ".")
    session.run("ruff", "format", "--check", ".")


@nox.session
def types(session: nox.Session) -> None:
    """mypy --strict over the core and every plugin's package."""
    editable = [arg for p in PLUGINS for arg in ("-e", f"plugins/{p}[test]")]
    session.install("mypy~=2.4", "-e", ".[test]", *editable)
    packages = [f"plugins/{p}/{p.replace('-', '_')}" for p in PLUGINS]
    # tests/typing: what a type checker sees of the public API (assert_type), e.g. Agent[T]
    session.run("mypy", "--strict", "oma_core", *packages, "tests/typing")


@nox.session
def docs(session: nox.Session) -> None:
    """Build the documentation site (warnings are errors), then check its layout in headless
    Chromium (Debian's, installed here with apt-get where it can be): no code block or table
    overflowing sideways, no name broken mid-word, each object documented once."""
    editable = [arg for p in PLUGINS for arg in ("-e", f"plugins/{p}")]
    session.install(
        "mkdocs-material>=9.5",
        "mkdocstrings-python>=1.10",
        "selenium>=4.20",
        "ruff",
        "-e",
        ".",
        *editable,
    )
    site = Path(session.create_tmp()) / "site"
    session.run("mkdocs", "build", "--strict", "--site-dir", str(site))
    shots = Path(session.create_tmp()) / "screenshots"
    session.run(
        "python",
        "tests/docs_layout.py",
        str(site),
        "--screenshots",
        str(shots),
        "--install-browser",
    )
