"""The learned durable-fact decision: logistic regression over local MiniLM sentence embeddings plus
cheap features, trained offline from the eval's dev labels (`eval/train_durable.py`) and shipped as a
small JSON artifact next to this module (`durable_model.json`).

Loading needs numpy and the local embedder only (no scikit-learn, no network). The hard safety rules
are not part of it: they run before and after it in `offline`, whatever it says.
"""

import json
import math
import re
import threading
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from cairn_promotion.rules import (
    cue_tags,
    is_question,
    is_small_talk,
    names_something_concrete,
    penalty_hits,
    rule_score,
    starts_with_unresolved_pronoun,
)
from cairn_promotion.text import Clause

ARTIFACT = Path(__file__).with_name("durable_model.json")
EMBEDDER_NAME = "local:all-MiniLM-L6-v2:int8"
CUE_TAGS = ("preference", "profile", "fact", "decision", "habit", "plan")
# The gate the workflow applies; the artifact shifts its bias so that this gate is its chosen threshold.
GATE = 0.6

Embed = Callable[[Sequence[str]], npt.NDArray[np.float32]]

_FIRST_PERSON = re.compile(r"^(?:i|i'm|i've|i'd|we|we're|we've|my|our|me)\b", re.IGNORECASE)
_CAPITALISED_INSIDE = re.compile(r"(?<!^)(?<![.!?]\s)\b[A-Z][\w'-]+")
_SECOND_PERSON = re.compile(r"\b(?:you|your)\b", re.IGNORECASE)
# A standing instruction names its scope ("in any instructions", "from now on"); a one-off request does not.
_STANDING_SCOPE = re.compile(
    r"\b(?:any|every|all|always|never|whenever|from now on|going forward|in future|by default|each time|"
    r"anything|everything)\b",
    re.IGNORECASE,
)
# Present simple after a subject: the tense of habits and standing facts ("he pays electricity", "DNS is on
# Cloudflare"), not of events ("we broke up") or passing states ("I'm working from the café").
_PRESENT_SIMPLE = re.compile(
    r"^(?:[\w'-]+\s+){1,3}?(?:is|are|am|has|have|(?!(?:was|has|is|does|this|his|its|us|yes|plus)\b)[a-z]+[^s\W]s)\b"
    r"(?!\s+\w+ing\b)"
    r"|^(?:i|we|they)\s+(?:(?:usually|always|never|often|mostly|normally|typically|also|still)\s+)?"
    r"(?!(?:was|were|did|had|got|went|just|can|could|will|would|might|should|may|must)\b)[a-z]+(?<!ed)\b"
    r"(?!\s+\w+ing\b)",
    re.IGNORECASE,
)


def cheap_feature_names() -> list[str]:
    """The names of `cheap_features`' columns, in order (stored in the artifact and checked at load)."""
    return [
        "role_user",
        "role_assistant",
        "role_fact",
        "requested",
        "confirmed",
        "rule_score",
        "rule_fired",
        *(f"cue_{t}" for t in CUE_TAGS),
        *(f"penalty_{i}" for i in range(len(penalty_hits("")))),
        "question",
        "unresolved_pronoun",
        "small_talk",
        "digit",
        "capitalised_inside",
        "concrete",
        "log_words",
        "short",
        "first_person",
        "second_person",
        "first_clause",
        "standing_scope",
        "present_simple",
    ]


def cheap_features(clause: Clause) -> list[float]:
    """Hand-made features of one clause: who said it, what the rules think, its shape."""
    text = clause.text
    scored = rule_score(clause)
    tags = set(cue_tags(text, clause.role))
    words = len(text.split())
    return [
        float(clause.role == "user"),
        float(clause.role == "assistant"),
        float(clause.role == "fact"),
        float(clause.requested),
        float(clause.confirmed),
        scored[0] if scored else 0.0,
        float(scored is not None),
        *(float(t in tags) for t in CUE_TAGS),
        *penalty_hits(clause.raw),
        float(is_question(text)),
        float(starts_with_unresolved_pronoun(text)),
        float(is_small_talk(text)),
        float(any(ch.isdigit() for ch in text)),
        float(bool(_CAPITALISED_INSIDE.search(text))),
        float(names_something_concrete(text)),
        math.log1p(words),
        float(words < 4),
        float(bool(_FIRST_PERSON.match(text))),
        float(bool(_SECOND_PERSON.search(text))),
        float(clause.position == 0),
        float(bool(_STANDING_SCOPE.search(text))),
        float(bool(_PRESENT_SIMPLE.match(text))),
    ]


class DurableModel:
    """The artifact's numbers: standardisation of the cheap features, weights, bias."""

    def __init__(self, data: dict[str, Any]) -> None:
        if data.get("embedder") != EMBEDDER_NAME or data.get("cheap_features") != cheap_feature_names():
            raise ValueError("the durable-fact model was trained for other features; retrain it")
        self.mean = np.asarray(data["mean"], dtype=np.float64)
        self.std = np.asarray(data["std"], dtype=np.float64)
        self.w_embed = np.asarray(data["w_embed"], dtype=np.float64)
        self.w_cheap = np.asarray(data["w_cheap"], dtype=np.float64)
        self.bias = float(data["bias"])
        self.threshold = float(data["threshold"])
        # Shift the logit so that the model's chosen threshold lands on the workflow's gate.
        self.shift = _logit(GATE) - _logit(self.threshold)
        self.meta = {k: v for k, v in data.items() if k not in ("w_embed", "w_cheap", "mean", "std")}

    @classmethod
    def load(cls, path: Path = ARTIFACT) -> "DurableModel":
        return cls(json.loads(path.read_text(encoding="utf-8")))

    def probabilities(
        self, embeddings: npt.NDArray[np.floating[Any]], cheap: npt.NDArray[np.floating[Any]]
    ) -> npt.NDArray[np.float64]:
        """Per row, the gate-aligned confidence that the clause is durable."""
        z = embeddings @ self.w_embed + ((cheap - self.mean) / self.std) @ self.w_cheap + self.bias
        result: npt.NDArray[np.float64] = 1.0 / (1.0 + np.exp(-(z + self.shift)))
        return result


class LearnedDecision:
    """The durable-fact decision of `DurableModel`, embedding clauses with the local MiniLM.

    Args:
        model: The trained model.
        embed: A synchronous embedding function of the model's embedder (unit-length rows).
    """

    name = "learned"

    def __init__(self, model: DurableModel, embed: Embed) -> None:
        self.model = model
        self._embed = embed
        self._lock = threading.Lock()  # one inference at a time: the cores are shared

    def decide(self, clauses: Sequence[Clause]) -> list[tuple[float, list[str]] | None]:
        if not clauses:
            return []
        with self._lock:
            vectors = np.asarray(self._embed([c.text for c in clauses]), dtype=np.float64)
        cheap = np.asarray([cheap_features(c) for c in clauses], dtype=np.float64)
        probabilities = self.model.probabilities(vectors, cheap)
        return [
            (float(p), cue_tags(c.text, c.role) or ["fact"])
            for c, p in zip(clauses, probabilities, strict=True)
        ]


def load_default_decision(threads: int = 1, artifact: Path = ARTIFACT) -> LearnedDecision | None:
    """The shipped model (or `artifact`) with the bundled local embedder, or None when either cannot be
    loaded.

    Blocking (the embedder may build its ONNX file, about 10 s the first time): from async code call
    it through `asyncio.to_thread`.
    """
    try:
        model = DurableModel.load(artifact)
        from cairn_embeddings import EmbeddingSettings, LocalOnnxEmbedder

        settings = EmbeddingSettings()
        embedder = LocalOnnxEmbedder.load(cache_dir=settings.model_cache_dir, threads=threads)
    except (OSError, ValueError, KeyError, ImportError):
        return None
    return LearnedDecision(model, embedder.embed_array)


def _logit(p: float) -> float:
    return math.log(p / (1.0 - p))
