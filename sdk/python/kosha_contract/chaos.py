"""The X-Kosha-Chaos header (docs/contracts/chaos-header.md).

    keyring = {kid_of(k): k for k in (current_key, previous_key)}
    try:
        fields = verify(header_value, keyring, now=time.time())
    except Reject as r:
        ...  # r.check: syntax, target, kid, signature, expiry or cap; r.field
    # the caller also checks the operator role

Checks run in the contract's order: syntax, target, kid, signature, expiry,
cap, then freeze. On an unknown kid a data-plane verifier refreshes its keys
once (rate-limited, at most one per 10 s) before rejecting; that I/O is the
caller's: catch Reject with check "kid", refresh, verify again. The freeze
check needs the fleet's freeze item: pass freeze=kosha_contract.freeze's
reading of it (its admit_chaos), or run it yourself on the returned fields
(fields.issued).

Two versions: v=2 headers carry iat (issued at, unix seconds) between p and
exp; v=1 headers have none and count as issued at exp - 900.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

HEADER = "X-Kosha-Chaos"
FIELD_ORDER = ("v", "kid", "target", "fault", "ms", "p", "iat", "exp", "jti", "sig")
"""Every field in wire order; iat only in v=2, ms only with fault=latency."""
FAULTS = ("latency", "error", "timeout", "reset")
DEFAULT_TARGETS = ("core-api", "screening-sim", "openai", "postgres")
MAX_AHEAD_SECONDS = 900
DEFAULT_SKEW_SECONDS = 30
MAX_VALUE_LEN = 512
MIN_MS, MAX_MS = 1, 60000
MIN_JTI, MAX_JTI = 16, 64
MAX_EXP = 99999999999
_B64URL = re.compile(r"[A-Za-z0-9_-]*")
_TARGET = re.compile(r"[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?")
_CANON_LAST = frozenset("AEIMQUYcgkosw048")  # base64url characters whose low 2 bits are zero
_UINT = re.compile(r"[1-9][0-9]*|0")
_P = re.compile(r"0\.[0-9]{0,3}[1-9]")


class Reject(Exception):
    """A header that fails a check: check is syntax, target, kid, signature,
    expiry, cap or freeze; field names the field at fault ("" for the whole value).
    reason says why, when the check has more to say (the freeze it met)."""

    def __init__(self, check: str, field: str = "", reason: str = "") -> None:
        super().__init__(reason or f"{check} check failed ({field or 'value'})")
        self.check, self.field, self.reason = check, field, reason


class InvalidKey(ValueError):
    """Key material that is not a usable chaos key."""


def new_key(raw: bytes) -> bytes:
    """Checks raw key bytes: 32 to 1024 bytes, not one byte repeated."""
    if len(raw) < 32 or len(raw) > 1024 or len(set(raw)) == 1:
        raise InvalidKey("a chaos key is 32 to 1024 random bytes")
    return bytes(raw)


def decode_key(text: str) -> bytes:
    """Decodes a key as stored (standard base64, padding optional, whitespace ignored)."""
    s = "".join(text.split())
    s += "=" * (-len(s) % 4)
    try:
        raw = base64.b64decode(s, validate=True)
    except (binascii.Error, ValueError) as e:
        raise InvalidKey("not standard base64") from e
    return new_key(raw)


def _b64url(b: bytes) -> str:
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def kid_of(raw: bytes) -> str:
    """The key's id: base64url of the first 8 bytes of SHA-256("kosha-chaos-kid:" || key)."""
    return _b64url(hashlib.sha256(b"kosha-chaos-kid:" + raw).digest()[:8])


@dataclass(frozen=True)
class Fields:
    """What a header says. ms is 0 unless fault is latency; p is its wire text;
    iat is 0 for a v=1 header (signed without it), else the issue time."""

    target: str
    fault: str
    p: str
    exp: int
    jti: str
    ms: int = 0
    iat: int = 0

    @property
    def version(self) -> int:
        return 2 if self.iat else 1

    @property
    def issued(self) -> int:
        """The earliest the header can have been minted: iat, or exp - 900 for v=1."""
        return self.iat if self.iat else self.exp - MAX_AHEAD_SECONDS


def p_text(units: int) -> str:
    """p in units of 0.0001 as the wire writes it: "1", or "0." and 1-4 digits."""
    if units >= 10000:
        return "1"
    return "0." + f"{units:04d}".rstrip("0")


def signing_input(kid: str, f: Fields) -> str:
    parts = [f"v={f.version}", f"kid={kid}", f"target={f.target}", f"fault={f.fault}"]
    if f.fault == "latency":
        parts.append(f"ms={f.ms}")
    parts.append(f"p={f.p}")
    if f.iat:
        parts.append(f"iat={f.iat}")
    parts += [f"exp={f.exp}", f"jti={f.jti}"]
    return ";".join(parts)


def _lifetime_ok(iat: int, exp: int) -> bool:
    """A v=2 header expires after it was issued, by at most 900 s."""
    return iat < exp <= iat + MAX_AHEAD_SECONDS


def validate_fields(f: Fields) -> None:
    """Raises ValueError naming the field when f cannot be signed."""
    if not _TARGET.fullmatch(f.target):
        raise ValueError("target")
    if f.fault not in FAULTS:
        raise ValueError("fault")
    if f.fault == "latency":
        if not MIN_MS <= f.ms <= MAX_MS:
            raise ValueError("ms")
    elif f.ms != 0:
        raise ValueError("ms")
    if f.p != "1" and not _P.fullmatch(f.p):
        raise ValueError("p")
    if not 0 <= f.iat <= MAX_EXP:
        raise ValueError("iat")
    if not 0 < f.exp <= MAX_EXP or (f.iat and not _lifetime_ok(f.iat, f.exp)):
        raise ValueError("exp")
    if not (MIN_JTI <= len(f.jti) <= MAX_JTI and _B64URL.fullmatch(f.jti)):
        raise ValueError("jti")


def sign(raw: bytes, f: Fields) -> str:
    """The header value for f signed with raw (after validate_fields)."""
    validate_fields(f)
    si = signing_input(kid_of(raw), f)
    return si + ";sig=" + _b64url(hmac.new(raw, si.encode(), hashlib.sha256).digest())


def _canon_uint(s: str, max_digits: int) -> bool:
    return _UINT.fullmatch(s) is not None and len(s) <= max_digits


def _fixed_b64(s: str, nbytes: int) -> bool:
    return len(s) == (nbytes * 8 + 5) // 6 and _B64URL.fullmatch(s) is not None and s[-1] in _CANON_LAST


_CHECKS: dict[str, Callable[[str], bool]] = {
    "v": lambda v: v in ("1", "2"),
    "kid": lambda v: _fixed_b64(v, 8),
    "target": lambda v: _TARGET.fullmatch(v) is not None,
    "fault": lambda v: v in FAULTS,
    "ms": lambda v: _canon_uint(v, 5) and MIN_MS <= int(v) <= MAX_MS,
    "p": lambda v: v == "1" or _P.fullmatch(v) is not None,
    "iat": lambda v: _canon_uint(v, 11) and int(v) > 0,
    "exp": lambda v: _canon_uint(v, 11) and int(v) > 0,
    "jti": lambda v: MIN_JTI <= len(v) <= MAX_JTI and _B64URL.fullmatch(v) is not None,
    "sig": lambda v: _fixed_b64(v, 32),
}


def parse(value: str) -> tuple[dict[str, str], str]:
    """Parses a value strictly: its fields and its signing input, or Reject("syntax", field)."""
    if value == "" or len(value.encode("utf-8", "surrogatepass")) > MAX_VALUE_LEN:
        raise Reject("syntax", "")
    segs = value.split(";")
    got: dict[str, str] = {}
    seen: list[str] = []
    i = 0
    for want in FIELD_ORDER:
        if want == "ms" and got["fault"] != "latency":
            if i < len(segs) and segs[i].split("=", 1)[0] == "ms":
                raise Reject("syntax", "ms")
            continue
        if want == "iat" and got["v"] == "1":
            continue
        if i >= len(segs):
            raise Reject("syntax", want)
        name, eq, val = segs[i].partition("=")
        if name != want:
            raise Reject("syntax", name if name in seen else want)
        if not eq or val == "" or any(c <= " " or c >= "\x7f" for c in val) or not _CHECKS[want](val):
            raise Reject("syntax", want)
        if want == "exp" and "iat" in got and not _lifetime_ok(int(got["iat"]), int(val)):
            raise Reject("syntax", "exp")
        got[want] = val
        seen.append(want)
        i += 1
    if i != len(segs):
        name = segs[i].split("=", 1)[0]
        raise Reject("syntax", name if name in seen else "sig")
    return got, value[: value.rindex(";sig=")]


def verify(
    value: str,
    keyring: Mapping[str, bytes],
    now: float,
    targets: Iterable[str] = DEFAULT_TARGETS,
    max_ahead: int = MAX_AHEAD_SECONDS,
    skew: int = DEFAULT_SKEW_SECONDS,
    freeze: Callable[[Fields], "tuple[str, str] | None"] | None = None,
) -> Fields:
    """Verifies a header value at now (unix seconds) against keyring (kid -> raw key).
    Returns its fields or raises Reject with the first check that fails. freeze,
    when given, is the freeze check: fields -> None to admit, or (field, reason)
    to refuse (kosha_contract.freeze.Reading.check is one)."""
    f, si = parse(value)
    if f["target"] not in tuple(targets):
        raise Reject("target", "target")
    raw = keyring.get(f["kid"])
    if raw is None:
        raise Reject("kid", "kid")
    want = hmac.new(raw, si.encode(), hashlib.sha256).digest()
    if not hmac.compare_digest(want, base64.urlsafe_b64decode(f["sig"] + "=")):
        raise Reject("signature", "sig")
    exp = int(f["exp"])
    if not now < exp:
        raise Reject("expiry", "exp")
    if exp - now > max_ahead + skew:
        raise Reject("cap", "exp")
    fields = Fields(target=f["target"], fault=f["fault"], p=f["p"], exp=exp, jti=f["jti"], ms=int(f.get("ms", "0")),
                    iat=int(f.get("iat", "0")))
    if freeze is not None:
        refused = freeze(fields)
        if refused is not None:
            raise Reject("freeze", refused[0], refused[1])
    return fields
