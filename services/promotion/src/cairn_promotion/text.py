"""Text plumbing of the offline pipeline: sentences, clauses, prefixes, content tokens."""

import re
from dataclasses import dataclass

from cairn_promotion.lexicon import FREQUENCY, STOP_WORDS


@dataclass(frozen=True)
class Clause:
    """One clause of a turn, as the durable-fact decision sees it."""

    text: str  # resolved, discourse prefix stripped: what the decision and the rewrite read
    raw: str  # as written in the turn (penalties look at hedges the prefix strip would hide)
    role: str
    requested: bool = False  # inside an explicit "remember that ..." request
    confirmed: bool = False  # an assistant statement the next user turn agreed with
    turn_index: int = 0
    position: int = 0  # clause index within its turn
    said: str = ""  # `text` with every pronoun the session resolves named: what the memory says ("" = `text`)


CODE_FENCE = re.compile(r"```.*?(?:```|\Z)", re.DOTALL)
HTML_COMMENT = re.compile(r"<!--.*?(?:-->|\Z)", re.DOTALL)
QUOTE = re.compile(r"[\"“]([^\"“”]*)[\"”]")
LONG_QUOTE_WORDS = 5
TITLE_MAX_WORDS = 12
_TITLE_SMALL = frozenset("a an and as at but by for from in into nor of on or the to with".split())

ABBREVIATIONS = re.compile(
    r"(?:\b(?:mr|mrs|ms|dr|prof|st|sr|jr|vs|etc|approx|inc|ltd|no|e\.g|i\.e|al|fig|eq|vol|ca)\.)$", re.I
)
# A full stop in Chinese or Japanese ends a sentence with no space after it ("ありがとう。I play on a Pixel 8").
SENTENCE_END = re.compile(r"(?<=[.!?])\s+|(?<=[。！？])\s*|\n+|;\s+")
_COLON = re.compile(r":\s+(?=\w)")

CLAUSE_SPLIT = re.compile(
    r",?\s+(?:and|but|while|whereas)\s+"
    r"(?=(?:i|i'm|i've|i'd|we|we're|we've|my|our|she|he|they|her|his|their|she's|he's)\b)"
    r"|,?\s+and\s+(?=the\s+[\w-]+(?:\s+[\w-]+)?\s+(?:is|are|runs?|has|have|lives?|uses?)\b)"
    r"|,\s+so\s+|\s+[—–]\s+"
    # "Show prices in CHF, I'm in Basel": a comma before a new subject or an imperative starts a clause.
    r"|,\s+(?:and\s+|but\s+|though\s+)?(?:(?:anyway|also|actually|btw|honestly)\s+)?(?=(?:i|i'm|i've|i'd|we|we're|we've|my|our|she|he|they|she's|he's|"
    r"they're|there's|the(?:\s+[\w-]+){1,3}\s+(?:is|are|was|goes|runs)|(?:don't|do\s+not|please)\s+\w+)\b)"
    # "I'm vegetarian, can you suggest snacks", "terraform 1.7 and state in s3, how add locking": the request
    # tagged on (no question mark when typed in a hurry) is a clause of its own, so the fact stands alone.
    r"|(?:,\s+|\s+so\s+)(?=(?:(?:can|could|would|will)\s+(?:you|u)|pls|plz|how|any\s+(?:ideas?|tips|suggestions|advice)|"
    r"(?:pls\s+|please\s+)?(?:suggest|recommend|help\s+me))\b)",
    re.IGNORECASE,
)

# "I'm based in Toronto and usually travel with ..." -> the second clause borrows the subject.
SUBJECTLESS_SPLIT = re.compile(
    r",?\s+and\s+(?=(?:usually|always|never|often|typically|sometimes|also)\s)", re.I
)
# "... and sometimes my legs are sore the next day": a subject of its own after the adverb, so the clause does not
# borrow one (it had become "I sometimes my legs ...", said as "The user sometimes mies legs").
_OWN_SUBJECT_AFTER = re.compile(
    r"^(?:usually|always|never|often|typically|sometimes|also)\s+(?:my|our|the|his|her|their|it|it's|there|"
    r"this|that|these|those|i|we|he|she|they|you)\b",
    re.IGNORECASE,
)

# Verbs that state durable facts, in the forms a subject-sharing clause starts with.
_VERB_BASES = (
    "love|like|hate|prefer|want|need|use|own|work|live|speak|drive|maintain|manage|settle|decide|choose|"
    "pick|switch|move|adopt|buy|sell|keep|plan|avoid|eat|drink|play|study|teach|watch|visit|meet|enjoy|"
    "follow|track|pay|save|spend|earn|rent|book|join|attend|volunteer|train|practi[cs]e|cook|bake|collect|"
    "grow|host|handle|cover|write|support|start|stop|quit|finish|order|add|see|take|go|get|make|run|lead|"
    "read|hold|teach|leave|find|begin"
)
_VERB_FORMS = (
    rf"(?:{_VERB_BASES})(?:s|es|d|ed)?|had|has|went|got|made|saw|took|bought|sold|ran|led|met|kept|spent|"
    r"paid|wrote|drove|ate|drank|grew|chose|left|found|began|taught|held|settled|tried|studied|carried"
)
_ADVERBS = rf"(?:(?:{FREQUENCY}|just|recently|finally|eventually|then|now)\s+)*"
# "household items, toiletries, and sometimes clothes": a list's last item, not a verb sharing the subject.
_SERIAL_LIST_END = re.compile(
    rf",\s*(?!(?:{_VERB_FORMS})\b)[\w'-]+(?:\s+[\w'-]+)?,\s+and\s+"
    r"(?:usually|always|never|often|typically|sometimes|also)\s",
    re.IGNORECASE,
)
# "..., hated Fifty Shades", "... and usually travel with ...", "... but settled on a Bayesian model".
_VERB_JOIN = re.compile(
    rf"(?:,\s+(?:and\s+|but\s+)?|\s+(?:and|but)\s+)(?={_ADVERBS}(?:{_VERB_FORMS})\b)",
    re.IGNORECASE,
)
_IMPERATIVE = re.compile(rf"^\s*(?:{_VERB_BASES})\b", re.IGNORECASE)
# "I'm planning to take inventory ... and see what else I can get rid of", "I'll open a Solo 401(k) and stop
# SEP contributions": a bare verb after "and" shares the "to" or the modal the clause opened, wherever it stands.
_OPEN_HEAD = re.compile(
    rf"\b(to|can|could|will|would|should|might|must|'ll|'d)\s+{_ADVERBS}(?!(?:the|a|an|my|our|your|his|her|"
    r"their|this|that|these|those|me|us|them|him|it)\b)[a-z][\w'-]*",
)
_BARE_VERB = re.compile(rf"{_ADVERBS}(?:{_VERB_BASES})\b(?!['-])", re.IGNORECASE)
_NOUN_SUBJECT = re.compile(r"[\w-]+\s+(?:is|are|was|were)\b", re.IGNORECASE)
# A "to" or a modal right before the last verb: the verb after "and" belongs to it too.
_SHARED_HEAD = re.compile(
    r"\b(?:to|can|could|will|would|should|might|must|may|want|wants|need|needs|'ll|'d)\s+[\w'-]+$",
    re.IGNORECASE,
)
_POSSESSED = re.compile(
    r"^\W*((?:my|our)\s+[\w'-]+(?:\s+[\w'-]+)?)\s+(?=(?:is|are|was|has|have|had|lives|works|uses|loves|"
    r"likes|hates|prefers|owns|speaks|plays|studies|meets|runs|drives)\b)",
    re.IGNORECASE,
)

DISCOURSE_PREFIX = re.compile(
    r"^(?:(?:oh|ah|also|and|so|but|btw|by\s+the\s+way|actually|well|ok|okay|right(?!\s+now)|yes|yeah|yep|"
    r"great|"
    r"perfect|thanks|thank\s+you|hi|hey|hello|anyway|plus|wait|oh\s+wait|one\s+more\s+thing|quick\s+context|"
    r"context|update|cool|nice|heads\s+up|big\s+news|important|though|honestly|basically|fyi|fwiw|ps|"
    r"good\s+news|news|note|correct|exactly|agreed|sure|alright|all\s+right|hmm|um|uh|lol|haha|"
    r"hiii+|heyy+|oh\s+and|and\s+also|just\s+so\s+you\s+know|for\s+context|quick\s+one|"
    r"(?:quick|small|tiny|big|important|short|little)\s+(?:update|note|context|heads\s+up|news|reminder))"
    r"\b[\s,:;!.-]*)+",
    re.IGNORECASE,
)
# "Deps: we use Poetry, not pip", "Constraints: I only have a small freezer": a topic label of a word or two before
# a statement with its own subject (the decision scores it 0.43 with the label, 0.99 without). A "Key: value" line
# whose value has no subject of its own ("Prod: EKS") keeps its key.
TOPIC_LABEL = re.compile(
    r"^[^\W\d_][\w-]*(?:\s[\w-]+)?:\s+(?=(?:i|i'm|i've|i'd|i'll|we|we're|we've|we'd|we'll|my|our)\b)",
    re.IGNORECASE,
)
REMEMBER_PREFIX = re.compile(
    r"^(?:please\s+)?(?:(?:remember|don't\s+forget|do\s+not\s+forget|keep\s+in\s+mind|make\s+a\s+note|"
    r"note\s+down|take\s+note|note)(?:\s+that)?"
    r"|(?:for\s+future\s+reference|for\s+the\s+record|just\s+so\s+you\s+know|fyi)"
    r"(?:\s+that)?)[\s,:]+",
    re.IGNORECASE,
)


# "I take metformin, does that matter?", "..., have you heard of it?": a statement with a question tagged on.
TAG_QUESTION = re.compile(
    r",\s+(?:(?:does|do|did|is|are|was|were|has|have|would|will|can|could|should)\s+(?:that|this|it|you|they|[\w'-]+\s)"
    r"|what|how|which|where|who|why|any|right|thoughts)\b[^,]*\?$",
    re.IGNORECASE,
)

# "This is brilliant, thank you!", "It already feels calmer 😄 Thank you so much": thanks said to the assistant.
GRATITUDE = re.compile(  # possessive, from where a run starts: a long run of commas had backtracked
    r"(?<![\s,.;:!-])[\s,.;:!-]*+\b(?:thank(?:s| you)|thx)\b(?:\s+(?:so|very)\s+much|\s+a\s+(?:lot|ton))?[^\w]*$",
    re.IGNORECASE,
)


# "Anyway, thanks for the tips on earning stars": the prefix strip leaves "for the tips ..." (what was thanked for).
THANKED_FOR = re.compile(
    r"^for\s+(?:the|your|all\s+the|this|that|these|those)\s+(?:\w+\s+)?(?:tips|advice|help|suggestions?|"
    r"recommendations?|info|information|ideas?|resources|list|links?|explanation|reminder|update|pointers)\b",
    re.IGNORECASE,
)


def strip_code(content: str) -> str:
    return squeezed(HTML_COMMENT.sub("\n", CODE_FENCE.sub("\n", content)))


def squeezed(text: str) -> str:
    """Text with each run of blank lines one newline and each run of spaces one space.

    The pipeline's patterns read words and line breaks, never how many: a long run of either made several
    of them backtrack quadratically (a turn of code fences, each stripped to a newline, took minutes).
    """
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)


def drop_long_quote(match: re.Match[str]) -> str:
    # Reported speech: a quoted passage of several words is someone else's words, not the speaker's.
    # A title is not ("I'm reading "The Seven Husbands of Evelyn Hugo""): it names what the fact is about.
    words = match.group(1).split()
    return "\n" if len(words) >= LONG_QUOTE_WORDS and not _is_title(words) else match.group(0)


def _is_title(words: list[str]) -> bool:
    return len(words) <= TITLE_MAX_WORDS and all(w[:1].isupper() or w.lower() in _TITLE_SMALL for w in words)


def sentences(text: str) -> list[str]:
    pieces = [p.strip(" \t-*•>") for p in SENTENCE_END.split(text)]
    merged: list[str] = []
    for piece in pieces:
        if not piece:
            continue
        if merged and ABBREVIATIONS.search(merged[-1]):
            merged[-1] = f"{merged[-1]} {piece}"
        else:
            merged.append(piece)
    return merged


def colon_split(text: str) -> list[str]:
    # A colon ends a clause after two or more words ("we finally upgraded: the frontend ..."), never after
    # a one-word label ("Decision: we'll pin ...", "Resolution: ...").
    parts = _COLON.split(text)
    out = [parts[0]]
    for part in parts[1:]:
        if len(out[-1].split()) >= 2:
            out.append(part)
        else:
            out[-1] = f"{out[-1]}: {part}"
    return out


# Chat spelling the decision was not trained on: contractions typed without an apostrophe ("im allergic to
# penicillin" scored 0.37 against 0.88, "i dont eat pork" became "The user donts eat pork"). Only forms that
# are no other English word ("its", "id", "ill", "wont", "were" are).
_BARE_CONTRACTIONS = {
    "im": "I'm",
    "ive": "I've",
    "dont": "don't",
    "doesnt": "doesn't",
    "didnt": "didn't",
    "cant": "can't",
    "isnt": "isn't",
    "arent": "aren't",
    "wasnt": "wasn't",
    "werent": "weren't",
    "havent": "haven't",
    "hasnt": "hasn't",
    "wouldnt": "wouldn't",
    "shouldnt": "shouldn't",
    "couldnt": "couldn't",
    "thats": "that's",
    "theres": "there's",
    "whats": "what's",
    "youre": "you're",
    "theyre": "they're",
    "weve": "we've",
}
_BARE_CONTRACTION = re.compile(
    rf"\b(?:{'|'.join(w for w in _BARE_CONTRACTIONS if w != 'im')})\b", re.IGNORECASE
)
# "im" only where a subject stands, before a lower-case word: German "ich bin im Büro", "Im Juni" stay.
_BARE_IM = re.compile(
    r"(^\s*|[,.;:!?(]\s*|\b(?:and|but|so|btw|also|because|since|if|when|though|tho|yeah|yes|no|ok|oh|well|"
    r"lol|now|actually)\s+)im(?=\s+(?-i:[a-z]))",
    re.IGNORECASE,
)


def informal_spellings(text: str) -> str:
    """Contractions typed without an apostrophe, spelled out: "im" -> "I'm", "dont" -> "don't"."""
    text = _BARE_CONTRACTION.sub(lambda m: _bare(m.group(0)), text)
    return _BARE_IM.sub(r"\1I'm", text)


def _bare(word: str) -> str:
    spelled = _BARE_CONTRACTIONS[word.lower()]
    return spelled[0].upper() + spelled[1:] if word[0].isupper() else spelled


def strip_remember(sentence: str) -> tuple[str, bool]:
    body = DISCOURSE_PREFIX.sub("", sentence) if not REMEMBER_PREFIX.match(sentence) else sentence
    stripped = REMEMBER_PREFIX.sub("", body, count=1)
    return stripped, stripped != body


# "When you review my PRs, please point out problems first": a subordinate clause is no fact on its own;
# it belongs to the clause it qualifies.
_SUBORDINATE = re.compile(r"^\W*(?:when|whenever|if|because|since|although|unless|before|after|once)\b", re.I)
SUBORDINATE_MAX_WORDS = 8
# "For my commute, I use a Brompton": a phrase set before the clause it frames, which the comma split would cut
# off and lose ("The user uses a Brompton"). It is said after the clause instead ("I use a Brompton for my
# commute"), where the rules that read a clause from its start still find its subject, and a time said there
# ("On Monday, I have a dentist appointment") is read by the rules for what holds only then. Not a discourse
# phrase ("For example, ...", "In that case, ...") nor one with a verb of its own ("As I said, ...").
_FRONTED_PHRASE = re.compile(
    r"^\W*(?:for|in|on|at|during|over|with|as|throughout)\s+"
    r"(?!(?:example|instance|now|sure|real|reference|context|starters|one|once|sure|short|general|fact|"
    r"particular|addition|case|total|advance|theory|practice|return|turn|person|a\s+way|some\s+ways|"
    r"any\s+case|that\s+case|this\s+case|which\s+case|the\s+meantime|the\s+end|the\s+record|"
    r"the\s+most\s+part|other\s+words|the\s+other\s+hand|top\s+of\s+that|my\s+experience|"
    r"what\s+it's\s+worth|all\s+that|that\s+said|this\s+point|that\s+point|the\s+moment|"
    r"least|last|first|most|best|worst|times|all|any\s+rate|a\s+result|such|well|far\s+as|for|a\s+matter|"
    r"that|this|these|those|them|it|"
    # what is left of a thanks ("Thanks for the tips, I'll ...")
    r"(?:the|your|all\s+the|these|those)\s+(?:\w+\s+)?(?:tips?|recommendations?|suggestions?|advice|help|info|"
    r"information|ideas?|list|answer|reply|response|explanation|insights?|overview|update|clarification))\b)"
    r"(?![^,]*\b(?:i|i'm|i've|i'd|you|we|he|she|they|it|it's|is|are|was|were|said|mentioned)\b)"
    r"[\w'’-]+(?:\s+[\w'’-]+){0,5}\W*$",
    re.IGNORECASE,
)


# Speech has fillers where writing has punctuation: a dictated turn ("my sister Ines is coming this weekend
# um she's vegan so like that part's easy oh and please nothing with cilantro") is one run-on sentence, and
# a filler or a spoken restart is where one statement ends and the next begins.
SPOKEN_BREAK = re.compile(
    r"\s*,?\s+(?:(?:and|but|so)\s+)?(?:um+|uh+|erm+)\b[\s,]+"
    r"|(?:,\s*|\s+and\s+)oh(?:\s+and)?(?:\s+also)?\s+"
    r"|,?\s+(?:(?:and|but)\s+)?(?:okay\s+so|so\s+yeah|so\s+like|anyway|and\s+then)\s+",
    re.IGNORECASE,
)


# "we live on the uh the second floor in Lyon", "I'm a um nurse": a filler after a word that cannot end a phrase
# is a pause inside it, not a break between statements ("The user lives on the" had been kept); the word said
# again after it is said once.
_FILLER = r"(?-i:um+|uh+|erm+|er)"  # lower-case: "an ER nurse" is no filler
_FUNCTION_WORD = r"the|a|an|on|in|at|to|of|for|with|from|my|our|your|their|his|her"
# After the filler, the same word again, or a word that goes on the phrase ("the uh our backend" restarts it).
_HESITATION = re.compile(
    rf"\b(?P<word>{_FUNCTION_WORD})\s+{_FILLER},?\s+(?:(?P=word)\s+|(?!(?:{_FUNCTION_WORD})\b))",
    re.IGNORECASE,
)


def without_hesitations(sentence: str) -> str:
    """A sentence without the fillers that pause inside a phrase, and without the word repeated after one."""
    return _HESITATION.sub(lambda m: f"{m.group('word')} ", sentence)


def clauses(sentence: str) -> list[str]:
    merged: list[str] = []
    sentence = without_hesitations(sentence)
    pieces = [p for chunk in SPOKEN_BREAK.split(sentence) for p in CLAUSE_SPLIT.split(chunk)]
    for piece in pieces:
        if merged and _SUBORDINATE.match(merged[-1]) and len(merged[-1].split()) <= SUBORDINATE_MAX_WORDS:
            merged[-1] = f"{merged[-1]}, {piece.strip()}"
        elif merged and _FRONTED_PHRASE.match(merged[-1]) and "," not in piece:
            # After a clause with parts of its own ("..., not a maintenance window") the phrase would frame the last.
            merged[-1] = _framed_by(piece.strip(), merged[-1])
        else:
            merged.append(piece)
    parts: list[str] = []
    for clause in merged:
        # "I like buying household items, toiletries, and sometimes clothes": the last item of a list.
        first, *rest = [clause] if _SERIAL_LIST_END.search(clause) else SUBJECTLESS_SPLIT.split(clause)
        subject = subject_of(first)
        pieces = [
            first,
            *(f"{subject} {r}" if subject and not _OWN_SUBJECT_AFTER.match(r) else r for r in rest),
        ]
        for piece in pieces:
            parts.extend(verb_split(piece))
    return [p.strip() for p in parts if p.strip()]


def _framed_by(clause: str, phrase: str) -> str:
    """A clause with the phrase set before it said after it: "I use a Brompton." + "For my commute" -> "I use a
    Brompton for my commute."."""
    body = clause.rstrip()
    end = re.search(r"[.!?]+$", body)
    stop = end.group() if end else ""
    body = body[: len(body) - len(stop)].rstrip(" ,")
    frame = phrase.strip().strip(",").strip()
    return f"{body} {frame[0].lower()}{frame[1:]}{stop}"


def verb_split(clause: str) -> list[str]:
    """Facts joined under one subject: "I loved Piranesi, hated Fifty Shades", "I use a screen reader and
    want answers without tables" -> one clause per verb, each with the subject. Left whole when the
    subject is not a person or a possessed noun, or the verb after "and" may share a "to" or a modal
    ("I want to learn and use Rust" is one wish)."""
    subject = subject_of(clause) or _possessed_subject(clause)
    if not subject:
        return [clause]
    parts = [clause]
    for match in reversed(list(_VERB_JOIN.finditer(clause))):
        left, right = clause[: match.start()], parts[0][match.end() :]
        if len(left.split()) < 3 or _SHARED_HEAD.search(left) or _plural_after_first_person(subject, right):
            continue
        bare_comma = match.group().strip() == ","
        if _NOUN_SUBJECT.match(right):  # "... and rent is fourteen fifty": a clause with its own subject
            parts[0:1] = [left, right.strip()]
        elif not bare_comma and (head := _OPEN_HEAD.search(left)) and _BARE_VERB.match(right):
            parts[0:1] = [left, f"{left[: head.end(1)]} {right.strip()}"]
        else:
            # After a bare comma a base form is an imperative ("I dislike long PRs, keep it short"): no subject.
            imperative = bare_comma and _IMPERATIVE.match(right)
            parts[0:1] = [left, right.strip() if imperative else f"{subject} {right.strip()}"]
    return parts


def _plural_after_first_person(subject: str, right: str) -> bool:
    # "I might prepare some snacks and drinks to ...": after "I" or "we" a word in -s is a plural noun, not a verb.
    word = re.match(rf"{_ADVERBS}([\w'-]+)", right, re.IGNORECASE)
    return (
        subject.lower() in ("i", "we")
        and word is not None
        and re.fullmatch(r"\w+[^s]s", word.group(1), re.I) is not None
    )


def subject_of(clause: str) -> str:
    match = re.match(r"^\W*(i|we)(?:'m|'re|'ve| am| are)?\b", DISCOURSE_PREFIX.sub("", clause), re.IGNORECASE)
    return match.group(1) if match else ""


def _possessed_subject(clause: str) -> str:
    match = _POSSESSED.match(DISCOURSE_PREFIX.sub("", clause))
    return match.group(1) if match else ""


def content_tokens(text: str) -> frozenset[str]:
    """The lower-cased, crudely stemmed content words of a text, without stop words.

    Used to compare memories by meaning-bearing words only ("User prefers dark mode" and "Prefers
    dark mode." are the same set).
    """
    words = re.findall(r"[a-z0-9][a-z0-9_#@./:+-]*[a-z0-9]|[a-z0-9]", text.lower().replace("'s", ""))
    return frozenset(stem(w) for w in words if w not in STOP_WORDS)


def jaccard(a: frozenset[str], b: frozenset[str]) -> float:
    """Jaccard similarity of two token sets (0 when both are empty)."""
    union = a | b
    return len(a & b) / len(union) if union else 0.0


def stem(word: str) -> str:
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
