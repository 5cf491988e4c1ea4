"""The rule-based durable-fact decision: cue patterns with calibrated base confidences, minus penalties."""

import re
from dataclasses import dataclass

from cairn_promotion.lexicon import FREQUENCY, PROFILE_ATTR, RECURRING, RELATION, TIMEZONES
from cairn_promotion.text import Clause

_I = r"(?:i|we)"  # not "I'd like": that is a request, not a preference
_ADVERBS = rf"(?:(?:{FREQUENCY}) )*"

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
        rf"^my (?:{RELATION})(?:'s)? {_ADVERBS}(?:loves?|likes?|prefers?|hates?|enjoys?)\b",
    ),
    # Profile facts about the user and the people around them.
    _cue("profile", 0.85, rf"\bmy (?:[\w'-]+ ){{0,2}}(?:{PROFILE_ATTR}) (?:is|are)\b|\bi(?:'m| am) called\b"),
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
    _cue("profile", 0.75, rf"^my (?:{RELATION})(?:'s [\w-]+)? (?:is|are)\b"),
    _cue(
        "profile",
        0.7,
        r"^i (?:use|hold|own|speak|drive|run|have|study|teach|manage|maintain|lead)\s+"
        r"(?!(?:to|no|been)\b"
        r"|(?:a |an |the )?(?:question|problem|issue|idea|doubt|error|bug|minute|second)\b)",
    ),
    _cue("profile", 0.7, r"^i(?:'m| am) (?:a|an) (?!(?:bit|little|lot)\b)[\w-]+"),
    _cue("profile", 0.65, r"^i(?:'m| am) (?:on|using|running) (?!(?:it|that|this)\b)"),
    _cue("profile", 0.8, rf"\bi(?:'m| am) (?:in|on) (?:the )?(?:{TIMEZONES})\b|\bmy time ?zone\b"),
    # Generic "my X is Y": usually a profile attribute; incidents are caught by the problem penalty.
    _cue("profile", 0.65, r"^my [\w' -]{1,40}? (?:is|are)\b"),
    # A first-person statement about something that recurs is a habit, and habits are durable.
    _cue("habit", 0.75, rf"^(?:i|we) .*(?:{RECURRING})"),
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
            r"tomorrow|yesterday|just now|for now|temporarily|for this (?:one|task|session|trip only)|"
            # Recent one-offs told in passing: "a deploy 25 minutes ago", "last night", "so far".
            r"last night|so far|this (?:weekend|wk)|rn|atm|\d+\s*(?:minutes?|mins?|hours?|hrs?|days?)\s+ago|"
            r"since \d{1,2}\s*(?:am|pm)|"
            # A window ending now: "restarted 14 times in the last hour", "502s for the last 20 minutes".
            r"(?:in|for|over) the (?:last|past) (?:\d+\s*)?(?:minutes?|mins?|hours?|hrs?|day)|"
            # Asking for help is today's task, not a fact: "I'd love some help planning ...", "hoping for advice".
            r"(?:'d|would|'m|am|be|really)\s+(?:love|like|appreciate|hoping\s+for|grateful\s+for)\s+"
            r"(?:some\s+|your\s+|a\s+little\s+|any\s+)?(?:[\w-]+\s+)?(?:help|advice|tips|ideas|suggestions|pointers)|"
            r"hop(?:e|ing)\s+(?:you|the assistant)\s+can\s+help)\b",
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
_PRAISE = (
    r"(?:great|brilliant|gold|perfect|amazing|awesome|helpful|fantastic|excellent|lovely|nice|super|calmer|better|"
    r"useful|spot on|a lifesaver)"
)
# The user's verdict on what the assistant just said or did: "this is gold", "that did it", "X is a nice idea".
_REACTION = re.compile(
    r"^(?:(?:that|this|it|these|those)\b[^,.;]{0,30}?\b(?:is|was|'s|are|were|sounds|looks|seems|feels)\s+"
    rf"(?:(?:so|really|very|super|absolutely|just|already|pretty|truly)\s+)*{_PRAISE}(?=\s*(?:[^\w\s]|$))"
    r"|(?:that|this|it)\s+(?:did it|did the trick|worked|fixed it|helped)\b"
    r"|[^,.;]{0,40}\b(?:is|was|'s|sounds like)\s+a\s+(?:really\s+)?(?:nice|great|good|brilliant|lovely|smart)\s+idea\b"
    # "That sounds like a fascinating book", "They're great brands", "It's amazing how reading ...".
    r"|(?:that|this|it|they|these|those)(?:'s|'re|\s+(?:is|are))?\s+(?:(?:sounds?|looks?|seems?)\s+(?:like\s+)?)?"
    r"(?:an?\s+)?(?:(?:really|so|very|truly)\s+)?(?:great|fascinating|interesting|amazing|wonderful|fun|lovely|"
    r"helpful|perfect|cool|awesome|delicious|incredible)(?:\s+[\w-]+)?\s*[.!]*$"
    r"|it(?:'s|\s+is)\s+(?:amazing|incredible|interesting|funny|crazy|wild)\s+how\b)",
    re.IGNORECASE,
)
# Someone else's opinion or advice is theirs, not a fact about the user: "my manager thinks we should move to
# Azure", "my sister keeps saying I should get a second dog", "my friend says just switch to HTTPS".
_OPINION_VERB = re.compile(
    r"\b(?:thinks|thought|reckons|swears|suggested|suggests|keeps\s+(?:saying|telling|pushing|asking)|"
    r"says|said|told\s+(?:me|us))\b",
    re.IGNORECASE,
)
_OPINION_HOLDER_MAX_WORDS = 6
_OWN_VIEW = re.compile(r"^\W*(?:i|we|i'm|i've|we've|we're)\b", re.IGNORECASE)
# What a doctor, physio or advisor says is often the user's diagnosis or standing instruction: kept.
CARER = re.compile(
    r"\b(?:doctor|gp|physio|physiotherapist|dentist|therapist|nurse|vet|advisor|supervisor|specialist|"
    r"consultant|cardiologist|dermatologist|endocrinologist|optician|dietitian|nutritionist)\b",
    re.IGNORECASE,
)
_ADVICE = re.compile(r"\b(?:should|just)\b", re.IGNORECASE)
_UNRESOLVED_PRONOUN = re.compile(
    r"^(?:it|it's|that|that's|this|these|those|they|they're|she|she's|he|he's|her|his)\b", re.I
)
_ASSISTANT_PENALTY = 0.3
_CONFIRMED_ASSISTANT_PENALTY = 0.05
_REQUESTED_CONFIDENCE = 0.9
_FACT_TURN_CONFIDENCE = 0.95
_UNRESOLVED_PRONOUN_PENALTY = 0.4


def rule_score(clause: Clause) -> tuple[float, list[str]] | None:
    """The rules' confidence that a clause is durable, and its tags; None when no rule speaks for it.

    Args:
        clause: One clause, its discourse prefix already stripped from `text`.

    Returns:
        `(confidence, tags)`, the confidence clamped to [0, 1] and rounded to 2 places.
    """
    if is_small_talk(clause.text):
        return None
    scored = _base_score(clause.text, clause)
    if scored is None:
        return None
    confidence, tags = scored
    confidence += _penalty(clause.raw, clause.text)
    return round(min(max(confidence, 0.0), 1.0), 2), tags


def cue_tags(text: str, role: str) -> list[str]:
    """The tags of the cues that match a clause (for labelling a candidate another decision kept)."""
    assistant = role == "assistant"
    return list(
        dict.fromkeys(c.tag for c in _CUES if (c.assistant_ok or not assistant) and c.pattern.search(text))
    )


def is_question(text: str) -> bool:
    """Whether a clause asks rather than states."""
    # "... wants to destroy and recreate the Route53 zone?!": a question said in alarm is a question.
    return text.rstrip().rstrip("!").endswith("?") or bool(_QUESTION_START.match(text))


def starts_with_unresolved_pronoun(text: str) -> bool:
    """Whether a clause opens with a pronoun whose referent is elsewhere ("it's on port 80")."""
    return bool(_UNRESOLVED_PRONOUN.match(text))


def penalty_hits(raw: str) -> list[float]:
    """Per penalty family (hedge, transient, state, past, deictic, incident): 1.0 when it matches."""
    return [1.0 if pattern.search(raw) else 0.0 for _, pattern in _PENALTIES]


def _base_score(text: str, clause: Clause) -> tuple[float, list[str]] | None:
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
    if is_question(text):
        delta -= 0.6
    if _UNRESOLVED_PRONOUN.match(text):
        delta -= _UNRESOLVED_PRONOUN_PENALTY
    return delta


def is_small_talk(text: str) -> bool:
    """A short greeting, thanks or acknowledgement."""
    return bool(_SMALL_TALK.match(text)) and len(text.split()) <= 6


def is_reaction(text: str) -> bool:
    """The user's verdict on the assistant's answer ("that did it", "this is gold"): about the chat, not the user."""
    return bool(_REACTION.match(text))


def is_reported_opinion(text: str) -> bool:
    """Someone else's view or advice ("my partner thinks 50/50 is fair"), which says nothing durable about
    the user; a carer's "says" or "told me" is left to the decision (a diagnosis, an instruction followed)."""
    verb = _OPINION_VERB.search(text)
    if verb is None:
        return False
    holder = text[: verb.start()]
    if not holder.strip() or len(holder.split()) > _OPINION_HOLDER_MAX_WORDS or _OWN_VIEW.match(holder):
        return False
    if verb.group(0).lower().startswith(("says", "said", "told")):
        return not CARER.search(holder) and bool(_ADVICE.search(text[verb.end() :]))
    return True


def names_something_concrete(text: str) -> bool:
    """Whether a clause names a number, version, channel, address or identifier."""
    return bool(_CONCRETE.search(text))
