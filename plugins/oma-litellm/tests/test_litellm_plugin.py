"""Loading the plugin is cheap: LiteLLM (seconds to import) is imported when a provider is
first built, not when ``oma`` loads its plugins."""

from __future__ import annotations

import subprocess
import sys


def test_loading_the_plugin_does_not_import_litellm() -> None:
    code = (
        "import sys; from oma_core import PluginHost; "
        "PluginHost.default().provider_spec('litellm');"
        "import oma_litellm; print('litellm' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "False"
