"""Every limit a request can hit. Each has a test at, and just past, its edge."""

from typing import Final

MEMORY_TEXT_MAX_BYTES: Final = 16 * 1024  # long-term memories are facts, not documents
SESSION_CONTENT_MAX_BYTES: Final = 100 * 1024  # the reference's 100 KB session-turn cap
SESSION_ID_MAX_BYTES: Final = 200
# Defaults of CAIRN_SESSION_MAX_TURNS / CAIRN_SESSION_MAX_BYTES (live turns of one session).
SESSION_MAX_TURNS_DEFAULT: Final = 5_000
SESSION_MAX_BYTES_DEFAULT: Final = 25 * 1024 * 1024
TAGS_MAX: Final = 32
TAG_MAX_CHARS: Final = 64
METADATA_MAX_BYTES: Final = 16 * 1024
SESSION_TTL_MAX_SECONDS: Final = 30 * 24 * 3600
LIST_LIMIT_MAX: Final = 100
LIST_LIMIT_DEFAULT: Final = 20
# Deep pages cost a scan of every row skipped; past this, narrow the filter instead.
LIST_OFFSET_MAX: Final = 100_000
HISTORY_LIMIT_MAX: Final = 1000
HISTORY_LIMIT_DEFAULT: Final = 100
RECALL_LIMIT_MAX: Final = 50
RECALL_LIMIT_DEFAULT: Final = 10
QUERY_MAX_CHARS: Final = 500
DEFAULT_MEMORY_QUOTA: Final = 10_000
ARTICLE_BODY_MAX_BYTES: Final = 64 * 1024
ARTICLE_TITLE_MAX_CHARS: Final = 200
ARTICLE_CATEGORY_MAX_CHARS: Final = 64
REFERENCED_IDS_MAX: Final = 50
USAGE_RANGE_MAX_DAYS: Final = 366  # one usage request covers at most a year of days, `from` and `to` included
USAGE_RANGE_DEFAULT_DAYS: Final = 30
# Lists inside NATS messages (a producer bug or a hostile payload cannot grow a message without bound).
PROMOTION_CANDIDATES_MAX: Final = 100  # the LLM compiler's parser keeps at most this many
CANDIDATE_LINKS_MAX: Final = 20
CANDIDATE_LINK_MAX_CHARS: Final = 128
VECTOR_DIM_MAX: Final = 4096
VISIBLE_IDS_MAX: Final = 1000
