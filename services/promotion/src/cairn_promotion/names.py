"""Names of the people and pets around the user, said in passing: "my partner Kenji" -> "The user's partner
is named Kenji".

A name given as an apposition outlives the sentence that carries it: "my daughter Amara is turning 7 next
Saturday" is a one-off the decision rightly drops, yet the daughter's name is a durable fact worth a memory of
its own (one fact per memory, self-contained, the slot of "The user's daughter is named ..." so a later name
supersedes it). Derived only from the user's own words, never from the assistant's.
"""

import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.lexicon import PETS, RELATION, ROLES, STOP_WORDS
from cairn_promotion.rewrite import with_date
from cairn_promotion.slots import slot_of

# Above the gate: the name is stated, not inferred; below what the user asked to remember (0.9).
NAMED_CONFIDENCE = 0.8
_QUALIFIER = r"(?:(?:little|big|older|younger|baby|twin|best|new|eldest|oldest|youngest|late)\s+)?"
# "my partner Kenji", "our dog Biscuit", "my wife Élodie's job": the noun, then a capitalised name (one or two
# words). Case matters for the name only, so the pattern is case-sensitive and spells out "My"/"Our".
# "my mom, Rosa, can't hear ...", "for my dad, Harold.": set off by commas, the name is closed by a comma or the
# sentence's end ("my mom, Sarah and I went" lists two people and names no one).
_NAME = r"[^\W\d_][\w’'-]*(?:\s+[^\W\d_][\w’'-]*)?"
# Someone the user deals with by role goes by a title as often as not: "my supervisor Dr. Eun-ji Park", "my
# accountant, Mr Pryce," (the outside writers label every one of them).
_TITLE = r"(?:Dr|Prof|Mr|Mrs|Ms|Mx)\.?\s+"
_APPOSITION = re.compile(
    rf"\b(?:[Mm]y|[Oo]ur)\s+{_QUALIFIER}(?P<noun>(?i:{RELATION}|{PETS}|{ROLES}))"
    rf"(?:\s+|\s*,\s*(?=(?:{_TITLE})?{_NAME}\s*(?:[,.;!)]|$)))(?P<title>{_TITLE})?(?P<name>{_NAME})"
)
# Someone known by role is named only with a title: the in-style writers and dataset_v2 label no "my flatmate
# Jonas", "my accountant Dana" (dataset_v2 dev, the outside writers' sets: 2 matches in 7 such memories), while
# every "my advisor Dr. Okafor" is labelled.
_ROLE_NOUNS = frozenset(ROLES.split("|"))
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
        noun = match.group("noun").lower()
        if name and (title := match.group("title")):
            facts.append(f"The user's {_PLAIN_NOUN.get(noun, noun)} is {title}{name}")
        elif name and noun not in _ROLE_NOUNS:
            facts.append(f"The user's {_PLAIN_NOUN.get(noun, noun)} is named {name}")
    return list(dict.fromkeys(facts))


def profile_candidate(fact: str, tag: str = "profile") -> Candidate:
    """A fact read off the user's clause by its shape (a name, an introduction, an answer, a preference), at
    `NAMED_CONFIDENCE`."""
    return Candidate(text=fact, confidence=NAMED_CONFIDENCE, tags=[tag], slot=slot_of(fact))


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


_NAMED_FACT = re.compile(rf"^The user's (?P<noun>[\w -]+?) is (?:named (?P<name>.+)|(?P<titled>{_TITLE}.+))$")
# "Dad lives in Tucson", "Mum is named Ruth": a parent or grandparent called by the word for them is the user's.
_KIN_AS_NAME = re.compile(
    r"^(?P<date>On [\d-]+, )?(?P<kin>Mom|Mum|Dad|Mother|Father|Grandma|Grandpa|Granny|Grandmother|Grandfather|Nan|Nana)"
    r"(?P<rest>\s+(?!and\b|or\b|&)\w.*)$"
)


def is_name_fact(memory: str) -> bool:
    """Whether a memory only names someone of the user's: "The user's partner is named Dev", "The user's advisor is
    Dr. Okafor"."""
    if (named := _NAMED_FACT.match(memory)) is None:
        return False
    return named.group("titled") is not None or named.group("name")[:1].isupper()


def with_kin_owner(memory: str) -> str:
    """A memory opening on a parent or grandparent called by the word for them, said as the user's: "Dad lives in
    Tucson" -> "The user's dad lives in Tucson". Read alone, "Dad" is nobody's."""
    if (kin := _KIN_AS_NAME.match(memory)) is None:
        return memory
    return with_date(kin.group("date"), f"The user's {kin.group('kin').lower()}{kin.group('rest')}")


_DATED = re.compile(r"^(?P<date>On [\d-]+, )?(?P<rest>.*)$", re.DOTALL)


def with_relations(candidates: list[Candidate]) -> list[Candidate]:
    """A session's memories with a bare name opening them said as whose it is: "Dev works night shifts as a
    paramedic" -> "The user's partner Dev works night shifts as a paramedic", when the session named Dev as the
    user's partner (a name memory of its own) and no one else by that name. Read alone, "Dev" is nobody."""
    nouns: dict[str, set[str]] = {}
    for candidate in candidates:
        if (named := _NAMED_FACT.match(candidate.text)) is not None:
            nouns.setdefault(named.group("name") or named.group("titled"), set()).add(named.group("noun"))
    if not nouns:
        return candidates
    said: list[Candidate] = []
    for candidate in candidates:
        dated = _DATED.match(candidate.text)
        rest = dated.group("rest") if dated else candidate.text
        name = next(
            (
                n
                for n, owners in nouns.items()
                if len(owners) == 1 and re.match(rf"{re.escape(n)}(?:'s)?\s", rest)
            ),
            None,
        )
        if name is None or _NAMED_FACT.match(candidate.text):
            said.append(candidate)
            continue
        (noun,) = nouns[name]
        text = with_date(dated.group("date") if dated else None, f"The user's {noun} {rest}")
        said.append(candidate.model_copy(update={"text": text, "slot": slot_of(text)}))
    return said
