"""Names of the people and pets around the user, said in passing: "my partner Kenji" -> "The user's partner
is named Kenji".

A name given as an apposition outlives the sentence that carries it: "my daughter Amara is turning 7 next
Saturday" is a one-off the decision rightly drops, yet the daughter's name is a durable fact worth a memory of
its own (one fact per memory, self-contained, the slot of "The user's daughter is named ..." so a later name
supersedes it). Derived only from the user's own words, never from the assistant's.
"""

import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.lexicon import PETS, RELATION, STOP_WORDS
from cairn_promotion.slots import slot_of

# Above the gate: the name is stated, not inferred; below what the user asked to remember (0.9).
NAMED_CONFIDENCE = 0.8
_QUALIFIER = r"(?:(?:little|big|older|younger|baby|twin|best|new|eldest|oldest|youngest|late)\s+)?"
# "my partner Kenji", "our dog Biscuit", "my wife Élodie's job": the noun, then a capitalised name (one or two
# words). Case matters for the name only, so the pattern is case-sensitive and spells out "My"/"Our".
# "my mom, Rosa, can't hear ...", "for my dad, Harold.": set off by commas, the name is closed by a comma or the
# sentence's end ("my mom, Sarah and I went" lists two people and names no one).
_NAME = r"[^\W\d_][\w’'-]*(?:\s+[^\W\d_][\w’'-]*)?"
_APPOSITION = re.compile(
    rf"\b(?:[Mm]y|[Oo]ur)\s+{_QUALIFIER}(?P<noun>(?i:{RELATION}|{PETS}))"
    rf"(?:\s+|\s*,\s*(?={_NAME}\s*(?:[,.;!)]|$)))(?P<name>{_NAME})"
)
# The plain word for a relation, so that "my mum Rosa" and "my mother, Rosa," name the same person and share
# the slot a later name supersedes.
_PLAIN_NOUN = {
    "mom": "mother",
    "mum": "mother",
    "dad": "father",
    "grandma": "grandmother",
    "grandpa": "grandfather",
}
# "my husband Tom'll be there", "Tom'd love that": a contraction ends the name and is not part of it.
_CONTRACTION = re.compile(r"[’'](?:s|d|ll|ve|re)$", re.IGNORECASE)


def named_relations(text: str) -> list[str]:
    """The "The user's <noun> is named <Name>" facts one user clause states in passing.

    Args:
        text: One user clause as written (first person).

    Returns:
        The facts, in order, without duplicates.
    """
    facts: list[str] = []
    for match in _APPOSITION.finditer(text):
        name = leading_name(match.group("name"))
        if name:
            noun = match.group("noun").lower()
            facts.append(f"The user's {_PLAIN_NOUN.get(noun, noun)} is named {name}")
    return list(dict.fromkeys(facts))


def profile_candidate(fact: str) -> Candidate:
    """A fact read off the user's clause by its shape (a name, an introduction), at `NAMED_CONFIDENCE`."""
    return Candidate(text=fact, confidence=NAMED_CONFIDENCE, tags=["profile"], slot=slot_of(fact))


def named_candidates(text: str) -> list[Candidate]:
    """One candidate per named relation in one user clause."""
    return [profile_candidate(fact) for fact in named_relations(text)]


def leading_name(words: str) -> str:
    """The capitalised name that opens `words` ("Ana lives in Porto" -> "Ana"), or "" when none does."""
    # Only the capitalised words are the name: "my sister Ana lives" -> "Ana"; "my son I think" -> nothing.
    kept: list[str] = []
    for word in words.split():
        if not word[:1].isupper() or word.lower() in STOP_WORDS or word == "I":
            break
        bare = _CONTRACTION.sub("", word)
        kept.append(bare)
        if bare != word:
            break  # "my brother Mateus's wedding": the name ends at the possessive or contraction
    return " ".join(kept)


# "The user's wife Priya", "The user's partner Luis": a person named and nothing said of them (what is left of a
# clause whose verb went elsewhere). The name itself is a memory of its own (`named_candidates`).
# Case-sensitive for the name: "The user's wife is nice" says something of her.
_BARE_NAME = re.compile(
    rf"^(?i:the user's|my|our)\s+(?i:{_QUALIFIER}(?:{RELATION}|{PETS}))\s+[A-Z][\w’'-]*(?:\s+[A-Z][\w’'-]*)?\W*$"
)


def is_bare_name(memory: str) -> bool:
    """Whether a memory only names someone of the user's ("The user's wife Priya") and says nothing of them."""
    return _BARE_NAME.match(memory) is not None
