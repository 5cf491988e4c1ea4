"""NATS subject names. The version lives in the subject: a breaking change is a new v2 subject."""

from typing import Final

SERVICES: Final = ("memory", "recall", "promotion", "graduation", "knowledge")

MEMORY_REMEMBER: Final = "cairn.v1.memory.remember"
MEMORY_LIST: Final = "cairn.v1.memory.list"
MEMORY_GET: Final = "cairn.v1.memory.get"
MEMORY_FORGET: Final = "cairn.v1.memory.forget"
MEMORY_SUPERSEDE: Final = "cairn.v1.memory.supersede"
SESSION_HISTORY: Final = "cairn.v1.memory.session_history"

MEMORY_PERSIST_PROMOTED: Final = "cairn.v1.memory.persist_promoted"

RECALL_MEMORY: Final = "cairn.v1.recall.memory"

PROMOTION_PROMOTE: Final = "cairn.v1.promotion.promote"

GRADUATION_GRADUATE: Final = "cairn.v1.graduation.graduate"

KNOWLEDGE_PROPOSE: Final = "cairn.v1.knowledge.propose"  # the novelty gate: every write-back
KNOWLEDGE_GET: Final = "cairn.v1.knowledge.get"
KNOWLEDGE_LIST: Final = "cairn.v1.knowledge.list"
KNOWLEDGE_SEARCH: Final = "cairn.v1.knowledge.search"
KNOWLEDGE_DELETE: Final = "cairn.v1.knowledge.delete"
KNOWLEDGE_VISIBLE_IDS: Final = "cairn.v1.knowledge.visible_ids"

RECALL_CONTEXT: Final = "cairn.v1.recall.context"  # merged recall
RECALL_REFERENCED: Final = "cairn.v1.recall.referenced"
RECALL_METRICS: Final = "cairn.v1.recall.metrics"

# JetStream: durable background work. One stream holds every memory event.
EVENTS_STREAM: Final = "CAIRN_MEMORY_EVENTS"
EVENTS_SUBJECTS: Final = "cairn.v1.events.memory.>"
MEMORY_CREATED: Final = "cairn.v1.events.memory.created"
MEMORY_RECALLED: Final = "cairn.v1.events.memory.recalled"
# Durable pull consumers on the stream (named here so NATS permissions can name them too).
EMBEDDER_DURABLE: Final = "memory-embedder"
RECALL_BUMPS_DURABLE: Final = "memory-recall-bumps"

# Every request/reply subject above, found by its prefix so a new one cannot be left out.
REQUEST_SUBJECTS: Final = tuple(
    value
    for value in tuple(globals().values())
    if isinstance(value, str) and value.startswith("cairn.v1.") and not value.startswith("cairn.v1.events.")
)


def owner(subject: str) -> str:
    """The service that answers a request subject: `cairn.v1.<service>.<op>`."""
    return subject.split(".")[2]


def health(service: str) -> str:
    """The health subject a service answers (no scope needed)."""
    return f"cairn.v1.{service}.health"


def queue_group(service: str) -> str:
    """Replicas of one service share load through this queue group."""
    return f"cairn-{service}"


# Dead letters: a message a consumer gave up on (max_deliver reached, or unparseable) is republished
# here with its delivery record, so one poison message cannot loop forever and is still inspectable.
DEAD_LETTER_STREAM: Final = "CAIRN_DEAD_LETTERS"
DEAD_LETTER_SUBJECTS: Final = "cairn.v1.dead_letter.>"
# JetStream's own notice that a consumer hit max_deliver without anyone terminating the message (the
# worker died or hung on every attempt); the dead-letter stream records it too.
MAX_DELIVERIES_ADVISORY: Final = f"$JS.EVENT.ADVISORY.CONSUMER.MAX_DELIVERIES.{EVENTS_STREAM}.*"


def dead_letter(consumer: str) -> str:
    """The dead-letter subject of one durable consumer."""
    return f"cairn.v1.dead_letter.{consumer}"
