"""How long the tests' waits are willing to wait: every wait ends the moment its condition holds, so a long bound
costs nothing when all is well; only a failure waits it out. A busy CI machine (both cores taken by a build or by
the other test worker) can take tens of seconds for what takes milliseconds idle, so no wait gives up sooner than
PATIENCE seconds, whatever shorter bound a test names (VISION_AGENT_TEST_PATIENCE overrides it)."""

from __future__ import annotations

import os

PATIENCE = float(os.environ.get("VISION_AGENT_TEST_PATIENCE", "60"))


def patience(seconds: float) -> float:
    """The bound a condition wait really uses: the test's own, or PATIENCE if that is longer."""
    return max(seconds, PATIENCE)
