"""A context block the user pastes before a question: "Setup: / - Prod: EKS in us-east-2 / - Monitoring: Grafana".

Each "Key: value" line of such a block is a fact about the user's setup or life, yet read as a clause it has no
subject and often no verb, and the learned decision scores it low (0.3-0.59 on the writers who write so). Like
`names` and `introductions`, the fact is read off the line by its shape after the decision, never fed to it (the
sixteenth session rewrote the lines before the decision, which changed what the artifact is trained on), and kept
at the names' confidence: "Prod: EKS in us-east-2" -> "The user's prod is EKS in us-east-2".

Only a block counts (two such lines or more in one turn): a lone "Key: value" is as often a heading or a label of
what follows. A line about this moment ("Today: ...", "Right now: ..."), a label of the message ("Question: ...",
"Error: ..."), a value that is already a statement of the user's ("Deps: we use Poetry") or a correction, a
question, an instruction or a credential is left to the decision.
"""

import re
from collections.abc import Callable

from cairn_contracts.promotion import Candidate
from cairn_promotion.names import profile_candidate
from cairn_promotion.rewrite import normalise
from cairn_promotion.safety import holds_secret, is_instruction_like

_LINE = re.compile(
    r"^[ \t]*(?:[-*•][ \t]*)?(?P<key>[A-Za-z][\w /'&+.-]{0,30}?)[ \t]*:[ \t]+(?P<value>\S[^\n]*?)[ \t]*$",
    re.M,
)
_MIN_LINES = 2
_MAX_LINES = 100
_MAX_KEY_WORDS = 3
_MAX_VALUE_WORDS = 10
# Keys that name this moment or label the message rather than a lasting attribute.
_NOT_AN_ATTRIBUTE = frozenset(
    "today tonight tomorrow yesterday now currently week weekend month last next this right "
    "question q issue problem error errors update status task ask goal help edit subject re cc from to date todo "
    "note notes context setup background decision reason symptom symptoms output result log logs expected actual "
    "trace step steps example ps p.s fyi tldr summary details detail info plan idea change changes "
    # What this session's work is: a ticket, a branch, a flight's gate, when an incident started, a deadline.
    "started ticket branch pr commit gate flight seat deadline due eta order".split()
)
# A value that holds for now or is not known yet: "feat/checkout-redesign (just for today's work)", "not decided".
_FOR_NOW = re.compile(
    r"\b(?:today|today's|tonight|tomorrow|this (?:week|morning|afternoon|evening)|right now|not decided|undecided|"
    r"tbd|tbc|n/a|unknown|none yet)\b",
    re.IGNORECASE,
)
# A value the user already said as a statement ("we use Poetry, not pip"), a correction ("18 (wait, no, 20)").
_STATEMENT = re.compile(
    r"^(?:i|i'm|i've|we|we're|we've|my|our|it|it's|they)\b|\b(?:wait|actually|scratch that)\b", re.I
)


def block_candidates(turn: str, kept: Callable[[Candidate], Candidate | None]) -> dict[str, Candidate]:
    """One candidate per attribute line of a context block in one user turn, by the line as `line_key` reads
    it (so the decision's reading of the same line can give way to it); none without a block. `kept` is the
    rules every memory passes after the decision (`offline.as_memory`): "Budget: not decided yet", "Deadline:
    abstract due Friday" are no more a fact in a block than said as a sentence."""
    lines = list(_LINE.finditer(turn))
    if len(lines) < _MIN_LINES:
        return {}
    found: dict[str, Candidate] = {}
    read: set[str] = set()
    # A real block is a handful of lines; a pasted dump of thousands is read no further than its first lines.
    for line in lines[:_MAX_LINES]:
        key = line_key(f"{line['key']}: {line['value']}")
        if key in read:
            continue
        read.add(key)
        fact = _as_fact(line["key"], line["value"].rstrip(" .;,"))
        if fact is not None and (memory := kept(profile_candidate(fact))) is not None:
            found[key] = memory
    return found


def line_fact(line: str, kept: Callable[[Candidate], Candidate | None]) -> Candidate | None:
    """The fact of one line of a block, as `block_candidates` reads it: for a line a later update rewrote
    ("caffeine: 4 coffees a day" / "actually it's more like 3 coffees"), whose block fact holds the old value."""
    match = _LINE.match(line.strip())
    if match is None:
        return None
    fact = _as_fact(match["key"], match["value"].rstrip(" .;,"))
    return kept(profile_candidate(fact)) if fact is not None else None


# "new address for deliveries: 7 Harbour Road", "current employer: Arup": an update of the value, the same attribute.
_NEW = re.compile(r"^(?:new|current|updated|latest)\s+", re.IGNORECASE)
# A key that says something itself: "we've decided: Tokyo 4 nights", "yeah agreed: fleet buffer stays at 20%".
_SAYS_SOMETHING = re.compile(
    r"\b(?:i|i'm|i've|we|we're|we've|you|it|they|yeah|yes|ok|okay|agreed|decided|settled|so|and|but|is|are|was|"
    r"were|cut|went|got)\b",
    re.IGNORECASE,
)
_A_STATEMENT = re.compile(r"\b(?:is|are|was|were|stays?|goes|has|have)\b", re.IGNORECASE)


# What follows a key's noun and qualifies it: "address for deliveries", "hours of the clinic".
_QUALIFIER = re.compile(r"\s+(?:for|of|in|at|on|with|to)\s+")


def lone_line_fact(value: str, lines: dict[str, tuple[str, str]]) -> str | None:
    """The fact of a lone "Key: value" line whose value the decision kept as a clause of its own ("my address: 14
    Elm Street, Leeds" -> "The user's address is 14 Elm Street, Leeds", not "14 Elm Street, Leeds"); None when
    `value` is not such a line's value or the key names no lasting attribute. The decision, not the shape, kept it,
    so a lone line that heads what follows is not made a memory here."""
    if (line := lines.get(line_key(value))) is None:
        return None
    key, said = line
    key = _NEW.sub("", re.sub(r"^(?:my|our)\s+", "", key, flags=re.IGNORECASE))
    if _SAYS_SOMETHING.search(key) or _A_STATEMENT.search(said):
        return None
    return _as_fact(key, said.rstrip(" .;,"))


def lines_by_value(turn: str) -> dict[str, tuple[str, str]]:
    """A turn's "Key: value" lines by their value, the first of each, for `lone_line_fact`: read once per turn,
    not once per clause (a 100,000-character turn of them is thousands of clauses)."""
    lines: dict[str, tuple[str, str]] = {}
    for line in _LINE.finditer(turn):
        lines.setdefault(line_key(line["value"]), (line["key"], line["value"]))
    return lines


def line_key(text: str) -> str:
    """A line or a clause without its bullet, edge spaces, closing punctuation and case, to compare them by."""
    return " ".join(text.strip().lstrip("-*•").strip().rstrip(" .;,").lower().split())


def _as_fact(key: str, value: str) -> str | None:
    words = key.lower().replace("/", " ").split()
    if not words or len(words) > _MAX_KEY_WORDS or any(w.strip(".") in _NOT_AN_ATTRIBUTE for w in words):
        return None
    if (
        "?" in value
        or len(value.split()) > _MAX_VALUE_WORDS
        or _STATEMENT.search(value)
        or _FOR_NOW.search(value)
    ):
        return None
    if holds_secret(f"{key}: {value}") or is_instruction_like(value):
        return None
    attribute = key if key.isupper() else key.lower()
    head = _QUALIFIER.split(attribute)[0]  # "address for deliveries" is one address
    verb = "are" if re.search(r"[^s]s$", head) and not head.isupper() else "is"
    # "Travelers: me and my husband Kenji", "split 60/40 with my partner (I pay 60)": in the user's own person.
    said = normalise(value)
    said = said[:1].lower() + said[1:] if value[:1].islower() or said.startswith("The user") else said
    return f"The user's {attribute} {verb} {said}"
