"""A change of a setting said as an event is remembered as the value it leaves.

"we moved the standup to 10:00 starting next week" -> "The standup is at 10:00"; "I bumped the contribution to
$600 a month" -> "The user's contribution is $600 a month". The value is what a later question asks ("when is
the standup?") and what the memory it replaces held, so the two share a slot and the new one supersedes the
old. When the change happened or takes effect is left out: it is the event's, not the setting's. Only values
that are times, days, amounts or quantities: "moved the files to S3" is not a setting.

A move home is the same: "I moved to Lisbon last month" -> "The user lives in Lisbon", which answers "where
do I live?" and supersedes "The user lives in Berlin". Only a known place (`places`): "I moved to Zotero" is
a new tool, and keeps its words.
"""

import re

from cairn_promotion.lexicon import PETS, RELATION, WEEKDAY
from cairn_promotion.places import place_at
from cairn_promotion.rewrite import undated

# When the change happened or takes effect.
_WHEN = (
    r"(?i:\s*,?\s*(?:last|this|next) (?:week|month|year|quarter|sprint|term)"
    r"|\s*,?\s*in (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*(?: \d{4})?"
    r"|\s*,?\s*(?:a|one|two|three|\d+|a few|a couple of) (?:days?|weeks?|months?) ago"
    r"|\s*,?\s*(?:starting|from|as of|effective) (?:next|this|today|tomorrow|monday|tuesday|wednesday|thursday|"
    r"friday|saturday|sunday|jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[\w ]*"
    r"|\s*,?\s*in (?:\d{4}|the (?:spring|summer|autumn|fall|winter))"
    r"|\s*,?\s*(?:last|this) (?:spring|summer|autumn|fall|winter|weekend)"
    r"|\s*,?\s*(?:recently|now))*"
)
_DAYS = rf"{WEEKDAY}s?"
_TIME = r"\d{1,2}(?::\d{2})?(?:\s*(?:am|pm))?|noon|midday"
_AMOUNT = r"[$£€]\s?\d[\d,.]*k?|\d[\d,.]*\s?(?:%|mg|mcg|g|kg|ml|k|minutes?|mins?|hours?|days?|weeks?)"
# "The user's team moved the standup to 10:00", "The user bumped the contribution to $600 a month".
_SET_TO = re.compile(
    r"^(The user|The user's team) (?:just |finally |recently )?"
    r"(?:moved|bumped|raised|increased|upped|lowered|reduced|cut|changed|pushed|shifted) "
    r"(?:the |the user's )([\w' :-]{1,30}?) to (?:"
    rf"(?P<at>(?:{_TIME})(?: on {_DAYS})?)|(?P<on>{_DAYS}(?: at (?:{_TIME}))?)"
    rf"|(?P<amount>(?:{_AMOUNT})(?: (?:a|per) (?:day|week|month|year))?))"
    rf"{_WHEN}$",
    re.IGNORECASE,
)


# "The user moved to Lisbon last month", "The user's sister moved to Porto", "The user finally moved from Leeds
# to Utrecht": who, and where to.
_WHO_MOVED = (
    rf"^(The user|The user's (?:{RELATION}|{PETS})(?: (?-i:[A-Z])[\w'-]+)?) (?:recently |just |finally )?"
)
_MOVED_HOME = re.compile(
    rf"{_WHO_MOVED}(?:has )?(?:moved|relocated) (?:back )?(?:from [^,]+? )?to (.+)$",
    re.IGNORECASE,
)
# "The user moved from Ghent in the summer" (the new home said in a clause of its own): a home left.
_MOVED_AWAY = re.compile(rf"{_WHO_MOVED}(?:has )?(?:moved|relocated) (?:away )?from (.+)$", re.IGNORECASE)


def as_state(memory: str) -> str:
    """The setting or home a change leaves, or the memory as it was when it states no change of this shape."""
    body = undated(memory)
    if (home := _new_home(body)) is not None:
        return home
    match = _SET_TO.match(body)
    if match is None:
        return memory
    who, thing = match.group(1, 2)
    owner = "The user's" if who == "The user" else "The"
    kind = next(k for k in ("at", "on", "amount") if match.group(k))
    value = match.group(kind)
    return f"{owner} {thing} is {value}" if kind == "amount" else f"{owner} {thing} is {kind} {value}"


def _new_home(memory: str) -> str | None:
    match = _MOVED_HOME.match(memory)
    place = _place_and_when(match.group(2)) if match else None
    return f"{match.group(1)} lives in {place}" if match and place else None


def _place_and_when(said: str) -> str | None:
    """The place a move names when nothing but the move's time follows it ("Lisbon last month" -> "Lisbon");
    None otherwise: "moved to Lisbon for a job at ..." keeps its words."""
    place = place_at(said)
    if place is None or not re.fullmatch(_WHEN, said[len(place) :].rstrip(" .")):
        return None
    return place


# "The user used to live in Leeds", "The user used to run everything in SPSS": what the user has left behind.
# "The user used to live in Leeds"; "The user was on Mendeley until it got unbearable", "the user's team used
# Datadog until last year": a state that ended. "The user was going to open a Lifetime ISA too", "The user had
# thought to bake a Victoria sponge": a plan the user meant and has not kept to.
_FORMER = re.compile(
    r"^the user(?:'s team)? (?:used to\b|(?:was|were|used)\b.*\buntil\b|(?:was|were) going to\b"
    r"|had (?:thought|planned|meant|intended) to\b)",
    re.IGNORECASE,
)


def is_former(memory: str) -> bool:
    """Whether the memory states only what no longer holds: the value to remember is the one that replaced it
    ("used to live in Leeds, moved to York in May"). Said in passing it stays ("the on-call handover moved to
    Mondays (it used to be Fridays)")."""
    body = undated(memory)
    return _FORMER.match(body) is not None or _left_home(body)


def _left_home(memory: str) -> bool:
    match = _MOVED_AWAY.match(memory)
    return match is not None and _place_and_when(match.group(2)) is not None
