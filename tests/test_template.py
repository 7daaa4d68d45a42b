"""The plugin template (``python -m oma_core.testing.template NAME DEST``): what it writes
passes the conformance kit as generated, and marks the places the service's wire goes."""

from __future__ import annotations

import ast
import io
import os
import re
import subprocess
import sys
import tokenize
import tomllib
from pathlib import Path

import pytest

from oma_core.testing.conformance import ProviderConformance
from oma_core.testing.template import FILES, generate, main

EXAMPLE = Path(__file__).resolve().parent / "plugins" / "oma-ndjson-example"


def _install_as_distribution(root: Path) -> None:
    """Make the generated plugin visible to ``importlib.metadata`` with ``root`` on the path
    (its entry point, as ``pip install -e`` would register it), without installing it."""
    project = tomllib.loads((root / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    info = root / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n"
    )
    entry_points = "\n".join(f"{k} = {v}" for k, v in project["entry-points"]["oma"].items())
    (info / "entry_points.txt").write_text(f"[oma]\n{entry_points}\n")


#: The kit's checks of the request and reply mapping: left out (with a warning) when the kit
#: class has no wire reader or reply script, which is how a kit misses a wrong mapping.
MAPPING_CHECKS = ProviderConformance.MAPPING_CHECKS


@pytest.mark.parametrize("stream", ["ndjson", "sse"])
def test_the_generated_plugin_passes_the_conformance_kit_as_generated(
    tmp_path: Path, stream: str
) -> None:
    """The whole kit, the mapping checks included: a check left out is a collection warning,
    made an error here. Either stream format (``--stream``) passes as generated."""
    root = tmp_path / "oma-acme-chat"
    generate("acme-chat", root, stream=stream)
    _install_as_distribution(root)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("OMA_LOAD_PLUGINS", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-rA", "-p", "no:cacheprovider",
         "-p", "no:randomly", "-W", "error::UserWarning", "-W", "error::ResourceWarning",
         "-W", "error::pytest.PytestUnraisableExceptionWarning", "tests"],
        cwd=root, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    shown = "\n".join(line for line in run.stdout.splitlines() if not line.startswith("PASSED"))
    assert run.returncode == 0, shown[-4000:] + run.stderr[-2000:]
    assert "supplies no" not in run.stdout + run.stderr
    summary = run.stdout.strip().splitlines()[-1]
    passed = int(re.search(r"(\d+) passed", summary).group(1))  # type: ignore[union-attr]
    assert passed >= 60 and "skipped" not in summary and "failed" not in summary, summary
    ran = set(re.findall(r"^PASSED \S+::(test_\w+)", run.stdout, re.M))
    assert set(MAPPING_CHECKS) <= ran, sorted(set(MAPPING_CHECKS) - ran)


def _generated_files(tmp_path: Path, stream: str) -> dict[str, str]:
    generate("acme", tmp_path / stream, stream=stream)
    return {
        str(p.relative_to(tmp_path / stream)): p.read_text(encoding="utf-8")
        for p in (tmp_path / stream).rglob("*")
        if p.is_file()
    }


def test_the_stream_format_is_a_choice_and_the_skeleton_speaks_it(tmp_path: Path) -> None:
    sse, ndjson = _generated_files(tmp_path, "sse"), _generated_files(tmp_path, "ndjson")
    provider, fake = "oma_acme/_provider.py", "tests/fake_acme.py"
    assert "self.stream_sse(" in sse[provider] and "stream_ndjson" not in sse[provider]
    assert "self.stream_ndjson(" in ndjson[provider] and "stream_sse" not in ndjson[provider]
    assert "Response.sse(" in sse[fake] and "JSONLine" not in sse[fake]
    assert "Response.ndjson(" in ndjson[fake] and "SSEEvent" not in ndjson[fake]
    assert '"httpx-sse>=0.4"' in sse["pyproject.toml"]
    assert "httpx-sse" not in ndjson["pyproject.toml"]
    for files in (sse, ndjson):
        assert not any(re.search(r"\{\{|^\{\{[#/]", t, re.M) for t in files.values())
        # the fake's stream items come from oma_core.testing, as the docs name them
        assert "oma_core.testing.fake_server" not in files[fake]
    with pytest.raises(ValueError, match="stream 'grpc': use one of ndjson, sse"):
        generate("acme", tmp_path / "p", stream="grpc")
    assert not (tmp_path / "p").exists()


def test_a_client_option_of_the_wrong_type_is_refused_by_the_generated_plugin(
    tmp_path: Path,
) -> None:
    """The skeleton declares the client's options typed (``CLIENT_OPTION_TYPES``): a
    ``timeout`` of ``"soon"`` is an ``OptionTypeError`` when the agent is built."""
    root = tmp_path / "oma-acme"
    generate("acme", root)
    _install_as_distribution(root)
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]),
    }
    env.pop("OMA_LOAD_PLUGINS", None)
    script = (
        "from oma_core import Agent, AgentConfig\n"
        "from oma_core.errors import OptionTypeError\n"
        "Agent(AgentConfig(name='a', provider='acme', provider_options={'timeout': 2.5}))\n"
        "try:\n"
        "    Agent(AgentConfig(name='a', provider='acme', provider_options={'timeout': 'soon'}))\n"
        "except OptionTypeError as error:\n"
        "    print('refused:', error.option, error)\n"
    )
    run = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, env=env, capture_output=True, text=True,
        timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr[-3000:]
    assert run.stdout.startswith("refused: timeout"), run.stdout + run.stderr[-2000:]


def test_every_todo_marks_the_services_wire(tmp_path: Path) -> None:
    files = generate("acme", tmp_path / "p")
    todos = [
        line.strip()
        for path in files
        for line in path.read_text(encoding="utf-8").splitlines()
        if "TODO" in line
    ]
    assert todos, "the template marks where the wire goes"
    assert all("TODO(wire)" in line for line in todos), todos


def test_names_are_derived_from_the_provider_name(tmp_path: Path) -> None:
    files = generate("acme-chat", tmp_path / "p", display_name="ACME Chat")
    names = sorted(str(p.relative_to(tmp_path / "p")) for p in files)
    assert names == sorted(
        p.format(module="acme_chat").replace(".tmpl", "") for p in FILES.values()
    )
    spec = (tmp_path / "p" / "oma_acme_chat" / "__init__.py").read_text(encoding="utf-8")
    assert 'name="acme-chat"' in spec and 'display_name="ACME Chat"' in spec
    assert 'api_key_env="ACME_CHAT_API_KEY"' in spec
    assert "class AcmeChatProvider(HttpProvider)" in (
        tmp_path / "p" / "oma_acme_chat" / "_provider.py"
    ).read_text(encoding="utf-8")
    assert not any("{{" in p.read_text(encoding="utf-8") for p in files)


@pytest.mark.parametrize("name", ["Acme", "acme_chat", "-acme", "acme--chat", "1acme", ""])
def test_a_name_that_is_no_provider_name_is_refused_before_anything_is_written(
    tmp_path: Path, name: str
) -> None:
    with pytest.raises(ValueError, match="lower-case letters, digits and single hyphens"):
        generate(name, tmp_path / "p")
    assert not (tmp_path / "p").exists()


def test_a_folder_with_files_is_never_written_into(tmp_path: Path) -> None:
    (tmp_path / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="is not an empty folder: nothing written"):
        generate("acme", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep.txt"]


def test_the_command_line_writes_the_plugin_or_says_why_not(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["acme", str(tmp_path / "p")]) == 0
    assert "tests/test_acme_conformance.py" in capsys.readouterr().out
    assert main(["acme", str(tmp_path / "p")]) == 2
    assert "is not an empty folder" in capsys.readouterr().err
    assert main(["acme"]) == 2
    assert capsys.readouterr().err.startswith("usage: python -m oma_core.testing.template")
    assert main(["--stream", "sse", "acme", str(tmp_path / "s")]) == 0
    assert "stream_sse" in (tmp_path / "s" / "oma_acme" / "_provider.py").read_text()
    assert main(["--stream=grpc", "acme", str(tmp_path / "g")]) == 2
    assert "stream 'grpc'" in capsys.readouterr().err


def _code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not part of a docstring."""
    source = path.read_text(encoding="utf-8")
    docstrings: set[int] = set()
    for node in ast.walk(ast.parse(source)):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr):
            value = body[0].value
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                docstrings.update(range(body[0].lineno, (body[0].end_lineno or 0) + 1))
    skip = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT}
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in skip and token.type != tokenize.ENDMARKER:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstrings)


def _example_lines() -> tuple[int, int]:
    """The example package's lines of code (``_code_lines``) and its lines in all (wc -l)."""
    files = sorted((EXAMPLE / "oma_ndjson_example").glob("*.py"))
    assert [f.name for f in files] == ["__init__.py", "_provider.py"]
    code = sum(_code_lines(f) for f in files)
    return code, sum(len(f.read_text(encoding="utf-8").splitlines()) for f in files)


def test_the_ollama_like_example_takes_at_most_150_lines_of_code() -> None:
    assert _example_lines()[0] <= 150


def test_the_docs_give_the_examples_line_counts_as_they_are() -> None:
    page = (EXAMPLE.parents[2] / "docs" / "writing-a-provider.md").read_text(encoding="utf-8")
    text = " ".join(page.split())  # the figures may be wrapped across lines
    code = re.search(r"in (\d+) lines of plugin code", text)
    total = re.search(r"\((\d+) lines by `wc -l`\)", text)
    assert code and total, "writing-a-provider.md gives the example's line counts"
    assert (int(code.group(1)), int(total.group(1))) == _example_lines()


def test_the_example_has_the_templates_shape() -> None:
    """Every file the template writes is in the example (but the conftest: the core's tests
    collect the example's folder, below their root, where a conftest may not load a plugin)."""
    expected = {p.format(module="ndjson_example") for p in FILES.values()}
    present = {str(p.relative_to(EXAMPLE)) for p in EXAMPLE.rglob("*") if p.is_file()}
    assert expected - present == {"tests/conftest.py"}
