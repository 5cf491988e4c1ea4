"""The language the user asks to be helped in: "Bonjour, je préfère être aidé en français si possible" -> "The
user prefers to be helped in French".

Said in that language, the request is a clause the decision cannot read (0.47 for the French one, no candidate
for "Merhaba, Türkçe devam edebilir miyiz?"), yet dataset_v2 and the writers in its style label it a lasting
preference in every session that opens that way. A language named in its own words counts only beside a word
that asks or prefers, in any of the languages listed ("en français si possible", "em português, por favor");
in English only "prefer", "continue", "speak" or "switch to" the language, so "translate this into Polish" and
"I prefer to write to Dutch companies in Dutch" say nothing of how the user wants to be helped.
"""

import re

from cairn_contracts.promotion import Candidate
from cairn_promotion.names import profile_candidate
from cairn_promotion.safety import holds_secret

# Each language as its speakers name it when asking for it.
_NATIVE: dict[str, str] = {
    "French": r"en\s+fran[cç]ais",
    "Spanish": r"en\s+(?:espa[nñ]ol|castellano)",
    "Portuguese": r"(?:em|en)\s+portugu[eê]s",
    "German": r"auf\s+deutsch",
    "Italian": r"in\s+italiano",
    "Dutch": r"in\s+het\s+nederlands",
    "Turkish": r"t[uü]rk[cç]e",
    "Polish": r"po\s+polsku",
    "Swedish": r"på\s+svenska",
    "Norwegian": r"på\s+norsk",
    "Danish": r"på\s+dansk",
    "Finnish": r"suomeksi",
    "Czech": r"česky|v\s+češtině",
    "Romanian": r"(?:în|in)\s+(?:română|romana)",
    "Catalan": r"en\s+català",
    "Russian": r"по-русски|на\s+русском",
    "Ukrainian": r"українською",
    "Greek": r"στα\s+ελληνικά",
    "Japanese": r"日本語",
    "Chinese": r"中文|普通话",
    "Korean": r"한국어",
    "Vietnamese": r"tiếng\s+việt",
    "Indonesian": r"bahasa\s+indonesia",
}
# A word that asks or prefers, in the languages above: without one, a language named is a topic ("comment
# dit-on ... en français ?").
_ASKING = re.compile(
    r"pr[ée]f[eè]re|prefiero|prefiro|preferisco|bevorzuge|lieber|liever|wolę|tercih|föredrar|foretrækker|"
    r"foretrekker|continu(?:er|ar|are)|seguir|seguimos|weiter|verder|devam|possible|posible|possível|"
    r"possibile|podemos|pouvons|pouvez|können|possiamo|kunnen|możemy|bitte|por\s+favor|s'il\s+vous\s+pla[iî]t|"
    r"svp|per\s+favore|alsjeblieft|proszę|lütfen|atendimento|aid[ée]|ayuda|ajuda|hilfe|aiuto|parler|hablar|"
    r"falar|sprechen|parlare|spreken|mówić|konuş|大丈夫|お願い|可以|吗|주세요|пожалуйста",
    re.IGNORECASE,
)
_LANGUAGES = "|".join(_NATIVE)
# A Latin letter: "en français" is not read inside "dien français"; a script without spaces ("日本語で") has none.
_LETTER = r"[A-Za-zÀ-ÖØ-öø-ÿ]"
# Every language's own name in one pattern, one group per language: read once per clause, not once per language.
_NATIVE_NAMED = re.compile(
    rf"(?<!{_LETTER})(?:{'|'.join(f'(?P<{language}>{native})' for language, native in _NATIVE.items())})(?!{_LETTER})",
    re.IGNORECASE,
)
# "I prefer Japanese", "I'd prefer to be helped in Spanish", "can we continue in German?", "switch to French".
_IN_ENGLISH = re.compile(
    rf"\b(?:prefer(?:\s+(?:to\s+be\s+(?:helped|answered|supported)|support|help|answers|replies)\s+in)?|"
    rf"(?:continue|speak|talk|chat)\s+in|switch\s+to)\s+(?P<language>{_LANGUAGES})"
    r"(?=\s*(?:[.,;!?]|$|if\b|please\b|pls\b|for\s+(?:support|help)\b|from\s+now\b))",
    re.IGNORECASE,
)


def help_language(clause: str, turn: str) -> str | None:
    """The language one user clause asks to be helped in, by its English name, or None. The word that asks
    may stand anywhere in the clause's turn ("Olá, prefiro atendimento em português, por favor")."""
    if (said := _IN_ENGLISH.search(clause)) is not None:
        return said.group("language").capitalize()
    if (native := _NATIVE_NAMED.search(clause)) is None or native.lastgroup is None:
        return None
    return native.lastgroup if _ASKING.search(turn) else None


# "The user prefers Japanese": the decision keeps the English words; said the way the reader says it, the two
# are one memory.
_BARE_PREFERENCE = re.compile(rf"^(?P<head>the user prefers) (?P<language>{_LANGUAGES})\W*$", re.IGNORECASE)


def as_help_language(memory: str) -> str:
    """A memory that prefers a language and nothing else, said as the language the user wants help in."""
    if (bare := _BARE_PREFERENCE.match(memory)) is None:
        return memory
    return f"{bare.group('head')} to be helped in {bare.group('language').capitalize()}"


def help_language_candidates(clause: str, turn: str) -> list[Candidate]:
    """The preference `help_language` reads, as a candidate; none from a turn holding a credential."""
    if (language := help_language(clause, turn)) is None or holds_secret(turn):
        return []
    return [profile_candidate(f"The user prefers to be helped in {language}", "preference")]
