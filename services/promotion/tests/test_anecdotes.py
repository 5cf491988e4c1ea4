"""A story someone else lived, told in passing, is not a memory; the user's own history is."""

from collections.abc import Callable

import pytest

from cairn_promotion.anecdotes import is_anecdote, is_character_sketch, is_family_wish, is_hearsay


@pytest.mark.parametrize(
    "memory",
    [
        # Writer I.
        "Priya's brother once ordered two identical birthday cakes on purpose for twins",
        "On 2025-05-13, the user's supervisor Dr Helen once returned a draft with 'why?' written in the margin",
        "Two years ago on fieldwork the little RIB flipped in Cawsand Bay",
        "Back in 2021 a lad convinced the user to put two grand into some crypto coin",
        "On 2025-04-02, last summer at the user's mum's barbecue Pickle ate an entire Victoria sponge",
        # Writers E and W.
        "Last time a doctor almost gave the user amoxicillin",
        "On 2025-03-02, last time the user made something like this the top got quite dark",
    ],
)
def test_a_story_told_in_passing_is_not_a_memory(memory: str) -> None:
    assert is_anecdote(memory)


@pytest.mark.parametrize(
    "memory",
    [
        "The user moved to Zotero last autumn",
        "The user had ACL surgery on the user's left knee back in 2019",
        "On 2025-02-03, the user was diagnosed with type 2 diabetes last spring",
        "Half PB is 1:38 from last spring",
        "The user's wife Priya runs a bakery, and about a year ago the user built her an ordering site",
        "The user's team goes climbing once a week",
        "The user's last time at the Berlin half was 1:41",
    ],
)
def test_the_users_own_history_stays(memory: str) -> None:
    assert not is_anecdote(memory)


def test_a_story_is_not_promoted(memory_of: Callable[[str], str | None]) -> None:
    assert memory_of("Two years ago on fieldwork the little RIB flipped in Cawsand Bay") is None


@pytest.mark.parametrize(
    "memory",
    [
        # Writers B, E, L, R, T and AA.
        "Dana says it's fine since PG 11",
        "The user's friend says it'll ruin the user for every other language",
        "Log says AccessDenied on PutObject",
        "Logs say port already in use",
        'A statistician friend told the user p-values are "basically astrology"',
        "The user's dad Len told the user about every garden he's ever dug since 1974",
        "The printer's screen says it's connected",
        "Everyone says that's when he decided to become one",
        # What someone asked of the user, sent or told them (writers I and N).
        "The user has been asked to write a short literature review section on blue carbon by the end of the month",
        "The user has been sent a spreadsheet by the treasurer of a committee",
        "The user has been put in charge of the team offsite again",
        "The user is told by the user's daughter Eleanor, utterly devoted to birdwatching",
    ],
)
def test_what_someone_else_says_is_not_a_memory(memory: str) -> None:
    assert is_hearsay(memory)


@pytest.mark.parametrize(
    "memory",
    [
        "The user's physio says the user has got patellar tendinopathy in the user's left knee",
        "The team's style guide says max line length 100",
        "The user says the assistant can call them Sam",
        "The user's doctor told the user to cut salt because the user has high blood pressure",
        "The user has been a nurse for ten years",
        "The user has been vegetarian since 2019",
    ],
)
def test_a_carer_or_a_written_rule_is_not_hearsay(memory: str) -> None:
    assert not is_hearsay(memory)


@pytest.mark.parametrize(
    "said",
    [
        # Writers E, I, L, M and X.
        "my husband Tom wants a party",
        "my mom wants 200 guests, which, sure, if she's paying",
        "my fiancé Jonas wanted a DJ",
        "my wife Priya wants to do the cake herself",
        "my brother Tomasz is sorting the venue",
    ],
)
def test_what_the_users_family_wants_for_the_plan_is_not_a_memory(
    said: str, memory_of: Callable[[str], str | None]
) -> None:
    assert memory_of(said) is None


@pytest.mark.parametrize(
    "memory",
    [
        "The user's cat Mochi is diabetic and needs insulin twice a day",
        "The user's son needs an EpiPen",
        "The user's supervisor wants ACS style for all citations",
        "The user's friend Dana wants to start running",
        "The user's husband Tom wants his coffee black every morning",
        "The user wants a small wedding",
    ],
)
def test_a_recurring_wish_a_need_or_a_standing_rule_is_not_a_family_wish(memory: str) -> None:
    assert not is_family_wish(memory)


@pytest.mark.parametrize(
    "said",
    [
        # Writers I and T.
        "my boss Gerald is a lovely man",
        "my supervisor, Dr Helen Marsh, is brilliant but terrifying",
        "my neighbour Alan is not the most reliable witness",
        "my partner Luis is the decisive one",
    ],
)
def test_what_the_user_thinks_of_someones_character_is_not_a_memory(
    said: str, memory_of: Callable[[str], str | None]
) -> None:
    assert memory_of(said) is None


@pytest.mark.parametrize(
    "memory",
    [
        "The user's dog is great with kids",
        "The user's son is a picky eater",
        "The user is a kind person",
        "The user's internet is unreliable",
        "The user's team is great",
        "The user's manager is very supportive",
    ],
)
def test_what_someone_is_good_with_or_a_things_quality_is_no_character_sketch(memory: str) -> None:
    assert not is_character_sketch(memory)
