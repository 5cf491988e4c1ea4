"""Who does something with the user: "my flatmate Jonas and I split utilities 50/50".

The clause splitter cuts such a sentence at its "and" (into "my flatmate Jonas" and "I split utilities 50/50"), as
the learned decision was trained to read it, so the kept clause's memory had lost the person: "The user split
utilities 50/50", "The user broke up in March" (from "Chris and I broke up in March"). After the decision, the
memory of a clause that opened on "I" right after such a cut says both: "The user and the user's flatmate Jonas
split utilities 50/50", the verb in the plural. The same holds for a second person of the user's: "my wife Priya
and our nanny have member access" -> "The user's wife Priya and the nanny have member access".
"""

import re

from cairn_promotion.lexicon import PETS, RELATION
from cairn_promotion.rewrite import is_adverb, normalise
from cairn_promotion.text import Clause

# "my flatmate Jonas", "my wife", "our dog Biscuit", "Chris": someone of the user's, or one name.
_OTHERS = r"flatmate|housemate|fianc[ée]e?|neighbou?r|co-?worker|teammate"
_COMPANION = re.compile(
    rf"^(?:(?i:my|our)\s+(?i:{RELATION}|{_OTHERS}|{PETS})(?:\s+[A-Z][\w’'-]*)?|[A-Z][a-z’'-]+)$"
)
_I_LED = re.compile(r"^I(?:'m|'ve|'d|'ll)?\s", re.IGNORECASE)
# "my wife Priya and our nanny have member access": the second of two people of the user's.
_POSSESSED_LED = re.compile(r"^(?:my|our)\s", re.IGNORECASE)
_DATE = re.compile(r"^On [\d-]+, ")
_DATED = re.compile(r"^((?:On [\d-]+, )?)the user (?=\w)", re.IGNORECASE)
_PLURAL = {"is": "are", "was": "were", "has": "have", "does": "do", "doesn't": "don't", "hasn't": "haven't",
           "isn't": "aren't", "wasn't": "weren't"}  # fmt: skip


def companion_of(clause: Clause, before: Clause | None, turn_text: str) -> str | None:
    """The person a user clause led by "I" (or by someone of the user's) shares its subject with, when the
    sentence said "<them> and I ..." ("<them> and our nanny ..."), as the memory names them ("the user's
    flatmate Jonas", "Chris"); None otherwise."""
    if before is None or clause.role != "user" or before.turn_index != clause.turn_index:
        return None
    led = _I_LED.match(clause.raw) or _POSSESSED_LED.match(clause.raw)
    if not led or not _COMPANION.match(before.raw.strip()):
        return None
    if f"{before.raw.strip()} and {clause.raw.strip()}" not in turn_text:
        return None
    named = normalise(before.raw.strip())
    return named[:1].lower() + named[1:] if named.startswith("The user's") else named


def with_companion(memory: str, companion: str) -> str:
    """The memory with its subject joined by the companion: "the user" and the verb that follows made plural,
    or anyone else ("The nanny have member access") as the user said them, already in the plural."""
    match = _DATED.match(memory)
    if match is None:
        dated = _DATE.match(memory)
        date, rest = (dated.group(0), memory[dated.end() :]) if dated else ("", memory)
        lead = companion if date else f"{companion[:1].upper()}{companion[1:]}"
        rest = f"t{rest[1:]}" if rest.startswith("The ") else rest
        return f"{date}{lead} and {rest}"
    words = memory[match.end() :].split(" ")
    at = 0
    while at < len(words) - 1 and is_adverb(words[at]):
        at += 1
    words[at] = _plural(words[at])
    return f"{match.group(1)}{'The' if not match.group(1) else 'the'} user and {companion} {' '.join(words)}"


def _plural(verb: str) -> str:
    lower = verb.lower()
    if lower in _PLURAL:
        return _PLURAL[lower]
    if re.search(r"[^aeiou]ies$", lower):
        return f"{verb[:-3]}y"
    if re.search(r"(?:sh|ch|x|z|ss|o)es$", lower):
        return verb[:-2]
    if re.search(r"[^su]s$", lower):
        return verb[:-1]
    return verb
