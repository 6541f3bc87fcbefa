"""The fleet's freeze item, freeze#fleet (docs/contracts/freeze.md).

    reading = Reading(item, read_at_ms)        # item: GetItem's "Item" or None; read with the overrides
    fields = chaos.verify(value, keyring, now, freeze=lambda f: reading.check(f, now_ms))
    gauge chaos_frozen = 1 if reading.refuses_all(now_ms) else 0

A freeze holds from the moment the item is read until its end, the first of
expires_at and lifted_at (epoch ms); without either it holds until lifted.
A malformed expires_at or lifted_at counts as absent (it holds, safety first).
While it holds every chaos header is refused. Once it has ended, a header
issued before the end rounded up to the second (its iat, or exp - 900 for a
v=1 header) is refused for good; one issued at or after it is honoured. A
data plane that has not read the item in the last MAX_READ_AGE_MS (or ever)
refuses every header. Attributes the contract does not name are ignored,
whatever their type.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from ._dynamo import Item, string, whole
from .chaos import Fields

KEY = "freeze#fleet"
PREFIX = "freeze#"
CACHE_TTL_MS = 5000
MAX_READ_AGE_MS = 3 * CACHE_TTL_MS
RECORD_RETENTION_MS = 24 * 3600 * 1000
MIN_EPOCH_MS = 0
MAX_EPOCH_MS = 253402300799999  # the end of year 9999
MAX_REASON_CHARS = 500
MAX_REF_CHARS = 64
_REF = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:/#-]{0,63}")

CONTRACT_ATTRIBUTES = ("pk", "actor", "reason", "ref", "set_at", "expires_at", "lifted_at", "lifted_by",
                       "lift_reason", "ttl", "version")
"""The attributes the contract names, in its table's order."""


@dataclass(frozen=True)
class Freeze:
    """One freeze item, decoded as far as it goes."""

    actor: str = ""
    reason: str = ""
    ref: str = ""
    set_at_ms: int | None = None
    expires_at_ms: int | None = None
    lifted_at_ms: int | None = None
    lifted_by: str = ""
    malformed_attributes: tuple[str, ...] = field(default_factory=tuple)

    @property
    def end_ms(self) -> int | None:
        """The first of expires_at and lifted_at; None when it has neither readable."""
        ends = [t for t in (self.expires_at_ms, self.lifted_at_ms) if t is not None]
        return min(ends) if ends else None

    def frozen(self, now_ms: int) -> bool:
        end = self.end_ms
        return end is None or now_ms < end

    @property
    def chaos_not_before(self) -> int | None:
        """The earliest iat (unix seconds) honoured once the freeze has ended."""
        end = self.end_ms
        return None if end is None else -(-end // 1000)

    def state(self, now_ms: int) -> str:
        if self.frozen(now_ms):
            return "frozen"
        if self.lifted_at_ms is not None and self.end_ms == self.lifted_at_ms:
            return "lifted"
        return "expired"

    def check(self, fields: Fields, now_ms: int) -> tuple[str, str] | None:
        """The freeze check: None to honour the header, else (field, reason)."""
        who = f"{self.actor} ({self.ref})" if self.ref else self.actor
        if self.frozen(now_ms):
            return "", f"the fleet is frozen by {who}: every chaos header is ignored while it holds"
        nb = self.chaos_not_before
        if nb is not None and fields.issued < nb:
            return ("iat" if fields.iat else "exp"), f"issued before the end of the freeze set by {who}: never honoured"
        return None


def _epoch_ms(item: Item, name: str) -> int | None:
    v = whole(item, name)
    return v if v is not None and MIN_EPOCH_MS <= v <= MAX_EPOCH_MS else None


def read_freeze(item: Item | None) -> Freeze | None:
    """Decodes a freeze item (None: no item)."""
    if item is None:
        return None
    bad: set[str] = set()
    if string(item, "pk") != KEY:
        bad.add("pk")

    def text(name: str, required: bool) -> str:
        if name not in item and not required:
            return ""
        s = string(item, name)
        if s is None:
            bad.add(name)
        return s or ""

    actor = text("actor", True)
    reason = text("reason", True)
    if len(reason) > MAX_REASON_CHARS:
        bad.add("reason")
    ref = text("ref", False)
    if len(ref) > MAX_REF_CHARS:
        bad.add("ref")
    times: dict[str, int | None] = {}
    for name, required in (("set_at", True), ("expires_at", False), ("lifted_at", False)):
        times[name] = None
        if name in item or required:
            times[name] = _epoch_ms(item, name)
            if times[name] is None:
                bad.add(name)
    lifted_by = text("lifted_by", "lifted_at" in item)
    text("lift_reason", False)
    if "ttl" in item and whole(item, "ttl") is None:
        bad.add("ttl")
    version = whole(item, "version")
    if version is None or version < 1:
        bad.add("version")
    return Freeze(actor=actor, reason=reason, ref=ref, set_at_ms=times["set_at"], expires_at_ms=times["expires_at"],
                  lifted_at_ms=times["lifted_at"], lifted_by=lifted_by,
                  malformed_attributes=tuple(a for a in CONTRACT_ATTRIBUTES if a in bad))


@dataclass(frozen=True)
class Reading:
    """What a data-plane instance knows of the freeze: the item it last read
    (None: there was none) and when (read_at_ms None: never read)."""

    item: Item | None
    read_at_ms: int | None

    @property
    def freeze(self) -> Freeze | None:
        return read_freeze(self.item)

    def known(self, now_ms: int) -> bool:
        return self.read_at_ms is not None and now_ms - self.read_at_ms <= MAX_READ_AGE_MS

    def refuses_all(self, now_ms: int) -> bool:
        """The chaos_frozen gauge: True (1) while every header is refused."""
        if not self.known(now_ms):
            return True
        f = self.freeze
        return f is not None and f.frozen(now_ms)

    def check(self, fields: Fields, now_ms: int) -> tuple[str, str] | None:
        """The freeze check as the instance runs it."""
        if not self.known(now_ms):
            return "", "the fleet's freeze item has not been read recently: every chaos header is ignored"
        f = self.freeze
        return None if f is None else f.check(fields, now_ms)


def mint_wait_ms(item: Item | None, now_ms: int) -> int | None:
    """A minter's rule: None while frozen (mint nothing), else how long to wait
    so the header's iat (now, floored to the second) is not before the end."""
    f = read_freeze(item)
    if f is None:
        return 0
    if f.frozen(now_ms):
        return None
    nb = f.chaos_not_before
    if nb is not None and now_ms // 1000 < nb:
        return nb * 1000 - now_ms
    return 0


def valid_ref(ref: str) -> bool:
    """A ref names the incident: 1-64 of A-Z a-z 0-9 and - _ . : / #, starting with a letter or digit."""
    return _REF.fullmatch(ref) is not None and ref.isascii()
