#!/usr/bin/env python3
"""Reference implementation of the X-Kosha-Chaos header, following
docs/contracts/chaos-header.md and sharing no code with the Go package
(internal/chaos). Standard library only.

    python3 chaos_ref.py check ../vectors.json
        Runs every test vector in both directions: signs each valid vector's
        fields and compares the bytes, verifies it, and checks every invalid
        vector is rejected by the stated check (and, for syntax, field).
        Exits 1 on any mismatch.

    python3 chaos_ref.py verify --key-b64 KEY [--now UNIX] VALUE
        Verifies one value and prints each check.
"""

import base64
import hashlib
import hmac
import json
import re
import sys
import time

FIELD_ORDER = ["v", "kid", "target", "fault", "ms", "p", "exp", "jti", "sig"]
FAULTS = ["latency", "error", "timeout", "reset"]
DEFAULT_TARGETS = ["core-api", "screening-sim", "openai", "postgres"]
MAX_AHEAD = 900
DEFAULT_SKEW = 30
MAX_VALUE_LEN = 512
B64URL = re.compile(r"^[A-Za-z0-9_-]*$")
TARGET = re.compile(r"^[a-z0-9](?:[a-z0-9-]{0,61}[a-z0-9])?$")
CANON_LAST = set("AEIMQUYcgkosw048")  # base64url chars whose low 2 bits are zero


class Reject(Exception):
    def __init__(self, check, field=""):
        super().__init__(f"{check}:{field}")
        self.check, self.field = check, field


def decode_key(b64):
    s = "".join(b64.split())
    s += "=" * (-len(s) % 4)
    raw = base64.b64decode(s, validate=True)
    if len(raw) < 32 or len(raw) > 1024 or len(set(raw)) == 1:
        raise ValueError("not a usable chaos key")
    return raw


def kid_of(raw):
    return base64.urlsafe_b64encode(hashlib.sha256(b"kosha-chaos-kid:" + raw).digest()[:8]).rstrip(b"=").decode()


def b64url(b):
    return base64.urlsafe_b64encode(b).rstrip(b"=").decode()


def signing_input(kid, f):
    parts = [f"v=1", f"kid={kid}", f"target={f['target']}", f"fault={f['fault']}"]
    if f["fault"] == "latency":
        parts.append(f"ms={f['ms']}")
    parts += [f"p={f['p']}", f"exp={f['exp']}", f"jti={f['jti']}"]
    return ";".join(parts)


def sign(raw, f):
    si = signing_input(kid_of(raw), f)
    sig = hmac.new(raw, si.encode(), hashlib.sha256).digest()
    return si + ";sig=" + b64url(sig), si, b64url(sig)


def canon_uint(s, max_digits):
    return re.fullmatch(r"[1-9][0-9]*|0", s) is not None and len(s) <= max_digits


def fixed_b64(s, nbytes):
    n = (nbytes * 8 + 5) // 6
    return len(s) == n and B64URL.match(s) and s[-1] in CANON_LAST


def parse(value):
    """Returns (fields dict, signing input) or raises Reject('syntax', field)."""
    if value == "" or len(value) > MAX_VALUE_LEN:
        raise Reject("syntax", "")
    segs = value.split(";")
    got = {}
    i = 0
    seen = []
    for want in FIELD_ORDER:
        if want == "ms":
            nxt = segs[i].split("=", 1)[0] if i < len(segs) else None
            if got["fault"] != "latency":
                if nxt == "ms":
                    raise Reject("syntax", "ms")
                continue
        if i >= len(segs):
            raise Reject("syntax", want)
        name, eq, val = segs[i].partition("=")
        if name != want:
            if name in seen:
                raise Reject("syntax", name)
            raise Reject("syntax", want)
        if not eq or val == "" or any(c <= " " or c >= "\x7f" for c in val):
            raise Reject("syntax", want)
        got[want] = val
        seen.append(want)
        i += 1
        ok = {
            "v": lambda v: v == "1",
            "kid": lambda v: fixed_b64(v, 8),
            "target": lambda v: TARGET.match(v) is not None,
            "fault": lambda v: v in FAULTS,
            "ms": lambda v: canon_uint(v, 5) and 1 <= int(v) <= 60000,
            "p": lambda v: v == "1" or re.fullmatch(r"0\.[0-9]{0,3}[1-9]", v) is not None,
            "exp": lambda v: canon_uint(v, 11) and int(v) > 0,
            "jti": lambda v: 16 <= len(v) <= 64 and B64URL.match(v) is not None,
            "sig": lambda v: fixed_b64(v, 32),
        }[want](val)
        if not ok:
            raise Reject("syntax", want)
    if i != len(segs):
        name = segs[i].split("=", 1)[0]
        raise Reject("syntax", name if name in seen else "sig")
    si = value[: value.rindex(";sig=")]
    return got, si


def verify(value, keyring, now, targets=DEFAULT_TARGETS, max_ahead=MAX_AHEAD, skew=DEFAULT_SKEW):
    """keyring: dict kid -> raw key. now: float unix seconds. Returns fields or raises Reject."""
    f, si = parse(value)
    if f["target"] not in targets:
        raise Reject("target", "target")
    raw = keyring.get(f["kid"])
    if raw is None:
        raise Reject("kid", "kid")
    want = hmac.new(raw, si.encode(), hashlib.sha256).digest()
    got = base64.urlsafe_b64decode(f["sig"] + "=")
    if not hmac.compare_digest(want, got):
        raise Reject("signature", "sig")
    exp = int(f["exp"])
    if not now < exp:
        raise Reject("expiry", "exp")
    if exp - now > max_ahead + skew:
        raise Reject("cap", "exp")
    return f


def check_vectors(path):
    doc = json.load(open(path))
    keys = {name: decode_key(k["key_b64"]) for name, k in doc["keys"].items()}
    failures = 0
    for name, k in doc["keys"].items():
        if kid_of(keys[name]) != k["kid"]:
            print(f"FAIL key {name}: kid {kid_of(keys[name])} != {k['kid']}")
            failures += 1
    targets = doc.get("targets", DEFAULT_TARGETS)
    skew = doc.get("skew_seconds", DEFAULT_SKEW)
    max_ahead = doc.get("max_ahead_seconds", MAX_AHEAD)

    def ring(v):
        return {kid_of(keys[n]): keys[n] for n in v.get("keyring", list(keys))}

    for v in doc["valid"]:
        value, si, sig = sign(keys[v["key"]], v["fields"])
        for what, got, want in (("value", value, v["value"]), ("signing_input", si, v["signing_input"]), ("sig", sig, v["sig"])):
            if got != want:
                print(f"FAIL valid {v['name']}: {what}\n  got  {got}\n  want {want}")
                failures += 1
        try:
            verify(v["value"], ring(v), v["now"], targets, max_ahead, skew)
        except Reject as r:
            print(f"FAIL valid {v['name']}: rejected by {r.check} ({r.field})")
            failures += 1
    for v in doc["invalid"]:
        try:
            verify(v["value"], ring(v), v["now"], targets, max_ahead, skew)
            print(f"FAIL invalid {v['name']}: accepted")
            failures += 1
        except Reject as r:
            if r.check != v["check"] or (v["check"] == "syntax" and r.field != v["field"]):
                print(f"FAIL invalid {v['name']}: rejected by {r.check} ({r.field}), want {v['check']} ({v['field']})")
                failures += 1
    for e in doc.get("key_encodings", []):
        try:
            got = kid_of(decode_key(e["input"]))
        except ValueError:
            got = None
        if got != e.get("kid"):
            print(f"FAIL key encoding {e['name']}: kid {got}, want {e.get('kid')}")
            failures += 1
    print(f"{len(doc['valid'])} valid, {len(doc['invalid'])} invalid, {len(doc.get('key_encodings', []))} key-encoding vectors, {failures} failures")
    return failures == 0


def main(argv):
    if len(argv) >= 2 and argv[0] == "check":
        return 0 if check_vectors(argv[1]) else 1
    if len(argv) >= 3 and argv[0] == "verify":
        key, now, value = None, time.time(), None
        it = iter(argv[1:])
        for a in it:
            if a == "--key-b64":
                key = decode_key(next(it))
            elif a == "--now":
                now = float(next(it))
            else:
                value = a
        try:
            f = verify(value, {kid_of(key): key}, now)
            print("ok", json.dumps(f))
            return 0
        except Reject as r:
            print(f"rejected by {r.check} check (field {r.field or '-'})")
            return 1
    print(__doc__)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
