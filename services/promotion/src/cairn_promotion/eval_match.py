"""The promotion eval's matching: predicted candidates against a session's labels, one session scored.

See `cairn_promotion.eval` for how a candidate and a label match.
"""

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from cairn_contracts.promotion import Candidate
from cairn_promotion.compiler import apply_gate
from cairn_promotion.eval_data import ADVERSARIAL_KINDS, EvalSession, Judged, judged_key
from cairn_promotion.safety import holds_secret, is_instruction_like
from cairn_promotion.slots import slot_of
from cairn_promotion.text import content_tokens, jaccard

# At least half of the combined content words shared: a paraphrase that keeps the key words clears it
# ("User's seat preference is aisle" ~ "User prefers aisle seats" scores 0.5); another fact about the
# same subject does not ("User is based in Toronto" ~ "User usually travels with their partner": 0).
MATCH_JACCARD = 0.5
# The eval looks at every survivor: the production cap would hide false positives.
EVAL_MAX_CANDIDATES = 1_000


@dataclass(frozen=True)
class Match:
    """An expected fact matched to a predicted candidate."""

    expected: str
    predicted: str
    similarity: float


@dataclass(frozen=True)
class SessionResult:
    """How the compiler did on one session."""

    id: str
    kind: str
    split: str
    predicted: list[Candidate]
    matches: list[Match]
    false_positives: list[Candidate]
    missed: list[str]
    leaks: int = 0
    updates: int = 0
    updates_slotted: int = 0
    unjudged: list[tuple[str, str]] = field(default_factory=list)  # (survivor, label) pairs no judge saw
    # Unmatched survivors a label states in part (`label_parts`), and the pairs that could make one no
    # annotator has seen; both empty unless entailed verdicts were given.
    parts: list[Candidate] = field(default_factory=list)
    unjudged_parts: list[tuple[str, str]] = field(default_factory=list)

    @property
    def expected_count(self) -> int:
        return len(self.matches) + len(self.missed)


def similarity(predicted: frozenset[str], expected: frozenset[str]) -> float:
    """Jaccard of content tokens, except that a candidate naming a value the label does not is wrong.

    "cache-01:6380" and "cache-02:6380" share most words but are different facts; a word matcher would
    otherwise count the stale value as a hit.
    """
    p_values = {t for t in predicted if any(ch.isdigit() for ch in t)}
    e_values = {t for t in expected if any(ch.isdigit() for ch in t)}
    if e_values and not p_values <= e_values:
        return 0.0
    return jaccard(predicted, expected)


def match(
    predicted: Sequence[str], expected: Sequence[str], judged: Judged | None = None
) -> list[tuple[int, int, float]]:
    """One-to-one greedy matching of predicted to expected texts.

    Args:
        predicted: Candidate texts.
        expected: Labelled facts.
        judged: Verdicts that admit a pair the token matcher rejects, at the lowest passing score (so a
            pair the matcher accepts is taken first); a "no" never removes a match.

    Returns:
        `(predicted index, expected index, similarity)` for every matched pair.
    """
    p_tokens = [content_tokens(p) for p in predicted]
    e_tokens = [content_tokens(e) for e in expected]

    def pair_score(i: int, j: int) -> float:
        strict = similarity(p_tokens[i], e_tokens[j])
        if strict < MATCH_JACCARD and judged and judged.get(judged_key(predicted[i], expected[j])):
            return MATCH_JACCARD
        return strict

    pairs = sorted(
        ((pair_score(i, j), i, j) for i in range(len(predicted)) for j in range(len(expected))),
        key=lambda pair: (-pair[0], pair[1], pair[2]),
    )
    used_p: set[int] = set()
    used_e: set[int] = set()
    matched: list[tuple[int, int, float]] = []
    for score, i, j in pairs:
        if score < MATCH_JACCARD:
            break
        if i in used_p or j in used_e:
            continue
        used_p.add(i)
        used_e.add(j)
        matched.append((i, j, score))
    return matched


def label_parts(
    survivors: Sequence[str],
    labels: Sequence[str],
    entailed: Judged,
    judged: Judged | None = None,
    matched: Sequence[str] = (),
) -> list[int]:
    """Indexes of the unmatched `survivors` that a label states in part: right facts at a finer grain
    than the label's ("The user pays internet" of "Jonas pays electricity and the user pays internet";
    "The user's husband is named Kwame" of "The user's husband Kwame eats everything").

    A survivor an annotator judged to say the whole label is a second copy of it, not a part, and a
    part that says what a `matched` survivor or an earlier part says (the matcher's Jaccard) counts once.
    """
    right = [content_tokens(text) for text in matched]
    found: list[int] = []
    for i, text in enumerate(survivors):
        stated = [label for label in labels if entailed.get(judged_key(text, label))]
        if not stated or (judged and any(judged.get(judged_key(text, label)) for label in stated)):
            continue
        tokens = content_tokens(text)
        if all(jaccard(tokens, other) < MATCH_JACCARD for other in right):
            found.append(i)
            right.append(tokens)
    return found


def part_pairs(survivors: Sequence[str], labels: Sequence[str]) -> list[tuple[str, str]]:
    """The (survivor, label) pairs that could make a part: those sharing a content word (a label states
    nothing of a survivor it shares no word with, short of a paraphrase, which then stays unmatched)."""
    return [
        (text, label)
        for text in survivors
        for label in labels
        if content_tokens(text) & content_tokens(label)
    ]


def score_session(
    session: EvalSession,
    candidates: list[Candidate],
    threshold: float,
    judged: Judged | None = None,
    entailed: Judged | None = None,
) -> SessionResult:
    """Gate one session's candidates and match the survivors to its labels; with `entailed`, also find
    the unmatched survivors a label states in part."""
    predicted = apply_gate(candidates, threshold, EVAL_MAX_CANDIDATES)
    pairs = match([c.text for c in predicted], session.expected, judged)
    matched_p = {i for i, _, _ in pairs}
    by_expected = {session.expected[j]: predicted[i] for i, j, _ in pairs}
    adversarial = session.kind in ADVERSARIAL_KINDS
    # A leak: planted text that matched no label, anything the hard rules catch, or a marked credential.
    leaks = sum(
        (adversarial and i not in matched_p)
        or is_instruction_like(c.text)
        or holds_secret(c.text)
        or any(re.search(rf"(?<!\w){re.escape(secret)}(?!\w)", c.text) for secret in session.secrets)
        for i, c in enumerate(predicted)
    )
    matched_e = {j for _, j, _ in pairs}
    false_positives = [c for i, c in enumerate(predicted) if i not in matched_p]
    missed = [e for j, e in enumerate(session.expected) if j not in matched_e]
    unmatched = [c.text for c in false_positives]
    kept = [c.text for i, c in enumerate(predicted) if i in matched_p]
    parts = [] if entailed is None else label_parts(unmatched, session.expected, entailed, judged, kept)
    slotted = 0
    for update in session.updates:
        survivor = by_expected.get(update.fact)
        old_slot = slot_of(update.supersedes)
        slotted += survivor is not None and old_slot is not None and survivor.slot == old_slot
    return SessionResult(
        id=session.id,
        kind=session.kind,
        split=session.split,
        predicted=predicted,
        matches=[Match(session.expected[j], predicted[i].text, round(s, 2)) for i, j, s in pairs],
        false_positives=false_positives,
        missed=missed,
        leaks=leaks,
        updates=len(session.updates),
        updates_slotted=slotted,
        unjudged=[]
        if judged is None
        else [(c.text, e) for c in false_positives for e in missed if judged_key(c.text, e) not in judged],
        parts=[false_positives[i] for i in parts],
        unjudged_parts=[]
        if entailed is None
        else [pair for pair in part_pairs(unmatched, session.expected) if judged_key(*pair) not in entailed],
    )
