"""The promotion compiler seam and the built-in, deterministic offline compiler.

A compiler turns the recent turns of a session into candidate durable memories. `OfflineCompiler` is
rule-based: it needs no model or key, always gives the same answer for the same turns, and so is the
fallback (and the test oracle) for the LLM compilers. Everything here is pure: no I/O, clock or random.

Session content is data, never instructions. A turn that carries anything instruction-like (an
injection phrase, a hidden HTML comment or code block that addresses the agent, an action link) is
dropped whole, because the "benign" sentences around an injection are usually part of the same payload.
"""

import hashlib
import json
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from cairn_contracts.promotion import Candidate, Turn

DEFAULT_MAX_TURNS = 40
DEFAULT_MAX_CHARS = 16_000
DEFAULT_CONFIDENCE_THRESHOLD = 0.6
DEFAULT_MAX_CANDIDATES = 20

# Below this a clause is noise, not a weak candidate; emitting it would only bloat gate input.
MIN_EMIT_CONFIDENCE = 0.3
# Candidates whose content tokens overlap this much are one memory said twice.
DEDUPE_JACCARD = 0.7

READABLE_ROLES = frozenset({"user", "assistant", "fact"})


class Compiler(Protocol):
    """Turns a session's turns into candidate durable memories."""

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        """Compile a session.

        Args:
            turns: The session's turns, oldest first. Content is untrusted data.

        Returns:
            Candidates in no guaranteed order; the caller gates them with `apply_gate`.
        """
        ...


class OfflineCompiler:
    """A deterministic, rule-based compiler of facts, preferences and decisions.

    It reads only the most recent window of user, assistant and fact turns, scores each clause from
    explicit cues, lowers hedged, transient and context-dependent statements, and never emits
    instruction-like content.

    Args:
        max_turns: How many of the most recent readable turns to look at.
        max_chars: Character budget for that window, counted from the newest turn backwards.
    """

    def __init__(self, *, max_turns: int = DEFAULT_MAX_TURNS, max_chars: int = DEFAULT_MAX_CHARS) -> None:
        if max_turns < 1 or max_chars < 1:
            raise ValueError("max_turns and max_chars must be positive")
        self.max_turns = max_turns
        self.max_chars = max_chars

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        """Compile a session; see `extract`."""
        return self.extract(turns)

    def extract(self, turns: Sequence[Turn]) -> list[Candidate]:
        """The synchronous core of `compile`, for callers without an event loop (the eval).

        Args:
            turns: The session's turns, oldest first.

        Returns:
            Deduplicated candidates, highest confidence first.
        """
        return extract_candidates(recent_window(turns, self.max_turns, self.max_chars))


# --- Public helpers ----------------------------------------------------------------------------------


def recent_window(turns: Sequence[Turn], max_turns: int, max_chars: int) -> list[Turn]:
    """The most recent readable turns that fit both budgets, oldest first.

    Tool and system turns are left out before budgeting so a large tool dump cannot push the user's
    own words out of the window.

    Args:
        turns: The session's turns, oldest first.
        max_turns: Maximum number of turns to keep.
        max_chars: Maximum total content length; the newest turn is truncated if it alone exceeds it.

    Returns:
        The window, oldest first.
    """
    readable = [t for t in turns if t.role.strip().lower() in READABLE_ROLES][-max_turns:]
    window: list[Turn] = []
    used = 0
    for turn in reversed(readable):
        if used + len(turn.content) > max_chars:
            if not window:
                window.append(Turn(role=turn.role, content=turn.content[:max_chars]))
            break
        window.append(turn)
        used += len(turn.content)
    window.reverse()
    return window


def apply_gate(candidates: Iterable[Candidate], threshold: float, max_candidates: int) -> list[Candidate]:
    """The confidence gate: drop weak candidates, keep the strongest, cap the count.

    Exact repeats (same text, ignoring case and surrounding whitespace) collapse to the most
    confident one, so a compiler that says a fact twice cannot use two slots of the cap.

    Args:
        candidates: Candidates from any compiler.
        threshold: Minimum confidence to survive (inclusive), in [0, 1].
        max_candidates: Maximum number of survivors; 0 or less keeps nothing.

    Returns:
        Survivors, highest confidence first; ties keep their input order.
    """
    if not 0.0 <= threshold <= 1.0:
        raise ValueError("threshold must be within [0, 1]")
    ranked = sorted(candidates, key=lambda c: -c.confidence)
    survivors: list[Candidate] = []
    seen: set[str] = set()
    for candidate in ranked:
        key = " ".join(candidate.text.split()).casefold()
        if candidate.confidence < threshold or key in seen:
            continue
        seen.add(key)
        survivors.append(candidate)
    return survivors[: max(max_candidates, 0)]


def session_fingerprint(turns: Sequence[Turn]) -> str:
    """A stable content hash of a session: the promotion watermark.

    JSON framing makes the encoding unambiguous, so moving text between role and content, or between
    adjacent turns, changes the hash.

    Args:
        turns: The session's turns, in order.

    Returns:
        The hex sha256 of the turns' roles and contents in order.
    """
    payload = json.dumps([[t.role, t.content] for t in turns], ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(payload.encode("utf-8")).hexdigest()


def content_tokens(text: str) -> frozenset[str]:
    """The lower-cased, crudely stemmed content words of a text, without stop words.

    Used to compare memories by meaning-bearing words only ("User prefers dark mode" and "Prefers
    dark mode." are the same set).
    """
    words = re.findall(r"[a-z0-9][a-z0-9_#@./:+-]*[a-z0-9]|[a-z0-9]", text.lower().replace("'s", ""))
    return frozenset(_stem(w) for w in words if w not in _STOP_WORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets (0 when both are empty)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def is_instruction_like(text: str) -> bool:
    """Whether text reads like an instruction to an agent rather than a fact about the world.

    This is the compiler's injection filter; the LLM compiler also applies it to model output.
    """
    return bool(_INJECTION.search(text)) or any(_action_link(s) for s in _sentences(text))


def holds_secret(text: str) -> bool:
    """Whether text states a credential. Those are never promoted, whoever asks."""
    return bool(_SECRET.search(text))


def extract_candidates(turns: Sequence[Turn]) -> list[Candidate]:
    """Extract candidates from a window of turns (no windowing of its own).

    Args:
        turns: The turns to read, oldest first; non-readable roles are skipped.

    Returns:
        Deduplicated candidates, highest confidence first.
    """
    found: list[Candidate] = []
    referents: dict[str, str] = {}
    readable = [t for t in turns if t.role.strip().lower() in READABLE_ROLES]
    for index, turn in enumerate(readable):
        role = turn.role.strip().lower()
        if _turn_is_tainted(turn.content):
            continue
        confirmed = role == "assistant" and _confirmed_by_next_user_turn(readable, index)
        for clause in _turn_clauses(turn.content, role, confirmed, referents):
            if (candidate := _candidate(clause)) is not None:
                found.append(candidate)
    return _dedupe(found)


# --- Word lists and patterns ---------------------------------------------------------------------------

# A standard short English stop list plus the subjects normalisation introduces ("user", "the
# assistant"), so "I prefer X" and "User prefers X" compare equal.
_STOP_WORDS = frozenset(
    """a about above after again against all am an and any are as at be been before being below between both
    but by can could did do does doing down during each few for from further had has have having he her here
    hers herself him himself his how i if in into is it its itself just me more most my myself no nor not now
    of off on once only or other our ours ourselves out over own same she should so some such than that the
    their theirs them themselves then there these they this those through to too under until up very was we
    were what when where which while who whom why will with would you your yours yourself also us mine
    it's i'm i've i'd we're we've that's there's user user's users assistant assistant's please
    really""".split()
)

_FEMALE = "daughter|mother|mom|mum|wife|sister|girlfriend|grandmother|grandma|aunt|niece|stepdaughter"
_MALE = "son|father|dad|husband|brother|boyfriend|grandfather|grandpa|uncle|nephew|stepson"
_NEUTRAL = "partner|spouse|kid|child|boss|manager|landlord|landlady|friend|roommate|colleague|cofounder"
_RELATION = f"{_FEMALE}|{_MALE}|{_NEUTRAL}"
_PROFILE_ATTR = (
    r"name|email|e-mail|phone|phone number|number|address|birthday|timezone|time zone|pronouns|username|"
    r"handle|title|job title|role|team|employer|company|native language|language|id|account|"
    r"account id|account number|member number|customer number|frequent flyer number|passport"
)

_TIMEZONES = (
    r"utc(?:[+-]\d{1,2})?|gmt(?:[+-]\d{1,2})?|cet|cest|eet|eest|wet|west|bst|ist|jst|kst|aest|aedt|nzst|"
    r"est|edt|cst|cdt|mst|mdt|pst|pdt|akst|hst|[a-z]+/[a-z_]+"
)
_RECURRING = (
    r"\b(?:every|each) (?:day|week|month|year|morning|evening|night|weekday|weekend|monday|tuesday|"
    r"wednesday|thursday|friday|saturday|sunday|other \w+)\b|\b(?:daily|weekly|monthly|yearly|annually)\b|"
    r"\b(?:once|twice|\w+ times) (?:a|per) (?:day|week|month|year)\b|\bon (?:mondays|tuesdays|wednesdays|"
    r"thursdays|fridays|saturdays|sundays|weekends|weekdays)\b"
)
_I = r"(?:i|we)"  # not "I'd like": that is a request, not a preference
_FREQUENCY = (
    "always|never|usually|typically|normally|generally|often|sometimes|rarely|mostly|really|strongly|"
    "definitely|also|still|much"
)
_ADVERBS = rf"(?:(?:{_FREQUENCY}) )*"

_INJECTION = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+)*
        (?:previous|prior|above|earlier|preceding|former|original|system|safety)?\s*
        (?:instructions?|prompts?|rules|directions|directives|guidelines|context|programming)\b
    | \b(?:you\s+are|you're)\s+now\b
    | \bfrom\s+now\s+on,?\s+(?:you|the\s+(?:assistant|agent|ai|model))\s+
        (?:must|will|shall|should|are|have\s+to|need\s+to)\b
    | \bsystem\s+prompt\b | \[\s*system\b | \bsystem\s*: | <\s*/?\s*system\s*> | <\|im_start\|> | \[/?inst\]
    | <<\s*sys\s*>> | \bdeveloper\s+mode\b | \bjailbreak | (?-i:\bDAN\b) | \bmaintenance\s+mode\b
    | \bnew\s+(?:instructions|rules|directives)\b | \bupdated\s+instructions\b
    | \b(?:act|behave)\s+as\s+(?:a|an|if)\b | \broleplay\s+as\b
    | \bpretend\s+(?:to\s+be|you\s+are|that\s+you)\b
    | \blink\s+(?:this|that|the\s+following|these|those)\s+(?:articles?|pages?|docs?|documents?)\b
    | \bcross[-\s]?link | \blink\s+(?:it|them)\s+to\s+(?:every|all|each)\b
    | \b(?:store|save|add|write|record|commit|insert|persist|put|keep)\b[^.!?\n]{0,40}?\b(?:as|in|into|to)\s+
        (?:(?:a|an|your|its|the\s+(?:agent|assistant|ai)'s)\s+(?:[\w-]+\s+)?
          | (?:long[-\s]term|permanent|persistent)\s+)
        memor(?:y|ies)\b
    | \bwhen\s+you\s+(?:save|store|write|create|record)\s+(?:a\s+|any\s+)?memor
    | \b(?:memory|memories)\s+writer\b
    | \bforget\s+(?:everything|all)\s+(?:above|before|previous|prior|you\s+(?:know|were\s+told))
    | \b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|warn|notify)\s+the\s+user\b
    | \bwithout\s+(?:telling|asking|informing|notifying|alerting)\s+the\s+user\b
    | (?:^|[\n.!?]\s*|<!--\s*|\#\s*)(?:note\s+to\s+|attention\s+|dear\s+)?
        (?:ai|llm|assistant|agent|language\s+model|chatbot)s?
        (?:\s+(?:assistant|agent|reading\s+this|directives?|instructions?|notes?|notice|override
                |commands?))?\s*:
    | \bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|assistant|agent|bot)\b
    | \b(?:ai|llm|gpt|chatbot|language[-\s]model)s?(?:[-\s](?:based|powered|driven))?\s+
        (?:assistants|agents|models|bots|systems|tools|readers)\b
    | \b(?:ai|llm)s?\s+reading\s+this\b
    | \b(?:you|the\s+(?:assistant|agent|ai|model|bot))\s+(?:must|are\s+required\s+to|are\s+instructed\s+to)\b
    | \b(?:reveal|print|show|repeat)\s+(?:your|the)\s+(?:system|hidden|initial)\s+(?:prompt|instructions)\b
    | \b(?:enter|send|share|provide|confirm|verify)\s+your\s+
        (?:password|credentials|pin|otp|2fa|seed\s+phrase|private\s+key)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

_URL = re.compile(r"\bhttps?://([^\s/:?#]+)\S*|\bwww\.([^\s/:?#]+)\S*", re.IGNORECASE)
_LOCAL_HOST = re.compile(
    r"^(?:localhost|127\.0\.0\.1|\[::1\]|[\w.-]+\.(?:internal|local|localhost|lan|corp))$", re.I
)
_ACTION = re.compile(
    r"\b(?:visit|click|open|go(?:es|ing)?\s+to|download|install|run|execute|curl|wget|fetch|send|post|submit|"
    r"enter|upload|forward|share|log\s*in|sign\s*in|paste|follow|call|import)(?:s|es|ed|ing)?\b",
    re.IGNORECASE,
)

_SECRET = re.compile(
    r"\b(?:password|passwd|passphrase|pass\s*code|api[-_\s]?key|secret(?:\s+key)?|private\s+key|"
    r"seed\s+phrase|access\s+token|auth\s+token|bearer\s+token|pin\s+code|ssh\s+key|cvv|iban|bank\s+account|"
    r"routing\s+number|"
    r"wallet)\b",
    re.IGNORECASE,
)

_CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
_HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
_QUOTE = re.compile(r"[\"“]([^\"“”]*)[\"”]")
_LONG_QUOTE_WORDS = 5

_ABBREVIATIONS = re.compile(
    r"(?:\b(?:mr|mrs|ms|dr|prof|st|sr|jr|vs|etc|approx|inc|ltd|no|e\.g|i\.e)\.)$", re.I
)
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+|\n+")

_CLAUSE_SPLIT = re.compile(
    r",?\s+(?:and|but|while|whereas)\s+"
    r"(?=(?:i|i'm|i've|i'd|we|we're|we've|my|our|she|he|they|her|his|their|she's|he's)\b)"
    r"|,?\s+and\s+(?=the\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|runs?|has|have|lives?|uses?)\b)"
    r"|,\s+so\s+|\s+[—–]\s+",
    re.IGNORECASE,
)
# "I'm based in Toronto and usually travel with ..." -> the second clause borrows the subject.
_SUBJECTLESS_SPLIT = re.compile(
    r",?\s+and\s+(?=(?:usually|always|never|often|typically|sometimes|also)\s)", re.I
)

_DISCOURSE_PREFIX = re.compile(
    r"^(?:(?:oh|ah|also|and|so|but|btw|by\s+the\s+way|actually|well|ok|okay|right(?!\s+now)|yes|yeah|yep|"
    r"great|"
    r"perfect|thanks|thank\s+you|hi|hey|hello|anyway|plus|wait|oh\s+wait|one\s+more\s+thing|quick\s+context|"
    r"context|update)"
    r"\b[\s,:;!.-]*)+",
    re.IGNORECASE,
)
_REMEMBER_PREFIX = re.compile(
    r"^(?:please\s+)?(?:(?:remember|don't\s+forget|do\s+not\s+forget|keep\s+in\s+mind|make\s+a\s+note|"
    r"note\s+down|take\s+note|note)(?:\s+that)?"
    r"|(?:for\s+future\s+reference|for\s+the\s+record|just\s+so\s+you\s+know|fyi)"
    r"(?:\s+that)?)[\s,:]+",
    re.IGNORECASE,
)

# --- Cues: what makes a clause worth promoting, with a calibrated base confidence --------------------


@dataclass(frozen=True)
class _Cue:
    tag: str
    confidence: float
    pattern: re.Pattern[str]
    assistant_ok: bool = False  # assistants speak for themselves: only shared decisions count


def _cue(tag: str, confidence: float, pattern: str, *, assistant_ok: bool = False) -> _Cue:
    return _Cue(tag, confidence, re.compile(pattern, re.IGNORECASE), assistant_ok)


_PAST_VERB = r"(?:\w+ed|got|saw|heard|said|knew|thought|found|made|went|came|took|gave|told|felt|did|had)\b"

_CUES: tuple[_Cue, ...] = (
    # Preferences: explicit likes and dislikes, habits, directives to the agent.
    _cue(
        "preference",
        0.85,
        rf"\b{_I} {_ADVERBS}(?:prefer|like|love|enjoy|hate|dislike|detest|can't stand|"
        r"don't like|do not like|never want|always want)\b",
    ),
    _cue(
        "preference",
        0.8,
        rf"^i {_ADVERBS}(?:always|never|usually|typically|normally|generally|tend to)\s+(?!{_PAST_VERB})",
    ),
    _cue("preference", 0.85, r"^(?:please\s+)?(?:always|never|don't ever|do not ever)\s+\w+"),
    _cue("preference", 0.8, r"^please\s+(?:avoid|don't|do not|stop)\b"),
    _cue("preference", 0.85, r"\bmy (?:favou?rite|preferred) [\w-]+|\bmy [\w-]+ preference is\b|^call me\b"),
    _cue("preference", 0.8, r"\bi(?:'d| would) rather\b"),
    _cue(
        "preference", 0.75, r"\b(?:we|i)(?:'d| would) (?:like|prefer)\b.*\b(?:instead of|rather than|over)\b"
    ),
    _cue("preference", 0.8, r"\bi (?:don't|do not|can't|cannot|never) (?:eat|drink)\b"),
    _cue(
        "preference",
        0.75,
        rf"^my (?:{_RELATION})(?:'s)? {_ADVERBS}(?:loves?|likes?|prefers?|hates?|enjoys?)\b",
    ),
    # Profile facts about the user and the people around them.
    _cue(
        "profile", 0.85, rf"\bmy (?:[\w'-]+ ){{0,2}}(?:{_PROFILE_ATTR}) (?:is|are)\b|\bi(?:'m| am) called\b"
    ),
    _cue(
        "profile",
        0.85,
        r"\bi (?:work|worked) (?:at|for|as|on|in)\b|\bi(?:'m| am) (?:on|in) the [\w-]+ team\b",
    ),
    _cue(
        "profile",
        0.85,
        r"\bi (?:live|grew up) in\b|\bi(?:'m| am) (?:based|located) in\b|\bi(?:'m| am) from\b",
    ),
    _cue(
        "profile",
        0.85,
        r"\bi(?:'m| am) (?:[\w-]+ ){0,2}(?:allergic|vegetarian|vegan|pescatarian|"
        r"lactose[- ]intolerant|gluten[- ]free|diabetic|celiac|coeliac|left-handed|colou?r-?blind|deaf|"
        r"blind)\b",
    ),
    _cue("profile", 0.75, rf"^my (?:{_RELATION})(?:'s [\w-]+)? (?:is|are)\b"),
    _cue(
        "profile",
        0.7,
        r"^i (?:use|hold|own|speak|drive|run|have|study|teach|manage|maintain|lead)\s+"
        r"(?!(?:to|no|been)\b"
        r"|(?:a |an |the )?(?:question|problem|issue|idea|doubt|error|bug|minute|second)\b)",
    ),
    _cue("profile", 0.7, r"^i(?:'m| am) (?:a|an) (?!(?:bit|little|lot)\b)[\w-]+"),
    _cue("profile", 0.65, r"^i(?:'m| am) (?:on|using|running) (?!(?:it|that|this)\b)"),
    _cue("profile", 0.8, rf"\bi(?:'m| am) (?:in|on) (?:the )?(?:{_TIMEZONES})\b|\bmy time ?zone\b"),
    # Generic "my X is Y": usually a profile attribute; incidents are caught by the problem penalty.
    _cue("profile", 0.65, r"^my [\w' -]{1,40}? (?:is|are)\b"),
    # A first-person statement about something that recurs is a habit, and habits are durable.
    _cue("habit", 0.75, rf"^(?:i|we) .*(?:{_RECURRING})"),
    _cue(
        "plan",
        0.7,
        r"^(?:i(?:'m| am) )?(?:planning|training for|preparing for|moving to|learning|studying|"
        r"saving for|applying to|relocating to)\b",
    ),
    # Decisions, including ones the assistant records and the user confirms.
    _cue(
        "decision",
        0.85,
        r"\b(?:we|i|the team)(?:'ve| have)? (?:decided|agreed|chose|settled on|committed to|"
        r"standardi[sz]ed on)\b",
        assistant_ok=True,
    ),
    _cue(
        "decision",
        0.85,
        r"^let's (?:go with|use|stick with|adopt|switch to|pick|keep|move to|standardi[sz]e on)\b",
        assistant_ok=True,
    ),
    _cue(
        "decision",
        0.85,
        r"^(?:decision|decided|resolution|action items?|agreed)(?: recorded| made)?\s*:",
        assistant_ok=True,
    ),
    _cue(
        "decision",
        0.8,
        r"\bwe(?:'re| are) going (?:with|to go with|to use)\b|^going with\b|\bwe(?:'ll| will) (?:use|go with|"
        r"pin|adopt|standardi[sz]e on|stick with|switch to)\b",
        assistant_ok=True,
    ),
    # Facts about the user's team, systems and schedule.
    _cue(
        "fact",
        0.85,
        r"\bthe (?:deadline|due date|launch date|release date|go-live date|cutoff|cut-off)\b"
        r".*\b(?:is|are|was)\b",
    ),
    _cue(
        "fact",
        0.75,
        r"^our [\w.#/ -]{1,60}?\b(?:is|are|runs?|lives?|uses?|goes|go|switch(?:es)?|has|have|sits?|"
        r"listens?|points?|deploys?|starts?|happens?|belongs?|requires?|includes?)\b",
    ),
    _cue(
        "fact",
        0.75,
        r"^we (?:always |never |usually |typically |generally |only |still )?(?:use|keep|run|deploy|"
        r"ship|release|store|follow|require|host|rely on|pin|avoid|target|support)\b",
    ),
    _cue("fact", 0.75, r"^we(?:'re| are) (?:using|running|on|hosted on|deployed on|built on)\b"),
    _cue("fact", 0.75, r"^(?:the )?root cause (?:was|is)\b"),
    _cue(
        "fact",
        0.7,
        r"^(?-i:[A-Z])[\w.'-]+(?: (?-i:[A-Z])[\w.'-]+)? (?:owns|maintains|is responsible for|leads|manages|"
        r"is the owner of|approves)\b|\b(?:is|are) (?:owned|maintained|run|managed|approved) by\b",
    ),
    # Roles ("the cluster admin is Wei") and explicit team rules are who-to-ask and how-we-work facts.
    _cue(
        "fact",
        0.7,
        r"^(?:the )?[\w -]{0,30}\b"
        r"(?:admin|administrator|owner|lead|manager|maintainer|contact|point of contact)"
        r" (?:is|are) (?-i:[A-Z])",
    ),
    _cue("fact", 0.75, r"\b(?:team|house|company|our) (?:rule|policy|convention|standard)\b"),
    _cue("preference", 0.7, r"^(?:when|whenever) you\b"),
)

# A plain declarative sentence that names something concrete (a number, version, channel, address,
# identifier) is usually configuration worth keeping, even without a cue word.
_LINKING_VERB = re.compile(
    r"\b(?:is|are|runs?|lives?|live|goes|go|uses?|sits?|listens?|points?|belongs?|requires?|switch(?:es)?)\b",
    re.I,
)
_CONCRETE = re.compile(
    r"\d|#[\w-]+|@|\b\w+/\w+|\b[a-z]+-[a-z0-9-]+\b|\b[A-Z][a-z]+[A-Z]\w*|\b[A-Z0-9]{2,}\d[A-Z0-9]*\b|\bport\b"
)
_CONCRETE_CONFIDENCE = 0.65
_CONCRETE_SUBJECT = re.compile(r"(?:the\s+)?[\w-]+(?:\s+[\w-]+){0,7}\s*", re.I)

# --- Penalties: why a cued clause may still not be durable ---------------------------------------------

_PENALTIES: tuple[tuple[float, re.Pattern[str]], ...] = tuple(
    (delta, re.compile(pattern, re.IGNORECASE))
    for delta, pattern in (
        # Hedges: the speaker does not commit to it.
        (
            -0.35,
            r"\b(?:maybe|perhaps|probably|possibly|might|i think|i guess|i suppose|not sure|unsure|"
            r"i'm thinking|thinking about|considering|wondering|kind of|sort of|i believe|potentially|"
            r"haven't decided|not decided|undecided|tbd|not yet decided|we'll see|or something)\b",
        ),
        # Transient states and one-off times.
        (
            -0.4,
            r"\b(?:right now|at the moment|today|tonight|this (?:morning|afternoon|evening|week|time)|"
            r"tomorrow|yesterday|just now|for now|temporarily|for this (?:one|task|session|trip only))\b",
        ),
        (
            -0.5,
            r"\bi(?:'m| am) (?:so |really |very |a bit |kind of |pretty |super )?"
            r"(?:tired|hungry|thirsty|bored|"
            r"sleepy|exhausted|stressed|sick|busy|annoyed|frustrated|cold|hot|late|running late|in a hurry)\b"
            r"|\bi(?:'m| am) on (?:vacation|holiday|leave|pto|a break|my way|a call|the phone|a trip)\b",
        ),
        (-0.5, r"\bi used to\b|\bno longer\b|\banymore\b"),
        # "I like this one": the object is in the conversation, not in the memory.
        (
            -0.35,
            r"\b(?:like|love|hate|prefer)\s+(?:this|that|these|those|it)\b(?:\s+[\w-]+){0,2}\s*[.!]*$",
        ),
        # Problems in progress are incidents, not facts.
        (
            -0.35,
            r"\b(?:failed|failing|fails|crash(?:es|ed|ing)?|broken|wrong|stopped|not working|doesn't work|"
            r"won't work|error|outage is|is down|went down|locked|blocked|suspended|stuck|hacked|missing)\b",
        ),
    )
)
_QUESTION_START = re.compile(
    r"^(?:what|who|whom|whose|where|why|how|which|can|could|would|should|do(?!\s+not)|does|did|is|are)"
    r"\b(?!')",
    re.IGNORECASE,
)
_SMALL_TALK = re.compile(
    r"^(?:hi|hello|hey|thanks|thank you|thx|ok|okay|cool|great|perfect|bye|"
    r"good (?:morning|night|evening|afternoon)|"
    r"lol|haha|nice|sure|yes|no|yeah|yep|nope|awesome|wow|ugh|hmm|welcome)\b",
    re.IGNORECASE,
)
_UNRESOLVED_PRONOUN = re.compile(
    r"^(?:it|it's|that|that's|this|these|those|they|they're|she|she's|he|he's|her|his)\b", re.I
)
_PRONOUN_START = re.compile(r"^(she|he)(?:'s|\s+is)\b|^(she|he|her|his)\b", re.IGNORECASE)
_RELATION_MENTION = re.compile(rf"\bmy ({_RELATION})\b", re.IGNORECASE)
_AFFIRMATION = re.compile(
    r"^\W*(?:yes|yep|yeah|sure|agreed|ok(?:ay)?|sounds good|let's do (?:it|that)|do it|go ahead|perfect|"
    r"great|correct|exactly|confirmed|approved|lgtm)\b",
    re.IGNORECASE,
)
_ASSISTANT_PENALTY = 0.3
_CONFIRMED_ASSISTANT_PENALTY = 0.05
_REQUESTED_CONFIDENCE = 0.9
_FACT_TURN_CONFIDENCE = 0.95
_UNRESOLVED_PRONOUN_PENALTY = 0.4


# --- Turn and clause handling --------------------------------------------------------------------------


@dataclass(frozen=True)
class _Clause:
    text: str
    role: str
    requested: bool  # inside an explicit "remember that ..." request
    confirmed: bool  # an assistant statement the next user turn agreed with


def _turn_is_tainted(content: str) -> bool:
    # Checked before code, comments and quotes are stripped: that is exactly where injections hide.
    return is_instruction_like(content)


def _confirmed_by_next_user_turn(turns: Sequence[Turn], index: int) -> bool:
    following = (t for t in turns[index + 1 :] if t.role.strip().lower() == "user")
    nxt = next(following, None)
    return nxt is not None and bool(_AFFIRMATION.match(nxt.content))


def _strip_code(content: str) -> str:
    return _HTML_COMMENT.sub("\n", _CODE_FENCE.sub("\n", content))


def _turn_clauses(content: str, role: str, confirmed: bool, referents: dict[str, str]) -> list[_Clause]:
    # Code, hidden comments and long quotes are data about something else, never the speaker's facts.
    text = _QUOTE.sub(_drop_long_quote, _strip_code(content))
    clauses: list[_Clause] = []
    for sentence in _sentences(text):
        body, requested = _strip_remember(sentence) if role != "assistant" else (sentence, False)
        for part in _clauses(body):
            if role == "user":
                part = _resolve_pronoun(part, referents)
                _remember_referent(part, referents)
            clauses.append(_Clause(part, role, requested, confirmed))
    return clauses


def _drop_long_quote(match: re.Match[str]) -> str:
    # Reported speech: a quoted passage of several words is someone else's words, not the speaker's.
    return "\n" if len(match.group(1).split()) >= _LONG_QUOTE_WORDS else match.group(0)


def _sentences(text: str) -> list[str]:
    pieces = [p.strip(" \t-*•>") for p in _SENTENCE_END.split(text)]
    merged: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if merged and _ABBREVIATIONS.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged


def _strip_remember(sentence: str) -> tuple[str, bool]:
    body = _DISCOURSE_PREFIX.sub("", sentence) if not _REMEMBER_PREFIX.match(sentence) else sentence
    stripped = _REMEMBER_PREFIX.sub("", body, count=1)
    return stripped, stripped != body


def _clauses(sentence: str) -> list[str]:
    parts: list[str] = []
    for clause in _CLAUSE_SPLIT.split(sentence):
        first, *rest = _SUBJECTLESS_SPLIT.split(clause)
        parts.append(first)
        subject = _subject_of(first)
        parts.extend(f"{subject} {r}" if subject else r for r in rest)
    return [p.strip() for p in parts if p.strip()]


def _subject_of(clause: str) -> str:
    match = re.match(
        r"^\W*(i|we)(?:'m|'re|'ve| am| are)?\b", _DISCOURSE_PREFIX.sub("", clause), re.IGNORECASE
    )
    return match.group(1) if match else ""


def _resolve_pronoun(clause: str, referents: dict[str, str]) -> str:
    # Cheap one-slot coreference: "She loves dinosaurs" right after "my daughter" means the daughter.
    body = _DISCOURSE_PREFIX.sub("", clause)
    match = _PRONOUN_START.match(body)
    if not match:
        return clause
    pronoun = (match.group(1) or match.group(2)).lower()
    noun = referents.get("she" if pronoun in ("she", "her") else "he")
    if noun is None:
        return clause
    if match.group(1):
        return f"my {noun} is{body[match.end() :]}"
    suffix = "'s" if pronoun in ("her", "his") else ""
    return f"my {noun}{suffix}{body[match.end() :]}"


def _remember_referent(clause: str, referents: dict[str, str]) -> None:
    for match in _RELATION_MENTION.finditer(clause):
        noun = match.group(1).lower()
        if re.fullmatch(_FEMALE, noun):
            referents["she"] = noun
        elif re.fullmatch(_MALE, noun):
            referents["he"] = noun
        else:
            referents["she"] = referents["he"] = noun


# --- Scoring -------------------------------------------------------------------------------------------


def _candidate(clause: _Clause) -> Candidate | None:
    text = _DISCOURSE_PREFIX.sub("", clause.text).strip()
    if not text or is_instruction_like(text) or holds_secret(text) or _is_small_talk(text):
        return None
    scored = _base_score(text, clause)
    if scored is None:
        return None
    confidence, tags = scored
    confidence += _penalty(clause.text, text)
    normalised = normalise(text, clause.role)
    if not content_tokens(normalised):
        return None  # "let's do that": the referent is elsewhere, so the memory would be meaningless
    confidence = round(min(max(confidence, 0.0), 1.0), 2)
    if confidence < MIN_EMIT_CONFIDENCE:
        return None
    return Candidate(text=normalised, confidence=confidence, tags=tags)


def _base_score(text: str, clause: _Clause) -> tuple[float, list[str]] | None:
    assistant = clause.role == "assistant"
    cues = [c for c in _CUES if (c.assistant_ok or not assistant) and c.pattern.search(text)]
    tags = list(dict.fromkeys(c.tag for c in cues))
    confidence = max((c.confidence for c in cues), default=0.0)
    if clause.role == "fact":
        confidence, tags = _FACT_TURN_CONFIDENCE, tags or ["fact"]
    elif clause.role == "user" and clause.requested:
        confidence, tags = max(confidence, _REQUESTED_CONFIDENCE), [*(tags or ["fact"]), "requested"]
    elif clause.role == "user" and not cues and _is_concrete_declarative(text):
        confidence, tags = _CONCRETE_CONFIDENCE, ["fact"]
    if not tags:
        return None
    if assistant:
        confidence -= _CONFIRMED_ASSISTANT_PENALTY if clause.confirmed else _ASSISTANT_PENALTY
    return confidence, tags


def _is_concrete_declarative(text: str) -> bool:
    verb = _LINKING_VERB.search(text)
    return bool(
        verb
        and verb.start() > 0
        and _CONCRETE_SUBJECT.fullmatch(text[: verb.start()])
        and _CONCRETE.search(text)
        and not _UNRESOLVED_PRONOUN.match(text)
        and not re.match(r"^(?:i|we|you)\b", text, re.IGNORECASE)
    )


def _penalty(raw: str, text: str) -> float:
    delta = sum(d for d, pattern in _PENALTIES if pattern.search(raw))
    if text.rstrip().endswith("?") or _QUESTION_START.match(text):
        delta -= 0.6
    if _UNRESOLVED_PRONOUN.match(text):
        delta -= _UNRESOLVED_PRONOUN_PENALTY
    return delta


def _is_small_talk(text: str) -> bool:
    return bool(_SMALL_TALK.match(text)) and len(text.split()) <= 6


# --- Normalisation -------------------------------------------------------------------------------------

_IRREGULAR_3RD = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "are": "is"}
_MODALS = frozenset(
    {"can", "can't", "cannot", "will", "won't", "would", "should", "must", "could", "may", "might"}
)
_NEGATIONS = {"don't": "doesn't", "do not": "does not"}
_TRAILING_FILLER = re.compile(r"[\s,]+(?:btw|lol|haha|fyi|then|thanks|thx|ty|pls|please)\W*$", re.IGNORECASE)
# "before you hand code back" -> "before the assistant hands code back"; words that cannot be verbs stay.
_YOU_VERB = re.compile(
    r"\byou\s+(?!(?:for|to|and|or|the|a|an|in|on|at|with|of|too|all|guys|both|know|can|can't|will|won't|"
    r"would|should|must|could|may|might|did|didn't|had|were|was|always|never|also|just|really|then|so)\b)"
    r"([a-z]+)\b",
    re.IGNORECASE,
)

_LEADING_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"^(?:please\s+)?call me\s+", "User prefers to be called "),
        (r"^let's\s+", "Decided to "),
        (r"^(?:(?:we(?:'re| are)|i(?:'m| am))\s+)?going with\s+", "Decided to go with "),
        (r"^(?:decision|decided)(?: recorded| made)?\s*:\s*", "Decision: "),
        (r"^(?:action items?|resolution|agreed)\s*:\s*", ""),
        (r"^(?:please\s+)?(?:don't|do not) ever\s+", "User wants the assistant to never "),
        (r"^please\s+(?:don't|do not)\s+", "User wants the assistant not to "),
        (r"^(?:please\s+)?(always|never)\s+", r"User wants the assistant to \1 "),
        (r"^please\s+", "User wants the assistant to "),
        (r"^(?=(?:planning|training for|preparing for|moving to|saving for|relocating to)\b)", "User is "),
        (r"^i(?:'m| am)\s+", "User is "),
        (r"^i(?:'ve| have)\s+(?=\w+ed\b|been\b|got\b)", "User has "),
        (r"^i'd\s+", "User would "),
        (r"^i(?:'ll| will)\s+", "User will "),
        (r"^i was\s+", "User was "),
        (r"^(?:(?:we(?:'re| are)|i(?:'m| am))\s+)?going with\s+", "Decided to go with "),
        (r"^(?=(?:planning|training for|preparing for|moving to|saving for|relocating to)\b)", "User is "),
        (r"^my\s+", "User's "),
        (r"^our\s+", "The "),
    )
)
_MID_REWRITES: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern, re.IGNORECASE), replacement)
    for pattern, replacement in (
        (r"\bi(?:'m| am)\b", "the user is"),
        (r"\bmy\b", "the user's"),
        (r"\bmine\b", "the user's"),
        (r"\bmyself\b", "themselves"),
        (r"\bme\b", "the user"),
        (r"\bi\b", "the user"),
        (r"\bour\b", "the"),
    )
)


def normalise(text: str, role: str = "user") -> str:
    """Rewrite a first-person statement as a stand-alone third-person fact, when that is cheap.

    "I prefer dark mode" becomes "User prefers dark mode"; "my name is Dana" becomes "User's name is
    Dana". Anything the rules do not recognise is kept as written, minus filler and trailing punctuation.

    Args:
        text: One clause.
        role: The speaker; only user and fact turns speak for the user.

    Returns:
        The normalised clause.
    """
    text = " ".join(_DISCOURSE_PREFIX.sub("", text).split())
    text = _TRAILING_FILLER.sub("", text).rstrip(" .!,;:")
    if role != "assistant":
        text = _rewrite_subject(text)
        head, _, rest = text.partition(" ")
        for pattern, replacement in _MID_REWRITES:
            rest = pattern.sub(replacement, rest)
        text = f"{head} {rest}".strip()
        text = re.sub(r"\byou(?:'re| are)\b", "the assistant is", text, flags=re.IGNORECASE)
        text = re.sub(r"\byour\b", "the assistant's", text, flags=re.IGNORECASE)
        text = _YOU_VERB.sub(lambda m: f"the assistant {_third_person(m.group(1).lower())}", text)
        text = re.sub(r"\byou\b", "the assistant", text, flags=re.IGNORECASE)
    return text[:1].upper() + text[1:]


def _rewrite_subject(text: str) -> str:
    for pattern, replacement in _LEADING_REWRITES:
        if pattern.match(text):
            return pattern.sub(replacement, text, count=1)
    match = re.match(rf"^i\s+((?:(?:{_FREQUENCY})\s+)*)(don't|do not|[\w'-]+)\b", text, re.I)
    if match:
        verb = _third_person(match.group(2).lower())
        return f"User {match.group(1)}{verb}{text[match.end() :]}"
    return text


def _third_person(verb: str) -> str:
    if verb in _NEGATIONS:
        return _NEGATIONS[verb]
    if verb in _IRREGULAR_3RD:
        return _IRREGULAR_3RD[verb]
    if verb in _MODALS or verb.endswith("ed"):
        return verb
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return f"{verb}es"
    if re.search(r"[^aeiou]y$", verb):
        return f"{verb[:-1]}ies"
    return f"{verb}s"


# --- Dedupe --------------------------------------------------------------------------------------------


def _dedupe(candidates: list[Candidate]) -> list[Candidate]:
    kept: list[tuple[frozenset[str], Candidate]] = []
    for candidate in sorted(candidates, key=lambda c: -c.confidence):
        tokens = content_tokens(candidate.text)
        duplicate = next((i for i, (other, _) in enumerate(kept) if _same_fact(tokens, other)), None)
        if duplicate is None:
            kept.append((tokens, candidate))
            continue
        other_tokens, other = kept[duplicate]
        merged_tags = list(dict.fromkeys([*other.tags, *candidate.tags]))
        kept[duplicate] = (other_tokens, other.model_copy(update={"tags": merged_tags}))
    return [c for _, c in kept]


def _same_fact(a: frozenset[str], b: frozenset[str]) -> bool:
    small, large = sorted((a, b), key=len)
    return jaccard(a, b) >= DEDUPE_JACCARD or (len(small) >= 3 and small <= large)


def _stem(word: str) -> str:
    if len(word) > 4 and word.endswith("ies"):
        return f"{word[:-3]}y"
    if len(word) > 4 and re.search(r"(?:ss|x|ch|sh)es$", word):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    if len(word) > 5 and word.endswith("ing"):
        return word[:-3]
    if len(word) > 4 and word.endswith("ed"):
        return word[:-2] if not word.endswith("eed") else word
    return word


def _action_link(text: str) -> bool:
    # A link to an unknown host next to a call to act on it is how injected content asks for actions.
    for match in _URL.finditer(text):
        host = match.group(1) or match.group(2) or ""
        if not _LOCAL_HOST.match(host) and _ACTION.search(text):
            return True
    return False
