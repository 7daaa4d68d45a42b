"""Every check the project runs: a bare `nox` runs them all, each test once.

- `tests`: the core alone (plus the small plugin distributions its tests install), every core
  test but those marked `combination`;
- `plugin-NAME`: one plugin with the core and nothing else, running that plugin's tests but
  those marked `combination` and its conformance kit (run in `build`);
- `all`: the core and every plugin installed together, running only what needs them together:
  the tests marked `combination` (installed providers' tables, cross-plugin contracts,
  entry-point discovery and `oma plugins` over every plugin), in `tests/` and in every plugin's
  suite: a plugin test that needs another plugin is marked, since its plugin's session
  installs no other;
- `build`: the twelve distributions as a user installs them: sdists, wheels built from them,
  `twine check`, the wheels alone installed into a fresh venv, `oma --version`, `oma plugins`,
  `oma run` and each plugin's conformance kit (six providers', Ray's executor kit and the
  store kit on a real PostgreSQL server) run there against the installed packages, each
  bounded by `KIT_TIMEOUT` — the only place the kits run;
- `every-test-ran`: every test of every suite (as collected with everything installed) passed
  in at least one of the sessions above; none is skipped, deselected or missing everywhere;
- `lint` (ruff), `types` (mypy --strict), `docs` (mkdocs --strict).

The suites run on every core (pytest-xdist), but Ray's: its one cluster per run is shared by
its tests. README.md gives the time a fresh `nox` takes, session by session.

uv creates the environments when it is installed (`pip install nox uv`), virtualenv otherwise.
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
import tomllib
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
KITS = "test_*conformance*.py"  # each plugin's conformance kit, in its tests/ folder
KIT_TIMEOUT = 900  # seconds one plugin's conformance kit may take in `build` (Ray: ~1 min)
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
        # the conformance kits run once, in `build`, against the installed wheels
        kits = f"--ignore-glob=*/{KITS}"
        _pytest(session, "-m", "not combination", kits, suite, parallel=plugin not in SERIAL)

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
    if session_name.startswith(("plugin-", "build-")):  # from the plugin's folder
        prefix = f"plugins/oma-{session_name.partition('-')[2]}/"
    passed: set[str] = set()
    lines = (REPORTS / f"{session_name}.jsonl").read_text(encoding="utf-8").splitlines()
    for line in lines:
        report = json.loads(line)
        if report.get("$report_type") != "TestReport" or report["when"] != "call":
            continue
        if report["outcome"] == "passed":
            passed.add(prefix + report["nodeid"])
    return passed


def _kits() -> list[Path]:
    """Every plugin's conformance kit files, in a fixed order."""
    return sorted((ROOT / "plugins").glob(f"*/tests/{KITS}"))


def _dist_name(source: Path) -> str:
    """A distribution's name, from its pyproject.toml."""
    with open(source / "pyproject.toml", "rb") as file:
        return str(tomllib.load(file)["project"]["name"])


def _package(source: Path) -> str:
    """The import package a distribution's folder ships: ``oma_core``, ``oma_openai``, ..."""
    return "oma_core" if source == ROOT else source.name.replace("-", "_")


def _missing_from_wheel(source: Path, wheel: Path) -> list[str]:
    """Files of the package's source folder (modules, ``py.typed``, data) not in its wheel."""
    import zipfile

    package = source / _package(source)
    wanted = {
        path.relative_to(source).as_posix()
        for path in package.rglob("*")
        if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"
    }
    return sorted(wanted - set(zipfile.ZipFile(wheel).namelist()))


@nox.session
def build(session: nox.Session) -> None:
    """The twelve distributions as a user gets them: each sdist built, then its wheel built
    from that sdist (``python -m build``), their metadata checked (``twine check``), every
    file of each package found in its wheel; then the wheels alone (no editable install, no
    oma-* from an index) installed into a fresh venv, where ``oma --version``, ``oma plugins``
    and ``oma run`` (echo) run, and each plugin's conformance kit runs against the installed
    packages (the test files from this tree, the packages from the venv)."""
    # twine 7: the first to read the Metadata-Version 2.5 that hatchling 1.32 writes
    session.install("build[uv]~=1.2", "twine~=7.0")
    tmp = Path(session.create_tmp()).resolve()
    dist, venv, home = tmp / "dist", tmp / "venv", tmp / "home"
    for stale in (dist, venv, home):
        shutil.rmtree(stale, ignore_errors=True)
    sources = [ROOT, *(ROOT / "plugins" / p for p in PLUGINS)]
    for source in sources:  # sdist, then the wheel from the unpacked sdist
        session.run(
            "python",
            "-m",
            "build",
            "--installer",
            "uv",
            "--outdir",
            str(dist),
            str(source),
            silent=True,
        )
    session.run("twine", "check", "--strict", *map(str, sorted(dist.iterdir())))
    wheels = {_package(s): next(dist.glob(f"{_package(s)}-*.whl")) for s in sources}
    for source in sources:
        missing = _missing_from_wheel(source, wheels[_package(source)])
        if missing:
            session.error(f"{wheels[_package(source)].name} lacks {', '.join(missing)}")

    # A fresh venv holding the wheels and their third-party dependencies (the registry), with
    # each distribution's test extra for the conformance kits. Wheels named by path: an oma-*
    # of the same name on an index can never be picked instead.
    session.run("uv", "venv", "--quiet", "--python", str(Path(session.bin) / "python"), str(venv))
    python, oma = str(venv / "bin" / "python"), str(venv / "bin" / "oma")
    names = {_package(s): _dist_name(s) for s in sources}
    requirements = [f"{names[pkg]}[test] @ {wheel.as_uri()}" for pkg, wheel in wheels.items()]
    session.run(
        "uv",
        "pip",
        "install",
        "--quiet",
        "--python",
        python,
        *requirements,
        "pytest-reportlog~=1.0",
    )

    # Run from an empty folder with a private OMA_HOME: no source package on sys.path, no
    # user's keys, config or defaults.
    work = tmp / "work"
    work.mkdir(exist_ok=True)
    session.chdir(work)
    for name in ("OMA_PROVIDER", "OMA_MODEL", "OMA_LOAD_PLUGINS", "OMA_DISABLE_PLUGINS"):
        session.env.pop(name, None)
    session.env["OMA_HOME"] = str(home)
    # The installed copies are imported, even with the kits' tests/ folders on sys.path as
    # pytest puts them (its default import mode inserts each test file's folder).
    tests_folders = sorted(str(p.parent) for p in (ROOT / "plugins").glob("*/tests/conftest.py"))
    check = (
        "import importlib, sys; from pathlib import Path; prefix = Path(sys.prefix).resolve()\n"
        f"sys.path[:0] = {tests_folders!r}\n"
        f"for name in {sorted(wheels)!r}:\n"
        "    where = Path(importlib.import_module(name).__file__).resolve()\n"
        "    assert prefix in where.parents, f'{name} imported from {where}, not the venv'\n"
    )
    session.run(python, "-c", check, external=True)
    versions = session.run(oma, "--version", external=True, silent=True)
    expected = sorted(f"{names[pkg]} " for pkg in wheels if pkg != "oma_core")
    listed = str(versions).splitlines()
    if (
        not listed[0].startswith("oma ")
        or [line[: line.index(" ") + 1] for line in listed[1:]] != expected
    ):
        session.error(f"oma --version printed:\n{versions}")
    session.log(str(versions).strip())
    session.run(oma, "plugins", external=True)
    session.run(oma, "run", "hi", external=True)
    # The kits: oma_core.testing from the core's wheel, driven by each plugin's conformance
    # tests; pytest's default import mode puts only each tests/ folder on sys.path. Each kit
    # is bounded (KIT_TIMEOUT): a hang fails the session instead of holding it.
    # The kits run with the wheels' venv activated (VIRTUAL_ENV, PATH), as a user's would be.
    # Under nox's own VIRTUAL_ENV (.nox/build) Ray's cluster never came up: its temp dir
    # ($TMPDIR/ray, and nox's TMPDIR is .nox/build/tmp) lay inside the virtualenv root, which
    # Ray does not support (ray._private.parameter refuses such a temp_dir when it is given);
    # the workers died at start and ray.init waited for them for ever.
    # RAY_TMPDIR: Ray's temp dir outside every virtualenv whatever nox sets (and short).
    ray_tmp = tempfile.mkdtemp(prefix="oma-build-ray-")
    activated = {
        "VIRTUAL_ENV": str(venv),
        "PATH": os.pathsep.join([str(venv / "bin"), session.env.get("PATH") or os.environ["PATH"]]),
        "RAY_TMPDIR": ray_tmp,
    }
    # Each kit's outcomes are logged (as `build-NAME`) for `every-test-ran`: this is the only
    # session that runs them.
    REPORTS.mkdir(parents=True, exist_ok=True)
    kits = [str(kit) for kit in _kits()]
    try:
        for plugin in sorted({Path(kit).parent.parent for kit in kits}):
            mine = [kit for kit in kits if Path(kit).parent.parent == plugin]
            workers = [] if plugin.name in SERIAL else PARALLEL
            log = REPORTS / f"build-{plugin.name.removeprefix('oma-')}.jsonl"
            log.unlink(missing_ok=True)
            pytest = [str(venv / "bin" / "pytest"), *PYTEST[1:], *workers, f"--report-log={log}"]
            session.run(*_bounded([*pytest, *mine], KIT_TIMEOUT), env=activated, external=True)
    finally:
        shutil.rmtree(ray_tmp, ignore_errors=True)


@nox.session(name="every-test-ran", python=False)
def every_test_ran(session: nox.Session) -> None:
    """Every test of every suite passed in some session of this run; none was skipped,
    deselected or lost everywhere. Reads the logs of `tests`, `plugin-*`, `all` and the kits
    run in `build`."""
    kits = sorted({kit.parent.parent.name for kit in _kits()})
    sessions = [
        "tests",
        *(f"plugin-{p.removeprefix('oma-')}" for p in PLUGINS),
        "all",
        *(f"build-{p.removeprefix('oma-')}" for p in kits),
    ]
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


def _bounded(command: list[str], seconds: int) -> list[str]:
    """``command`` stopped after ``seconds`` (Ctrl-C, then a kill 30 s later) where coreutils'
    ``timeout`` exists (Linux, CI); as it is elsewhere."""
    timeout = shutil.which("timeout")
    if timeout is None:
        return command
    return [timeout, "--kill-after=30", "--signal=INT", str(seconds), *command]


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
        "pytest",  # the layout check imports what the reference names; the kit's suites need it
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
