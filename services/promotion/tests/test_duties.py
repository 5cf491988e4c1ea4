"""A role the user holds and a named colleague's standing duty are kept, though the decision scores them low."""

import pytest

from cairn_promotion.duties import states_a_duty


@pytest.mark.parametrize(
    ("memory", "duty"),
    [
        # Writers E, R and V, and instyle dev.
        ("The user is the office manager at a dental practice", True),
        ("The user is the user's mother's primary caregiver", True),
        ("The user is the Datadog admin for the org", True),
        ("On 2025-03-02, the user is the treasurer of the running club", True),
        ("Tomasz Wiśniewski reviews anything that touches storage", True),
        ("Kofi Mensah signs off every release", True),
        ("Ayşe Demir runs all the playtests", True),
        # A lead is as often a passing title (a secrets session's "data platform lead" is not labelled).
        ("The user is the data platform lead", False),
        # No role, no full name, or no standing duty.
        ("The user is the worst at planning", False),
        ("Tomasz reviews anything that touches storage", False),
        ("Kofi Mensah signed off on the release yesterday", False),
        ("The user's manager is Dana", False),
    ],
)
def test_a_role_or_a_named_duty_is_read(memory: str, duty: bool) -> None:
    assert states_a_duty(memory) is duty
