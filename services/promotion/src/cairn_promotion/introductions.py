"""What the user says of themselves in a few words, with no verb for the decision to read: "I'm Tomás.", "ICU
nurse here", "Allergic to penicillin", "I'm originally from Cuenca, Ecuador", "I'm seeing someone new, Dani".

Such a line is how people introduce themselves or fill in a context block, and it is durable (a name, a trade,
an allergy), yet the learned decision scores it low: it has no subject or no predicate of the kind it was trained
on (0.08-0.31 on the outside sets). Like `names`, the fact is read off the user's own clause by its shape, the
whole clause and nothing else, and kept at the names' confidence (`names.profile_candidate`); the assistant's words are never read.
A bare trade or state ("Master electrician", "Vegan") is the user's only where its place in the turn says so: opening
a turn the user goes on about in the first person, or an item of a list headed as theirs ("About me:"). An allergy
of the user's or of someone of theirs (`states_an_allergy`), and a condition or the home of someone of theirs
(`states_their_condition_or_home`), are likewise kept at that confidence. So is the user's own reference said as
its label and value ("hi, customer ID BK-77310-Q": `own_identifier`), and how many the user works or lives with ("we're a
6-person agency", "we're a family of four").
"""

import functools
import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.lexicon import OCCUPATIONS, OWN_IDENTIFIER, PETS, RELATION, STOP_WORDS
from cairn_promotion.names import profile_candidate
from cairn_promotion.safety import holds_secret, is_instruction_like

_GREETING = r"(?:(?:hi|hello|hey|hiya|ol[áa]|hola|bonjour|ciao)(?: there| all| everyone)?[,!.]?\s+)?"
# "I'm Tomás.", "Hi, I'm Priya Nair", "My name is Ana": the whole clause is the introduction. The name is one
# or two capitalised words (case-sensitive); "I'm Brazilian", "I'm Catholic" describe, they do not name.
_NAME_WORD = r"[^\W\d_][\w’'-]*"
_SELF_NAME = re.compile(
    rf"^{_GREETING}(?:[Ii]['’]m|[Ii] am|[Mm]y name is|[Mm]y name['’]s|[Nn]ame['’]s)\s+"
    rf"(?P<name>{_NAME_WORD}(?:\s+{_NAME_WORD})?)\s*[.!]*$",
    re.IGNORECASE,
)
# "hi, customer ID BK-77310-Q.", "student ID 2291847", "my member number: 55120-3": the user's own reference, said
# as a label and its value with nothing else (the decision scores it 0.49-0.51, having no verb to read).
_OWN_IDENTIFIER = re.compile(rf"^{_GREETING}{OWN_IDENTIFIER}\s*[.!]*$", re.IGNORECASE)
_ID_WORD_SAID = {"id": "ID", "no": "number", "no.": "number", "#": "number"}
_NOT_A_NAME = re.compile(r"(?:ian|ese|ish|ic|ist|ed|ing)$|^[A-Z]{2,}$")
# Function words and states ("I'm Back", "I'm OK") that a capital does not make a name.
_NOT_NAME_WORDS = STOP_WORDS | frozenset(
    "back done fine good ok okay here home sorry sure ready tired new late free busy sick well".split()
)
# "ICU nurse here", "T1 diabetic here.", "Freelance translator here": a role of one to four words, then "here".
_ROLE_HERE = re.compile(r"^(?P<role>[\w/+-]+(?:\s+[\w/+-]+){0,3})\s+here\s*[.!,]*$", re.IGNORECASE)
_NOT_A_ROLE = frozenset(
    "same anyone someone everyone nobody everybody somebody it me you we they he she what who how why where when "
    "first last new out over back right just still not up down again also only is are was were been be from "
    "nothing everything something all both "
    # "rule here: no deploys during handover", "context here: ...": a heading for what follows, not a role.
    "rule rules context question problem issue thing plan idea situation background policy note update status "
    "info detail details constraint change".split()
)
# "Vegan options are thin here": a statement with its own verb, then "here", names no role.
_VERBS_IN_A_ROLE = frozenset("is are was were am be been has have had isn't aren't wasn't".split())
# "Allergic to penicillin", "Also allergic to shellfish": an allergy with no subject.
_ALLERGY = re.compile(
    r"^(?:and\s+|also\s+)?(?:(?:severely|very|mildly)\s+)?allergic to\s+(?P<what>.+?)\s*[.!]*$", re.I
)
# "I'm a nurse", "I'm an ER nurse", "I'm a retired civil engineer": what the user is, said as the whole clause
# (not "I'm a bit tired", and not a run-on "I'm a PhD student I work on ...").
_SELF_ROLE = re.compile(
    r"^(?:i['’]m|i am)\s+(?P<role>an?\s+(?!(?:bit|little|lot)\b)[\w'’/+-]+(?:\s+(?!i\b)[\w'’/+-]+){0,6})\s*[.!]*$",
    re.IGNORECASE,
)
# "I'm 34": an age.
_SELF_AGE = re.compile(
    r"^(?:i['’]m|i am)\s+(?P<age>[1-9]\d)(?:\s*(?:years old|yo|y/o))?\s*[.!]*$", re.IGNORECASE
)
# "we're a 6-person agency", "We're a small team of 5 engineers.", "we're a family of four": how many the user works
# or lives with, as the whole clause (in-style writer AB; the decision scores it 0.44).
_TEAM_SIZE = re.compile(
    r"^(?:we['’]re|we are)\s+(?:an?\s+)?(?:small\s+|tiny\s+)?(?:"
    r"(?P<n>[1-9]\d{0,3})[- ](?:person|people|strong)\s+(?P<org>[a-z]+)"
    r"|team\s+of\s+(?P<team_n>[1-9]\d{0,3})(?:\s+(?P<who>people|engineers|devs|developers|designers|nurses|sres))?"
    # "we're a family of four" (writer J): the household's size.
    r"|family\s+of\s+(?P<family>two|three|four|five|six|seven|eight|[2-9])"
    r")\s*[.!]*$",
    re.IGNORECASE,
)
# "I'm self-employed", "I'm vegetarian": a lasting state, from a closed list (most adjectives are moods).
_STATES = (
    r"self-employed|retired|vegan|vegetarian|pescatarian|pregnant|diabetic|single|married|divorced|widowed|"
    r"left-handed|colou?r-?blind|deaf|autistic|co?eliac|lactose intolerant|gluten intolerant"
)
_SELF_STATE = re.compile(
    rf"^(?:i['’]m|i am)\s+(?:(?:also|now)\s+)?(?P<state>{_STATES})\s*[.!]*$", re.IGNORECASE
)
# "About me:\n- Vegan\n- Coeliac, strictly gluten-free": the state alone, as an item of a list about the user.
_BARE_STATE = re.compile(rf"^(?P<state>{_STATES})\s*(?:[.!]*$|,)", re.IGNORECASE)
# "I'm asthmatic so running outside is hit or miss", "I'm type 1 diabetic": a condition said as an adjective (the
# decision scores "I'm asthmatic" 0.20, "I have asthma" 0.91), said as the condition, whatever follows from it.
_CONDITIONS = {
    "asthmatic": "asthma",
    "epileptic": "epilepsy",
    "anaemic": "anaemia",
    "anemic": "anemia",
    "dyslexic": "dyslexia",
    "prediabetic": "prediabetes",
    "type 1 diabetic": "type 1 diabetes",
    "type 2 diabetic": "type 2 diabetes",
}
_SELF_CONDITION = re.compile(
    r"^(?:and\s+|also\s+)?(?:i['’]m|i am)\s+(?:also\s+)?(?P<condition>"
    + "|".join(sorted(_CONDITIONS, key=len, reverse=True))
    + r")(?:\s*[.!]*$|,?\s+(?:so|and|but)\s)",
    re.IGNORECASE,
)
# "Master electrician, I run a four-person shop", "Line cook at a pasta place, and I have celiac disease": the
# first words of a turn naming the user's trade, with no verb (the decision: 0.09 and 0.25). Only where a turn
# opens and the user goes on about themselves (`opens_turn_about_the_user`), and only a trade: "Quick question"
# opens turns too, and "Plumber, electrician and tiler are booked" lists others.
_BARE_TRADE = re.compile(
    rf"^(?P<role>(?!(?:the|a|an|my|our|your|their|his|her|this|that|no|any)\b)(?:[\w/&+-]+\s+){{0,3}}"
    rf"(?:{OCCUPATIONS}))"
    r"(?P<where>\s+(?:at|in|for|with)\s+(?:an?|the)\s+[\w'’&/ -]{2,40}?)?\s*[.!]*$",
    re.IGNORECASE,
)
_GOES_ON_AS_THE_USER = re.compile(
    r"^\s*[,;:.!–—-]+\s*(?:and\s+|so\s+|but\s+)?(?:i|i['’]m|i['’]ve|i['’]d|i['’]ll|my|we|we['’]re|our)\b",
    re.I,
)


def opens_turn_about_the_user(clause: str, turn: str) -> bool:
    """Whether a clause opens its turn and the user then goes on in the first person ("Master electrician, I run
    ...")."""
    head = turn.lstrip()
    return head.startswith(clause) and _GOES_ON_AS_THE_USER.match(head[len(clause) :]) is not None


# "About me:", "Health context:", "My background:": a list under such a heading is the user's own.
_ABOUT_ME = re.compile(
    r"^\W*(?:about me|me|my (?:info|details|profile|background|context|situation)|(?:health|medical)(?: \w+)?|"
    r"profile|background|context)\s*:\s*$",
    re.IGNORECASE,
)
_ITEM = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+")


def is_bare_profile(clause: str) -> bool:
    """Whether a clause is a bare trade or state, which only its place in the turn can say is the user's."""
    text = clause.strip()
    return _BARE_TRADE.match(text) is not None or _BARE_STATE.match(text) is not None


def listed_about_the_user(clause: str, turn: str) -> bool:
    """Whether a clause opens an item of a list whose heading says it is about the user ("About me:\n- Vegan")."""
    words = clause.split()
    return bool(words) and any(
        item.startswith(clause) for item in _items_about_the_user(turn).get(words[0], ())
    )


@functools.lru_cache(maxsize=32)
def _items_about_the_user(turn: str) -> dict[str, tuple[str, ...]]:
    """The items of the turn's lists headed as the user's, by first word: one pass over a turn, however many of
    its clauses ask (a pasted list of thousands of items must not cost a pass per item)."""
    items: dict[str, list[str]] = {}
    about = False
    for line in turn.splitlines():
        if (bullet := _ITEM.match(line)) is None:
            about = _ABOUT_ME.match(line) is not None
            continue
        if about and (item := line[bullet.end() :].strip()):
            items.setdefault(item.split()[0], []).append(item)
    return {word: tuple(found) for word, found in items.items()}


# "I'm seeing someone new, Dani", "I'm dating Kenji now": a partner named. "Seeing" needs the "someone": "I'm
# seeing Dr Patel" names a doctor.
_NEW_PARTNER = re.compile(
    rf"^(?:and\s+|but\s+)?(?:i['’]m|i am)\s+(?:now\s+)?(?:seeing\s+someone(?:\s+new)?|dating(?:\s+someone(?:\s+new)?)?)"
    rf",?\s+(?P<name>{_NAME_WORD})(?:\s+now)?\s*[.!]*$",
    re.IGNORECASE,
)
# "I'm originally from Cuenca, Ecuador", "I'm from Lyon": where the user comes from, as the whole clause (the
# decision scores it 0.48 on the in-style dev half). Capitalised words only: "I'm from the future" names no place.
_FROM_PLACE = re.compile(
    r"^(?:i['’]m|i am)\s+(?:originally\s+)?from\s+"
    r"(?P<place>(?-i:[A-Z][\w’'-]*)(?:(?:,\s*|\s+)(?-i:[A-Z][\w’'-]*)){0,3})\s*[.!]*$",
    re.IGNORECASE,
)
_VOWEL_SOUND = re.compile(r"^(?:[aeiou]|[AEFHILMNORSX](?:[A-Z\d]|$))")


def _is_name(words: str) -> bool:
    """Capitalised words that are not a function word, a state ("Back", "OK") or a nationality or creed."""
    return all(
        w[:1].isupper() and w.lower() not in _NOT_NAME_WORDS and not _NOT_A_NAME.search(w)
        for w in words.split()
    )


# Someone of the user's, as a memory opens on them: "the user's mother", "the user's dog Pepper".
_OF_THEIRS = rf"the user's (?:{RELATION}|{PETS})(?: (?-i:[A-Z])[\w'’-]*)?"
# "The user's mother is allergic to sulfa drugs", "The user's dog Pepper is allergic to chicken": an allergy of the
# user or of someone of theirs, as a memory. The decision scores another's allergy low (0.37-0.49 on the outside
# sets, every one labelled), so it is kept at the names' confidence, as the user's own subjectless one is.
_ALLERGY_MEMORY = re.compile(
    rf"^(?:on [\d-]+, )?(?:{_OF_THEIRS}|the user) is (?:also )?"
    r"(?:(?:severely|very|mildly|badly) )?allergic to \w",
    re.IGNORECASE,
)


# "The user's mom has dementia", "The user's mother has knee problem", "The user's dad lives in Tucson": a condition
# or the home of someone of the user's, scored 0.51-0.55 on the outside sets (all labelled), like their allergy.
_CONDITION_WORDS = (
    r"dementia|alzheimer'?s|parkinson'?s|asthma|diabetes|arthritis|epilepsy|cancer|copd|adhd|autism|"
    r"hyperthyroidism|hypothyroidism|celiac|coeliac|ibs|migraines?"
)
_THEIR_CONDITION_OR_HOME = re.compile(
    rf"^(?:on [\d-]+, )?{_OF_THEIRS} "
    rf"(?:has (?:(?:type [12] |severe |early[- ]onset |mild )?(?:{_CONDITION_WORDS})\b|(?:an? )?\w+ "
    r"(?:problems?|issues|condition|disease|disorder|syndrome)\b)|lives in (?-i:[A-Z]))",
    re.IGNORECASE,
)


# "Tom is vegetarian", "The user is actually pescatarian now", "The user had ACL reconstruction on the user's left
# knee", "The user had the user's left hip replaced in January": a diet, a lasting condition or an operation of
# the user's or of someone named, in a short memory. Scored 0.40-0.58 on the outside sets (8 of 9 labelled), and
# kept 54 times in 59 with a label when the decision passes them.
_DIET_OR_STATE = (
    r"vegetarian|vegan|pescatarian|coeliac|celiac|lactose[- ]intolerant|gluten[- ]free|diabetic|"
    r"type [12] diabetic|hard of hearing|deaf|blind|colou?r ?blind|dyslexic|autistic"
)
_OPERATION = r"surgery|replaced|replacement|reconstruction|transplant|removed|operation"
# Capitalised words that open a memory and name no one: "This is vegan", "Dinner is vegetarian".
_NAMES_NO_ONE = r"(?:this|that|it|there|everything|everyone|nobody|nothing|which|who|food|dinner|lunch|menu)"
_HEALTH_FACT = re.compile(
    rf"^(?:on [\d-]+, )?(?:{_OF_THEIRS}|the user|(?!{_NAMES_NO_ONE}\b)(?-i:[A-Z][a-z]+)) "
    rf"(?:is (?:now |actually |also |strictly |fully )*(?:{_DIET_OR_STATE})\b"
    rf"|had (?:an? |the |the user's |his |her )?(?:[\w-]+ ){{0,3}}(?:{_OPERATION})\b)",
    re.IGNORECASE,
)
_HEALTH_FACT_MAX_WORDS = 14


def states_a_health_fact(memory: str) -> bool:
    """Whether a short memory is a diet, a lasting condition or an operation of the user or of someone named."""
    return len(memory.split()) <= _HEALTH_FACT_MAX_WORDS and _HEALTH_FACT.match(memory) is not None


def states_an_allergy(memory: str) -> bool:
    """Whether a memory is an allergy of the user or of someone of theirs (a relation or a pet)."""
    return _ALLERGY_MEMORY.match(memory) is not None


def states_their_condition_or_home(memory: str) -> bool:
    """Whether a memory is a condition or the home of someone of the user's (a relation or a pet)."""
    return _THEIR_CONDITION_OR_HOME.match(memory) is not None


def introduced(text: str, of_the_user: bool = False) -> list[str]:
    """The facts one user clause states about the user in a few words: "The user's name is Tomás", "The user is
    an ICU nurse", "The user is allergic to penicillin"; none for any other clause. A bare trade ("Master
    electrician") or state ("Vegan") counts only where its place in the turn says it is the user's
    (`of_the_user`: `opens_turn_about_the_user`, `listed_about_the_user`)."""
    clause = text.strip()
    if (match := _SELF_CONDITION.match(clause)) is not None:
        return [f"The user has {_CONDITIONS[match.group('condition').lower()]}"]
    if of_the_user and (match := _BARE_TRADE.match(clause)) is not None:
        return [
            f"The user is {_with_article(_opening_lowered(match.group('role')))}{match.group('where') or ''}"
        ]
    if of_the_user and (match := _BARE_STATE.match(clause)) is not None:
        return [f"The user is {match.group('state').lower()}"]
    if (match := _SELF_NAME.match(clause)) is not None and _is_name(match.group("name")):
        return [f"The user's name is {match.group('name')}"]
    if (match := _SELF_ROLE.match(clause)) is not None:
        return [f"The user is {match.group('role')}"]
    if (match := _SELF_AGE.match(clause)) is not None:
        return [f"The user is {match.group('age')} years old"]
    if (match := _SELF_STATE.match(clause)) is not None:
        return [f"The user is {match.group('state').lower()}"]
    if (match := _ROLE_HERE.match(clause)) is not None:
        role = match.group("role")
        words = role.lower().split()
        last = words[-1]
        if (
            words[0] in _NOT_A_ROLE
            or words[0] in STOP_WORDS
            or (last.endswith("s") and not last.endswith("ss"))
            or not _VERBS_IN_A_ROLE.isdisjoint(words)
        ):
            return []
        return [f"The user is {_with_article(_opening_lowered(role))}"]
    if (match := _FROM_PLACE.match(clause)) is not None:
        return [f"The user is originally from {match.group('place')}"]
    if (match := _NEW_PARTNER.match(clause)) is not None and _is_name(match.group("name")):
        return [f"The user's partner is named {match.group('name')}"]
    if (match := _ALLERGY.match(clause)) is not None:
        return [f"The user is allergic to {match.group('what')}"]
    if (identifier := own_identifier(clause)) is not None:
        return [identifier]
    if (match := _TEAM_SIZE.match(clause)) is not None:
        if match.group("family"):
            return [f"The user's household is a family of {match.group('family').lower()}"]
        if match.group("n"):
            return [f"The user's {match.group('org').lower()} has {match.group('n')} people"]
        return [f"The user's team has {match.group('team_n')} {(match.group('who') or 'people').lower()}"]
    return []


def own_identifier(clause: str) -> str | None:
    """ "customer ID BK-77310-Q" -> "The user's customer ID is BK-77310-Q"; None unless the clause is only that."""
    if (match := _OWN_IDENTIFIER.match(clause.strip())) is None:
        return None
    *key, word = match.group("key").split()
    said = " ".join(k if k.isupper() else k.lower() for k in key)
    return f"The user's {said} {_ID_WORD_SAID.get(word.lower(), word.lower())} is {match.group('value')}"


def _opening_lowered(role: str) -> str:
    """A role without the capital it got for opening the line ("Farmer here", "Master electrician"); "ICU" stays."""
    first, _, rest = role.partition(" ")
    if first[:1].isupper() and first[1:].islower():
        return f"{first.lower()} {rest}".strip()
    return role


def _with_article(role: str) -> str:
    return f"{'an' if _VOWEL_SOUND.match(role) else 'a'} {role}"


def introduced_candidates(text: str, of_the_user: bool = False) -> list[Candidate]:
    """One candidate per fact `introduced` reads in one user clause; none from a clause holding a credential or
    reading as an instruction (the safety rules every promoted memory passes)."""
    if holds_secret(text) or is_instruction_like(text):
        return []
    return [profile_candidate(fact) for fact in introduced(text, of_the_user)]
