"""Rewriting clauses into self-contained facts: third person, resolved pronouns, dated when time-bound."""

import re
from datetime import date

from cairn_promotion.lexicon import FREQUENCY, PAST_IRREGULAR, PETS, RELATION
from cairn_promotion.places import moves_between_places
from cairn_promotion.text import DISCOURSE_PREFIX

# --- Normalisation -------------------------------------------------------------------------------------

# "i using xampp", "I been running for years": typed without the auxiliary, said with it.
_IRREGULAR_3RD = {
    "have": "has",
    "do": "does",
    "go": "goes",
    "be": "is",
    "am": "is",
    "are": "is",
    "been": "has been",
}
# A verb that ends in "-ing" of its own ("bring", "sing"), not a participle typed without "am".
_ING_VERBS = frozenset(
    {"bring", "sing", "ring", "sting", "swing", "spring", "string", "cling", "fling", "sling"}
)
_MODALS = frozenset(
    {"can", "can't", "cannot", "will", "won't", "would", "should", "must", "could", "may", "might", "shall"}
)
_NEGATIONS = {"don't": "doesn't", "do not": "does not", "haven't": "hasn't", "have not": "has not"}
# Possessive and from where a run starts, like every pattern led by a run (see `text.squeezed`).
_TRAILING_FILLER = re.compile(
    r"(?<![\s,])[\s,]++(?:btw|lol|haha|fyi|then|thanks|thx|ty|pls|please)\W*$", re.IGNORECASE
)
# "before you hand code back" -> "before the assistant hands code back"; words that cannot be verbs stay.
_YOU_VERB = re.compile(
    r"\byou\s+(?!(?:for|to|and|or|the|a|an|in|on|at|with|of|too|all|guys|both|know|can|can't|will|won't|"
    r"would|should|must|could|may|might|did|didn't|had|were|was|always|never|also|just|really|then|so|"
    # "prefer you not to suggest", "writing to you about something": not a verb of the assistant's.
    r"not|about|from|as|if|when|that|again|here|there|now|yet|over|into|up|out|back|first|because|once)\b)"
    # A contracted negation is the verb too: "you don't" is not "you don" + "'t" (it had become "dons't").
    r"([a-z]*n['’]t|[a-z]+)\b(?!['’])",
    re.IGNORECASE,
)
# "ask you things", "trust you more", "owe you one": after these "you" is the object, and what follows is no verb.
_TAKES_YOU = frozenset(
    "ask asks asked tell tells told give gives gave show shows showed send sends sent thank thanks thanked let "
    "lets help helps helped remind reminds reminded teach teaches taught call calls called pay pays paid bring "
    "brings brought get gets got email emails emailed text texts texted message messages messaged ping pings "
    "pinged bother bothers bothered trust trusts trusted owe owes owed".split()
)
# What a contracted negation after "you" becomes after "the assistant".
_ASSISTANT_NEGATIONS = {**_NEGATIONS, "aren't": "isn't", "weren't": "wasn't"}

# "I should also mention that I am allergic to penicillin": the fact is what follows the preamble.
_PREAMBLE = re.compile(
    r"^i\s+(?:(?:should|must|ought to|might|may|would)\s+(?:also\s+|perhaps\s+|just\s+|first\s+)?"
    r"(?:say|mention|add|explain|point out|note|tell (?:you|the assistant))|confess|admit|must admit)"
    r"(?:\s+at the outset|\s+first)?(?:\s+that)?[\s,]+(?=\w)",
    re.IGNORECASE,
)
# "We adopted a greyhound, his name is Biscuit": the pronoun has no referent once the fact stands alone.
_NAME_APPOSITION = re.compile(r",\s+(?:his|her|its|their)\s+name(?:'s|\s+is)\s+(?=\w)", re.IGNORECASE)


def _rewrites(*pairs: tuple[str, str]) -> tuple[tuple[re.Pattern[str], str], ...]:
    """(pattern, replacement) pairs compiled case-insensitively, in order."""
    return tuple((re.compile(pattern, re.IGNORECASE), replacement) for pattern, replacement in pairs)


_IMPERATIVE_HEAD = (
    r"(?:give|use|keep|show|put|send|schedule|book|skip|avoid|write|add|include|make|format|reply|answer|"
    r"default|tag|ping|loop|stop|remind|list|explain|suggest|recommend|mention|leave|point|turn|set|cc|"
    r"email|address|ship|deliver)\s"
)
_YOU_CONTRACTED = re.compile(r"\byou(?:['’](ve|ll|d)| (were))\b", re.IGNORECASE)
_YOU_AUXILIARY = {"ve": "has", "ll": "will", "d": "would", "were": "was"}
_LEADING_REWRITES = _rewrites(
    (r"^(?:please\s+)?call me\s+", "The user prefers to be called "),
    (r"^let's\s+", "The user decided to "),
    (r"^(?:(?:we(?:'re| are)|i(?:'m| am))\s+)?going with\s+", "The user decided to go with "),
    (r"^(?:decision|decided)(?: recorded| made)?\s*:\s*", "Decision: "),
    (r"^(?:action items?|resolution|agreed)\s*:\s*", ""),
    (r"^(?:please\s+)?(?:don't|do not) ever\s+", "The user wants the assistant to never "),
    (
        r"^(?:don't|do not)\s+(?=(?:try|ever|use|put|book|send|suggest|schedule|add|move|call|give|make)\b)",
        "The user wants the assistant not to ",
    ),
    (r"^please\s+(?:don't|do not)\s+", "The user wants the assistant not to "),
    (r"^(?:please\s+)?(always|never)\s+", r"The user wants the assistant to \1 "),
    (r"^please\s+", "The user wants the assistant to "),
    (
        r"^(?=(?:planning|training for|preparing for|moving to|saving for|relocating to)\b)",
        "The user is ",
    ),
    (r"^i(?:'m| am)\s+", "The user is "),
    (r"^i've\s+", "The user has "),  # contracted, "have" is the auxiliary: "I've never used", "I've heard"
    (r"^i have\s+(?=\w+ed\b|been\b|got\b)", "The user has "),
    (r"^i'd\s+", "The user would "),
    (r"^i(?:'ll| will)\s+", "The user will "),
    (r"^i was\s+", "The user was "),
    (r"^my\s+", "The user's "),
    (rf"^(?={_IMPERATIVE_HEAD})", "The user wants the assistant to "),
    # "our dog Pepper": the household's is the user's; "our cluster" is just "the cluster".
    (rf"^our\s+(?=(?:{RELATION}|{PETS})s?\b)", "The user's "),
    (r"^our\s+", "The "),
)
_ADDRESSED = _rewrites(
    (r"\byou(?:'re| are)\b", "the user is"),
    (r"\byou(?:'ve| have)\b", "the user has"),
    (r"\byou'll\b", "the user will"),
    (r"\byour\b", "the user's"),
    (r"\byourself\b", "themselves"),
    (r"\byou\b", "the user"),
)
_ME = re.compile(r"\bme\b", re.IGNORECASE)
_WE_FAMILY = re.compile(
    r"\b(?:(?:kid|dog|cat|pupp(?:y|ie)|house|home|flat|apartment|garden|partner|wife|husband|son|daughter|"
    r"holiday|vacation|famil(?:y|ie)|dinner|anniversar(?:y|ie)|bab(?:y|ie)|car|grocer(?:y|ie)|pet)s?|"
    r"adopted|married|wedding|children|drive|live in|living in)\b",
    re.IGNORECASE,
)
# A session about home life, with no workplace in it: its "we" is the user and the people they live with
# ("we moved from Ghent in the summer", "we also have Tofu"), never a team. One workplace word anywhere in
# the session's user turns keeps "we" a team: a restaurant's or a school's "we" is its staff.
_HOME = re.compile(
    r"\b(?:wife|husband|partner|girlfriend|boyfriend|fianc[eé]e?|kids?|children|son|daughter|bab(?:y|ies)|twins|"
    r"toddler|mum|mom|mother|dad|father|parents|grandma|grandmother|grandpa|grandfather|flat|flatmates?|"
    r"flat-?share|house-?share|housemates?|roommates?|"
    r"apartment|landlord|cats?|dogs?|pupp(?:y|ies)|kittens?|pets?|nanny|neighbou?rs?)\b",
    re.IGNORECASE,
)
_WORKPLACE = re.compile(
    r"\b(?:team|teams|colleagues?|co-?workers?|company|startup|studio|agency|firm|office|clients?|customers?|"
    r"staff|employees?|store|shop|restaurant|kitchen|clinic|practice|school|class|students?|lab|farm|business|"
    r"repo|repos|deploy\w*|prod|production|staging|cluster|servers?|services?|api|database|db|codebase|sprint|"
    r"manager|boss|project|product|app|stack|pipeline|release|ticket|on-?call)\b",
    re.IGNORECASE,
)


def is_household(user_turns: list[str]) -> bool:
    """Whether a session's user turns talk about home life and never about a workplace."""
    text = "\n".join(user_turns)
    return bool(_HOME.search(text)) and not _WORKPLACE.search(text)


_VERB_PREFIX = re.compile(r"^(?:re|over|under|out|mis|with|fore|up)(\w{3,})$")
# Spoken contractions of a verb and "to": "I wanna know" -> "The user wants to know", not "wannas".
_SPOKEN_TO = {"wanna": "wants to", "gotta": "has to", "gonna": "is going to", "hafta": "has to"}
# Present-tense verbs that end like a past tense ("we need", not "we agreed").
_PRESENT_EED = frozenset("need feed proceed succeed exceed speed breed bleed seed heed".split())
# "CBT-I", "Type-I errors", "a Title I school", "Phase I trial": a Roman one, not the speaker.
_NOT_A_NUMERAL = "(?<!-)" + "".join(
    f"(?<!{word} )"
    for word in "phase part type class stage grade level title war chapter tier act season".split()
)
_MID_REWRITES = _rewrites(
    (r"\bi(?:'m| am)\b", "the user is"),
    (r"\bi'll\b", "the user will"),
    (r"\bi've\b", "the user has"),
    (r"\bi'd\b", "the user would"),
    (r"\bmy\b", "the user's"),
    (r"\bmine\b", "the user's"),
    (r"\bmyself\b", "themselves"),
    (rf"{_NOT_A_NUMERAL}\bi\b(?!-)", "the user"),
    (rf"\bour\s+(?=(?:{RELATION}|{PETS})s?\b)", "the user's "),
    (r"\bour\b", "the"),
)


def normalise(text: str, role: str = "user", household: bool = False) -> str:
    """Rewrite a first-person statement as a stand-alone third-person fact, when that is cheap.

    "I prefer dark mode" becomes "The user prefers dark mode"; "my name is Dana" becomes "The user's
    name is Dana". Anything the rules do not recognise is kept as written, minus filler and trailing punctuation.

    Args:
        text: One clause.
        role: The speaker; user and fact turns speak for the user, the assistant speaks to them.
        household: The session is about the user's home life (`is_household`): its "we" is the user.

    Returns:
        The normalised clause.
    """
    text = " ".join(DISCOURSE_PREFIX.sub("", text).split())
    text = _TRAILING_FILLER.sub("", text).rstrip(" .!,;:")
    text = _NAME_APPOSITION.sub(", named ", text)
    if role != "assistant":
        text = _rewrite_subject(_PREAMBLE.sub("", text))
        head, _, rest = text.partition(" ")
        for pattern, replacement in _MID_REWRITES:
            rest = pattern.sub(replacement, rest)
        text = f"{head} {rest}".strip()
        text = _AGREEMENT.sub(_agreeing, text)
        text = _SECOND_VERB.sub(lambda m: f"{m.group(1)}{third_person(m.group(2).lower())}", text)
        # After the agreement: "me" is an object, so "give me vim keybindings" must not become "vims".
        text = _ME.sub("the user", text)
        text = rewrite_we(text, household)
        text = re.sub(r"\byou(?:'re| are)\b", "the assistant is", text, flags=re.IGNORECASE)
        # "you've saved my Sunday", "you were right": the contraction or the plural verb agrees with "the assistant".
        text = _YOU_CONTRACTED.sub(
            lambda m: f"the assistant {_YOU_AUXILIARY[(m.group(1) or m.group(2)).lower()]}", text
        )
        text = re.sub(r"\byour\b", "the assistant's", text, flags=re.IGNORECASE)
        text = _YOU_VERB.sub(_assistant_verb, text)
        text = re.sub(r"\byou\b", "the assistant", text, flags=re.IGNORECASE)
        text = _wanted_done(text)
    else:
        # The assistant's words become a memory only when the user confirmed them: its "you" is the user.
        for pattern, replacement in _ADDRESSED:
            text = pattern.sub(replacement, text)
        text = _AGREEMENT.sub(_agreeing, text)
    text = _NAMED.sub(r"\1 is named ", _CALLED.sub("named ", text))
    return text[:1].upper() + text[1:]


# "The user's sister's name is Ana" -> "The user's sister is named Ana" (how the issue words a memory).
# "a cat called Pimenta" -> "a cat named Pimenta"; not "I called Dana", "prefers to be called Sammy".
_CALLED = re.compile(
    r"(?<!\bi )(?<!\bwe )(?<!\buser )(?<!\bshe )(?<!\bhe )(?<!\bthey )(?<!\bbe )\bcalled (?=[A-Z])"
)
_NAMED = re.compile(r"\b(?!user's)(\w+)'s\s+name(?:'s|\s+is)\s+(?=\w)", re.IGNORECASE)

# An instruction reads as what the user wants done, not as the assistant's task: "The user wants the
# assistant to show prices in CHF" -> "The user wants prices shown in CHF", as a person would note it.
# Only transitive verbs with a short object that a preposition, a conjunction or the clause's end closes
# ("keep answers short" and "avoid answering with tables" stay as they are).
_PARTICIPLES = {
    "use": "used", "keep": "kept", "show": "shown", "put": "put", "send": "sent", "schedule": "scheduled",
    "book": "booked", "avoid": "avoided", "write": "written", "add": "added", "include": "included",
    "format": "formatted", "tag": "tagged", "list": "listed", "explain": "explained", "suggest": "suggested",
    "recommend": "recommended", "mention": "mentioned", "email": "emailed", "ship": "shipped",
    "deliver": "delivered", "move": "moved", "translate": "translated", "cite": "cited", "quote": "quoted",
    "sort": "sorted", "skip": "skipped", "change": "changed", "touch": "touched", "delete": "deleted",
    "store": "stored", "save": "saved", "copy": "copied", "ping": "pinged",
}  # fmt: skip
_WANTED = re.compile(
    r"^The user wants the assistant (not )?to ((?:always|never) )?(?:try to )?(give the user|[a-z]+) "
    r"((?:[\w'./@:-]+ ){0,4}?[\w'./@:%-]+?)"
    r"((?:,? (?:in|on|at|to|for|with|under|over|by|from|as|before|after|without|instead|rather|than|when|"
    r"whenever|if|unless|until|into|and|but|because|since|during|via|through|first|only|everywhere|"
    r"anywhere|again|every|each|within|outside|inside)\b.*)?)$"
)
_NOT_AN_OBJECT = re.compile(
    r"^(?:the user|the assistant|me|him|her|us|you)\b|^\w+ing$|\b(?:\w+ly|short|shorter|brief|concise|"
    r"simple|small|minimal|clean|tidy|private|secret|open|closed|separate|consistent|plain|up|off|out|on|"
    r"low|high|together|apart|the user|the assistant)$"
)

_INDEFINITE = frozenset({"anything", "nothing", "something", "everything"})


def _wanted_done(text: str) -> str:
    match = _WANTED.match(text)
    if match is None:
        return text
    negated, adverb, verb, obj, rest = match.groups()
    if verb == "give the user":
        done = obj  # "give me vim keybindings in any instructions" -> "wants vim keybindings in ..."
    elif verb in _PARTICIPLES and not _NOT_AN_OBJECT.search(obj):
        head, _, tail = obj.partition(" ")
        # "never put anything the morning after a night shift": an indefinite pronoun is the whole object.
        if head.lower() in _INDEFINITE and tail:
            done = f"{head} {_PARTICIPLES[verb]} {tail}"
        else:
            done = f"{obj} {_PARTICIPLES[verb]}"
    else:
        return text
    wants = "does not want" if negated else f"{adverb or ''}wants"
    return f"The user {wants} {done}{rest}"


_TIME_BOUND = re.compile(
    r"\b(?:today|tonight|tomorrow|yesterday|next|last|this (?:week|month|year|weekend|morning|evening)|"
    # "on the 5th of each month", "on 25th every month" recur: no day of their own.
    r"(?:on|by|until|from|since) (?:the )?\d{1,2}(?:st|nd|rd|th)?\b(?! (?:of )?(?:each|every|the|a) month)|"
    r"\d{1,2}(?:st|nd|rd|th)? (?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b|"
    r"(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]* \d{1,2}(?:st|nd|rd|th)?\b|"
    r"(?:on|this|next) (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)\b|"
    r"in (?:a|one|two|three|\d+) (?:days?|weeks?|months?))",
    re.IGNORECASE,
)


def is_time_bound(text: str) -> bool:
    """Whether a fact is anchored in time relative to when it was said ("on 18 April", "next week")."""
    return bool(_TIME_BOUND.search(text))


# Words that open a sentence only because they come first: after the date prefix they read in lower case
# ("On 2025-01-22, this month's bill was $142"); a name or an acronym keeps its capital.
_COMMON_LEADS = frozenset(
    "the user user's a an this that these those it it's its there there's here my our some any every each "
    "last next today tomorrow tonight yesterday now then".split()
)


def self_contained(text: str, role: str = "user", day: date | None = None, household: bool = False) -> str:
    """A clause as a memory that reads on its own: third person, and dated when time-bound.

    Args:
        text: One clause.
        role: The speaker.
        day: The date the turn was written, if known.
        household: The session is about the user's home life (`is_household`): its "we" is the user.

    Returns:
        The rewritten fact, e.g. "On 2026-04-02, the user is flying to Singapore on 18 April".
    """
    fact = normalise(text, role, household)
    if day is not None and is_time_bound(fact):
        first, _, rest = fact.partition(" ")
        lead = first.lower() if first.lower() in _COMMON_LEADS else first
        fact = f"On {day.isoformat()}, {lead} {rest}".strip()
    return fact


_DATE_PREFIX = re.compile(r"^On \d{4}-\d{2}-\d{2}, ")


def with_date(date: str | None, sentence: str) -> str:
    """A sentence about the user put back after the date its memory opened on ("On 2025-02-27, "), its first
    letter lowered there and raised without one: the one way every rewrite that re-says a memory keeps its date."""
    if not date:
        return sentence[:1].upper() + sentence[1:]
    return f"{date}{sentence[:1].lower()}{sentence[1:]}"


def undated(fact: str) -> str:
    """A fact without the date `self_contained` put in front of it, for rules that read how a fact opens:
    "On 2025-03-11, the user needs help with a budget" -> "The user needs help with a budget"."""
    rest = _DATE_PREFIX.sub("", fact, count=1)
    return fact if rest == fact else rest[:1].upper() + rest[1:]


# "I should like to plot ...", "I should prefer English or French sources": in formal English "should" after
# "I" is "would", the mood of a wish, not an obligation. Rewritten after the decision (`offline.as_memory`),
# so the wish is then read as one ("would like to" is a task, "would prefer" a preference).
_FORMAL_SHOULD = re.compile(
    r"^((?:On [\d-]+, )?the user )should (?=(?:like|prefer|love|hate|rather)\b)", re.I
)


# "no tables in your answers" read as an instruction had become "The user wants the assistant to no tables in
# the assistant's answers": what is wanted is the noun, not a task. Also after the decision.
_NO_NOUN_WANTED = re.compile(r"^((?:On [\d-]+, )?the user )wants the assistant to (?=no \w)", re.I)


# "The user's daughter Inês has 7 years": an age said as in Portuguese, Spanish or French ("tem 7 anos"). Also
# after the decision.
_AGE_HELD = re.compile(r"\bhas (\d{1,2}) years(?: old)?\W*$")


# "The shuttle thing kills it honestly, okay yes let's go with Marlow Lake Lodge", "The user considered San
# Sebastián, but honestly let's go with Porto, the kids want the river boats": the weighing ends in a decision,
# and the decision is the fact. Also after the decision (`offline.as_memory`).
# The phrase is found first and the words before it are read from a bounded window: one pattern spanning both
# backtracked quadratically over a run of "okay, okay, ..." (21 ms for a memory of 2,000 characters, the most a
# candidate holds; 0.03 ms this way).
_LETS_GO_WITH = re.compile(r"\b(?:let's|lets|let us) go with\s+", re.I)
_PAUSE_BEFORE = re.compile(
    r"(?:,\s*|\s+)(?:(?:okay|ok|alright|so|but|and|yes|yeah|honestly|then)[,\s]+)*$", re.I
)
_PAUSE_WINDOW = 80
_CHOSEN = re.compile(r"[^,;]*")


def decision_at_end(fact: str) -> str:
    """The decision a fact ends on ("..., okay yes let's go with quartz" -> "The user decided to go with quartz"),
    dated as the fact was, or the fact as it was."""
    found = _LETS_GO_WITH.search(fact)
    if found is None:
        return fact
    window = fact[max(0, found.start() - _PAUSE_WINDOW) : found.start()]
    pause = _PAUSE_BEFORE.search(window)
    if pause is None or not fact[: found.start() - len(window) + pause.start()].strip():
        return fact  # "Let's go with Lisbon" opens the memory: `normalise` says it
    chosen = _CHOSEN.match(fact, found.end())
    choice = chosen.group().rstrip(" .!?") if chosen else ""
    if not choice:
        return fact
    dated = _DATE_PREFIX.match(fact)
    return with_date(dated.group() if dated else None, f"the user decided to go with {choice}")


# "Had acl surgery in 2023", "On 2025-05-19, Got an allotment last year": the user left out "I" before a verb in
# the past, which no rule gave a subject. Only the past ("Run the tests before publish" is an instruction), and
# only verbs whose missing subject is the speaker ("Started right after the deploy" is the incident's start).
_BARE_PAST = re.compile(
    r"^(?P<date>On [\d-]+, )?(?P<verb>(?-i:Had|Got|Moved|Switched|Bought|Joined|Quit|Adopted|Sold|Retired|"
    r"Graduated))(?P<rest> (?!it\b|that\b|this\b)\w.*)$",
    re.IGNORECASE,
)


# "Allergic to penicillin", "Coeliac, strictly gluten-free", "Type 1 diabetic since age 12": a lasting state
# said with no subject is the speaker's, as in a form ("Allergies: ..."); scored 0.31-0.48 when it stood alone.
# Only before a pause, a date or the end: "Vegan options are thin here" says nothing about the user.
_BARE_STATE = re.compile(
    r"^(?P<date>On [\d-]+, )?(?P<state>allergic to (?!it\b|that\b|this\b)\w[\w -]*?|type [12] diabetic|diabetic|"
    r"coeliac|celiac|lactose[- ]intolerant|vegan|vegetarian|pescatarian|deaf|dyslexic|asthmatic|epileptic)"
    r"(?: here)?(?P<rest>(?:,| since\b| and\b| for\b).*|)$",
    re.IGNORECASE,
)


def with_bare_subject(fact: str) -> str:
    """A fact that opens on a verb in the past or on a lasting state with no subject, said of the user: "Had acl
    surgery in 2023" -> "The user had acl surgery in 2023", "Allergic to penicillin" -> "The user is allergic to
    penicillin"."""
    if (state := _BARE_STATE.match(fact)) is not None:
        said = f"The user is {state.group('state')[0].lower()}{state.group('state')[1:]}{state.group('rest')}"
        return with_date(state.group("date"), said)
    if (bare := _BARE_PAST.match(fact)) is None:
        return fact
    return with_date(bare.group("date"), f"The user {bare.group('verb').lower()}{bare.group('rest')}")


def plain_conditional(fact: str) -> str:
    """A fact with a formal "the user should like/prefer" said as "would", "wants the assistant to no tables"
    as "wants no tables", and an age someone "has" as what they are."""
    fact = _NO_NOUN_WANTED.sub(r"\1wants ", _FORMAL_SHOULD.sub(r"\1would ", fact))
    return _AGE_HELD.sub(r"is \1", fact)


# Adverbs between the subject and its verb ("I just paid", "I only drink", "we recently moved"): the verb
# after them is conjugated, not the adverb ("justs", "onlies"). Verbs that end in -ly are not adverbs.
# "both" too: "We both work from home" had become "The user boths work from home"; and "very", "almost",
# "once", "kinda" ("The user veries nearly lost them", "The user onces met him").
_LEAD_ADVERBS = frozenset(
    "just only already now even soon then both quite rather very almost once ever kinda sorta".split()
)
_LEAD = "|".join(sorted(_LEAD_ADVERBS))
_AGREEMENT = re.compile(
    rf"(\bthe user (?:(?:{FREQUENCY}|{_LEAD}|(?:kind|sort) of|"
    r"(?!(?:apply|reply|rely|supply|fly|ally|bully|multiply|comply|imply)\b)\w{3,}ly) )*)"
    r"(?!(?:is|was|has|does|doesn't|can|can't|will|won't|would|should|shall|"
    r"must|could|may|might|and|or|to|in|on|at|for|of|with|team|family|side|a|an|the|this|that|some|any|"
    rf"{FREQUENCY}|{_LEAD}|(?:kind|sort) of|\w+ly)\b)"
    # "don't" as a whole ("that the user doesn't touch", not "dons't"): a word never ends at an apostrophe.
    r"(don't|do not|haven't|have not|go|do|[a-z]{3,})(?<!s)\b(?!')",
    re.IGNORECASE,
)
_FREQUENCY_WORD = re.compile(FREQUENCY, re.IGNORECASE)
# The modals as a pattern (one list: `_MODALS`), for the two rules below that a modal stops.
_MODAL_WORDS = "|".join(sorted(m for m in _MODALS if "'" not in m))
# A question's auxiliary before the subject keeps the verb bare: "what should the user check", "can the user
# just swap it", "why do the user need" (not "checks", "swaps", "needs").
_INVERTED_AUXILIARY = re.compile(rf"\b(?:{_MODAL_WORDS}|do|does|did)\s+$", re.IGNORECASE)


# A second verb the user joined to the first with "and": "I'm vegan and live in Lisbon", "I wear a Libre 3 and try
# to keep glucose under 160" -> "... and lives", "... and tries" (writers W and the in-style dev half). Not after
# "to" or a modal, where the two verbs share it ("wants to be careful and do things properly"), and only verbs
# that are rarely a noun after "and".
_SECOND_VERB = re.compile(
    rf"^(The user (?:\w+ly )?(?:is|was|has|does|\w+s)\b(?:(?!\bto\b|\band\b|\b(?:{_MODAL_WORDS})\b)[^,;])*? and )"
    r"(try|want|need|like|love|hate|take|use|make|keep|go|get|have|do|live|prefer|"
    r"eat|drink|ride|cook|write|train|swim|teach|visit|send|pay|spend|save|buy|watch|listen|share|hope|wish|enjoy|"
    r"avoid)\b"
)


def _agreeing(match: re.Match[str]) -> str:
    if _INVERTED_AUXILIARY.search(match.string, 0, match.start()):
        return match.group(0)
    return f"{match.group(1)}{third_person(match.group(2).lower())}"


_LY_VERBS = frozenset("apply reply rely supply fly ally bully multiply comply imply".split())


def is_adverb(word: str) -> bool:
    lower = word.lower()
    return (
        bool(_FREQUENCY_WORD.fullmatch(lower))
        or lower in _LEAD_ADVERBS
        or lower in ("kind of", "sort of")
        or (len(lower) > 4 and lower.endswith("ly") and lower not in _LY_VERBS)
    )


_PLAIN_WORD = re.compile(r"[a-z][a-z'-]*", re.IGNORECASE)
_WE_HEAD = re.compile(r"^we(?:'re| are| were|'ve| have|'ll| will|'d| would)?\s+", re.IGNORECASE)


_AUXILIARY_BEFORE = re.compile(
    r"\b(?:can|could|will|would|should|must|may|might|shall|do|does|did|don't|didn't|won't|can't)\s+$", re.I
)


def _assistant_verb(match: re.Match[str]) -> str:
    # "before you hand code back" -> "the assistant hands"; "can you help" keeps the base form after a modal.
    verb = match.group(1)
    before = match.string[: match.start()].split()
    if before and before[-1].lower() in _TAKES_YOU:
        return f"the assistant {verb}"
    if (negation := verb.lower().replace("’", "'")).endswith("n't"):
        return f"the assistant {_ASSISTANT_NEGATIONS.get(negation, verb)}"
    if _AUXILIARY_BEFORE.search(match.string[: match.start()]):
        return f"the assistant {verb}"
    return f"the assistant {third_person(verb.lower())}"


def rewrite_we(text: str, household: bool = False, group: str | None = None) -> str:
    """A clause opening on "we" said of who "we" is: "We use pnpm" -> "The user's team uses pnpm"; a household
    "we" is the user: "we have two cats" -> "The user has two cats" (as a person would write it; "the user's
    family" would be one more word to mismatch); a `group` the turn named is itself ("my restaurant": "we're
    closed Sundays" -> "my restaurant is closed Sundays")."""
    match = _WE_HEAD.match(text)
    if not match:
        return text
    # "we moved to Lisbon" / "from Ghent" is a home; "we moved to vitest", "from Jenkins" is the team's stack.
    at_home = household or _WE_FAMILY.search(text) is not None or moves_between_places(text)
    who = "The user" if at_home else group or "The user's team"
    aux = match.group(0).strip().lower()
    rest = text[match.end() :]
    if aux in ("we're", "we are"):
        return f"{who} is {rest}"
    if aux in ("we've", "we have"):
        return f"{who} has {rest}"
    if aux in ("we'll", "we will"):
        return f"{who} will {rest}"
    if aux in ("we'd", "we would"):
        return f"{who} would {rest}"  # "We'd like invoices in EUR" had stayed in the first person
    if aux == "we were":
        return f"{who} was {rest}"
    adverbs = []
    verb, _, tail = rest.partition(" ")
    # "we finally upgraded", "we never deploy": conjugate the verb, not the adverb.
    while is_adverb(verb) and tail:
        adverbs.append(verb)
        verb, _, tail = tail.partition(" ")
    if not _PLAIN_WORD.fullmatch(verb):
        return " ".join([who, *adverbs, verb, tail]).strip()  # "we do, ...": no verb to conjugate
    return " ".join([who, *adverbs, third_person(verb.lower()), tail]).strip()


# The sentence's capital kept inside the rewrite: "The user wants the assistant to Always give ...", "The user
# is Saving for a house deposit".
_KEPT_CAPITAL = re.compile(
    r"^(?P<head>The user wants the assistant (?:not )?to (?=[A-Z][a-z]+\b)"
    r"|The user is (?=[A-Z][a-z]+ing (?:for|to|on|a|an|the|my|our|some)\b))(?P<capital>[A-Z])"
)


def _rewrite_subject(text: str) -> str:
    for pattern, replacement in _LEADING_REWRITES:
        if pattern.match(text):
            rewritten = pattern.sub(replacement, text, count=1)
            return _KEPT_CAPITAL.sub(lambda m: m["head"] + m["capital"].lower(), rewritten)
    match = re.match(r"^i\s+", text, re.I)
    if match is None:
        return text
    rest = text[match.end() :]
    adverbs = ""
    while (word := re.match(r"((?:kind|sort) of|[\w'-]+)\s+", rest, re.I)) and is_adverb(word.group(1)):
        adverbs, rest = adverbs + word.group(0), rest[word.end() :]
    verb = re.match(r"(?:don't|do not|[\w'-]+)\b", rest, re.I)
    if verb is None:
        return text
    return f"The user {adverbs}{third_person(verb.group(0).lower())}{rest[verb.end() :]}"


def third_person(verb: str) -> str:
    """A verb as said of one person ("go" -> "goes", "file" -> "files"), unchanged where it has no such form."""
    if verb in _NEGATIONS:
        return _NEGATIONS[verb]
    if verb in _SPOKEN_TO:
        return _SPOKEN_TO[verb]
    if verb.endswith("n't"):
        return verb  # "didn't", "can't", "wasn't": no third-person form of their own
    if verb in _IRREGULAR_3RD:
        return _IRREGULAR_3RD[verb]
    if verb.endswith("ing") and len(verb) > 4 and verb not in _ING_VERBS:
        return f"is {verb}"
    if verb in _MODALS or (verb.endswith("ed") and verb not in _PRESENT_EED) or verb in PAST_IRREGULAR:
        return verb
    if (prefixed := _VERB_PREFIX.match(verb)) and prefixed.group(1) in PAST_IRREGULAR:
        return verb  # "rewrote", "overslept", "undertook"
    if re.search(r"(?:s|sh|ch|x|z|o)$", verb):
        return f"{verb}es"
    if re.search(r"[^aeiou]y$", verb):
        return f"{verb[:-1]}ies"
    return f"{verb}s"
