"""An echoed prompt or key never survives scrubbing: the kit's ``ScrubbingSuite``."""

from oma_core.testing import ScrubbingSuite


class TestGeminiScrubbing(ScrubbingSuite):
    api_key = "AIzaSyOmaPropertySecret0123456789abcdefg"
