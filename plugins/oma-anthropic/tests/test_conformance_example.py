"""The worked example in oma_core.testing.conformance's docstring works as written, run the way
a third-party plugin would run it: its own folder, the fake server, nothing else."""

from __future__ import annotations

import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

from oma_core.testing import conformance


def test_the_docstring_example_passes_the_suite(tmp_path: Path) -> None:
    doc = conformance.__doc__ or ""
    start = doc.index("    # tests/conftest.py")
    end = doc.index("Hooks a plugin may override")
    example = textwrap.dedent(doc[start:end])
    conftest, _, module = example.partition("# tests/test_conformance.py")
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_conformance.py").write_text(module)
    shutil.copy(Path(__file__).with_name("fake_anthropic.py"), tmp_path)
    selected = "declared_blocks or undeclared or render or registered"
    options = ["-o", "asyncio_mode=auto", "-o", "asyncio_default_fixture_loop_scope=function"]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *options]
    out = subprocess.run(
        [*command, "-k", selected, str(tmp_path)],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-2000:]
    assert "5 passed" in out.stdout.splitlines()[-1], out.stdout[-500:]
