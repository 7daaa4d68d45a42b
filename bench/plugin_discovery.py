"""Benchmark: ``import oma_core`` plus plugin discovery, against the 150 ms goal.

Run: ``python bench/plugin_discovery.py`` in an environment with every plugin of the repo
installed (``nox -s all`` builds one; so does installing each ``plugins/*`` editable). Each
sample is a fresh interpreter that imports ``oma_core`` and builds a ``PluginHost`` (entry
points loaded, registration hooks called: ``provider_specs()``); the best of ``RUNS`` counts.
It also reports whether any SDK module got imported (goal: none; SDKs load in the providers'
factories, on first use) and, if one did, which plugin's entry point imported it.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tomllib
from importlib import metadata
from pathlib import Path
from typing import Any

GOAL_MS = 150.0
RUNS = 7
ROOT = Path(__file__).resolve().parent.parent
SDKS = ("anthropic", "openai", "acp", "pydantic", "httpx")

_SAMPLE = f"""
import json, sys, time
t = time.perf_counter()
import oma_core
from oma_core.plugins import PluginHost
host = PluginHost()
providers = host.provider_specs()
backends = host.backend_specs()
ms = (time.perf_counter() - t) * 1000
sdks = [name for name in {SDKS!r} if name in sys.modules]
print(json.dumps({{"ms": ms, "sdks": sdks, "providers": len(providers),
                  "backends": len(backends), "plugins": len(host.plugin_info()),
                  "failures": [f.name + ": " + f.error for f in host.failures]}}))
"""

# Which entry point pulls in which SDK: load them one at a time in one fresh interpreter.
_CULPRITS = f"""
import json, sys
from importlib import metadata
import oma_core.plugins
found = {{}}
for ep in metadata.entry_points(group="oma"):
    before = set(sys.modules)
    try:
        ep.load()
    except Exception:
        continue
    new = [name for name in {SDKS!r} if name in sys.modules and name not in before]
    if new:
        found[ep.name] = new
print(json.dumps(found))
"""


def _run(code: str) -> Any:
    """The JSON one fresh interpreter prints for ``code``."""
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT
    )
    return json.loads(result.stdout.strip().splitlines()[-1])


def _missing_plugins() -> list[str]:
    """Distributions under plugins/ that are not installed in this interpreter."""
    missing = []
    for project in sorted((ROOT / "plugins").glob("*/pyproject.toml")):
        name = tomllib.loads(project.read_text(encoding="utf-8"))["project"]["name"]
        try:
            metadata.distribution(name)
        except metadata.PackageNotFoundError:
            missing.append(name)
    return missing


def main() -> None:
    for switch in ("OMA_LOAD_PLUGINS", "OMA_DISABLE_PLUGINS"):
        if switch in os.environ:
            print(f"note: {switch}={os.environ[switch]!r} applies to this measurement")
    missing = _missing_plugins()
    if missing:
        print(f"warning: not installed, so not measured: {', '.join(missing)}")
    samples = [_run(_SAMPLE) for _ in range(RUNS)]
    best = min(samples, key=lambda sample: float(sample["ms"]))
    ms = float(best["ms"])
    sdks: list[str] = list(best["sdks"])
    print(
        f"import oma_core + plugin discovery: {ms:6.1f} ms (best of {RUNS})   "
        f"goal < {GOAL_MS:.0f} ms  {'ok' if ms < GOAL_MS else 'MISSED'}"
    )
    print(
        f"  {best['plugins']} plugins loaded, {best['providers']} providers, "
        f"{best['backends']} backends"
    )
    for failure in best["failures"]:
        print(f"  load failure: {failure}")
    if not sdks:
        print(f"SDK modules imported: none   goal: none  ok   (checked: {', '.join(SDKS)})")
        return
    print(f"SDK modules imported: {', '.join(sdks)}   goal: none  MISSED")
    culprits: dict[str, list[str]] = _run(_CULPRITS)
    for plugin, names in culprits.items():
        print(f"  entry point {plugin!r} imports {', '.join(names)} when it loads")


if __name__ == "__main__":
    main()
