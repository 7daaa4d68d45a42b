"""An echoed prompt or key never survives scrubbing: the kit's ``ScrubbingSuite``."""

from oma_core.testing import ScrubbingSuite


class TestMistralScrubbing(ScrubbingSuite):
    api_key = "sk-oma-mistral-property-secret-0123456789"
