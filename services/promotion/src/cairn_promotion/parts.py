"""A kept clause's words as one fact per memory: bare-subject facts after a comma, the statements of a dictated
run-on, and the parts of a clause under the gate that the decision reads again one at a time.

All of it runs after the decision, on the words of a clause it read whole (as it was trained).
"""

import re

from cairn_promotion.lexicon import FREQUENCY, OWN_IDENTIFIER
from cairn_promotion.text import TOPIC_LABEL

# "prod runs on GKE in us-central1, staging is a separate project", "take-home is £3,100/month, rent is £1,250":
# a bare noun and its verb after a comma start a fact of their own. Not a relative ("which is lovely"), a
# pointer ("this is"), a name given ("his name is"), a subordinate ("as is the convention") or an adverb before
# the same subject's verb ("Pixel 8, always has been"). Applied to a kept clause's memory after the decision
# (`fact_parts`), never to the clauses the decision reads: it was trained on them whole, and retrained on the
# split clauses it lost on sessions nobody here wrote (eval/README.md, twenty-first session).
_BARE_SUBJECT = re.compile(
    rf",\s+(?:and\s+)?(?!(?:which|who|that|this|what|there|it|(?:his|her|its|their)\s+name|{FREQUENCY}|"
    r"also|still|just|now|only|then|as|so|if|when|because|since|though|although|unless|once)\b)"
    r"(?=[a-z][\w-]*(?:\s+[a-z][\w-]*)?\s+(?:is|are|runs|uses|has|lives|goes|sits)\s)",
    re.IGNORECASE,
)
FACT_PART_MIN_WORDS = 3
# "Student ID 2291847, PhD student in the School of Informatics": the user's own reference said first, then
# something else after a comma; the reference is a fact of its own.
_OPENING_IDENTIFIER = re.compile(rf"^{OWN_IDENTIFIER}(?P<comma>,\s+)(?=\S)", re.IGNORECASE)

# "I'm a PhD student I work on soil microbiomes", "I'm type 1 diabetic I use a Dexcom G7", "our dog Biscuit he's a
# beagle he just loses it": a dictated run-on has no punctuation where a statement ends. "I", "we", "he", "she"
# and "they" are only ever subjects, so one of them after a word that cannot lead into a clause ("that", "so",
# "think", "because", ...) opens the next statement.
_LEADS_INTO_CLAUSE = (
    r"and|but|or|nor|so|that|which|who|whom|what|when|whenever|where|how|why|if|because|cause|since|as|than|"
    r"until|till|unless|while|whether|though|although|before|after|once|then|think|thought|know|knew|guess|"
    r"hope|said|say|says|mean|means|wish|sure|glad|like|feel|felt|believe|bet|suppose|reckon|figured|realised|"
    r"realized|tell|told|ask|asked|remember|forgot|forget|seems|seem|even|only|just|also|maybe|"
    r"probably|actually|honestly|basically|yeah|yes|no|well|oh|ok|okay|um|uh|lol|haha|now|everything|"
    r"all|both|whatever|wherever|whoever|the|a|an|to|of|for|with|by|at|in|on|from|about|do|did|does|can|could|"
    r"would|should|will|shall|must|may|might|is|are|was|were|be|been|am|let|make|makes|made|help|helps|see|saw|"
    r"me|us|him|her|them|you|it|i|n|nd|otherwise|reading|read|heard|hear|noticed|found|learned|learnt|"
    r"understand|decided|agreed|promised|assume|assumed|doubt|worried|afraid|hoping|thinking|saying|here|there|"
    r"out|case|feeling|mention"
)
_LEADS_IN = frozenset(_LEADS_INTO_CLAUSE.split("|"))
# A subject pronoun and the word after it, with the word before it (a lower-case "i" only as "i'm", "i've").
_SUBJECT_AFTER_WORD = re.compile(
    r"(?P<before>\w[\w'-]*)(?:\)|\s+[-–—])?\s+(?=(?:(?-i:I)|i(?='m|'ve)|we|he|she|they)(?:'m|'ve|'re|'s|'d|'ll)?\s+[a-z])",
    re.IGNORECASE,
)


# What a statement before the cut must have: a subject pronoun and its word, or a copula or "have" ("the tool
# we use is fine" has neither before "we": a relative clause without its "that", not a run-on).
_HAS_CLAUSE = re.compile(
    r"\b(?:(?:I|we|he|she|they|it|you)(?:'m|'ve|'re|'s|'d|'ll)?\s+\w|(?:is|are|was|were|has|have|had)\b)"
    r"|\w(?:'m|'s|'re|'ve)\b"
    # "my partner Dana works nights she's an ER nurse": someone of the user's and what they do.
    r"|\b(?:my|our)\s+[\w-]+\s+(?:(?-i:[A-Z])[\w-]+\s+)?(?-i:(?!(?:is|was|has)\b)[a-z]+(?:s|ed))\b",
    re.IGNORECASE,
)


# Where the statement before a cut begins: after its last comma or "and".
_LAST_JOIN = re.compile(r"^.*(?:,|\b(?:and|but)\b)\s*", re.IGNORECASE | re.DOTALL)
# "a role I have held", "the age I have reached", "the main reason we bought the place", "exercises I might do":
# a relative clause without its "that" follows a noun with no verb of its own since the last comma, or a
# "which"; and a modal after the pronoun is more often one ("anything I can eat") than a new statement.
_RELATIVE_START = re.compile(
    r"^\W*(?:which|who|whom|whose|where|that\b(?!'s)"
    # "It's just a pair of trainers I ordered on a whim", "It is the first holiday we have taken": what "it"
    # is, said by the relative clause that follows.
    r"|(?:it|that|this|there|these|those|here)(?:'s|'re| is| are| was| were)\b)",
    re.IGNORECASE,
)
# "When I travel for work I always take the train", "since this morning's merge we're getting ...", "because
# whenever they want something they just buy it": the pronoun's statement is the main clause of a subordinate
# one, which stays with it.
_SUBORDINATE_IN = re.compile(
    r"\b(?:when|whenever|if|because|since|although|though|unless|until|while|before|after|once|whether|"
    # "do you know how many stars I need": what the pronoun's clause says is asked about.
    r"what|how|which|who|where|why)\b",
    re.IGNORECASE,
)
# "the old one we decommed", "the one I like", "a test VM I was messing with last month": a verb without
# its object, so a relative clause without its "that".
_NO_OBJECT = re.compile(
    r"^\S+\s+(?:[\w']+\s+){0,2}?(?:with|to|for|on|about|at|from|of)\s+(?:last|this|next|every|yesterday|today)\b"
    r"|^\S+(?:\s+\S+)?(?:\s+(?:recently|lately|already|before|again|too|yet))?\W*$"
    # "this little Rust CLI I maintain it's called logsift": the next statement starts where the object would be.
    r"|^\S+\s+(?:just\s+|really\s+)?[\w-]+\s+(?:it's|it\s+is|he's|she's|they're|i|we)\b"
    # "the attendees I met at the Las Vegas conference", "that BBQ joint I discovered last year", "the fertilizer I
    # use for my succulents": a verb that takes an object, with a preposition or a time where the object would be
    # (LongMemEval). "we met at uni" is two people meeting, and a run-on.
    r"|^(?:I|(?:we|he|she|they)(?!\s+met\b))\s+(?:just\s+|really\s+|recently\s+|always\s+|usually\s+)?"
    r"(?:met|discovered|use|used|bought|got|saw|found|ordered|picked\s+up|mentioned|recommended|tried|visited|"
    r"watched|read|love|loved|like|liked|attended|threw|hosted|organi[sz]ed)\s+"
    r"(?:at|for|in|on|from|during|last|this|yesterday|recently|back|an?\s+(?:week|month|year|few|couple)\b)\b"
    # "nobody I have ever met": a perfect with nothing after it.
    r"|^(?:\S+\s+(?:have|has|had)|\S+'(?:ve|d))\s+(?:ever\s+|never\s+|just\s+)?[\w-]+\W*$",
    re.IGNORECASE,
)
_MODAL_AFTER = re.compile(
    r"^\w+(?:'d|'ll)|^\w+\s+(?:can|could|might|may|should|would|will|must|shall)\b", re.IGNORECASE
)


# A name said, then taken up again by "he" or "she" (spoken English puts the topic first).
_DISLOCATED = re.compile(
    r"^(?P<owner>\W*(?:my|our)\s+[\w-]+)(?P<name>\s+(?-i:[A-Z][\w-]+))?\s+(?:he|she)(?:(?P<verb>'s|\s+\w+))",
    re.IGNORECASE,
)
_OPENING_PRONOUN = re.compile(r"^(?:he|she)('s\b)?", re.IGNORECASE)
_NAMED_OWNED = re.compile(r"^\W*(?:my|our)\s+[\w-]+\s+(?P<name>(?-i:[A-Z][\w-]+))\b", re.IGNORECASE)


_RUN_ON_WINDOW = 300
# The longest run-on clause in the labelled sets holds 2 statements (a filler already ends most of them).
_RUN_ON_MAX_STATEMENTS = 8


def _run_on_statements(said: str) -> list[str]:
    """A dictated run-on cut where a subject pronoun follows a word that cannot lead into its clause."""
    pieces, start = [], 0
    for match in _SUBJECT_AFTER_WORD.finditer(said):
        # Read in a window either side, so a long turn costs no more per pronoun than a short one.
        statement = _LAST_JOIN.sub("", said[max(start, match.start() - _RUN_ON_WINDOW) : match.end("before")])
        after = re.split(r"[,.;]", said[match.end() : match.end() + _RUN_ON_WINDOW], maxsplit=1)[0]
        if (
            match.group("before").lower() not in _LEADS_IN
            and len(statement.split()) >= FACT_PART_MIN_WORDS
            and _HAS_CLAUSE.search(statement)
            and not _RELATIVE_START.match(statement)
            and not _SUBORDINATE_IN.search(statement)
            and not _MODAL_AFTER.match(after)
            and not _NO_OBJECT.match(after)
        ):
            pieces.append(said[start : match.end("before")])
            start = match.end()
    pieces.append(said[start:])
    if len(pieces) > _RUN_ON_MAX_STATEMENTS:
        return [said]  # not speech: a paragraph of them is pasted or generated text
    # "our dog Biscuit he's a beagle he just loses it", "my partner Dana works nights she's an ER nurse": the
    # name said first is who each "he" or "she" is.
    if (dislocated := _DISLOCATED.match(pieces[0])) is not None:
        verb = " is" if dislocated["verb"] == "'s" else dislocated["verb"]
        said_first = f"{dislocated['owner']}{dislocated['name'] or ''}{verb}"
        pieces[0] = said_first + pieces[0][dislocated.end() :]
    if (named := _NAMED_OWNED.match(pieces[0])) is None:
        return pieces
    name = named["name"]
    return [pieces[0]] + [
        _OPENING_PRONOUN.sub(lambda m: name + (" is" if m[1] else ""), p, 1) for p in pieces[1:]
    ]


# "we manage all our infra with Terraform 1.7 and right now the state is sitting on one guy's laptop", "we deploy
# everything with argo cd so I'm like looking at the argo ui": in speech, "and" or "so" before the time or the
# speaker turns from what holds to what is happening.
_TURN_TO_NOW = re.compile(
    r",?\s+(?:and|but|so)\s+(?=(?:right now|now|currently|today|yesterday|this morning|since|like)\b)"
    r"|,?\s+so\s+(?=(?:i|i'm|i've|we|we're|we've)\b)",
    re.IGNORECASE,
)


def parts_read_again(said: str, of_the_user: bool) -> list[str]:
    """A clause the decision scored under the gate, as the facts it may hold for the decision to read alone:
    `fact_parts`, and each also cut where speech turns to what is happening now. The user's topic label before a
    statement with its own subject is left out ("Deps: we use Poetry, not pip" scores 0.43, "we use Poetry, not pip"
    0.99); a kept clause keeps its label, which may say what the statement is about ("On-call: I'm on the rotation").
    """
    parts = fact_parts(TOPIC_LABEL.sub("", said) if of_the_user else said)
    return [piece.strip() for part in parts for piece in _TURN_TO_NOW.split(part) if piece.strip()]


# "our billing service is a Go 1.22 monolith, and since this morning's merge we're getting a nil pointer panic",
# "we have a Nest thermostat and since Tuesday it's been showing as offline", "decided last month to move the DNS
# to Cloudflare, and today was the day": after "and" or "but", a kept clause turns from what holds to what
# happened around the session (writers I, N, S and X). The decision kept the clause for what holds, so the part
# ends there. "and now ..." and "and currently ..." are left whole: what follows is as often the new value ("we
# were on Jenkins but now we use GitHub Actions") or a second fact ("I'm 41 and currently work as a nurse"), and
# "since then", "since 2019" and "since I was a kid" start what has held ever since.
_TURN_TO_THE_MOMENT = re.compile(
    r",?\s+(?:and|but)\s+(?:today|yesterday|this morning|tonight|since (?!then\b|\d{4}\b|(?:i|we) (?:was|were)\b))",
    re.IGNORECASE,
)


def kept_parts(said: str) -> list[str]:
    """A kept clause's facts (`fact_parts`), each up to where speech turns to what is happening now."""
    return [_TURN_TO_THE_MOMENT.split(part, maxsplit=1)[0].strip() for part in fact_parts(said)]


def fact_parts(said: str) -> list[str]:
    """A kept clause's words as one fact per part: "Lb is haproxy on lb-01, app nodes are web-01..web-04" ->
    two. A part shorter than `FACT_PART_MIN_WORDS` stays with the part before it."""
    parts: list[str] = []
    if (identifier := _OPENING_IDENTIFIER.match(said)) is not None:
        parts.append(said[: identifier.start("comma")])
        said = said[identifier.end() :]
    for piece in (p for run in _run_on_statements(said) for p in _BARE_SUBJECT.split(run)):
        if parts and len(parts[-1].split()) < FACT_PART_MIN_WORDS:
            parts[-1] = f"{parts[-1]}, {piece}"
        else:
            parts.append(piece)
    return parts
