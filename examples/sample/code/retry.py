"""Retry helpers with exponential backoff."""

import random
import time

DEFAULT_STATUSES = (502, 503, 504)


class RetryError(Exception):
    """Raised when every attempt failed."""


class Retrier:
    """Calls a function again when it fails with a transient error."""

    def __init__(self, max_attempts: int = 3, backoff_factor: float = 0.5):
        self.max_attempts = max_attempts
        self.backoff_factor = backoff_factor

    def delay(self, attempt: int) -> float:
        """Exponential backoff with full jitter."""
        return random.uniform(0, self.backoff_factor * 2**attempt)

    def call(self, fn, *args, **kwargs):
        """Call fn until it succeeds or the attempts run out."""
        for attempt in range(self.max_attempts):
            try:
                return fn(*args, **kwargs)
            except TimeoutError:
                time.sleep(self.delay(attempt))
        raise RetryError(f"gave up after {self.max_attempts} attempts")


def is_transient(status: int) -> bool:
    """True for HTTP statuses worth retrying."""
    return status in DEFAULT_STATUSES
