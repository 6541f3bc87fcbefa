"""The breaker#<dependency> override item (docs/contracts/breaker-override.md).

    reading = read_override(item, now_ms)   # item: GetItem's "Item", or None
    if reading.active: fail calls to reading.dependency fast
    if reading.malformed: log event breaker_override_malformed

An override is active iff the item exists, state is "forced_open", and
expires_at is absent or greater than now (epoch ms). A malformed expires_at
counts as absent, so a forced item stays forced until cleared; a state that
is missing, not a string or not "forced_open" is inactive; every other
malformed attribute does not change the answer. Attributes the contract does
not name are ignored, whatever their type. Cache the answer at most
CACHE_TTL_MS; on a store error keep the last known value.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._dynamo import Item, string, whole

PREFIX = "breaker#"
STATE_FORCED_OPEN = "forced_open"
CACHE_TTL_MS = 5000
MIN_EPOCH_MS = 0
MAX_EPOCH_MS = 253402300799999  # the end of year 9999
MAX_REASON_CHARS = 500
_DEPENDENCY = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")

CONTRACT_ATTRIBUTES = ("pk", "state", "reason", "actor", "created_at", "expires_at", "ttl", "version")
"""The attributes the contract names, in its table's order."""


@dataclass(frozen=True)
class OverrideReading:
    """How the data plane treats one override item at one instant."""

    active: bool
    """The breaker is forced open."""
    dependency: str = ""
    """The pk without breaker# ("" when there is no item)."""
    expires_at_ms: int | None = None
    """The expiry applied; None for none, which includes an unreadable one."""
    reason: str = ""
    malformed_attributes: tuple[str, ...] = field(default_factory=tuple)
    """The contract's attributes that do not follow it, in the contract's order."""

    @property
    def malformed(self) -> bool:
        return bool(self.malformed_attributes)

    @property
    def treatment(self) -> str:
        """active, inactive, active_malformed or inactive_malformed."""
        t = "active" if self.active else "inactive"
        return t + "_malformed" if self.malformed else t


def _epoch_ms(item: Item, name: str) -> int | None:
    v = whole(item, name)
    return v if v is not None and MIN_EPOCH_MS <= v <= MAX_EPOCH_MS else None


def read_override(item: Item | None, now_ms: int) -> OverrideReading:
    """Applies the contract's rule to an override item read at now_ms."""
    if item is None:
        return OverrideReading(active=False)
    bad: set[str] = set()
    pk = string(item, "pk") or ""
    dependency = pk[len(PREFIX):] if pk.startswith(PREFIX) else ""
    if not _DEPENDENCY.fullmatch(dependency):
        bad.add("pk")
    state = string(item, "state")
    if state != STATE_FORCED_OPEN:
        bad.add("state")
    reason = string(item, "reason")
    if reason is None or len(reason) > MAX_REASON_CHARS:
        bad.add("reason")
    if string(item, "actor") is None:
        bad.add("actor")
    if _epoch_ms(item, "created_at") is None:
        bad.add("created_at")
    expires_at: int | None = None
    if "expires_at" in item:
        expires_at = _epoch_ms(item, "expires_at")
        if expires_at is None:
            bad.add("expires_at")
    version = whole(item, "version")
    if version is None or version < 1:
        bad.add("version")
    if "ttl" in item and whole(item, "ttl") is None:
        bad.add("ttl")
    active = state == STATE_FORCED_OPEN and (expires_at is None or now_ms < expires_at)
    return OverrideReading(
        active=active,
        dependency=dependency,
        expires_at_ms=expires_at,
        reason=reason or "",
        malformed_attributes=tuple(a for a in CONTRACT_ATTRIBUTES if a in bad),
    )
