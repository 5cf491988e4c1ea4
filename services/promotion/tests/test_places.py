"""Place names from the committed GeoNames list: a home is told from a tool by its name."""

import pytest

from cairn_promotion.places import moves_home, place_at


@pytest.mark.parametrize(
    ("text", "place"),
    [
        ("Lisbon last month", "Lisbon"),
        ("New York in May", "New York"),  # the longest name wins
        ("the Netherlands in 2023", "the Netherlands"),
        ("Montreal on Friday", "Montreal"),  # the ASCII form of Montréal
        ("the UK.", "the UK"),
        ("BC in March", "BC"),
        ("Zotero last autumn", None),
        ("R last year", None),
        ("Grafana Cloud", None),
        ("Cypress for e2e tests", None),  # a city's name that is more often a tool's
        ("reading glasses", None),  # a place only when capitalised
    ],
)
def test_place_at(text: str, place: str | None) -> None:
    assert place_at(text) == place


def test_moves_home() -> None:
    assert moves_home("The user moved to Lisbon in May")
    assert moves_home("The user has relocated back to Leeds")
    assert not moves_home("The user moved to Buildkite in January")
    assert not moves_home("The user's team moved the standup to 10:00")
