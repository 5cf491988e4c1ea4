"""The built-in offline compiler: window -> hard safety rules -> clauses -> durable-fact decision ->
self-contained rewrite -> dedupe.

It needs no model service or key. The decision "is this clause a durable fact, preference, decision or
constraint" is either the hand-written rules (`RuleDecision`) or a small classifier learned from the
eval's dev labels over local sentence embeddings (`learned.LearnedDecision`); the safety rules run
before and after it, whatever it says.

Session content is data, never instructions. A turn that carries anything instruction-like (an
injection phrase, a hidden HTML comment or code block that addresses the agent, an action link) is
dropped whole, because the "benign" sentences around an injection are usually part of the same payload.
"""

import asyncio
import re
from collections.abc import Sequence
from dataclasses import replace
from datetime import date
from typing import Protocol

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.anecdotes import is_anecdote, is_character_sketch, is_family_wish, is_hearsay
from cairn_promotion.answer_form import answer_form_candidates
from cairn_promotion.answers import answered_candidates
from cairn_promotion.asks import (
    is_about_the_assistant,
    is_courtesy,
    is_fragment,
    is_heading,
    is_leave_to_keep,
    is_task_request,
    is_unfinished,
    is_unmarked_question,
    is_verbless_instruction,
    without_aside,
    without_consequence,
    without_lone_reason,
    without_question_tail,
    without_trailing_join,
    without_unfinished_tail,
)
from cairn_promotion.care_advice import states_a_clinicians_rule
from cairn_promotion.companions import companion_of, with_companion
from cairn_promotion.compiler import (
    DEFAULT_CONFIDENCE_THRESHOLD,
    DEFAULT_MAX_CHARS,
    DEFAULT_MAX_TURNS,
    READABLE_ROLES,
    recent_window,
)
from cairn_promotion.context_block import (
    block_candidates,
    line_fact,
    line_key,
    lines_by_value,
    lone_line_fact,
)
from cairn_promotion.corrections import apply_corrections, carry_updates
from cairn_promotion.decisions import states_a_decision
from cairn_promotion.duties import states_a_duty
from cairn_promotion.habits import states_a_tool_habit
from cairn_promotion.hedges import is_bare_plan, is_guess, is_venting, without_undecided
from cairn_promotion.help_language import as_help_language, help_language_candidates
from cairn_promotion.introductions import (
    introduced,
    introduced_candidates,
    is_bare_profile,
    listed_about_the_user,
    opens_turn_about_the_user,
    own_identifier,
    states_a_health_fact,
    states_an_allergy,
    states_their_condition_or_home,
)
from cairn_promotion.names import (
    NAMED_CONFIDENCE,
    is_bare_name,
    is_name_fact,
    named_candidates,
    with_kin_owner,
    with_relations,
)
from cairn_promotion.parts import kept_parts, parts_read_again
from cairn_promotion.pasted import is_export, is_pasted_output
from cairn_promotion.referents import Referents, points_back
from cairn_promotion.rewrite import (
    decision_at_end,
    is_household,
    plain_conditional,
    self_contained,
    undated,
    with_bare_subject,
)
from cairn_promotion.rules import is_question, is_reaction, is_reported_opinion, rule_score
from cairn_promotion.safety import holds_secret, is_instruction_like, turn_is_tainted
from cairn_promotion.slots import slot_of
from cairn_promotion.text import (
    DISCOURSE_PREFIX,
    GRATITUDE,
    QUOTE,
    TAG_QUESTION,
    THANKED_FOR,
    Clause,
    clauses,
    colon_split,
    content_tokens,
    drop_long_quote,
    informal_spellings,
    jaccard,
    sentences,
    squeezed,
    strip_code,
    strip_remember,
)
from cairn_promotion.topics import names_nothing_it_is_for, with_topic
from cairn_promotion.transient import is_transient
from cairn_promotion.updates import as_state, is_former

# Below this a clause is noise, not a weak candidate; emitting it would only bloat gate input.
MIN_EMIT_CONFIDENCE = 0.3
MAX_CONFIDENCE = 0.99
# A change `updates.as_state` recognises (a move to a known place, a setting's new time or amount) is a
# knowledge update by definition, though the decision reads its wording as an event ("I moved to Lisbon last
# month" scores 0.56): the state it leaves is kept with at least this confidence, above the default gate.
UPDATE_CONFIDENCE = 0.7
# Candidates whose content tokens overlap this much are one memory said twice.
DEDUPE_JACCARD = 0.7

_AFFIRMATION = re.compile(
    r"^\W*(?:yes|yep|yeah|sure|agreed|ok(?:ay)?|sounds good|let's do (?:it|that)|do it|go ahead|perfect|"
    r"great|correct|exactly|confirmed|approved|lgtm)\b",
    re.IGNORECASE,
)


# A confirmed assistant clause is the user's only when it speaks of the user's own choices ("Earlier you
# decided on ...", "Decision: we'll pin asyncpg"). Advice, recipes and general facts the user said "perfect"
# to ("Soak it in cold water", "| Bills | £350 |", "About 105 for a medium banana") are the assistant's.
_SPEAKS_FOR_THE_USER = re.compile(
    r"^(?:(?:earlier|previously|so|then|now|as agreed|decision|decided|agreed)\b[\s,:]*)*"
    r"(?:you|you're|you've|you'll|we|we're|we've|we'll|your|our|let's)\b",
    re.IGNORECASE,
)


# When the assistant's recap says it was agreed ("Earlier you decided on X"): not part of the fact.
_RECAP_LEAD_IN = re.compile(r"^(?:earlier|previously|as agreed|as discussed)\b[\s,]*", re.IGNORECASE)


# What the decision says of one clause: (confidence, tags), or None for "not a memory".
Verdict = tuple[float, list[str]] | None


class DurableDecision(Protocol):
    """Decides, per clause, how likely it is to be worth remembering."""

    name: str

    def decide(self, clauses: Sequence[Clause]) -> list[Verdict]:
        """Per clause `(confidence, tags)`, or None for "not a memory". Synchronous and CPU-bound."""
        ...


class RuleDecision:
    """The hand-written cue and penalty rules (`rules.rule_score`)."""

    name = "rules"

    def decide(self, clauses: Sequence[Clause]) -> list[tuple[float, list[str]] | None]:
        return [rule_score(c) for c in clauses]


class OfflineCompiler:
    """A deterministic compiler of facts, preferences and decisions that needs no model service.

    It reads only the most recent window of user, assistant and fact turns, splits them into clauses,
    lets `decision` score each one, rewrites the keepers as self-contained third-person facts (dated
    when the turn has a date and the fact is time-bound) and never emits instruction-like or
    secret-bearing content.

    Args:
        decision: The durable-fact decision; the rules by default.
        max_turns: How many of the most recent readable turns to look at.
        max_chars: Character budget for that window, counted from the newest turn backwards.
    """

    def __init__(
        self,
        decision: DurableDecision | None = None,
        *,
        max_turns: int = DEFAULT_MAX_TURNS,
        max_chars: int = DEFAULT_MAX_CHARS,
    ) -> None:
        if max_turns < 1 or max_chars < 1:
            raise ValueError("max_turns and max_chars must be positive")
        self.decision: DurableDecision = decision or RuleDecision()
        self.max_turns = max_turns
        self.max_chars = max_chars

    async def compile(self, turns: Sequence[Turn]) -> list[Candidate]:
        """Compile a session; see `extract` (run off the event loop: the learned decision embeds)."""
        return await asyncio.to_thread(self.extract, turns)

    def extract(self, turns: Sequence[Turn]) -> list[Candidate]:
        """The synchronous core of `compile`, for callers without an event loop (the eval).

        Args:
            turns: The session's turns, oldest first.

        Returns:
            Deduplicated candidates, highest confidence first.
        """
        window = recent_window(turns, self.max_turns, self.max_chars)
        found = session_clauses(window)
        decided = self.decision.decide([c for c, _ in found]) if found else []
        # A clause scored under the gate is read again, one fact at a time.
        part_verdicts = _parts_decided(self.decision, found, decided)
        # After the decision, which reads each clause as said (as it was trained): the memory of a value
        # updated later in the session says the new value.
        read = carry_updates([(c, (day, v)) for (c, day), v in zip(found, decided, strict=True)])
        household = is_household([c.raw for c, _ in found if c.role == "user"])
        readable = [t for t in window if t.role.strip().lower() in READABLE_ROLES]
        turn_texts = [squeezed(t.content) for t in readable]
        # A context block's "Key: value" lines are read by their shape, in place of the decision's reading.
        blocks = _context_blocks(readable, turn_texts)
        candidates = []
        # Each user turn's "Key: value" lines, for a lone line's value the decision kept.
        keyed_lines = [
            lines_by_value(text) if turn.role.strip().lower() == "user" else {}
            for turn, text in zip(readable, turn_texts, strict=True)
        ]
        before: Clause | None = None
        for clause, (day, verdict) in read:
            if (block_fact := blocks.pop(line_key(clause.raw), None)) is not None:
                # A line a later update rewrote ("actually it's more like 3 coffees") says the new value.
                if clause.said and line_key(clause.said) != line_key(clause.text):
                    block_fact = line_fact(clause.said, as_memory) or block_fact
                candidates.append(block_fact)  # in reading order, so a later value takes the slot
                before = clause
                continue
            memories: list[Candidate] = []  # this clause's, as the decision kept them
            # An instruction or a secret anywhere in the clause keeps every part of it out.
            if verdict is not None and not is_heading(clause.raw) and not _unsafe(clause.text):
                companion = companion_of(clause, before, turn_texts[clause.turn_index])
                under = verdict[0] < DEFAULT_CONFIDENCE_THRESHOLD
                for said in _said_parts(clause, under, keyed_lines[clause.turn_index]):
                    part = clause if said == (clause.said or clause.text) else replace(clause, said=said)
                    part_verdict = (part_verdicts.get(said) if under else None) or verdict
                    if (candidate := _candidate(part, part_verdict, day, household)) is not None:
                        if (memory := as_memory(candidate)) is not None:
                            memories.append(memory if companion is None else _shared(memory, companion))
            if clause.role == "user" and memories:
                memories = _with_topics(memories, clause.turn_index, readable, turn_texts)
            candidates.extend(memories)
            before = clause
            if clause.role == "user":  # in reading order, so a later name takes the slot
                candidates.extend(named_candidates(clause.text))
                turn_text = turn_texts[clause.turn_index]
                # Where the clause stands in its turn is read only for a bare trade or state.
                of_the_user = is_bare_profile(clause.text) and (
                    (clause.position == 0 and opens_turn_about_the_user(clause.raw, turn_text))
                    or listed_about_the_user(clause.raw, turn_text)
                )
                candidates.extend(introduced_candidates(clause.text, of_the_user))
                if clause.position == 0 and clause.turn_index > 0:
                    asked = readable[clause.turn_index - 1]
                    if asked.role.strip().lower() == "assistant":
                        candidates.extend(
                            answered_candidates(turn_texts[clause.turn_index - 1], clause.raw, turn_text)
                        )
                # Said once is enough: a preference the decision kept in the user's words is not said again.
                if not any(m.confidence >= DEFAULT_CONFIDENCE_THRESHOLD for m in memories):
                    candidates.extend(answer_form_candidates(clause.text, turn_text))
                    candidates.extend(help_language_candidates(clause.raw, turn_text))
        candidates.extend(blocks.values())  # lines no clause read as written (a correction rewrote them)
        return dedupe(latest_per_slot(with_relations(candidates)))


def _with_topics(
    memories: list[Candidate], turn_index: int, readable: Sequence[Turn], turn_texts: Sequence[str]
) -> list[Candidate]:
    """A clause's memories, a choice or a plan's value that names nothing it is for said with what the session
    said it is for (`topics`). The session's turns are gathered only for a clause that has such a memory."""
    if not any(names_nothing_it_is_for(memory.text) for memory in memories):
        return memories
    said_before = [
        text
        for index, (turn, text) in enumerate(zip(readable, turn_texts, strict=True))
        if index <= turn_index and turn.role.strip().lower() == "user"
    ]
    out = []
    for memory in memories:
        text = with_topic(memory.text, said_before)
        out.append(
            memory if text == memory.text else memory.model_copy(update={"text": text, "slot": slot_of(text)})
        )
    return out


def _said_parts(clause: Clause, under: bool, lines: dict[str, tuple[str, str]]) -> list[str]:
    """What a clause's memories say, one fact each: a lone "Key: value" line's value with its key; a kept clause's
    bare-subject facts or run-on statements, each up to where speech turns to the moment (`kept_parts`); a clause
    under the gate's facts, each of which the decision read again alone (`parts_read_again`)."""
    if clause.role == "user" and (keyed := lone_line_fact(clause.raw, lines)):
        return [keyed]
    said = clause.said or clause.text
    parts = parts_read_again(said, clause.role == "user") if under else kept_parts(said)
    return _said_as_the_users(parts) if clause.role == "user" else parts


def _said_as_the_users(parts: list[str]) -> list[str]:
    """A user clause's parts, its own reference said first ("Student ID 2291847, PhD student in ...") said as whose it
    is, and a bare trade after it as the same person's ("The user is a PhD student in ...")."""
    if not parts or (identifier := own_identifier(parts[0])) is None:
        return parts
    return [identifier, *(next(iter(introduced(part, of_the_user=True)), part) for part in parts[1:])]


def _unsafe(text: str) -> bool:
    return is_instruction_like(text) or holds_secret(text)


def _parts_decided(
    decision: DurableDecision, found: list[tuple[Clause, date | None]], decided: list[Verdict]
) -> dict[str, Verdict]:
    """Each fact of a clause the decision scored under the gate, decided on its own, by its words.

    "pods crashlooping after deploy rn, prod is EKS in eu-central-1" is scored low as a whole for the incident
    in it; its parts (`parts_read_again`) are clauses the decision can read alone. The clause as a whole is
    still what the decision reads first: it was trained on whole clauses.
    """
    parts: list[tuple[Clause, str]] = []
    for (clause, _), verdict in zip(found, decided, strict=True):
        if verdict is not None and verdict[0] < DEFAULT_CONFIDENCE_THRESHOLD:
            said = clause.said or clause.text
            if (split := parts_read_again(said, clause.role == "user")) != [said]:
                parts.extend((clause, part) for part in split)
    if not parts:
        return {}
    verdicts = decision.decide([replace(clause, text=part, said=part, raw=part) for clause, part in parts])
    return {part: verdict for (_, part), verdict in zip(parts, verdicts, strict=True)}


def session_clauses(turns: Sequence[Turn]) -> list[tuple[Clause, date | None]]:
    """Every clause of the readable, untainted turns, with its turn's date.

    Args:
        turns: The turns to read, oldest first; non-readable roles are skipped.

    Returns:
        `(clause, date)` pairs in reading order.
    """
    found: list[tuple[Clause, date | None]] = []
    referents = Referents()
    readable = [t for t in turns if t.role.strip().lower() in READABLE_ROLES]
    for index, turn in enumerate(readable):
        role = turn.role.strip().lower()
        content = squeezed(turn.content)
        if turn_is_tainted(content):
            continue
        confirmed = role == "assistant" and _confirmed_by_next_user_turn(readable, index)
        day = turn.at.date() if turn.at is not None else None
        referents.new_turn(role, content)
        for position, clause in enumerate(_turn_clauses(content, role, confirmed, referents)):
            found.append((Clause(**{**clause.__dict__, "turn_index": index, "position": position}), day))
    return found


def _confirmed_by_next_user_turn(turns: Sequence[Turn], index: int) -> bool:
    following = (t for t in turns[index + 1 :] if t.role.strip().lower() == "user")
    nxt = next(following, None)
    return nxt is not None and bool(_AFFIRMATION.match(nxt.content))


def _turn_clauses(content: str, role: str, confirmed: bool, referents: Referents) -> list[Clause]:
    # Code, hidden comments, long quotes and exports from a tool are data about something else, never the speaker's
    # facts.
    text = apply_corrections(QUOTE.sub(drop_long_quote, strip_code(content)))
    if is_export(text):
        return []
    found: list[Clause] = []
    for whole in sentences(text):
        if holds_secret(whole):
            continue  # a credential's label and its value may sit in different clauses: drop them all
        for sentence in colon_split(whole):
            found.extend(_sentence_clauses(sentence, role, confirmed, referents))
    return found


def _sentence_clauses(sentence: str, role: str, confirmed: bool, referents: Referents) -> list[Clause]:
    found: list[Clause] = []
    sentence = informal_spellings(sentence)
    body, requested = strip_remember(sentence) if role != "assistant" else (sentence, False)
    for part in clauses(body):
        said = part
        if role == "user":
            part, said = referents.resolve(part)
        stripped = DISCOURSE_PREFIX.sub("", part).strip()
        if stripped:
            found.append(
                Clause(
                    stripped, part, role, requested, confirmed, said=DISCOURSE_PREFIX.sub("", said).strip()
                )
            )
    return found


def _candidate(
    clause: Clause, verdict: tuple[float, list[str]], day: date | None, household: bool = False
) -> Candidate | None:
    confidence, tags = verdict
    if clause.role == "assistant" and not (clause.confirmed and _SPEAKS_FOR_THE_USER.match(clause.text)):
        return None  # the assistant's own words are context; only what the user agreed to is a memory
    if confidence < MIN_EMIT_CONFIDENCE:
        return None
    # A question states nothing ("quick q, how do I make ruff ignore E501?"); a statement keeps its words
    # without the question or the thanks tagged on ("I take metformin, does that matter?").
    words = clause.said or clause.text
    if clause.role == "assistant":
        words = _RECAP_LEAD_IN.sub("", words)  # "Earlier you decided on X": the recap's time, not the fact's
    stated = GRATITUDE.sub("", TAG_QUESTION.sub("", words))
    if is_question(stated) or is_reaction(stated) or is_reported_opinion(stated) or THANKED_FOR.match(stated):
        return None
    if stated != words and len(stated.split()) < 3:
        return None  # "quick q, how do I ...?" is a question with a prefix, not a statement
    text = self_contained(stated, clause.role, day, household)
    if not content_tokens(text) or is_instruction_like(text) or holds_secret(text):
        return None  # "let's do that": the referent is elsewhere, so the memory would be meaningless
    # A compiled memory is never certain (only what someone asked to remember is): 0.996 must not round to 1.
    confidence = min(round(confidence, 2), MAX_CONFIDENCE)
    return Candidate(text=text[:2000], confidence=confidence, tags=tags, slot=slot_of(text))


# Memories of a shape the writers always label, which the decision scores low: kept at the names' confidence.
_KEPT_BY_SHAPE = (
    states_an_allergy,
    states_their_condition_or_home,
    states_a_health_fact,
    states_a_duty,
    states_a_decision,
    states_a_tool_habit,
    states_a_clinicians_rule,
)


def as_memory(candidate: Candidate) -> Candidate | None:
    """The rules after the decision's pipeline: what the user asked for once, a courtesy, a remark about the
    assistant, a phrase cut short, what they used to do, only guess or sigh about, have not decided or plan
    without a detail (`hedges`), what only points back at the conversation (`referents.points_back`), what
    holds only for the next hours (`transient`), machine output pasted in (`pasted`), a story someone else
    lived, what someone else says, what the user's family wants for the plan or what the user thinks of
    someone's character (`anecdotes`) is not a fact about them; a trailing "and", a tail cut short, an
    undecided plan and what follows from a fact ("... so the user is careful") are cut; a formal "should like"
    is said as "would" (`rewrite.plain_conditional`); and a setting's change or a move home is said as the
    state it leaves (`updates.as_state`), kept with at least `UPDATE_CONFIDENCE`; an allergy, a condition, a
    diet, an operation or the home of the user's or of someone of theirs (`introductions`), a role or a named
    colleague's duty (`duties`), a decision that says what was decided (`decisions`), how the user does a kind
    of work (`habits`) and what their clinician told them to do (`care_advice`) are kept at the names'
    confidence (`_KEPT_BY_SHAPE`); a question asked without its mark is cut or, alone, dropped (`asks`); a past
    verb with no subject and a parent called by the word for them are the user's (`rewrite.with_bare_subject`,
    `names.with_kin_owner`); a bare preference for a language is the language the user wants help in
    (`help_language`).

    They run outside `_candidate` on purpose: `eval/train_durable.py` picks the decision's threshold by
    cross-validation over `_candidate`, and with these rules inside it the fewer false positives on dev let
    the threshold fall (0.375 -> 0.325), which lost precision on every outside set (eval/README.md).
    """
    said = without_undecided(
        without_unfinished_tail(
            without_trailing_join(without_aside(without_question_tail(without_lone_reason(candidate.text))))
        )
    )
    if said is None:
        return None
    said = with_bare_subject(plain_conditional(decision_at_end(without_consequence(said))))
    text = with_kin_owner(as_help_language(as_state(said)))
    # The rules read how a memory opens, whether or not `self_contained` dated it ("On 2025-02-27, the user
    # needs help making a budget" is the same ask as "The user needs help making a budget").
    opening = undated(text)
    if any(
        rule(opening)
        for rule in (
            is_task_request,
            is_unmarked_question,
            is_courtesy,
            is_about_the_assistant,
            is_unfinished,
            is_former,
            is_transient,
            is_guess,
            is_venting,
            is_bare_plan,
            is_pasted_output,
            points_back,
            is_bare_name,
            is_fragment,
            is_verbless_instruction,
            is_leave_to_keep,
            is_anecdote,
            is_hearsay,
            is_family_wish,
            is_character_sketch,
        )
    ):
        return None
    if text == candidate.text:
        confidence = candidate.confidence
    else:
        confidence = candidate.confidence if text == said else max(candidate.confidence, UPDATE_CONFIDENCE)
    if any(reads(opening) for reads in _KEPT_BY_SHAPE):
        confidence = max(confidence, NAMED_CONFIDENCE)
    if text == candidate.text and confidence == candidate.confidence:
        return candidate
    return candidate.model_copy(update={"text": text, "slot": slot_of(text), "confidence": confidence})


def _context_blocks(turns: Sequence[Turn], texts: Sequence[str]) -> dict[str, Candidate]:
    """The facts of every context block in the user's untainted turns, by line (`context_block.line_key`)."""
    blocks: dict[str, Candidate] = {}
    for turn, text in zip(turns, texts, strict=True):
        if turn.role.strip().lower() != "user":
            continue
        # The taint check reads the whole turn (about 75 ms for 100 KiB): only for a turn that has a block.
        if (block := block_candidates(strip_code(text), as_memory)) and not turn_is_tainted(text):
            blocks.update(block)
    return blocks


def _shared(memory: Candidate, companion: str) -> Candidate:
    text = with_companion(memory.text, companion)
    return memory if text == memory.text else memory.model_copy(update={"text": text, "slot": slot_of(text)})


def latest_per_slot(candidates: list[Candidate]) -> list[Candidate]:
    """Of candidates holding the same slot, the one stated last: "it was at 9:30, now it's at 10:00".

    Args:
        candidates: In reading order.
    """
    last = {c.slot: i for i, c in enumerate(candidates) if c.slot is not None}
    return [c for i, c in enumerate(candidates) if c.slot is None or last[c.slot] == i]


def dedupe(candidates: list[Candidate]) -> list[Candidate]:
    """Collapse candidates that say the same fact, keeping the most confident and the union of tags."""
    kept: list[tuple[frozenset[str], Candidate, bool]] = []  # (content words, memory, names someone)
    for candidate in sorted(candidates, key=lambda c: -c.confidence):
        tokens = content_tokens(candidate.text)
        # A name is a fact of its own even where a longer memory names the person too ("The user's partner is
        # named Dev" beside "The user and the user's partner Dev adopted a greyhound named Biscuit").
        named = is_name_fact(candidate.text)
        duplicate = next(
            (
                i
                for i, (other, _, other_named) in enumerate(kept)
                if _same_fact(tokens, other, subset=not named and not other_named)
            ),
            None,
        )
        if duplicate is None:
            kept.append((tokens, candidate, named))
            continue
        other_tokens, other, other_named = kept[duplicate]
        merged_tags = list(dict.fromkeys([*other.tags, *candidate.tags]))
        kept[duplicate] = (other_tokens, other.model_copy(update={"tags": merged_tags}), other_named)
    # A memory of one or two words that a memory which survives the gate holds says nothing of its own ("The user
    # does Fridays" beside "Nothing before 13:00 on Fridays"); a name still is a fact of its own.
    return [
        c
        for tokens, c, named in kept
        if not (
            len(tokens) < _SUBSET_MIN_WORDS
            and not named
            and any(
                tokens < other and holder.confidence >= min(c.confidence, DEFAULT_CONFIDENCE_THRESHOLD)
                for other, holder, _ in kept
            )
        )
    ]


# Content words a memory needs before another memory holding them all makes it the same fact.
_SUBSET_MIN_WORDS = 3


# Two memories of one session that hold the same numbers and share this much of their words say one fact two
# ways: "The user is 52 years old" and "The user is 52"; "The user put in $600 a month" and "The user's
# contribution is $600 a month".
_SAME_NUMBERS_JACCARD = 0.3
_ISO_DAY = re.compile(r"\d{4}-\d{2}-\d{2}")


def _same_fact(a: frozenset[str], b: frozenset[str], subset: bool = True) -> bool:
    small, large = sorted((a, b), key=len)
    similarity = jaccard(a, b)
    numbers = _numbers(a)
    return (
        similarity >= DEDUPE_JACCARD
        or (subset and len(small) >= _SUBSET_MIN_WORDS and small <= large)
        or (bool(numbers) and numbers == _numbers(b) and similarity >= _SAME_NUMBERS_JACCARD)
    )


def _numbers(tokens: frozenset[str]) -> frozenset[str]:
    # The day a memory is dated by ("On 2025-02-11, ...") is when it was said, not a value of the fact.
    return frozenset(t for t in tokens if any(ch.isdigit() for ch in t) and not _ISO_DAY.fullmatch(t))
