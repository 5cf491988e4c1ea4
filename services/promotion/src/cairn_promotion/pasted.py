"""Machine output pasted into the chat is not a fact about the user.

A log line ("kubelet[2231]: E0211 09:14:02.118 eviction_manager.go:350] ..."), an error message quoted from a
tool ("Unable to create VM - storage local-lvm not available", "'Cannot find module @/utils/format'"), a
certificate's dump ("NotAfter=Mar 27 23:59:59 2025 GMT"), an expression from the code under discussion
("datetime.now().date() + timedelta(days=30)") or a line of code pasted without a fence ("r = r + 1") is what
the session is about, not what to remember of the user; so is a recipe or a reference copied in. The decision
keeps some of them: they carry names and numbers like facts do. A stack, a version, a host or a subnet said
in words ("The API is served at api.tallyfox.io", "The subnet is 10.40.8.0/24") is not matched: only the
marks of output are.
"""

import re

_OUTPUT = re.compile(
    r"\b\d{1,2}:\d{2}:\d{2}(?:\.\d+)?\b"  # a clock with seconds: a log's or a dump's timestamp
    r"|\b\w+\.(?:go|py|js|ts|tsx|jsx|rs|java|rb|c|cc|cpp|kt|swift):\d+\b"  # file:line
    r"|\b[EWIF]\d{4} \d\d:\d\d"  # glog's severity and date
    r"|\w\(\)\.\w|\w\([^()]*\)\s*[-+*/]\s*\w+\("  # a call chain, or calls in an expression
    # A line of code pasted without a fence: a call's member ('Sheets("Report").Cells(r, 2).Value'), an
    # assignment from a method call ('rs = conn.Execute("SELECT ...")'), a counter ("r = r + 1") or a
    # spreadsheet formula ("=B4+C4+D4").
    r"|\w\([^()]*\)\.\w|\b\w+ ?= ?\w+\.\w+\(|(?i:\b(\w+) = \1 [-+*/] )|=[A-Z]{1,3}\d+[-+*/]"
    # A reference copied from a bibliography: "[1] Hughes TP et al. (2017) Global warming and ...", "Smith J, Lee
    # K, 2021, Social media and sleep, Journal of Adolescent Health vol 68 p 45-52" (writers B and J). A paper
    # named in a sentence ("The Chen et al. 2021 paper found ...") is not matched.
    r"|^\[\d+\]\s|\bvol\.? \d+\b.*\bpp?\.? ?\d+"
    r"|\b\w+(?:Error|Exception)\b|\bTraceback\b|Cannot find module|No such file or directory|Undefined function"
    # A declaration or a constructor's call ("const events = [", "blob = TextBlob(...)"), or an identifier whose
    # underscore a chat's markdown escaped ("clean\\_tweets\\_df") (LongMemEval: 12 survivors of pasted code).
    r"|(?i:^(?:const|let|var)\s+\w+\s*=)|^\w+ ?= ?[A-Z]\w*\(|\w\\_\w"
    # JavaScript's strict comparisons ('If (e.key === "Tab" && e.shiftKey) {', LongMemEval).
    r"|\s[!=]==\s"
    # A store review's rating or header copied in ("5.0 out of 5 stars Not just for boys", "Reviewed in the United
    # States on March 9, 2023", LongMemEval).
    r"|\b\d(?:\.\d)? out of 5 stars\b|^Reviewed in (?:the )?[A-Z]"
    r"|\b(?:Unable to|Failed to) \w+ [^,;]* not (?:available|found)\b"
)


# "4 cups flour, 2 tsp baking soda, 1 tsp salt, ...", "The recipe calls for 6 oz butter, 6 oz caster sugar":
# a recipe copied in is the dish's, not the user's (writers A, E and N; none labelled one). One measure said
# alone ("2 tbsp of chia every morning") may be a habit and stays.
_RECIPE = re.compile(
    r"\brecipe (?:that )?calls for\b"
    r"|(?:\b[\d.½¼¾/]+ ?(?:cups?|tsp|tbsp|oz|tablespoons?|teaspoons?)\b.*){2}",
    re.IGNORECASE,
)


# "WATER, PORK FAT [CURED WITH WATER, SALT, NATURAL SMOKE FLAVORS ...", "CALCIUM DISODIUM EDTA ADDED AS A
# PRESERVATIVE": a product's label copied in, in capitals (LongMemEval: 10 survivors of one session). On the
# readable sets no survivor is more than 45% capitals ("It's WordPress VIP on PHP 8.2"); the user's own words in
# capitals are rewritten around "the user", and are read.
_CAPITALS_MIN_LETTERS = 20
_CAPITALS_SHARE = 0.6


def _in_capitals(memory: str) -> bool:
    letters = [c for c in memory if c.isalpha()]
    return (
        len(letters) >= _CAPITALS_MIN_LETTERS
        and "the user" not in memory.lower()
        and sum(c.isupper() for c in letters) > _CAPITALS_SHARE * len(letters)
    )


def is_pasted_output(memory: str) -> bool:
    """Whether a memory carries the marks of machine output (a log line, an error, a dump, an expression) or
    of a recipe or a label copied in."""
    return _OUTPUT.search(memory) is not None or _RECIPE.search(memory) is not None or _in_capitals(memory)


# A line of an export from a tool: a table's row opening on its date and clock ("19/02/2023 02:27 Kyson Terry
# terry.kyson@mobius.com ticketing-system status ... #pol-0002 closed") or a chat log's header ("Sarmad Khan 5:19
# AM"). LongMemEval: a pasted ticket table and a pasted LinkedIn chat each filled their session's 20 slots with rows,
# headers and pieces of the messages between them; no readable set has one. One or two dated lines are the user's
# notes and are read.
_EXPORT_LINE = re.compile(
    r"^[ \t]*(?:(?:\d{1,2}/\d{1,2}/\d{2,4}|\d{4}-\d{2}-\d{2})[ T]\d{1,2}:\d{2}\b"
    r"|(?:[A-Z][\w'-]+ ){1,3}\d{1,2}:\d{2} ?(?:AM|PM)[ \t]*$)",
    re.MULTILINE,
)
_EXPORT_MIN_LINES = 3
# A chat log's own words, which one line of is enough to show ("Jo Peninsulas sent the following message at 4:27 PM",
# "Open the options list in your conversation with ...", "View Jo's profile"; LongMemEval: two pasted LinkedIn chats
# with two headers each had filled their sessions with headers and pieces of the messages).
_EXPORT_MARK = re.compile(
    r"\bsent the following messages? at \d{1,2}:\d{2}\s?(?:AM|PM)\b"
    r"|^[ \t]*Open the options list in your conversation with\b"
    r"|^[ \t]*View \S+[’']s profile",
    re.MULTILINE,
)


def is_export(text: str) -> bool:
    """Whether a turn's text is an export pasted from a tool (three of its lines or more are rows or headers of
    one, or a line says it is a chat log's), which is data: the user's facts are not read from it."""
    return len(_EXPORT_LINE.findall(text)) >= _EXPORT_MIN_LINES or _EXPORT_MARK.search(text) is not None
