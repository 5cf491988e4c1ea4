"""A memory that only points back at the conversation ("this", "that", "there was", an unresolved "it was")
says nothing read alone; one that names what it is about stays."""

from collections.abc import Callable

import pytest

from cairn_promotion.referents import points_back


@pytest.mark.parametrize(
    "memory",
    [
        # Outside writers' survivors that no label held (sets v7-v13, heldout).
        "This happens every month",
        "This started right after the 14:00 deploy",
        "This month the user is short because of a car repair",
        "On 2025-06-10, this year it's just the user, yay",
        "That matches the user's gut",
        "That subnet only ever gets the replicas, never the primary, that's the rule",
        "There was a space before the 42.50",
        "There are two considerations which the user must always bear in mind",
        "It was the logs, log rotation wasn't running",
        "It seems a good moment to plan the coming year properly",
        # A time said as what came before in the conversation (writer T, the in-style dev half).
        "After that schedule everything in Eastern time",
        "Before this the user spent six years writing Java at a bank",
        "The user has said that every year since about 2019",
        "The user said Saturdays for running",
        "The user has all of that except basil",
        "The user has everything except ginger",
        # "it's" said of a thing the memory never names (writers H, I, R, W, Z, AA).
        "It's more like 3 coffees",
        "It's only until Sunday night anyway",
        "It's got 64GB of RAM",
        "It's fine that the titles get lowercased as long as proper nouns survive",
        # A time, a likeness or a thanks for what the assistant said (writers I, R, T).
        "That's when the user will do the initial seed upload",
        "That's close to what the user does with the user's beginner running group",
        "That's a big help for the kids printing in black and white too",
        # News the assistant just gave (writers R and W).
        "The user didn't know about the prompt-pay discount",
        "The user hadn't thought of the French labelling requirement",
        # How something the memory does not name struck the user (LongMemEval's chats).
        "They seem easy to make and can be customized to the user's taste",
        "These initiatives sound really promising",
        "These customs in Guangxi are so interesting",
        "It makes the user wonder",
        "He was really down-to-earth and nice",
    ],
)
def test_a_memory_pointing_back_is_dropped(memory: str) -> None:
    assert points_back(memory)


@pytest.mark.parametrize(
    "memory",
    [
        # Labelled facts of the same sets: the subject is named, or "it" is what it does, not what it was.
        "It runs on a single VM called build-01",
        "It has to be somewhere reachable by train from London",
        "Its a monorepo w/ pnpm workspaces if that matters",
        "It's a FRITZ!Box 6660 Cable on Vodafone cable",
        "It's postgres 15",
        "That's the format the user likes, just give the user the diff",
        "These days the user submits variable star observations to the AAVSO",
        "Theo is allergic to peanuts",
        "The user thinks that through before every release",
        "Therapy is on Thursdays at 6pm",
        "Items ship from the Leeds warehouse",
        # A time of its own, or a change since then that still holds.
        "After this week the user is off until March",
        "After work the user runs along the canal",
        "Since then the user runs every morning",
        "The user's doctor said to cut salt",
        "The user doesn't know any German",
        # What they are or do, said of a named thing or without a verdict on it.
        "They live in Cork",
        "It runs on Postgres and it's great",
        "These days the user is great at Go",
        "The twins seem happy at daycare",
    ],
)
def test_a_memory_naming_its_subject_is_not_pointing_back(memory: str) -> None:
    assert not points_back(memory)


@pytest.mark.parametrize(
    ("said", "memory"),
    [
        ("This happens every single morning", None),
        ("That is how I always prefer to be given instructions", None),
        ("It was the logs, log rotation wasn't running", None),
        ("My sister Ana lives in Porto", "The user's sister Ana lives in Porto"),
        # Someone named and nothing said of them: the name is a memory of its own (`named_candidates`).
        ("my wife Priya", None),
        ("My little sister Ana Maria", None),
        ("my wife is vegan", "The user's wife is vegan"),
        # A heading or a list item without its statement (writers V, X, Y and AA); "Label: value" stays.
        ("Team convention", None),
        ("60k customers", None),
        ("Rent: £1,150/month", "Rent: £1,150/month"),
    ],
)
def test_what_one_sentence_becomes(
    said: str, memory: str | None, memory_of: Callable[[str], str | None]
) -> None:
    assert memory_of(said) == memory
