"""The rl#<client> token bucket (docs/contracts/rate-limit-bucket.md).

    result = take(item, now_ms, limits, client)   # item: GetItem's "Item" (ConsistentRead), or None
    if result.write: put_item(Item=result.write.item,
                              ConditionExpression=result.write.condition.expression,
                              ExpressionAttributeValues=result.write.condition.values)
        ConditionalCheckFailed -> read again and take again, at most MAX_CAS_RETRIES times,
                                  then refuse with contention_retry_after_ms(limits)
        any other store error  -> allow (fail open) and count it
    result.allowed / result.retry_after_header

take() is the race-free take koshactl documents: elapsed time clamped at 0,
updated_at written as max(now, seen + 1), a missing item created under
attribute_not_exists(pk) alone, contention refused, not allowed, and the
item's write_id carried forward.
take_lld() is the seed's pseudocode as written, for comparison only.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from ._dynamo import Item, n, real, s, string, truncated

PREFIX = "rl#"
DEFAULT_CAPACITY = 20.0
DEFAULT_REFILL_PER_SECOND = 1.0
IDLE_TTL_SECONDS = 3600
MAX_CAS_RETRIES = 3
_MAX_WAIT_MS = 2**63 // 1_000_000  # time.Duration's range, in ms


@dataclass(frozen=True)
class Limits:
    """A bucket's capacity and refill rate. They are configuration, not stored:
    configure the data plane and koshactl alike."""

    capacity: float = DEFAULT_CAPACITY
    refill_per_second: float = DEFAULT_REFILL_PER_SECOND

    def __post_init__(self) -> None:
        if not (1 <= self.capacity <= 1e9):
            raise ValueError(f"capacity {self.capacity}: use a number from 1 to 1e9")
        if not (math.isfinite(self.refill_per_second) and self.refill_per_second > 0):
            raise ValueError(f"refill rate {self.refill_per_second} per second: use a positive number")


@dataclass(frozen=True)
class Bucket:
    """A well-formed stored bucket."""

    client: str
    tokens: float
    updated_at_ms: int
    write_id: str = ""
    """The token of the operator write the bucket descends from ("" when none)."""


class MalformedBucket(ValueError):
    """The stored item is not a well-formed bucket; the take fails open."""


def bucket_from_item(item: Item) -> Bucket:
    """Decodes a bucket item (tokens and updated_at required), or raises MalformedBucket."""
    pk = string(item, "pk") or ""
    if not pk.startswith(PREFIX) or pk == PREFIX:
        raise MalformedBucket(f"pk {pk!r}: want {PREFIX}<client>")
    tokens = real(item, "tokens")
    if tokens is None:
        raise MalformedBucket("tokens: want N")
    updated = truncated(item, "updated_at")
    if updated is None or updated <= 0:
        raise MalformedBucket("updated_at: want N, positive epoch milliseconds")
    return Bucket(client=pk[len(PREFIX):], tokens=tokens, updated_at_ms=updated, write_id=string(item, "write_id") or "")


def refill(limits: Limits, tokens: float, updated_at_ms: int, now_ms: int) -> float:
    """min(capacity, tokens + max(0, now - updated_at) / 1000 * rate)."""
    return min(limits.capacity, tokens + max(0, now_ms - updated_at_ms) / 1000 * limits.refill_per_second)


def time_until_ms(limits: Limits, level: float, target: float) -> int:
    """Milliseconds until a bucket at level holds target, rounded up (0 when it does)."""
    if level >= target:
        return 0
    ms = math.ceil((target - level) * 1000 / limits.refill_per_second - 1e-6)
    return min(ms, _MAX_WAIT_MS)


def retry_after_ms(limits: Limits, level: float) -> int:
    """Milliseconds until one whole token."""
    return time_until_ms(limits, level, 1)


def contention_retry_after_ms(limits: Limits) -> int:
    """The retry-after of a take refused for contention: one refill interval."""
    return time_until_ms(limits, 0, 1)


def ttl_seconds(limits: Limits, updated_at_ms: int, level: float) -> int:
    """ceil(updated_at / 1000) + max(3600, ceil(seconds until full))."""
    hold_ms = max(IDLE_TTL_SECONDS * 1000, time_until_ms(limits, level, limits.capacity))
    return -(-updated_at_ms // 1000) + -(-hold_ms // 1000)


@dataclass(frozen=True)
class Status:
    """What a reader (koshactl ratelimit get) sees at one instant."""

    tokens: float
    admit: bool
    retry_after_ms: int
    ahead_of_clock_ms: int


def status(item: Item | None, now_ms: int, limits: Limits) -> Status:
    """The contract's reading of a bucket at now_ms; raises MalformedBucket."""
    tokens, ahead = limits.capacity, 0
    if item is not None:
        b = bucket_from_item(item)
        tokens = refill(limits, b.tokens, b.updated_at_ms, now_ms)
        ahead = max(0, b.updated_at_ms - now_ms)
    wait = retry_after_ms(limits, tokens)
    if wait > 0:
        wait += ahead
    return Status(tokens=tokens, admit=tokens >= 1, retry_after_ms=wait, ahead_of_clock_ms=ahead)


@dataclass(frozen=True)
class Condition:
    """A DynamoDB ConditionExpression and its ExpressionAttributeValues."""

    expression: str
    values: dict[str, dict[str, str]] = field(default_factory=dict)


@dataclass(frozen=True)
class Write:
    """The one conditional PutItem a take sends."""

    item: dict[str, dict[str, str]]
    condition: Condition


@dataclass(frozen=True)
class TakeResult:
    """A take's decision and the write to send (None: write nothing)."""

    outcome: str
    """admitted, denied or fail_open_error."""
    allowed: bool
    fail_open: bool = False
    remaining: float | None = None
    """Tokens left (admitted) or the refilled level (denied); None on fail-open."""
    retry_after_ms: int | None = None
    write: Write | None = None

    @property
    def retry_after_header(self) -> int | None:
        """HTTP Retry-After in whole seconds, rounded up; None unless denied."""
        return None if self.retry_after_ms is None else -(-self.retry_after_ms // 1000)


def _fail_open() -> TakeResult:
    return TakeResult(outcome="fail_open_error", allowed=True, fail_open=True)


def _put(client: str, limits: Limits, refilled: float, stamp: int, cond: Condition, write_id: str = "") -> TakeResult:
    left = refilled - 1
    item = {"pk": s(PREFIX + client), "tokens": n(left), "updated_at": n(stamp), "ttl": n(ttl_seconds(limits, stamp, left))}
    if write_id:
        item["write_id"] = s(write_id)
    return TakeResult(outcome="admitted", allowed=True, remaining=left, write=Write(item=item, condition=cond))


_ABSENT = Condition("attribute_not_exists(pk)")


def _seen(updated_at_ms: int) -> Condition:
    return Condition("updated_at = :seen", {":seen": n(updated_at_ms)})


def take(item: Item | None, now_ms: int, limits: Limits, client: str) -> TakeResult:
    """One attempt of the race-free take on the bucket item as read at now_ms."""
    write_id = ""
    if item is None:
        refilled, stamp, cond, lead = limits.capacity, now_ms, _ABSENT, 0
    else:
        try:
            b = bucket_from_item(item)
        except MalformedBucket:
            return _fail_open()
        refilled = refill(limits, b.tokens, b.updated_at_ms, now_ms)
        stamp, cond, lead = max(now_ms, b.updated_at_ms + 1), _seen(b.updated_at_ms), max(0, b.updated_at_ms - now_ms)
        write_id = b.write_id  # carried forward: koshactl resolves a lost operator write by it
    if refilled < 1:
        return TakeResult(outcome="denied", allowed=False, remaining=refilled, retry_after_ms=retry_after_ms(limits, refilled) + lead)
    return _put(client, limits, refilled, stamp, cond, write_id)


def take_lld(item: Item | None, now_ms: int, limits: Limits, client: str) -> TakeResult:
    """One attempt of the seed's pseudocode as written (no clamp, updated_at = now).
    For comparison only: it has the four flaws the contract lists."""
    if item is None:
        tokens, updated, cond = limits.capacity, now_ms, _ABSENT
    else:
        try:
            b = bucket_from_item(item)
        except MalformedBucket:
            return _fail_open()
        tokens, updated, cond = b.tokens, b.updated_at_ms, _seen(b.updated_at_ms)
    refilled = min(limits.capacity, tokens + (now_ms - updated) / 1000 * limits.refill_per_second)
    if refilled < 1:
        return TakeResult(outcome="denied", allowed=False, remaining=refilled, retry_after_ms=retry_after_ms(limits, refilled))
    return _put(client, limits, refilled, now_ms, cond)
