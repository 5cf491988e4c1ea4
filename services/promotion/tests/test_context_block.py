"""A context block's "Key: value" lines are facts about the user, read by their shape after the decision."""

import pytest

from cairn_contracts.promotion import Candidate, Turn
from cairn_promotion.context_block import block_candidates, line_key, lines_by_value, lone_line_fact
from cairn_promotion.learned import LearnedDecision, load_default_decision
from cairn_promotion.offline import OfflineCompiler, as_memory

_BLOCK = """Setup:
- Prod: EKS in us-east-2
- Staging: a single k3s node at Hetzner
- Monitoring: Grafana, logs in Loki
- Deps: we use Poetry, not pip
- Right now: payments-worker pod in CrashLoopBackOff since 10:40
- Question: how do I see the logs of the previous container?
- Branch: feat/checkout-redesign (just for today's work)
- Travelers: me and my husband Kenji
- Budget: not decided yet
- DB password: Quartz-hunter-77
"""


def _facts(turn: str) -> list[str]:
    return [c.text for c in block_candidates(turn, as_memory).values()]


def test_each_attribute_line_of_a_block_is_a_fact_about_the_user() -> None:
    facts = _facts(_BLOCK)
    assert "The user's prod is EKS in us-east-2" in facts
    assert "The user's staging is a single k3s node at Hetzner" in facts
    assert "The user's monitoring is Grafana, logs in Loki" in facts
    # The value in the user's own person.
    assert "The user's travelers are the user and the user's husband Kenji" in facts


def test_a_line_about_now_a_label_a_statement_or_a_credential_is_left_to_the_decision() -> None:
    facts = " | ".join(_facts(_BLOCK))
    for left in (
        "Poetry",
        "CrashLoopBackOff",
        "previous container",
        "feat/checkout",
        "not decided",
        "Quartz",
    ):
        assert left not in facts


def test_a_lone_key_value_line_is_no_block() -> None:
    assert _facts("Plan: Team plan, 12 seats") == []
    assert _facts("quick one. Prod: EKS in us-east-2") == []


@pytest.mark.parametrize(
    ("turn", "value", "fact"),
    [
        # The value the decision kept alone says what it is the value of (dataset_v2 dev, writers P and AA).
        (
            "my address: 14 Elm Street, Leeds",
            "14 Elm Street, Leeds",
            "The user's address is 14 Elm Street, Leeds",
        ),
        (
            "new address for deliveries: 7 Harbour Road, Bristol BS1 5TT",
            "7 Harbour Road, Bristol BS1 5TT",
            "The user's address for deliveries is 7 Harbour Road, Bristol BS1 5TT",
        ),
        (
            "Emergency fund target: 6 months of expenses",
            "6 months of expenses",
            "The user's emergency fund target is 6 months of expenses",
        ),
        # A key that says something itself, a value that is a statement, a value of no line: left as it was.
        ("we've decided: Tokyo 4 nights, Kyoto 5 nights", "Tokyo 4 nights, Kyoto 5 nights", None),
        ("we cut back: Eating out budget is €120 a month now", "Eating out budget is €120 a month now", None),
        ("Question: how do I rotate the key", "how do I rotate the key", None),
        ("I live in Leeds", "I live in Leeds", None),
    ],
)
def test_a_lone_key_value_line_the_decision_kept_says_its_key(
    turn: str, value: str, fact: str | None
) -> None:
    assert lone_line_fact(value, lines_by_value(turn)) == fact


def test_a_line_and_its_clause_compare_without_bullet_case_or_closing_stop() -> None:
    assert line_key("- Prod: EKS in us-east-2.") == line_key("prod: EKS in US-east-2")


def test_the_block_reading_replaces_the_decisions_reading_of_the_same_line() -> None:
    decision: LearnedDecision | None = load_default_decision()
    assert decision is not None
    turns = [Turn(role="user", content=_BLOCK)]
    compiled: list[Candidate] = OfflineCompiler(decision).extract(turns)
    texts = [c.text for c in compiled]
    assert "The user's prod is EKS in us-east-2" in texts
    assert not any(t.startswith("Prod:") for t in texts)
    assert all("Quartz" not in t for t in texts)


def test_a_dump_of_lines_is_read_no_further_than_its_first_hundred() -> None:
    dump = "\n".join(f"- Host{i}: node-{i}.internal" for i in range(150))
    facts = _facts(dump)
    assert len(facts) == 100
    assert facts[0] == "The user's host0 is node-0.internal"
