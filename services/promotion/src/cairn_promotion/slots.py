"""What a fact is about: its slot. Two facts with the same slot and different values are one fact updated.

"The standup is at 09:30" and "The standup is at 10:00" share the slot `standup`; "The user lives in
Berlin" and "The user moved to Lisbon" share `user|residence`, although neither is a paraphrase of the
other. A slot is the fact's subject (its words before the predicate, lower-cased, stemmed, without
articles, possessive "user" and time-y modifiers), or a named attribute family for the few predicates
that change a person's profile (where they live, where they work, which plan they are on). A fact whose
subject cannot be found has no slot and only ever supersedes by paraphrase.
"""

import re

from cairn_promotion.lexicon import PETS, RELATION, ROLES
from cairn_promotion.places import moves_home
from cairn_promotion.text import stem

# Attribute families: predicates that state the same attribute of the user in different words.
_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern, re.IGNORECASE))
    for name, pattern in (
        # Where the user lives; with whom is another fact ("lives with the user's grandmother Rosa").
        (
            "user|residence",
            r"^(?:on [\d-]+, )?the user (?:now |recently |just )?(?:lives|lived|has lived|is living|is based|"
            r"is settled)\b(?! with\b)(?: (?:in|at))?\s",
        ),
        # Where or as what the user works: an employer or a role after "at / for / as", a new job. How they work
        # is not it ("works from home", "works night shifts", "started eating fish again"): read as the job,
        # "The user works night shifts" replaced "The user is a nurse at St. Vincent's" of the same session
        # (`latest_per_slot`), and would have superseded it in memory.
        (
            "user|job",
            r"^(?:on [\d-]+, )?the user (?:now |recently |just )?(?:works|worked|is working|is employed)"
            r"(?: (?:remotely|remote|full[- ]time|part[- ]time|freelance))? (?:at|for|as)\s"
            r"|^(?:on [\d-]+, )?the user (?:now |recently |just )?(?:works|worked|is working) in [\w -]{2,40}? "
            r"(?:at|for) \S"
            r"|^(?:on [\d-]+, )?the user (?:now |recently |just )?(?:has )?(?:started|joined)"
            r"(?: (?:at|as)\s| a new job\b| (?-i:[A-Z]))"
            r"|^(?:on [\d-]+, )?the user is (?:now )?(?:a|an|the) [\w -]{2,40}? (?:at|for|with) (?-i:[A-Z])",
        ),
        # What the user eats, on the one axis of meat and fish: "The user is vegetarian", later "The user is
        # actually pescatarian now" (writer O). An intolerance or another diet is another fact ("The user is
        # lactose intolerant", "The user's sister Ines is vegan").
        (
            "user|diet",
            r"^(?:on [\d-]+, )?the user is (?:(?:now|actually|currently|mostly|strictly|fully) )*"
            r"(?:vegan|vegetarian|pescatarian|pescetarian|flexitarian|an omnivore|plant-based)\b",
        ),
        (
            "user|plan",
            r"^(?:on [\d-]+, )?the user (?:is (?:now )?on|upgraded to|downgraded to|switched to) the \w+ plan\b",
        ),
    )
)
_USER_MOVED = re.compile(
    r"^(?:on [\d-]+, )?the user (?:now |recently |just |finally )?(?:has )?(?:moved|relocated)\b",
    re.IGNORECASE,
)
# "Tomasz Nowak is the user's tech lead": a named person holding a role; the role is the slot.
_ROLE_HOLDER = re.compile(
    r"^(?-i:[A-Z])[\w.'-]+(?: (?-i:[A-Z])[\w.'-]+){0,3} (?:is|are) (?:now )?(?:the user's|the|their|our) "
    r"([\w -]{2,40}?)(?: now)?$",
    re.IGNORECASE,
)
# "<X> owns <Y>" / "<Y> is owned by <X>": the owned thing is the slot.
_OWNS = re.compile(r"\bowns (?:the )?(.+)$|^(?:the )?(.+?) (?:is|are) (?:now )?owned by\b", re.IGNORECASE)
# The predicate: where the subject ends. Copulas, common state verbs and "moved/changed ... to".
_PREDICATE = re.compile(
    r"\s(?:is|are|was|were|has|have|runs?|lives?|goes|go|uses?|sits?|builds?|happens?|starts?|lands?|"
    r"moved|changed|switched|slipped|shifted|got moved|(?:has|have) (?:moved|changed|switched))\b",
    re.IGNORECASE,
)
# "We moved the standup to 10:00": the moved thing is the subject.
_MOVED = re.compile(
    r"^(?:we|the user|the user's team|the team) (?:have |has )?(?:moved|changed|switched|rescheduled|pushed|"
    r"bumped|upgraded|updated) (.+?) (?:to|from)\b",
    re.IGNORECASE,
)
# "The user's partner is named Dani" (the rewrite of "my partner's name is Dani").
_NAMED = re.compile(r"^(.+?) (?:is|are) (?:now )?named\b", re.IGNORECASE)
_USER_VERB = re.compile(r"^(?:the )?user (?!'s\b)", re.IGNORECASE)
_LOCATIVE = frozenset(
    "is are was were moved changed switched slipped shifted run runs live lives go goes sit "
    "sits land lands happen happens start starts".split()
)
# A subject this generic is no subject: "the team is great" must not supersede "the team is in Lagos".
_GENERIC = frozenset("team company project service app repo codebase they it he she family one thing".split())
_SUBJECT_NOISE = frozenset(
    "the a an user user's users their its our this that these those new current now weekly daily monthly "
    "working usual regular main actual for of with in on at to from about by".split()
)
_MAX_SUBJECT_WORDS = 4


def slot_of(fact: str) -> str | None:
    """The slot of a self-contained fact, or None.

    Args:
        fact: A rewritten, third-person fact ("The user's prod runs in us-west-2").

    Returns:
        A short canonical key, e.g. "prod|run" or "user|residence", or None when there is no clear subject.
    """
    text = " ".join(fact.split()).rstrip(" .!")
    for name, pattern in _FAMILIES:
        if pattern.search(text):
            return name
    # "The user moved to Lisbon" is where the user lives; "The user moved to Zotero" is a tool, not a home.
    if _USER_MOVED.search(text) and moves_home(text):
        return "user|residence"
    if match := _OWNS.search(text):
        return _key(match.group(1) or match.group(2), "owner")
    if match := _ROLE_HOLDER.match(text):
        return _key(match.group(1), "role")
    text = re.sub(r"^on [\d-]+, ", "", text, flags=re.IGNORECASE)
    if _USER_VERB.match(text):
        return None  # "The user prefers tea": one of many facts of that shape, not a value of one attribute
    if match := _NAMED.match(text):
        return _key(match.group(1), "name")  # the sister's name is not where the sister lives
    moved = _MOVED.match(text)
    if moved is not None:
        return _key(moved.group(1), "is")
    predicate = _PREDICATE.search(text)
    if predicate is None:
        return None
    subject = text[: predicate.start()]
    if not _PERSON.search(subject):
        return _key(subject, _verb_class(predicate.group(0)))
    relation = _person_relation(predicate.group(0), text[predicate.end() :])
    # "The user's sister Ana lives in Porto" and "my sister moved to Lisbon" hold one slot: the name is not it.
    return _key(_NAME_AFTER.sub("", subject), relation) if relation is not None else None


# "The user's sister lives in Porto" / "is a dentist" / "is visiting in May": a person's facts of many
# attributes share the copula, so only where they live and who holds a role keep a slot of their own.
# The same for a pet or someone known by role, and with the name said beside it ("The user's dog Pepper").
_PERSON = re.compile(rf"\b(?:{RELATION}|{PETS}|{ROLES})(?:\s+(?-i:[A-Z])[\w'-]*)?$", re.IGNORECASE)
_NAME_AFTER = re.compile(r"\s+(?-i:[A-Z])[\w'-]*$")
_RESIDENCE_VERB = re.compile(r"\blives?$", re.IGNORECASE)
_MOVED_VERB = re.compile(r"\b(?:moved|relocated)$", re.IGNORECASE)
_WHERE = re.compile(r"^\s+(?:now\s+)?(?:in|at|based|from|near)\b", re.IGNORECASE)
_WHO = re.compile(r"^\s+(?:now\s+)?(?-i:[A-Z])\w", re.IGNORECASE)


def _person_relation(verb: str, rest: str) -> str | None:
    verb = verb.strip()
    if _RESIDENCE_VERB.search(verb) or (verb.lower() in ("is", "are") and _WHERE.match(rest)):
        return "residence"
    if _MOVED_VERB.search(verb):
        return "residence" if moves_home(f"{verb} {rest.strip()}") else None
    if verb.lower() in ("is", "are") and _WHO.match(rest):
        return "is"  # "The user's manager is Leila Haddad": who holds the role
    return None


def _verb_class(verb: str) -> str:
    verb = verb.strip().lower().split()[-1]
    if verb in _LOCATIVE:
        return "is"  # "the standup is at 10:00", "the standup moved to 10:00": the same slot
    return stem(verb)


def _key(subject: str, relation: str) -> str | None:
    words = [
        w for w in re.findall(r"[\w:/.+#-]+", subject.lower().replace("'s", " ")) if w not in _SUBJECT_NOISE
    ]
    words = [w for w in words if not any(ch.isdigit() for ch in w) or ":" in w]
    if not words or len(words) > _MAX_SUBJECT_WORDS or (len(words) == 1 and words[0] in _GENERIC):
        return None
    return f"{' '.join(sorted(stem(w) for w in words))}|{relation}"
