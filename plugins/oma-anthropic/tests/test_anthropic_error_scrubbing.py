"""An echoed prompt or key never survives scrubbing: the kit's ``ScrubbingSuite``."""

from oma_core.testing import ScrubbingSuite


class TestAnthropicScrubbing(ScrubbingSuite):
    api_key = "sk-ant-oma-property-secret-0123456789"
