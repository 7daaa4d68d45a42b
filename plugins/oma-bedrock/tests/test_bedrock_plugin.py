"""Loading the plugin is cheap: botocore and httpx are imported when a provider is first
built, not when ``oma`` loads its plugins."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_plugin_imports_neither_botocore_nor_httpx() -> None:
    code = (
        "import sys; from oma_core import PluginHost; "
        "PluginHost.default().provider_spec('bedrock');"
        "import oma_bedrock; print(sorted(m for m in ('botocore', 'httpx', 'boto3')"
        " if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"


def test_building_the_provider_imports_no_boto3() -> None:
    code = (
        "import sys; from oma_bedrock import create_provider; from oma_core.toolkit import "
        "ProviderSettings; create_provider(ProviderSettings()); print('boto3' in sys.modules,"
        " 'botocore.eventstream' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False True"
