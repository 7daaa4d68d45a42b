"""An echoed prompt or key never survives scrubbing: the kit's ``ScrubbingSuite``."""

from oma_core.testing import ScrubbingSuite


class TestOpenAIScrubbing(ScrubbingSuite):
    api_key = "sk-oma-property-secret-0123456789"
