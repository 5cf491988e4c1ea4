"""What the speaker corrected or updated: a value corrected in the same breath (`apply_corrections`), a
statement taken back ("wait no, ...", same function), and a value updated later in the session
(`carry_updates`)."""

import re
from collections.abc import Iterator
from dataclasses import replace
from typing import TypeVar

from cairn_promotion.lexicon import CALENDAR_NAMES, STOP_WORDS
from cairn_promotion.text import Clause

NUMBER_WORDS = frozenset(
    "one two three four five six seven eight nine ten eleven twelve thirteen fourteen fifteen sixteen "
    "seventeen eighteen nineteen twenty thirty forty fifty sixty seventy eighty ninety hundred".split()
)
_CALENDAR = CALENDAR_NAMES | frozenset("Jan Feb Mar Apr Jun Jul Aug Sep Sept Oct Nov Dec".split())

# A value corrected mid-sentence: "due jun 30 - sorry, jul 30", "eks in us-east-2... wait no eu-west-1",
# "contrib is 10%... wait 12% since the raise". Only the corrected value is a fact; keeping the sentence as
# typed would keep both values, or split it at the "..." and lose the subject of the right one.
# Possessive, and starting where a run of spaces starts: "\s*(...)?\s*" backtracked cubically over a long
# run of whitespace (a turn of code fences, each stripped to a newline, took minutes).
_CORRECTION = re.compile(
    r"(?<!\s)\s*+(?:(?:\.\.\.|…|[-–—,(])\s*+)?\b(?:wait,?\s+no|no\s+wait|no\s+sorry|sorry|wait|i\s+mean|make\s+that|"
    r"correction|scratch\s+that|err?|uh)\b\s*[,:-]?\s+",
    re.IGNORECASE,
)
_MAX_CORRECTED_WORDS = 3
_WINDOW = 300  # characters read on each side of a marker
_MAX_CORRECTIONS = 3  # a sentence rarely corrects itself more than once or twice


# A statement taken back whole: "minSdk is 23, wait no, we bumped it to 26 in the spring", "I pay $165 a
# month. Actually no, it went up to $175 last month". "actually no" and "scratch that" only after a pause
# (punctuation or the start), so "I actually no longer drink" is not one; "no wait" never after a verb
# that makes it a noun ("there was no wait"). The same said in German, Dutch, French, Spanish, Portuguese or
# Italian ("MLflow... nee warte, we moved to Weights & Biases") only after a pause too.
_RETRACTION = re.compile(
    r"(?:(?:(?<=[.,;:!?…)(\-–—])|^)\s*(?:(?:oh|eh|hmm|um|uh)[,\s]+)?(?:actually,?\s+(?:no|scratch\s+that)"
    r"|scratch\s+that|(?:nee|nein|non|não|nao|no),?\s+(?:warte|wacht|attends|espera|pera|aspetta)"
    r"|(?:warte|wacht|attends|espera|aspetta),?\s+(?:nee|nein|non|não|nao|no))"
    r"|(?<!\bis\s)(?<!\bwas\s)(?<!\bno\s)(?<!\bhad\s)(?<!\bwith\s)\b(?:wait,?\s+no|no,?\s+wait))"
    r"\b(?:[,.!:;]|\s+sorry\b,?)?\s*",
    re.IGNORECASE,
)
# "will that matter? Oh wait, no, ...": the sound before the marker belongs to it, not to the statement it
# takes back (read as one, "Oh" was the statement, and the question was left standing in the memory).
_INTERJECTION_END = re.compile(r"(?<=[.,;:!?…)\s])\s*(?:oh|eh|hmm|um|uh),?\s*$", re.IGNORECASE)
# Where a statement starts, and where the retraction's explanation ends.
_STATEMENT_START = re.compile(r"[.!?…]+\s+|\n\s*|\s-\s+")
_CLAUSE_START = re.compile(r",\s+")
_PAUSE = re.compile(r",\s|\s(?:and|but|so|anyway)\s")
_EXPLANATION_END = re.compile(r"[.!?…](?=\s|$)|[;\n)]|\s-\s")


def apply_corrections(text: str) -> str:
    """Replace a value the speaker corrected in the same breath by its correction.

    The corrected words are the longest run (up to three words) at the end of the text before the marker
    whose shape matches the start of the text after it, word by word, and whose last word is a value: it
    holds a digit, or both are capitalised (a name). Anything else ("sorry, I shouldn't have pasted that")
    is left as written, unless it takes the statement back ("wait no", "actually no", "scratch that"):
    see `_retracted`.
    """
    for _ in range(_MAX_CORRECTIONS):
        fixed = next((f for m in _CORRECTION.finditer(text) if (f := _corrected(text, m))), None)
        if fixed is None:
            break
        text = fixed
    for _ in range(_MAX_CORRECTIONS):
        fixed = next((f for m in _RETRACTION.finditer(text) if (f := _retracted(text, m))), None)
        if fixed is None:
            break
        text = fixed
    return text


def _retracted(text: str, marker: re.Match[str]) -> str | None:
    """The text with the statement the marker takes back corrected, or without it.

    When what follows names a value with the form of exactly one value of the sentence ("minSdk is 23,
    wait no, we bumped it to 26 in the spring"; "he's seven no wait he just turned eight"), or the one
    name in what follows replaces the name the statement ends on ("based in Lisbon no wait sorry I moved
    to Valencia in the fall"), the statement stays with the new value and the explanation goes ("minSdk
    is 26"): it keeps the statement's subject, which the explanation ("it") has lost. Otherwise the
    statement's clause goes and what follows stays. None when nothing precedes the marker in the text (a
    retraction opening a turn takes back something this text does not hold).
    """
    # The statement and the explanation are read from windows beside the marker (see `_corrected`); a
    # statement that starts before its window may have its value replaced, but is never dropped.
    low = max(0, marker.start() - _WINDOW)
    before = _INTERJECTION_END.sub("", text[low : marker.start()]).rstrip(" .…,;:-–—(")
    starts = [low + m.end() for m in _STATEMENT_START.finditer(before)]
    start = starts[-1] if starts else low
    end_of_statement = low + len(before)
    words = text[start:end_of_statement].split()
    if not words:
        return None
    ahead = text[marker.end() : marker.end() + _WINDOW]
    end = _EXPLANATION_END.search(ahead) or _pause_after_value(ahead)
    explanation = ahead[: end.start()] if end else ahead
    fixed = _with_new_value(words, explanation.split())
    if fixed is not None:
        rest = text[marker.end() + len(explanation) :]
        if text[: marker.start()].rstrip().endswith("(") and rest.startswith(")"):
            rest = rest[1:]  # "Node version: 18 (wait, no, we bumped to Node 20)"
        return text[:start] + " ".join(fixed) + rest
    # Only the clause after the sentence's last comma is taken back: "I'm a freelance illustrator and I
    # just moved, I'm based in X, no wait ..." keeps what came before it.
    clause_starts = [m.end() for m in _CLAUSE_START.finditer(text, start, end_of_statement)]
    if not clause_starts and start == low > 0:
        return None  # where the statement starts is not in the window
    cut = clause_starts[-1] if clause_starts else start
    after = text[marker.end() :]
    return text[:cut] + after if cut else after.strip()


def _pause_after_value(ahead: str) -> re.Match[str] | None:
    # Dictated speech has no full stop: "... no wait we bumped it to 1.23 last month and it talks to
    # Postgres 16 and ...". The explanation ends at the first pause after the value it gives, not with
    # the turn (or the window), so what is said next stays.
    value = next((m for m in re.finditer(r"\S+", ahead) if _value_form(m.group())), None)
    return _PAUSE.search(ahead, value.end()) if value else None


def _with_new_value(words: list[str], explanation: list[str]) -> list[str] | None:
    bare = [_unquoted(w) for w in words]
    at = next((i for i, w in enumerate(explanation) if _value_form(w)), None)
    if at is not None:
        new = _unquoted(explanation[at])
        # The value after the thing it names replaces that thing's value, whatever its form: "we're on Swift
        # 5.9 ... no wait, we moved to Swift 6" (as `_values_updated` reads an update).
        thing = _unquoted(explanation[at - 1]) if at > 0 else ""
        named = (
            [i for i in range(1, len(bare)) if bare[i - 1] == thing and _shape(bare[i]) == "digit"]
            if _is_name(thing)
            else []
        )
        if len(named) == 1 and bare[named[0]].lower() != new.lower():
            return _replaced(words, named[0], new)
        same = [i for i, w in enumerate(bare) if _value_form(w) == _value_form(new)]
        if len(same) == 1 and bare[same[0]].lower() != new.lower():
            return _replaced(words, same[0], new)
        return None
    names = [_unquoted(w) for w in explanation[1:] if _is_name(_unquoted(w))]
    if len(names) == 1 and len(words) > 1 and _is_name(bare[-1]) and bare[-1] != names[0]:
        return _replaced(words, len(words) - 1, names[0])
    return None


def _replaced(words: list[str], i: int, new: str) -> list[str]:
    word = words[i]
    return [*words[:i], new + word[len(word.rstrip(",.;:)")) :], *words[i + 1 :]]


# A chat channel or a handle without digits: "#alerts-prod", "@platform-oncall".
_HANDLE = re.compile(r"[#@][a-z][\w.-]*")


def _value_form(word: str) -> str:
    """A value's form ("d%", "d.d", "n" for a number word, "#" for a channel), or "" for a word that is no
    value."""
    bare = _unquoted(word).lower()
    if bare in NUMBER_WORDS:
        return "n"
    if _HANDLE.fullmatch(bare):
        return bare[0]  # "#ops-alerts" -> "#alerts-prod", "@dana" -> "@dana.k": a channel or a handle
    return _digit_form(bare) if _shape(bare) == "digit" else ""


def _is_name(word: str) -> bool:
    return word[:1].isupper() and word != "I" and word.lower() not in STOP_WORDS and word not in _CALENDAR


def _corrected(text: str, marker: re.Match[str]) -> str | None:
    # Only the words beside the marker decide, read from a window: a turn of thousands of markers ("no
    # wait no wait ...") must cost each one a constant, not a split of the whole turn.
    left = text[max(0, marker.start() - _WINDOW) : marker.start()].split()[-_MAX_CORRECTED_WORDS:]
    ahead = text[marker.end() : marker.end() + _WINDOW]
    right = ahead.split()[: _MAX_CORRECTED_WORDS + 1]
    for k in range(min(_MAX_CORRECTED_WORDS, len(left), len(right)), 0, -1):
        if any(w.endswith((",", ";")) for w in right[: k - 1]):
            continue  # the run crosses a pause: "ftp is 245W... no wait, retested yesterday, 258W"
        if any(w.endswith(("?", "!")) for w in left[-k:-1]):
            continue  # or a question: "will that matter? Oh wait, no, the Chromebook died" corrects no "Oh"
        old, new = left[-k:], [w.rstrip(",.;)") for w in right[:k]]
        if all(_shape(a) == _shape(b) for a, b in zip(old, new, strict=True)) and _is_value(old, new):
            every_left, every_right = text[: marker.start()].split(), text[marker.end() :].split()
            trail = every_right[k - 1][len(new[-1]) :]  # the punctuation after the new value stays
            rest = " ".join(every_right[k:])
            return " ".join([*every_left[:-k], *new]) + trail + (f" {rest}" if rest else "")
    if len(right) == 1 and marker.end() + _WINDOW >= len(text):  # the marker's correction ends the text
        return _corrected_earlier_value(text[: marker.start()].split(), right)
    return None


def _corrected_earlier_value(left: list[str], right: list[str]) -> str | None:
    # "requires 80% test coverage on services, sorry, 85%": the correction ends the sentence and one earlier
    # word has its exact form (digits aside), so that is the value it replaces.
    if len(right) != 1 or _shape(right[0]) != "digit":
        return None
    new = right[0].rstrip(",.;)!")
    form = _digit_form(new)
    same_form = [i for i, word in enumerate(left) if _digit_form(word.rstrip(",.;)")) == form]
    if len(same_form) != 1 or not _is_value([left[same_form[0]]], [new]):
        return None
    i = same_form[0]
    word = left[i]
    fixed = [*left[:i], new + word[len(word.rstrip(",.;)")) :], *left[i + 1 :]]
    return " ".join(fixed).rstrip(" ,;-–—")


def _digit_form(word: str) -> str:
    """A value's form with its digits abstracted: "80%" and "85%" are both "d%", "02:00" is "d:d"."""
    return re.sub(r"\d+", "d", _unquoted(word))


def _unquoted(word: str) -> str:
    return word.strip(",.;:()`'\"")


def _shape(word: str) -> str:
    return "digit" if any(ch.isdigit() for ch in _unquoted(word)) else "word"


def _is_value(old: list[str], new: list[str]) -> bool:
    # A different number, date, version or identifier, or a different name ("Tom, I mean Tim"); never a
    # pronoun ("I'm sorry, I have ...").
    if [_unquoted(w).lower() for w in old] == [_unquoted(w).lower() for w in new]:
        return False
    if any(_shape(w) == "digit" for w in new):
        return True
    a, b = _unquoted(old[-1]), _unquoted(new[-1])
    return a[:1].isupper() and b[:1].isupper() and a.lower() not in STOP_WORDS and b.lower() not in STOP_WORDS


# A value changed later in the session, told about the value rather than restating the fact: "my day rate
# is £450" ... "actually no, I raised it in January, it's £520 now"; "quarterly prepayments are €2,300
# each. oh wait, the Finanzamt raised them to €2,650 from Q3". The fact keeps its words with the new value.
_UPDATE_VERB = (
    r"(?:raised|bumped|moved|changed|switched|upgraded|increased|lowered|cut|dropped|reduced|revised|"
    r"pushed|extended|upped|went\s+up|went\s+down)"
)
# "actually it's more like 15 mins of Duolingo" after "doing Duolingo 20 mins every morning": the same, said as
# a closer figure (writers X and AA).
_CLOSER = r"(?:more\s+like|closer\s+to)\s+"
# "switched to the Libre 3" names its thing after an article; "budget is more like £7k now" says what is closer.
_UPDATE = re.compile(
    rf"\b{_UPDATE_VERB}\b(?:\s+\S+){{0,4}}?\s+to\s+(?:the\s+)?(?:(?P<thing>[A-Z][\w.+#-]*)\s+)?(?P<to>\S*\d\S*)"
    rf"|\bit(?:'s|’s|\s+is)\s+(?:(?P<now>\S*\d\S*)\s+now\b|{_CLOSER}(?P<closer>\S*\d\S*))"
    rf"|\b(?!it\b)(?P<subject>[a-z]+)\s+is\s+{_CLOSER}(?P<named_closer>\S*\d\S*)",
    re.IGNORECASE,
)
# Only the value is news when the update's thing is a pronoun: "raised it to", "it went up to", "it's X now".
_ABOUT_A_PRONOUN = re.compile(
    rf"\b{_UPDATE_VERB}\s+(?:it|them|that|this)\b|\b(?:it|that|this)\s+{_UPDATE_VERB}\b"
    rf"|\bit(?:'s|’s|\s+is)\s+(?:{_CLOSER})?\S*\d",
    re.IGNORECASE,
)
# An update that says only the thing, the new value and when: "we moved to Swift 6 last sprint" after "we're
# on Swift 5.9 for the iOS shell". Once the fact holds the new value, the update says nothing more.
_BARE_UPDATE = re.compile(
    rf"(?:^|,\s*)(?:i|we)\s+(?:just\s+|recently\s+|finally\s+)?{_UPDATE_VERB}\s+(?:\w+\s+)?to\s+(?:the\s+)?"
    r"[A-Z][\w.+#-]*\s+\S*\d\S*(?:\s+(?:last|this)\s+\w+|\s+in\s+\w+|\s+\w+\s+ago)?\W*$",
    re.IGNORECASE,
)
# A clause that opens with a correction and gives a value corrects the value said just before it: "car
# loan is ... 48 months at 6.9%" / "wait no, just checked the contract, it's 7.4%"; "pinned to 3.6" /
# "sorry, 3.7 LTS, we bumped it"; "n=38,412 after exclusions. sorry, typo, 38,142". An explicit marker
# corrects any value; a bare "no" or "sorry" (an answer or an apology as often as a correction) only a value
# whose form is more than a whole number ("7.4%", "3.7", "38,142"), said first or as what "it's" is.
_OPENING_CORRECTION = re.compile(
    r"^\W*(?:(?P<explicit>(?:wait,?\s+)?no,?\s+wait|wait,?\s+no|oops|typo|correction|my\s+bad|i\s+mean|"
    r"make\s+that|actually,?\s+no)|(?:no|sorry))\b(?:[,:;.!\s-]+(?P<typo>typo|my\s+bad|i\s+mean)\b)?",
    re.IGNORECASE,
)
# The word a whole number counts: "640 households", "12 people".
_COUNTED = re.compile(r"\s+([^\W\d_]{3,})\b")
_IT_IS = re.compile(r"\b(?:it|that)(?:'s|’s|\s+is|\s+was)(?:\s+(?:the|an?))?$", re.IGNORECASE)
_VALUE_CORE = re.compile(r"\d(?:[\d.,:/]*\d)?%?")
T = TypeVar("T")
_LOOK_BACK = 6  # user clauses: an update answers something said a turn or two before


def carry_updates(clauses: list[tuple[Clause, T]]) -> list[tuple[Clause, T]]:
    """The session's clauses with the memory of a value a later clause updates saying the new value (`said`),
    and that update dropped.

    The stated fact is the nearest earlier user clause holding a value of the new value's form, and it
    must hold exactly one ("£450" for "£520", "6.9%" for "7.4%", "seven" for "eight"). The update is
    dropped only when it names its thing by a pronoun ("I raised it in January, it's £520 now"): then
    all it says is in the fact. A clause that opens with a correction ("wait no, ... it's 7.4%", "sorry,
    3.7 LTS") does the same and is always dropped once it corrected a value (`_opening_correction`).
    Anything else is left as said.
    """
    found = list(clauses)
    dropped: set[int] = set()
    for index, (clause, _) in enumerate(found):
        if clause.role != "user":
            continue
        said = _with_marker_before(found, index)
        if (corrected := _opening_correction(said)) is not None:
            if _correct_earlier(found, index, dropped, *corrected):
                dropped.add(index)
                if said != clause.raw:
                    dropped.add(index - 1)  # the marker said as a clause of its own
            continue
        match = _UPDATE.search(clause.text)
        if match is None:
            continue
        value = next(g for g in ("to", "now", "closer", "named_closer") if match[g])
        new = _unquoted(match[value])
        form = _value_form(new)
        thing = match.group("thing")
        counted = _counted_after(clause.text, match.end(value))
        for earlier, previous, day in _earlier_user_clauses(found, index, dropped):
            if _UPDATE.search(previous.text):
                continue
            values = _values_updated(previous.said or previous.text, thing, form, counted)
            if not values:
                continue
            if len(values) == 1 and values[0].lower() != new.lower():
                found[earlier] = (_with_value(previous, values[0], new), day)
                # Once the fact holds the new value, an update about a pronoun, or about the thing the fact
                # names ("budget is more like £7k now" after "budget around £6k"), says nothing more.
                subject = match["subject"]
                if (
                    _ABOUT_A_PRONOUN.search(clause.text)
                    or _BARE_UPDATE.search(clause.text)
                    or (subject and re.search(rf"\b{re.escape(subject)}\b", previous.text, re.IGNORECASE))
                ):
                    dropped.add(index)
            break
    return [c for i, c in enumerate(found) if i not in dropped]


def _with_marker_before(found: list[tuple[Clause, T]], index: int) -> str:
    """A clause as said, after the correction marker the splitter cut off as a clause of its own ("Correction,
    we migrated prod to eu-central-1" is read as "Correction" and "we migrated ...")."""
    clause = found[index][0]
    if index > 0:
        before = found[index - 1][0]
        marker = _OPENING_CORRECTION.match(before.raw)
        if (
            before.role == clause.role
            and marker is not None
            and not before.raw[marker.end() :].strip(" ,:;.!-")
        ):
            return f"{before.raw.strip()}, {clause.raw}"
    return clause.raw


def _earlier_user_clauses(
    found: list[tuple[Clause, T]], index: int, dropped: set[int]
) -> Iterator[tuple[int, Clause, T]]:
    """The user clauses an update or a correction at `index` may answer, nearest first, the last `_LOOK_BACK` of
    them (the assistant's reply in between, however long, does not count)."""
    seen = 0
    for earlier in range(index - 1, -1, -1):
        previous, extra = found[earlier]
        if previous.role != "user":
            continue
        seen += 1
        if seen > _LOOK_BACK:
            return
        if earlier not in dropped:
            yield earlier, previous, extra


def _values_updated(text: str, thing: str | None, form: str, counted: str | None = None) -> list[str]:
    """The values of `text` an update may replace: the value after the update's named thing ("moved to Swift 6"
    updates "on Swift 5.9", whatever its form), else every value of the new value's form that counts the same
    thing when the update says what it counts ("it's more like 3 coffees" updates "4 coffees a day", never "age:
    41")."""
    words = [_unquoted(w) for w in text.split()]
    if thing:
        named = [
            w for before, w in zip(words, words[1:], strict=False) if before == thing and _shape(w) == "digit"
        ]
        if named:
            return named
    return [
        w
        for w, after in zip(words, [*words[1:], ""], strict=True)
        if _value_form(w) == form and (counted is None or _same_count(after, counted))
    ]


# Words after a value that say when or how, not what it counts: "it's £520 now", "to 1.23 last week".
_NOT_COUNTED = frozenset(
    "now last next this starting since ago instead total already anyway though then today tomorrow".split()
)


def _counted_after(text: str, end: int) -> str | None:
    """The word an update's value counts ("3 coffees" -> "coffees"), or None."""
    unit = _COUNTED.match(text, end)
    if unit is None:
        return None
    word = unit.group(1).lower()
    return None if word in STOP_WORDS or word in _NOT_COUNTED else word


def _same_count(word: str, counted: str) -> bool:
    a, b = word.lower().strip(",.;:!?"), counted.lower()
    return a.rstrip("s") == b.rstrip("s")


def _opening_correction(raw: str) -> tuple[str, str | None] | None:
    """The value a clause opening with a correction gives ("wait no, ... it's 7.4%" -> "7.4%"), with the word a
    whole number must count in the value it corrects ("sorry, 640 households" -> "households"), or None."""
    marker = _OPENING_CORRECTION.match(raw)
    if marker is None:
        return None
    value = _VALUE_CORE.search(raw, marker.end())
    if value is None:
        return None
    start, found = value.start(), value.group()
    if (identifier := _identifier_around(raw, value)) is not None:
        start, found = identifier
    if marker["explicit"] or marker["typo"]:
        return found, None
    # After a bare "no" or "sorry" the value holds more than digits and comes first or as what "it" is; a whole
    # number comes first with the word it counts, which the value corrected must count too ("sorry, 640
    # households" after "612 households").
    between = raw[marker.end() : start].strip(" ,:;.-")
    if between and _IT_IS.search(between) is None:
        return None
    if not found.isdigit():
        return found, None
    unit = _COUNTED.match(raw, value.end())
    return (found, unit.group(1).lower()) if unit is not None and not between else None


def _identifier_around(raw: str, core: re.Match[str]) -> tuple[int, str] | None:
    """The word of letters, digits and hyphens a number sits in ("RBK753", "eu-central-1") and where it
    starts, or None when the number stands alone ("7.4%", "26")."""
    start, end = core.start(), core.end()
    while start > 0 and _in_identifier(raw[start - 1]):
        start -= 1
    while end < len(raw) and _in_identifier(raw[end]):
        end += 1
    word = raw[start:end].strip("-_")
    if not any(ch.isalpha() for ch in word) or "%" in word:
        return None
    return start, word


def _in_identifier(char: str) -> bool:
    return char.isalnum() or char in "-_"


def _identifier_shape(word: str) -> str:
    """A model's or a region's shape, its letter and digit runs collapsed ("eu-central-1" -> "a-a-d"): what an
    earlier value must share to be the one a correction replaces."""
    return re.sub(r"[^\W\d_]+", "a", re.sub(r"\d+", "d", word))


def _correct_earlier(
    found: list[tuple[Clause, T]], index: int, dropped: set[int], new: str, counted: str | None = None
) -> bool:
    """Give the nearest earlier user clause holding exactly one value of `new`'s form the new value (followed by
    the word `counted`, when given)."""
    identifier = any(ch.isalpha() for ch in new)
    form = _identifier_shape(new) if identifier else _digit_form(new)
    for earlier, previous, day in _earlier_user_clauses(found, index, dropped):
        text = previous.said or previous.text
        if identifier:
            words = (w.strip(",.;:!?()") for w in text.split())
            values = [w for w in words if any(ch.isdigit() for ch in w) and _identifier_shape(w) == form]
            if len(values) == 1 and values[0] != new:
                found[earlier] = (_with_value(previous, values[0], new), day)
                return True
            if values:
                return False
            continue
        if counted is not None:
            # Only the number that counts the same thing: "2 kids and 2 cats" / "no, 3 cats".
            spans = [
                m
                for m in _VALUE_CORE.finditer(text)
                if _digit_form(m.group()) == form
                and (unit := _COUNTED.match(text, m.end())) is not None
                and unit.group(1).lower() == counted
            ]
            if not spans:
                continue
            if len(spans) == 1 and spans[0].group() != new:
                said = f"{text[: spans[0].start()]}{new}{text[spans[0].end() :]}"
                found[earlier] = (replace(previous, said=said), day)
                return True
            return False
        cores = [m.group() for m in _VALUE_CORE.finditer(text)]
        values = [core for core in cores if _digit_form(core) == form]
        if not values:
            continue
        if len(values) == 1 and values[0] != new:
            found[earlier] = (_with_value(previous, values[0], new, whole_word=False), day)
            return True
        return False
    return False


def _with_value(clause: Clause, old: str, new: str, *, whole_word: bool = True) -> Clause:
    # A corrected value may sit inside a word ("n=38,412"), but never inside a longer number.
    left = r"(?<!\S)" if whole_word else r"(?<![\d.,])"
    token = re.compile(rf"{left}{re.escape(old)}(?=[\s,.;:)!?]|$)")
    # Only what the memory says: the decision has read the clause as said.
    return replace(clause, said=token.sub(new, clause.said or clause.text, count=1))
