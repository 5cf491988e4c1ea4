"""`eval_outside`: every set by other writers, one line each, the same figures the eval gives alone."""

import json
from pathlib import Path

import pytest

from cairn_promotion.eval import build_compiler, evaluate, load_judged
from cairn_promotion.eval_outside import EVAL_DIR, OUTSIDE_SETS, is_never_read, main, survivor_changes


def test_every_outside_set_is_in_the_repository() -> None:
    for path, _ in OUTSIDE_SETS.values():
        assert (EVAL_DIR / path).is_file(), path


def test_a_set_reads_as_the_eval_scores_it_alone(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sets", "instyle-test", "--json"]) == 0
    [row] = json.loads(capsys.readouterr().out)
    shipped = build_compiler("auto")
    alone = evaluate(EVAL_DIR / "instyle_v14.json", compiler=shipped, splits=["test"])
    judged = evaluate(EVAL_DIR / "instyle_v14.json", compiler=shipped, splits=["test"], judged=load_judged())
    assert row["set"] == "instyle-test"
    assert row["sessions"] == len(alone.sessions) == 180
    assert row["strict"]["precision"] == round(alone.precision, 3)
    assert row["judged"]["recall"] == round(judged.recall, 3)
    assert row["judged"]["recall"] >= row["strict"]["recall"]  # a verdict adds matches, never removes one
    assert row["leaks"] == alone.leaks


def test_a_baseline_adds_paired_differences(capsys: pytest.CaptureFixture[str]) -> None:
    shipped = EVAL_DIR.parent / "src" / "cairn_promotion" / "durable_model.json"
    assert main(["--sets", "heldout", "--baseline-artifact", str(shipped)]) == 0
    out = capsys.readouterr().out
    assert out.startswith("heldout ")
    # The same model on both sides: every difference and its interval are zero.
    assert "precision +0.000 [0.0, 0.0]" in out
    assert "f1 +0.000 [0.0, 0.0]" in out


def test_survivor_changes_name_each_session_and_never_a_test_half() -> None:
    before = {
        "v6": {"a": ["The user lives in Leeds", "Old wording"], "b": ["Same"]},
        "instyle-test": {"t": ["Hidden"]},
    }
    after = {
        "v6": {"a": ["The user lives in Leeds", "New wording"], "b": ["Same"]},
        "instyle-test": {"t": ["Still hidden"]},
    }
    assert survivor_changes(before, after) == ["== v6 a", "  - Old wording", "  + New wording"]


def test_heldout_writer_c_is_scored_and_never_read() -> None:
    # The tenth session kept writer C unread; a test half is never read either.
    assert is_never_read("heldout", "hoC-coding-1")
    assert not is_never_read("heldout", "hoA-coding-1")
    assert is_never_read("instyle-test", "ah-coding-1")
    before = {"heldout": {"hoC-ops-1": ["Old"], "hoB-ops-1": ["Old"]}}
    after = {"heldout": {"hoC-ops-1": ["New"], "hoB-ops-1": ["New"]}}
    assert survivor_changes(before, after) == ["== heldout hoB-ops-1", "  - Old", "  + New"]


def test_failures_list_readable_sessions_only(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--sets", "heldout", "instyle-test", "--failures"]) == 0
    out = capsys.readouterr().out
    listed = [line.split()[2] for line in out.splitlines() if line.startswith("== ")]
    assert listed, "heldout's writers A and B have failures to read"
    assert all(session.startswith(("hoA-", "hoB-")) for session in listed)
    assert "== instyle-test" not in out
    # Every listed session shows what the judged matcher counts against it.
    assert all(
        line.startswith(("==", "  FP ", "  PART ", "  MISS ")) for line in out.splitlines()[2:] if line
    )


def test_survivors_written_then_diffed_against_the_same_code_show_no_change(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    written = tmp_path / "survivors.json"
    assert main(["--sets", "heldout", "--survivors", str(written)]) == 0
    sessions = json.loads(written.read_text(encoding="utf-8"))["heldout"]
    assert len(sessions) == 54  # writers A, B and C
    assert any(texts for texts in sessions.values())
    capsys.readouterr()
    assert main(["--sets", "heldout", "--diff", str(written)]) == 0
    assert "==" not in capsys.readouterr().out
