#!/usr/bin/env python3
"""Generates ../vectors.json with the reference implementation in
chaos_ref.py (not with the Go code, so the Go tests are checked against an
independent implementation).

    python3 gen_vectors.py > ../vectors.json
"""

import base64
import hashlib
import json
import sys

import chaos_ref as ref

NOW = 1767225600  # 2026-01-01T00:00:00Z


def key_bytes(label, n=32):
    out = b""
    i = 0
    while len(out) < n:
        out += hashlib.sha256(f"kosha-chaos test vector {label} {i}".encode()).digest()
        i += 1
    return out[:n]


KEYS = {"k1": key_bytes("k1"), "k2": key_bytes("k2", 48), "k3": key_bytes("k3")}


def b64(raw):
    return base64.b64encode(raw).decode()


def fields(target="core-api", fault="latency", ms=250, p="0.5", exp=NOW + 300, jti="q8fZ0m3uXh7yLp2NaVbW4g"):
    f = {"target": target, "fault": fault, "p": p, "exp": exp, "jti": jti}
    if fault == "latency":
        f["ms"] = ms
    return f


def signed(key="k1", **kw):
    f = fields(**kw)
    value, si, sig = ref.sign(KEYS[key], f)
    return f, value, si, sig


valid = []


def add_valid(name, now=NOW, key="k1", keyring=None, **kw):
    f, value, si, sig = signed(key, **kw)
    v = {"name": name, "key": key, "fields": f, "now": now, "signing_input": si, "sig": sig, "value": value}
    if keyring:
        v["keyring"] = keyring
    valid.append(v)


add_valid("latency 250ms on core-api, p=0.5, ttl 5m")
add_valid("error on screening-sim, p=1, exp exactly at the 15m cap", fault="error", target="screening-sim", p="1", exp=NOW + 900)
add_valid("timeout on openai, smallest p", fault="timeout", target="openai", p="0.0001", exp=NOW + 60)
add_valid("reset on postgres signed by the previous (48-byte) key after rotation", key="k2", fault="reset", target="postgres", p="0.25")
add_valid("largest ms, p=0.9999, 64-character jti", ms=60000, p="0.9999", jti="A" * 32 + "z_-9" * 8)
add_valid("smallest ms, 16-character jti", ms=1, p="0.123", jti="abcdefghijklmnop")
add_valid("exp at the cap plus the full 30s skew allowance", fault="error", exp=NOW + 930)
add_valid("half a second before exp", fault="reset", now=NOW + 299.5)

_, BASE, BASE_SI, BASE_SIG = signed()  # latency 250ms, exp NOW+300
_, EBASE, EBASE_SI, EBASE_SIG = signed(fault="error", p="1")

invalid = []


def bad(name, value, check, field, now=NOW, keyring=None):
    v = {"name": name, "value": value, "now": now, "check": check, "field": field}
    if keyring:
        v["keyring"] = keyring
    invalid.append(v)


def resign(si, key="k1"):
    """Signs an arbitrary signing input, to build values whose signature is
    right but whose syntax is not."""
    import hmac as _h

    return si + ";sig=" + ref.b64url(_h.new(KEYS[key], si.encode(), hashlib.sha256).digest())


def swap(value, old, new):
    assert old in value, (old, value)
    return value.replace(old, new, 1)


# syntax: the value as a whole
bad("empty value", "", "syntax", "")
bad("longer than 512 bytes", BASE + ";" + "x" * 600, "syntax", "")
# syntax: v
bad("unsupported version", swap(BASE, "v=1;", "v=2;"), "syntax", "v")
bad("version with a leading zero", swap(BASE, "v=1;", "v=01;"), "syntax", "v")
bad("version field missing", BASE[len("v=1;"):], "syntax", "v")
bad("leading space", " " + BASE, "syntax", "v")
bad("uppercase field name", "V" + BASE[1:], "syntax", "v")
bad("header line instead of value", "X-Kosha-Chaos: " + BASE, "syntax", "v")
# syntax: kid
bad("space after ';'", swap(BASE, ";kid=", "; kid="), "syntax", "kid")
bad("kid too long", swap(BASE, "kid=", "kid=A"), "syntax", "kid")
k1kid = ref.kid_of(KEYS["k1"])
noncanon = k1kid[:-1] + {"A": "B"}.get(k1kid[-1], chr(ord(k1kid[-1]) + 1))
bad("kid with non-zero trailing bits", swap(BASE, k1kid, noncanon), "syntax", "kid")
bad("duplicate kid", swap(BASE, ";target=", ";kid=" + k1kid + ";target="), "syntax", "kid")
# syntax: target
bad("uppercase target", swap(BASE, "target=core-api", "target=Core-API"), "syntax", "target")
bad("target starting with '-'", swap(BASE, "target=core-api", "target=-core"), "syntax", "target")
bad("tab inside target", swap(BASE, "target=core-api", "target=core\tapi"), "syntax", "target")
# syntax: fault
bad("unknown fault", swap(EBASE, "fault=error", "fault=drop"), "syntax", "fault")
bad("unknown field where fault belongs", swap(BASE, ";fault=", ";foo=bar;fault="), "syntax", "fault")
# syntax: ms
bad("ms missing for latency", swap(BASE, ";ms=250", ""), "syntax", "ms")
bad("ms present for error", swap(EBASE, ";p=", ";ms=250;p="), "syntax", "ms")
bad("ms with a leading zero", swap(BASE, "ms=250", "ms=0250"), "syntax", "ms")
bad("ms zero", swap(BASE, "ms=250", "ms=0"), "syntax", "ms")
bad("ms above 60000", swap(BASE, "ms=250", "ms=60001"), "syntax", "ms")
bad("ms with an exponent", swap(BASE, "ms=250", "ms=2.5e2"), "syntax", "ms")
bad("ms with a sign", swap(BASE, "ms=250", "ms=+250"), "syntax", "ms")
# syntax: p
bad("p with a trailing zero", swap(BASE, "p=0.5", "p=0.50"), "syntax", "p")
bad("p without the leading 0", swap(BASE, "p=0.5", "p=.5"), "syntax", "p")
bad("p=1.0", swap(BASE, "p=0.5", "p=1.0"), "syntax", "p")
bad("p zero", swap(BASE, "p=0.5", "p=0"), "syntax", "p")
bad("p with five decimals", swap(BASE, "p=0.5", "p=0.00001"), "syntax", "p")
bad("p with an exponent", swap(BASE, "p=0.5", "p=5e-1"), "syntax", "p")
bad("p above 1", swap(BASE, "p=0.5", "p=1.5"), "syntax", "p")
bad("p and exp swapped", swap(BASE, f";p=0.5;exp={NOW + 300}", f";exp={NOW + 300};p=0.5"), "syntax", "p")
# syntax: exp
bad("exp with a leading zero", swap(BASE, f"exp={NOW + 300}", f"exp=0{NOW + 300}"), "syntax", "exp")
bad("exp zero", swap(BASE, f"exp={NOW + 300}", "exp=0"), "syntax", "exp")
bad("exp with an exponent", swap(BASE, f"exp={NOW + 300}", "exp=1.7672259e9"), "syntax", "exp")
bad("exp with 12 digits", swap(BASE, f"exp={NOW + 300}", "exp=100000000000"), "syntax", "exp")
bad("exp negative", swap(BASE, f"exp={NOW + 300}", "exp=-1"), "syntax", "exp")
# syntax: jti
bad("jti of 15 characters", swap(BASE, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2"), "syntax", "jti")
bad("jti with standard base64 characters", swap(BASE, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2NaVb+/g=="), "syntax", "jti")
bad("jti with a non-ASCII byte", swap(BASE, "jti=q8fZ0m3uXh7yLp2NaVbW4g", "jti=q8fZ0m3uXh7yLp2NaVbW4\u00e9"), "syntax", "jti")
bad("CR LF injected before jti", swap(BASE, ";jti=", ";\r\njti="), "syntax", "jti")
# syntax: sig
bad("sig with padding", BASE + "=", "syntax", "sig")
bad("sig with non-zero trailing bits", BASE[:-1] + {"A": "B"}.get(BASE[-1], chr(ord(BASE[-1]) + 1)), "syntax", "sig")
bad("sig in standard base64", BASE[:-2] + "+/", "syntax", "sig")
bad("sig missing", BASE_SI, "syntax", "sig")
bad("trailing ';'", BASE + ";", "syntax", "sig")
bad("trailing field after sig", BASE + ";x=1", "syntax", "sig")
bad("sig twice", BASE + ";sig=" + BASE_SIG, "syntax", "sig")
bad("trailing space", BASE + " ", "syntax", "sig")
bad("trailing newline", BASE + "\n", "syntax", "sig")
# target: well formed and signed, but not allowed
_, other_target, _, _ = signed(target="billing")
bad("target not in the context's targets", other_target, "target", "target")
_, other_target_k3, _, _ = signed(key="k3", target="billing")
bad("target checked before kid", other_target_k3, "target", "target", keyring=["k1", "k2"])
# kid
_, by_k3, _, _ = signed(key="k3")
bad("kid of a key the keyring does not hold", by_k3, "kid", "kid", keyring=["k1", "k2"])
bad("key retired: signed by a key rotated out", signed(key="k2")[1], "kid", "kid", keyring=["k1", "k3"])
# signature
bad("p tampered", swap(BASE, "p=0.5", "p=0.6"), "signature", "sig")
bad("exp extended", swap(BASE, f"exp={NOW + 300}", f"exp={NOW + 301}"), "signature", "sig")
bad("kid swapped to another held key", swap(BASE, k1kid, ref.kid_of(KEYS["k2"])), "signature", "sig")
bad("all-zero signature", BASE[: -len(BASE_SIG)] + "A" * 43, "signature", "sig")
bad("signature checked before expiry", swap(BASE, "p=0.5", "p=0.6"), "signature", "sig", now=NOW + 3600)
# expiry
bad("now equals exp", BASE, "expiry", "exp", now=NOW + 300)
bad("half a second after exp", BASE, "expiry", "exp", now=NOW + 300.5)
bad("an hour after exp", BASE, "expiry", "exp", now=NOW + 3900)
# cap
bad("exp one second past the cap and skew", signed(exp=NOW + 931)[1], "cap", "exp")
bad("exp half a second past the cap and skew", signed(exp=NOW + 930)[1], "cap", "exp", now=NOW - 0.5)
bad("exp a day ahead", signed(exp=NOW + 86400)[1], "cap", "exp")

key_encodings = [
    {"name": "standard base64 with padding", "input": b64(KEYS["k1"]), "kid": ref.kid_of(KEYS["k1"])},
    {"name": "trailing newline", "input": b64(KEYS["k1"]) + "\n", "kid": ref.kid_of(KEYS["k1"])},
    {"name": "line-wrapped with CRLF", "input": b64(KEYS["k2"] + KEYS["k1"])[:40] + "\r\n" + b64(KEYS["k2"] + KEYS["k1"])[40:], "kid": ref.kid_of(KEYS["k2"] + KEYS["k1"])},
    {"name": "padding omitted", "input": b64(KEYS["k2"][:47]).rstrip("="), "kid": ref.kid_of(KEYS["k2"][:47])},
    {"name": "base64url alphabet", "input": base64.urlsafe_b64encode(b"\xfb\xff" * 16).decode(), "error": True},
    {"name": "16 bytes is too short", "input": b64(KEYS["k1"][:16]), "error": True},
    {"name": "one byte repeated", "input": b64(b"\x07" * 32), "error": True},
    {"name": "empty", "input": "", "error": True},
]

# Sanity: every vector behaves as stated in the reference implementation.
doc = {
    "description": "Test vectors for the X-Kosha-Chaos header (docs/contracts/chaos-header.md). "
    "keys: raw keys as standard base64 with their kids. valid: sign 'fields' with 'key' and expect exactly "
    "'signing_input', 'sig' and 'value'; verifying 'value' at 'now' (unix seconds, may be fractional) against "
    "'keyring' (default: every key) must pass. invalid: verifying 'value' at 'now' against 'keyring' must fail, "
    "and the first failing check must be 'check'; for syntax failures 'field' names the field at fault "
    "('' for the value as a whole). key_encodings: decoding 'input' must yield a key with 'kid', or fail when 'error'.",
    "header": "X-Kosha-Chaos",
    "targets": ref.DEFAULT_TARGETS,
    "max_ahead_seconds": ref.MAX_AHEAD,
    "skew_seconds": ref.DEFAULT_SKEW,
    "keys": {n: {"key_b64": b64(k), "kid": ref.kid_of(k)} for n, k in KEYS.items()},
    "valid": valid,
    "invalid": invalid,
    "key_encodings": key_encodings,
}
json.dump(doc, sys.stdout, indent=2, ensure_ascii=False)
sys.stdout.write("\n")
