"""What every test shares, unit and integration alike: the Hypothesis profiles. The real embedded servers'
fixtures are in integration_tests/conftest.py, so no unit test can ask for one."""

from __future__ import annotations

import os

from hypothesis import HealthCheck, settings

# Property tests have three profiles (docs/developing.md, "Tests"), chosen with HYPOTHESIS_PROFILE (or
# pytest's --hypothesis-profile); scripts/test.sh picks ci when CI is set:
# ci       what CI runs: the same examples on every run of a commit (derandomized, no example
#          database, no timing-based checks), so a verdict never depends on luck or machine load;
# dev      the default: new random examples each run, failures remembered in .hypothesis/;
# explore  many more examples, for hunting edge cases; what it finds is fixed and pinned
#          with @example, never left to surface at random.
_UNTIMED = {"deadline": None, "suppress_health_check": [HealthCheck.too_slow]}
settings.register_profile("ci", derandomize=True, database=None, print_blob=True, **_UNTIMED)
settings.register_profile("dev", **_UNTIMED)
settings.register_profile("explore", max_examples=2000, **_UNTIMED)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

# `keel ask` answers through a warm service by default (keel/cli/warm_client.py). A test that
# runs the command, in process with fakes or as a subprocess, means this process's own answer,
# unless it is a test of that service, which turns it back on for itself.
os.environ["KEEL_CLI_SERVICE"] = "off"
