"""What the user only guesses, or has not decided, or only sighs about, is not a fact about them.

Runs on a memory as it would be written, after the decision kept its clause. "The user thinks it clashes
with the scrub job", "The user suspects the clocks changing may have confused it", "The user bets it's
timezone": a guess about this session's problem, or a view the user does not commit to. The decision sees
the hedge ("i think" is one of its penalties) but keeps such clauses when the rest reads like a fact. No
labelled set has a memory opening with the user's guess as a fact; a preference is said with its own verb
("prefers", "likes") and stays.
"""

import re

from cairn_promotion.asks import DATED_USER, head_before

_GUESS = re.compile(
    rf"{DATED_USER}(?:thinks|believes|suspects|bets|guesses|reckons|supposes|figures|assumes|imagines|doubts)\b"
    # "The user would never have noticed", "The user could have been more careful": what did not happen, or
    # might have.
    rf"|{DATED_USER}(?:would|could|might)(?:n't| not| never)? have (?:been|had|done|got|known|seen|\w+ed|\w+en)\b"
    # "The user is not certain, since the site was set up by the user's predecessor", "is less certain about the
    # shore excursions", "is keen to get the sequence right", "finds themselves needing to think something
    # through", LongMemEval's "is not sure if the user should bring the clipless pedals": how sure or eager the
    # user is about this session's question (writer N; 5 survivors, no writer labelled one).
    rf"|{DATED_USER}(?:is|am) (?:(?:not|less|quite|rather) (?:certain|sure)|unsure|keen to)\b"
    rf"|{DATED_USER}finds (?:themselves|himself|herself)\b"
    # "The user has like zero ideas", "has a vague recollection that it has to do with fires", "is a bit clueless
    # about the raw-feeding stuff", "has never used Playwright before": what the user does not know of this
    # session's question (writers A, M, N and X; 4 survivors, none matched).
    rf"|{DATED_USER}(?:has (?:like |got )?(?:no|zero) ideas?|has a vague (?:recollection|idea)"
    r"|is (?:a bit |a little |completely |totally )?clueless|has never (?:used|tried|done) \S+(?: \S+)? before)\b"
    # "The user is finally trying to be an adult about retirement", "wants to be careful and do things properly",
    # "will do seeds for the bake sale, just to be safe": how carefully the user means to go about the session's
    # question (writers D, E and I; none matched). What to be careful with is a constraint ("has to be careful
    # with NSAIDs"), and stays.
    rf"|{DATED_USER}(?:\w+ly )?(?:is (?:\w+ly )?trying|wants|tries|needs|has) to be "
    r"(?:careful|an adult|sensible|responsible)(?=\W*$| and\b| about\b)"
    r"|.*,\s*just to be safe\W*$",
    re.IGNORECASE,
)


# "School nights are a battle", "Weekend trips are always a whole thing", "The user's eating is chaos": how a
# part of life feels, said as a sigh; what makes it so is the fact, when said ("is hard of hearing so phone
# calls are a mess" keeps its cause). Writers E, Q and the in-style writers: 4 survivors, none matched.
_VENTING = re.compile(
    r"^(?!.*\bso\b)[^,;]*?\b(?:is|are)(?: (?:always|basically|such|just|so|literally|honestly|a bit|kind of))* "
    r"(?:an? )?(?:whole thing|battle|nightmare|mess|struggle|saga|circus|zoo|chaos|trash|hell|headache)\W*$",
    re.IGNORECASE,
)


# "The user always forgets", "always messes it up", "totally blew it on takeout", "always panics about tax time",
# "never quite had the time", "does tend to stare": the user chiding themselves, with nothing said of what
# (writers G, M, N, O, T and U; 6 survivors, none matched). What is forgotten or put off ("always forgets to
# take the user's meds") says what, and stays.
_SELF_REPROACH = re.compile(
    rf"{DATED_USER}(?:always |never |totally |just |really )?(?:"
    r"forgets|messes (?:it|this|that|things) up|blew it|panics(?: about \w+(?: \w+)?)?|does tend to \w+"
    r"|(?:never )?quite (?:had|has) the time)\b(?:\s+on\s+\w+)?\W*$",
    re.IGNORECASE,
)


def is_guess(memory: str) -> bool:
    """Whether a memory states only what the user guesses or believes ("The user thinks ...")."""
    return _GUESS.match(memory) is not None


def is_venting(memory: str) -> bool:
    """Whether a memory says only how a part of the user's life feels ("School nights are a battle")."""
    return _VENTING.match(memory) is not None or _SELF_REPROACH.match(memory) is not None


# A plan not yet made: "Maybe the user will take the JLPT N3 next year", "The user is maybe going to train for a
# half marathon", "Dana is thinking about maybe doing a 5K", "The builder might be able to start in March",
# "... not sure yet", "... but hasn't committed", "going back and forth between two venues". Only a hedge on
# the clause's own verb counts: "perhaps the burden" and "exercises the user might do at home" state something.
_UNDECIDED = re.compile(
    r"^(?:On [\d-]+, )?(?:maybe|perhaps)\b"
    r"|^(?:On [\d-]+, )?(?:the user|the user's [\w ]+?|the \w+|[A-Z]\w+) might\b"
    r"|\b(?:is|are|am) maybe going to\b|\bthinking (?:about )?maybe\b"
    r"|\bmaybe (?:the user|we|i|they|he|she) (?:will|could|would|might)\b|(?:^|,\s*)might\b"
    r"|\bnot sure(?: yet)?\W*$|\b(?:hasn't|haven't|has not|have not) (?:committed|decided|signed up)\b"
    # "The user keeps going back and forth between redis and a postgres table", "is torn between two venues".
    r"|\b(?:going|goes|go|went) back and forth\b|\btorn between\b|\b(?:can't|cannot) decide\b|\bon the fence\b"
    # "The user is actually thinking of investing in a milk frother", "has been thinking about getting a bike lock",
    # "is considering the glass top option too", "is toying with LaTeX for this chapter": a plan weighed, not made
    # (LongMemEval: 21 survivors, none holding an answer; writer E; no readable set labels one).
    r"|\b(?:is|are|am|was|were|has been|have been)(?: \w+ly| also| still| now)? (?:thinking (?:of|about)|considering|"
    r"toying with)\b",
    re.IGNORECASE,
)


def without_undecided(memory: str) -> str | None:
    """A memory without the plan it has not made: the statement before the hedged part when the hedge comes
    after a clause break ("The user's husband Tom plays guitar so maybe we could do a duet" -> "The user's
    husband Tom plays guitar"), None when the memory is only that plan, the memory itself when it has none."""
    hedge = _UNDECIDED.search(memory)
    if hedge is None:
        return memory
    return head_before(memory, hedge.start())


# "The user is planning an offsite for the design team", "The user is planning to redo the back garden": a plan
# named with none of its details is what the session is about; what lasts is when, where or how big ("planning
# the wedding for September 2026 in Porto", "the team offsite for Q3", "the family summer trip"). No writer
# labelled one without a detail (9 survivors on the outside writers' sets, none matched).
_PLAN_NAMED = re.compile(
    rf"{DATED_USER}is (?:planning|organi[sz]ing|preparing|arranging)\b(?P<plan>.*)$", re.IGNORECASE
)
_PLAN_DETAIL = re.compile(
    r"\d|\b(?i:january|february|march|april|may|june|july|august|september|october|november|december|"
    r"spring|summer|autumn|fall|winter|christmas|easter)\b"
    r"|\b[A-Z][a-z]"  # a place or a name: "in Porto", "with Dana"
)


def is_bare_plan(memory: str) -> bool:
    """Whether a memory names a plan the user is making and nothing of when, where or how big it is."""
    match = _PLAN_NAMED.match(memory)
    return match is not None and _PLAN_DETAIL.search(match.group("plan")) is None
