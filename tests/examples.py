"""How many examples a property test with a count of its own runs under the profile in force."""

from __future__ import annotations

from hypothesis import settings

CI_EXAMPLES = 20
"""max_examples of the `ci` profile (tests/conftest.py), the count the pinned numbers were chosen at."""


def pinned(count: int) -> int:
    """`count` under `ci` and `deep`; in proportion under a profile that runs fewer examples than
    `ci` (the fast loop's `fast`: 3/20 of it), so that the fast loop runs every property, briefly."""
    return min(count, max(1, count * settings.default.max_examples // CI_EXAMPLES))
