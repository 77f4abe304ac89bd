"""A pytest plugin for tests/apitests/run.sh: hypothesis without its shrink and explain phases.

Loaded before the suite's conftest, whose profile inherits these phases. A failing example
still fails its test, unshrunk: shrinking the failures of a whole suite can take longer than
running it (minutes for one test on a loaded machine), and the verdict does not change."""
from hypothesis import Phase, settings

settings.register_profile("ctensor-noshrink", phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target])
settings.load_profile("ctensor-noshrink")
