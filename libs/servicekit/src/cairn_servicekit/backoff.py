"""Exponential backoff for loops that must outlive an outage of what they depend on."""

from dataclasses import dataclass, field


@dataclass
class Backoff:
    """Delays that double from `initial` up to `cap`; `reset()` after a success.

    Example:
        >>> b = Backoff(initial=0.5, cap=2.0)
        >>> [b.next(), b.next(), b.next(), b.next()]
        [0.5, 1.0, 2.0, 2.0]
    """

    initial: float = 0.5
    cap: float = 30.0
    _failures: int = field(default=0, init=False)

    def next(self) -> float:
        """The delay before the next try; each call counts one more failure in a row."""
        delay = min(self.cap, self.initial * 2**self._failures)
        self._failures += 1
        return float(delay)

    def reset(self) -> None:
        self._failures = 0

    @property
    def failures(self) -> int:
        return self._failures
