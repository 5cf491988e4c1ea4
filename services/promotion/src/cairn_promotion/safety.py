"""Hard safety rules: injections, action links, secrets. Rules on purpose: never learned, never tuned away."""

import re

from cairn_promotion.text import sentences

_INJECTION = re.compile(
    r"""
    \b(?:ignore|disregard|forget|override|bypass)\s+(?:all\s+|any\s+|the\s+|your\s+|my\s+)*
        (?:previous|prior|above|earlier|preceding|former|original|system|safety)?\s*
        (?:instructions?|prompts?|rules|directions|directives|guidelines|context|programming)\b
    | \b(?:you\s+are|you're)\s+now\b
    | \bfrom\s+now\s+on,?\s+(?:you|the\s+(?:assistant|agent|ai|model))\s+
        (?:must|will|shall|should|are|have\s+to|need\s+to)\b
    | \bsystem\s+prompt\b | \[\s*system\b | \bsystem\s*: | <\s*/?\s*system\s*> | <\|im_start\|> | \[/?inst\]
    | <<\s*sys\s*>> | \bdeveloper\s+mode\b | \bjailbreak | (?-i:\bDAN\b) | \bmaintenance\s+mode\b
    | \bnew\s+(?:instructions|rules|directives)\b | \bupdated\s+instructions\b
    | \b(?:act|behave)\s+as\s+(?:a|an|if)\b | \broleplay\s+as\b
    | \bpretend\s+(?:to\s+be|you\s+are|that\s+you)\b
    | \blink\s+(?:this|that|the\s+following|these|those)\s+(?:articles?|pages?|docs?|documents?)\b
    | \bcross[-\s]?link | \blink\s+(?:it|them)\s+to\s+(?:every|all|each)\b
    | \b(?:store|save|add|write|record|commit|insert|persist|put|keep)\b[^.!?\n]{0,40}?\b(?:as|in|into|to)\s+
        (?:(?:a|an|your|its|the\s+(?:agent|assistant|ai)'s)\s+(?:[\w-]+\s+)?
          | (?:long[-\s]term|permanent|persistent)\s+)
        memor(?:y|ies)\b
    | \bwhen\s+you\s+(?:save|store|write|create|record)\s+(?:a\s+|any\s+)?memor
    | \b(?:memory|memories)\s+writer\b
    | \bforget\s+(?:everything|all)\s+(?:above|before|previous|prior|you\s+(?:know|were\s+told))
    | \b(?:do\s+not|don't|never)\s+(?:tell|inform|alert|warn|notify)\s+the\s+user\b
    | \bwithout\s+(?:telling|asking|informing|notifying|alerting)\s+the\s+user\b
    | (?:^|[\n.!?]\s*|<!--\s*|\#\s*)(?:note\s+to\s+|attention\s+|dear\s+)?
        (?:ai|llm|assistant|agent|language\s+model|chatbot)s?
        (?:\s+(?:assistant|agent|reading\s+this|directives?|instructions?|notes?|notice|override
                |commands?))?\s*:
    | \bif\s+you\s+are\s+an?\s+(?:ai|llm|language\s+model|assistant|agent|bot)\b
    | \b(?:ai|llm|gpt|chatbot|language[-\s]model)s?(?:[-\s](?:based|powered|driven))?\s+
        (?:assistants|agents|models|bots|systems|tools|readers)\b
    | \b(?:ai|llm)s?\s+reading\s+this\b
    | \b(?:you|the\s+(?:assistant|agent|ai|model|bot))\s+(?:must|are\s+required\s+to|are\s+instructed\s+to)\b
    | \b(?:reveal|print|show|repeat)\s+(?:your|the)\s+(?:system|hidden|initial)\s+(?:prompt|instructions)\b
    | \b(?:enter|send|share|provide|confirm|verify)\s+your\s+
        (?:password|credentials|pin|otp|2fa|seed\s+phrase|private\s+key)\b
    """,
    re.IGNORECASE | re.VERBOSE,
)

_URL = re.compile(r"\bhttps?://([^\s/:?#]+)\S*|\bwww\.([^\s/:?#]+)\S*", re.IGNORECASE)
_LOCAL_HOST = re.compile(
    r"^(?:localhost|127\.0\.0\.1|\[::1\]|[\w.-]+\.(?:internal|local|localhost|lan|corp))$", re.I
)
_ACTION = re.compile(
    r"\b(?:visit|click|open|go(?:es|ing)?\s+to|download|install|run|execute|curl|wget|fetch|send|post|submit|"
    r"enter|upload|forward|share|log\s*in|sign\s*in|paste|follow|call|import)(?:s|es|ed|ing)?\b",
    re.IGNORECASE,
)

_SECRET = re.compile(
    r"\b(?:password|passwd|passphrase|pass\s*code|api[-_\s]?key|secret(?:\s+key)?|private\s+key|"
    r"seed\s+phrase|access\s+token|auth\s+token|bearer\s+token|pin\s+code|ssh\s+key|cvv|iban|bank\s+account|"
    r"routing\s+number|"
    # A Wi-Fi network's key (an in-style writer's warehouse SSID, instyle_v14.json), and the word for
    # password in the other languages users switch to.
    r"psk|pre[-\s]?shared\s+key|(?:wpa2?|wpa3|wifi|wi-fi|wlan|wireless|network)\s+key|"
    r"passwort|kennwort|contrase[ñn]a|mot\s+de\s+passe|senha|wachtwoord|has[łl]o|parola\s+d'ordine|"
    # Typed in a hurry: "portal pw is Tulip!2024", "wifi pass: ...", "root pwd".
    r"pwd?|p/w|pword|(?:wifi|wi-fi|portal|login|admin|root|router|account|email|vpn)\s+pass|"
    # Said aloud: "the grafana admin login is admin slash Tr0ub4dor-77", "creds are ...".
    r"(?:login|log-in|creds|credentials)(?:\s+(?:is|are)|\s*[=:])\s*(?=\w)|"
    # Terse: "db pass is Vq8#rT2!mZ", "pin is 4417 user rahul.k88".
    r"(?:db|database|server|ssh|sudo|mysql|postgres|user)\s+pass|pass(?:\s+is|\s*[=:])\s*(?=\w)|"
    r"pin(?:\s+is|\s*[=:])\s*(?=\d)|"
    r"wallet|(?-i:PINs?)|(?:my|bank|card|sim|phone)\s+pin|pin\s+(?:code|number)|unlock\s+code|passcode|backup\s+codes?|recovery\s+codes?|2fa\s+codes?|otp|"
    r"one[-\s]time\s+code|security\s+code|card\s+number|credit\s+card|debit\s+card|"
    r"(?:[A-Z_]*_)?(?:TOKEN|SECRET|PASSWORD|API_KEY|ACCESS_KEY)(?:_[A-Z_]*)?)\b",
    re.IGNORECASE,
)
# Credential shapes, whatever the words around them say.
_SECRET_SHAPE = re.compile(
    r"\b(?:sk|pk|rk)[-_](?:live|test|proj)?[-_]?[A-Za-z0-9]{12,}"  # API keys
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}|\bgithub_pat_[A-Za-z0-9_]{20,}|\bxox[abpr]-[A-Za-z0-9-]{10,}"
    r"|\bAKIA[0-9A-Z]{16}\b|\bAIza[0-9A-Za-z_-]{30,}"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----|\beyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{10,}"  # keys, JWTs
    r"|\b(?:\d[ -]?){13,19}\b"  # card numbers
    r"|\b[A-Z]{2}\d{2}(?: ?[A-Z0-9]{4}){3,7}(?: ?[A-Z0-9]{1,3})?\b"  # IBANs
    r"|(?<![\w/])[A-Za-z0-9+/]{32,}={0,2}(?![\w/])"  # long base64 blobs
    # A vendor's prefixed token ("glc_eyJvIjoi...", "glpat-...", "npm_..."): a short lowercase prefix, then a
    # long run with digits and capitals (snake_case names have neither).
    r"|\b[a-z]{2,8}[_-](?=[A-Za-z0-9_-]*\d)(?=[A-Za-z0-9_-]*[A-Z])[A-Za-z0-9_-]{20,}"
    # "The key for the stack is Xk29...", "token: 7f3a9c...": a key or token's value, digits and letters mixed.
    r"|\b(?:key|token)\b[^.!?]{0,25}?(?:\bis\b|[:=])\s*(?=\S*\d)(?=\S*[A-Za-z])\S{12,}"
    # A password inside a URI: "postgresql://app_admin:Tr0ub4dor&3@staging-db.internal:5432/orders".
    r"|\b[A-Za-z][A-Za-z0-9+.-]*://[^\s/:@]*:[^\s/@]+@"
)


def is_instruction_like(text: str) -> bool:
    """Whether text reads like an instruction to an agent rather than a fact about the world.

    This is the compiler's injection filter; the LLM compiler also applies it to model output.
    """
    return bool(_INJECTION.search(text)) or any(_action_link(s) for s in sentences(text))


def holds_secret(text: str) -> bool:
    """Whether text states a credential. Those are never promoted, whoever asks."""
    return bool(_SECRET.search(text) or _SECRET_SHAPE.search(text))


def turn_is_tainted(content: str) -> bool:
    # Checked before code, comments and quotes are stripped: that is exactly where injections hide.
    return is_instruction_like(content)


def _action_link(text: str) -> bool:
    # A link to an unknown host next to a call to act on it is how injected content asks for actions.
    unknown = any(not _LOCAL_HOST.match(m.group(1) or m.group(2) or "") for m in _URL.finditer(text))
    return unknown and bool(_ACTION.search(text))  # searched once, not once per link
