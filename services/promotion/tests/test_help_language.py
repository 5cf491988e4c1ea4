"""The language the user asks to be helped in is a preference, though it is asked for in that language."""

import pytest

from cairn_contracts.promotion import Turn
from cairn_promotion.compiler import DEFAULT_CONFIDENCE_THRESHOLD
from cairn_promotion.help_language import as_help_language, help_language, help_language_candidates
from cairn_promotion.offline import OfflineCompiler


@pytest.mark.parametrize(
    ("clause", "turn", "language"),
    [
        # dataset_v2 dev and instyle_v14 dev.
        ("Bonjour, je préfère être aidé en français si possible", "", "French"),
        ("Merhaba, Türkçe devam edebilir miyiz?", "", "Turkish"),
        (
            "prefiro atendimento em português",
            "Olá, prefiro atendimento em português, por favor",
            "Portuguese",
        ),
        ("すみません、日本語で大丈夫ですか？ English is ok too", "", "Japanese"),
        ("¿Podemos seguir en español?", "", "Spanish"),
        # Asked for in English.
        ("I prefer Japanese", "", "Japanese"),
        ("can we continue in German?", "", "German"),
        ("I'd prefer to be helped in Spanish if possible", "", "Spanish"),
        # A language as a topic, a translation, or a preference about something else.
        ("comment dit-on « cat » en français ?", "", None),
        ("can you translate this letter into Polish for him?", "", None),
        ("I prefer to write to Dutch companies in Dutch", "", None),
        ("I prefer Japanese food honestly", "", None),
        ("my dad only speaks Polish", "", None),
    ],
)
def test_the_language_asked_for_is_read(clause: str, turn: str, language: str | None) -> None:
    assert help_language(clause, turn or clause) == language


@pytest.mark.parametrize(
    ("memory", "said"),
    [
        ("The user prefers Japanese", "The user prefers to be helped in Japanese"),
        ("The user prefers Japanese food", "The user prefers Japanese food"),
        ("The user prefers short answers", "The user prefers short answers"),
    ],
)
def test_a_bare_language_preference_is_said_as_the_help_wanted(memory: str, said: str) -> None:
    assert as_help_language(memory) == said


def test_a_turn_holding_a_credential_is_not_read() -> None:
    turn = "Merhaba, Türkçe devam edebilir miyiz? token ghp_abcdefghijklmnopqrstuvwxyz0123456789"
    assert help_language_candidates("Merhaba, Türkçe devam edebilir miyiz?", turn) == []


def test_the_preference_survives_the_compiler_once() -> None:
    turns = [
        Turn(
            role="user", content="すみません、日本語で大丈夫ですか？ English is ok too but I prefer Japanese"
        ),
        Turn(role="assistant", content="はい、日本語で大丈夫です。"),
        Turn(role="user", content="Olá! Merhaba, Türkçe devam edebilir miyiz?"),
    ]
    found = [c for c in OfflineCompiler().extract(turns) if c.confidence >= DEFAULT_CONFIDENCE_THRESHOLD]
    texts = [c.text for c in found]
    assert texts.count("The user prefers to be helped in Japanese") == 1
    assert "The user prefers to be helped in Turkish" in texts
