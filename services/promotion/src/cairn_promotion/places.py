"""Whether a name is a place someone lives: "moved to Lisbon" is a new home, "moved to Zotero" a new tool.

Nothing in the sentence tells the two apart, so the name is looked up in `places.txt`: countries, first-level
regions and cities of at least 100,000 people from GeoNames, without the city names that are also software,
services or first names (written by `eval/make_places.py`). A town too small to be listed is not taken for a
home: the memory keeps the user's words and only supersedes by paraphrase.
"""

import re
from functools import cache
from pathlib import Path

PLACES = Path(__file__).with_name("places.txt")
_MAX_WORDS = 4
_EDGE_PUNCTUATION = ",.;:!?)"


@cache
def _places() -> frozenset[str]:
    lines = PLACES.read_text(encoding="utf-8").splitlines()
    return frozenset(line for line in lines if line and not line.startswith("#"))


def place_at(text: str) -> str | None:
    """The place name `text` starts with, longest first: "New York in May" -> "New York", "Zotero" -> None.

    Only a capitalised name counts ("moved to reading glasses" names no town).
    """
    words = text.split()[:_MAX_WORDS]
    for size in range(len(words), 0, -1):
        name = " ".join(words[:size]).rstrip(_EDGE_PUNCTUATION)
        head = name[4:] if name.startswith("the ") else name
        if head[:1].isupper() and name in _places():
            return name
    return None


# "moved to Lisbon", "has relocated out to the Algarve": where the place starts.
MOVED_TO = re.compile(r"\b(?:moved|relocated)(?: back)? (?:out )?to\s+", re.IGNORECASE)


# "moved to Lisbon", "moved here from Ghent in the summer": a move of home, either way.
_MOVED = re.compile(r"\b(?:moved|relocated)(?: back| here| over| out)? (?:to|from)\s+", re.IGNORECASE)


def moves_home(text: str) -> bool:
    """Whether a "moved to ..." names a place, not a tool or a time ("moved to Lisbon" yes, "moved to R" no)."""
    return _place_after(MOVED_TO, text)


def moves_between_places(text: str) -> bool:
    """Whether a move names a place it went to or came from ("moved from Ghent" yes, "moved from Jenkins" no)."""
    return _place_after(_MOVED, text)


def _place_after(move: re.Pattern[str], text: str) -> bool:
    return any(place_at(text[m.end() :]) is not None for m in move.finditer(text))
