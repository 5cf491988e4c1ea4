"""What the user only guesses, has not decided, or no longer does, is not a memory; a preference said with its own
verb is."""

from collections.abc import Callable

import pytest

from cairn_promotion.hedges import is_bare_plan, is_guess, without_undecided


@pytest.mark.parametrize(
    "said",
    [
        # A guess about this session's problem, a view not committed to (writers E, N, S and T).
        "I think it clashes with the scrub job on the Synology",
        "I suspect the clocks changing may have confused it",
        "I think the whole microservices craze is overhyped",
        # What the user believes of someone else (writer N).
        "I believe he makes do with a battered old pair of binoculars",
        # A state that ended (writer T).
        "I was on Mendeley until it got unbearable",
        "We used Datadog until last year but the bill got absurd",
        # What did not happen, or might have (heldout writer A).
        "I would never have noticed",
        "I could have been more careful with the backups",
        # How a part of life feels, said as a sigh (writers E, Q and the in-style writers).
        "school nights are a battle",
        "my eating is chaos",
        # The user chiding themselves, with nothing said of what (writers G, M, N, O, T and U).
        "I always forget",
        "I always mess it up",
        "I totally blew it on takeout",
        "I always panic about tax time",
        "I never quite had the time",
        # How sure or eager the user is about this session's question (writer N, LongMemEval).
        "I am not certain, since the site was set up by my predecessor",
        "I am less certain about the shore excursions",
        "I'm keen to get the sequence right before we commit to a date",
        "I find myself with rather more than usual to invest",
        "I'm not sure if I should bring my clipless pedals as well",
        # What the user does not know of this session's question (writers A, M, N and X).
        "I have like zero ideas",
        "I have a vague recollection from somewhere that it has to do with fires",
        "I'm a bit clueless about the raw-feeding stuff the rescue mentioned",
        "I've never used Playwright before",
        # How carefully the user means to go about the session's question (writers D, E and I).
        "I'm finally trying to be an adult about retirement",
        "I want to be careful and do things properly",
        "I'll do seeds for the bake sale, just to be safe",
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
        ("I would have tea over coffee any day", "The user would have tea over coffee any day"),
        ("my desk is a mess of cables", "The user's desk is a mess of cables"),
        ("I'm sure the flight is at 9", "The user is sure the flight is at 9"),
        ("I'm keen on hiking", "The user is keen on hiking"),
        ("I have no car", "The user has no car"),
        ("I have never smoked", "The user has never smoked"),
        ("I always forget to take my meds", "The user always forgets to take the user's meds"),
        ("I have to be careful with NSAIDs", "The user has to be careful with NSAIDs"),
    ],
)
def test_a_preference_or_a_lasting_fact_stays(
    said: str, memory: str, memory_of: Callable[[str], str | None]
) -> None:
    assert memory_of(said) == memory
    assert not is_guess(memory)


@pytest.mark.parametrize(
    ("memory", "kept"),
    [
        # A plan not made (writers A, L, R, T, Y, Z): nothing is left.
        ("Maybe the user will sneak a coffee at 1:30", None),
        ("On 2024-09-27, Maybe the user will take the JLPT N3 next year", None),
        ("The user is maybe going to train for a half marathon next spring, haven't signed up yet", None),
        ("The user's friend Dana is thinking about maybe doing a 5K in the fall but hasn't committed", None),
        ("The builder might be able to start in March", None),
        ("The user's team might switch banks at some point", None),
        # Choices not made (writers D, I, T, Z and AE).
        ("The user has been going back and forth between two venues", None),
        ("The user is torn between somewhere in the middle and just going to Portugal", None),
        ("The user keeps going back and forth about adult day care for her, no decision yet", None),
        # A plan weighed (writer E, LongMemEval).
        ("The user is actually thinking of investing in a milk frother", None),
        ("The user has been thinking about getting a bike lock with a GPS tracker", None),
        ("On 2025-02-11, the user is toying with LaTeX for this chapter", None),
        (
            "The user has been leaning towards a wooden top, but now the user is considering the glass top option too",
            "The user has been leaning towards a wooden top",
        ),
        (
            "The user considers Rust the best language for CLIs",
            "The user considers Rust the best language for CLIs",
        ),
        # The plan follows a fact: the fact stays.
        (
            "The user's husband Tom plays guitar so maybe we could do a little duet thing",
            "The user's husband Tom plays guitar",
        ),
        (
            "The user's wife Priya is a dentist, opening a clinic maybe next year not sure",
            "The user's wife Priya is a dentist",
        ),
        # A hedge that is not on the clause's verb.
        (
            "The user has the honour, or perhaps the burden, of chairing the village hall committee",
            "The user has the honour, or perhaps the burden, of chairing the village hall committee",
        ),
        (
            "The physiotherapist suggested exercises the user might do at home",
            "The physiotherapist suggested exercises the user might do at home",
        ),
    ],
)
def test_a_plan_not_yet_made_is_not_a_memory(memory: str, kept: str | None) -> None:
    assert without_undecided(memory) == kept


def test_an_undecided_plan_said_in_a_session_is_not_promoted(memory_of: Callable[[str], str | None]) -> None:
    assert memory_of("Maybe I'll learn the cello next year, not sure yet") is None
    assert memory_of("I'm maybe going to train for a half marathon next spring") is None


@pytest.mark.parametrize(
    ("memory", "bare"),
    [
        # A plan named with none of its details (writers F, G, I, O, R, Y, Z and AA).
        ("The user is planning an offsite for the design team", True),
        ("The user is planning to redo the back garden", True),
        ("The user is organizing the team offsite", True),
        # When, where or how big is what lasts (writers L, O and U).
        ("The user is planning the wedding for September 2026 in Porto", False),
        ("The user is planning the team offsite for Q3", False),
        ("The user is planning the family summer trip", False),
        ("The user is planning a trip to Japan with Dana", False),
    ],
)
def test_a_plan_without_a_detail_is_the_sessions_topic(memory: str, bare: bool) -> None:
    assert is_bare_plan(memory) is bare


def test_a_plan_without_a_detail_is_not_promoted(memory_of: Callable[[str], str | None]) -> None:
    assert memory_of("I'm planning an offsite for the design team") is None
    assert memory_of("I'm planning the wedding for September 2026 in Porto") == (
        "The user is planning the wedding for September 2026 in Porto"
    )
