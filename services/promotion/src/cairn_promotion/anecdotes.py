"""A story told in passing, or what someone else says, is not a fact about the user.

These run on a memory as it would be written (after `rewrite.self_contained`), after the decision kept its
clause. "Priya's brother once ordered two identical birthday cakes", "Two years ago on fieldwork the little
RIB flipped in Cawsand Bay", "Back in 2021 a lad ... convinced the user to put two grand into some crypto coin",
"last summer at the user's mum's barbecue Pickle ate an entire Victoria sponge": an event someone else lived,
told for colour. What the user did themselves stays: "The user moved to Zotero last autumn", "The user had ACL
surgery back in 2019" are the user's history, and "Half PB is 1:38 from last spring" is a record, not a story.

So is hearsay: "Dana says it's fine since PG 11", "The user's friend says it'll ruin the user for every other
language", "Log says AccessDenied on PutObject", "The printer's screen says it's connected". What a doctor,
a physio or a supervisor says is often the user's diagnosis or standing instruction, and what a written rule
says ("The team's style guide says max line length 100") is the rule: both stay.
"""

import re

from cairn_promotion.lexicon import FEMALE, MALE, PAST_IRREGULAR, PETS, RELATION, ROLES
from cairn_promotion.rewrite import undated
from cairn_promotion.rules import CARER

# "once ordered", "once returned a draft": a single time, told as a story ("once a week" is a habit).
_ONCE_DONE = re.compile(rf"\bonce (?:\w+ed|{'|'.join(sorted(PAST_IRREGULAR))})\b", re.I)
# A past season or a span ago that opens the story, within its first words ("from last spring" and "since last
# autumn" date a record or a state, not a story).
_STORY_TIME = re.compile(
    r"^(?:\S+\s+){0,7}?(?<!from )(?<!since )"
    r"(?:last (?:summer|spring|winter|autumn|weekend|christmas)|(?:\w+ )?years ago|back in \d{4}"
    # "Last time a doctor almost gave the user amoxicillin", "last time the user made something like this the top
    # got quite dark" (writers E and W; none matched). A record ("The user's last time at the Berlin half was
    # 1:41") has no clause after "last time", and stays.
    r"|(?:(?:the )?last time|the other day|one time)(?= (?:a|an|the|someone|he|she|they|we)\b))\b",
    re.IGNORECASE,
)
_ABOUT_THE_USER = re.compile(r"^the user(?:'s team)? ", re.IGNORECASE)


def is_anecdote(memory: str) -> bool:
    """Whether a memory is a past event someone other than the user lived, told in passing."""
    opening = undated(memory)
    if _ABOUT_THE_USER.match(opening):
        return False
    return _ONCE_DONE.search(opening) is not None or _STORY_TIME.search(opening) is not None


# Who or what says it: up to four words opening the memory, not the user.
_HEARSAY = re.compile(
    r"^(?!the user\s)(?P<holder>[\w'’-]+(?: [\w'’-]+){0,3}?) (?:also )?"
    # "A statistician friend told the user p-values are 'basically astrology'", "The user's dad Len told the user
    # about every garden he's ever dug" (writers I and L; none matched).
    r"(?:says|said|shows|complains|say|show|complain|told the user|tells the user)\b",
    re.IGNORECASE,
)
# What a written rule says is the rule: "The team's style guide says max line length 100".
_WRITTEN_RULE = re.compile(
    r"\b(?:guide|policy|contract|handbook|docs|documentation|readme|lease|terms|rules|runbook|agreement)\b",
    re.IGNORECASE,
)


# "The user has been asked to write a short literature review by the end of the month", "has been sent a
# spreadsheet by the treasurer", "has been put in charge of the team offsite again", "is told by the user's
# daughter Eleanor ...": what someone else asked of the user, sent or told them, the errand the session is about
# (writers I and N; 4 survivors, none matched).
_PUT_TO_THE_USER = re.compile(
    r"^the user (?:has|had) been (?:asked|sent|given|tasked|put in charge)\b|^the user is told by\b",
    re.IGNORECASE,
)


def is_hearsay(memory: str) -> bool:
    """Whether a memory is what someone or something other than the user or their carer says, or what someone
    asked of the user, sent or told them."""
    opening = undated(memory)
    if _PUT_TO_THE_USER.match(opening):
        return True
    match = _HEARSAY.match(opening)
    if match is None:
        return False
    holder = match.group("holder")
    return CARER.search(holder) is None and _WRITTEN_RULE.search(holder) is None


# "The user's husband Tom wants a party", "The user's mom wants 200 guests", "The user's fiancé Jonas wanted a
# DJ", "The user's brother Tomasz is sorting the venue": what someone of the user's family wants for the event
# the session plans (writers E, I, L, M and X; 7 survivors, none matched; no writer labelled a relative's wish).
# A wish that recurs is the person's habit, what a supervisor, a clinician or a boss wants is their standing
# rule, and what a child or a pet needs is often their care ("needs insulin", "needs an EpiPen"): none matches.
_FAMILY_WISH = re.compile(
    rf"^the user's (?:{FEMALE}|{MALE}|partner|spouse|kids?|child|children|grandchild|cousin|{PETS})"
    r"(?: [A-Z][\w.'-]*){0,2} (?:really |also |still )?(?:wants?|wanted|would like|is sorting|is handling)\b"
    r"(?!.*\b(?:every|each|always|daily|twice|a day|a week|a month|for life)\b)",
    re.IGNORECASE,
)


def is_family_wish(memory: str) -> bool:
    """Whether a memory is what someone of the user's family wants for this session's plan."""
    return _FAMILY_WISH.match(undated(memory)) is not None


# "The user's boss Gerald is a lovely man", "The user's supervisor, Dr Helen Marsh, is brilliant but
# terrifying", "The user's neighbour Alan is not the most reliable witness", "The user's partner Luis is the
# decisive one", "Ellie is bossy": what the user thinks of someone's character, told for colour (writers I and
# T; 5 survivors, none matched; no writer labelled one). What someone is good or bad with ("great with kids"),
# eats ("a picky eater") or lives with ("anxious around strangers") is not a character word here, and stays.
_CHARACTER = re.compile(
    # Someone of the user's by relation or role, with their name ("The user's supervisor, Dr Helen Marsh,"), or
    # a name alone: a thing's "unreliable" or "great" is a fact about it.
    rf"^(?:the user's (?:{RELATION}|{ROLES})(?:,? (?:[A-Z][\w.'’-]*)(?: [A-Z][\w.'’-]*){{0,2}},?)?|[A-Z][a-z]+) "
    r"(?:is|are) (?:a |an |the )?"
    r"(?:not the most |very |really |so |quite |pretty |super |such a |a bit )?"
    r"(?:lovely|brilliant|nice|kind|great|amazing|wonderful|bossy|decisive|terrifying|grumpy|funny|sweet|"
    r"stubborn|lazy|reliable|unreliable|difficult|easygoing|chill|generous|hilarious)\b"
    r"(?! (?:with|at|about|for|to)\b)",
    re.IGNORECASE,
)


def is_character_sketch(memory: str) -> bool:
    """Whether a memory is only what the user thinks of someone's character ("Gerald is a lovely man")."""
    return _CHARACTER.match(undated(memory)) is not None
