"""What the user only guesses, or no longer does, is not a memory; a preference said with its own verb is."""

from collections.abc import Callable

import pytest

from cairn_promotion.hedges import is_guess


@pytest.mark.parametrize(
    "said",
    [
        # A guess about this session's problem, a view not committed to (writers E, N, S and T).
        "I think it clashes with the scrub job on the Synology",
        "I suspect the clocks changing may have confused it",
        "I think the whole microservices craze is overhyped",
        # A state that ended (writer T).
        "I was on Mendeley until it got unbearable",
        "We used Datadog until last year but the bill got absurd",
    ],
)
def test_a_guess_or_an_ended_state_is_not_a_memory(said: str, memory_of: Callable[[str], str | None]) -> None:
    assert memory_of(said) is None


@pytest.mark.parametrize(
    ("said", "memory"),
    [
        ("I prefer answers without tables", "The user prefers answers without tables"),
        ("I work until 6 every day", "The user works until 6 every day"),
        ("I was born in Porto", "The user was born in Porto"),
    ],
)
def test_a_preference_or_a_lasting_fact_stays(
    said: str, memory: str, memory_of: Callable[[str], str | None]
) -> None:
    assert memory_of(said) == memory
    assert not is_guess(memory)
