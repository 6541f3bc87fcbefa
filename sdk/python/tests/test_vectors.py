"""Runs every case of docs/contracts/vectors against kosha_contract."""

from __future__ import annotations

import base64
import dataclasses
import json
from typing import Any

import pytest

from conftest import load
from kosha_contract import bucket, chaos, degradation, freeze, gauge, override

OVERRIDES = load("breaker-override.json")
BUCKETS = load("rate-limit-bucket.json")
CHAOS = load("chaos-header.json")
EMF = load("breaker-state-emf.json")
FREEZE = load("freeze.json")
GAUGE = load("breaker-state-gauge.json")
MATRIX = load("degradation-matrix.json")


def ids(cases: list[dict[str, Any]]) -> list[str]:
    return [c["name"] for c in cases]


# -- overrides ---------------------------------------------------------------


def test_override_constants() -> None:
    assert OVERRIDES["cache_ttl_ms"] == override.CACHE_TTL_MS
    assert OVERRIDES["max_epoch_ms"] == override.MAX_EPOCH_MS
    assert OVERRIDES["max_reason_chars"] == override.MAX_REASON_CHARS


@pytest.mark.parametrize("case", OVERRIDES["cases"], ids=ids(OVERRIDES["cases"]))
def test_override(case: dict[str, Any]) -> None:
    r = override.read_override(case["item"], case["now_ms"])
    want = case["want"]
    got = {
        "treatment": r.treatment,
        "active": r.active,
        "malformed_attributes": list(r.malformed_attributes),
        "expires_at_ms": r.expires_at_ms,
        "dependency": r.dependency,
    }
    assert got == want, case["why"]


# -- buckets -----------------------------------------------------------------


def take_json(r: bucket.TakeResult) -> dict[str, Any]:
    w = None
    if r.write is not None:
        w = {"item": r.write.item, "condition": {"expression": r.write.condition.expression}}
        if r.write.condition.values:
            w["condition"]["values"] = r.write.condition.values
    return {
        "outcome": r.outcome,
        "allowed": r.allowed,
        "fail_open": r.fail_open,
        "remaining": r.remaining,
        "retry_after_ms": r.retry_after_ms,
        "retry_after_header": r.retry_after_header,
        "write": w,
    }


def test_bucket_constants() -> None:
    assert BUCKETS["max_cas_retries"] == bucket.MAX_CAS_RETRIES
    assert BUCKETS["idle_ttl_seconds"] == bucket.IDLE_TTL_SECONDS


@pytest.mark.parametrize("case", BUCKETS["cases"], ids=ids(BUCKETS["cases"]))
def test_bucket(case: dict[str, Any]) -> None:
    limits = bucket.Limits(case["capacity"], case["refill_per_second"])
    item, now = case["item"], case["now_ms"]
    assert take_json(bucket.take(item, now, limits, case["client"])) == case["take"], case["why"]
    assert take_json(bucket.take_lld(item, now, limits, case["client"])) == case["lld"], "lld: " + case["why"]
    try:
        st = bucket.status(item, now, limits)
    except bucket.MalformedBucket:
        assert case["status"] is None
        return
    assert {"tokens": st.tokens, "admit": st.admit, "retry_after_ms": st.retry_after_ms,
            "ahead_of_clock_ms": st.ahead_of_clock_ms} == case["status"]


# -- chaos header ------------------------------------------------------------

KEYS = {name: chaos.decode_key(k["key_b64"]) for name, k in CHAOS["keys"].items()}


def ring(names: list[str] | None) -> dict[str, bytes]:
    return {chaos.kid_of(KEYS[n]): KEYS[n] for n in (names or list(KEYS))}


def verify(value: str, names: list[str] | None, now: float) -> chaos.Fields:
    return chaos.verify(value, ring(names), now, CHAOS["targets"], CHAOS["max_ahead_seconds"], CHAOS["skew_seconds"])


def test_chaos_constants() -> None:
    assert CHAOS["header"] == chaos.HEADER
    assert tuple(CHAOS["targets"]) == chaos.DEFAULT_TARGETS
    assert (CHAOS["max_ahead_seconds"], CHAOS["skew_seconds"]) == (chaos.MAX_AHEAD_SECONDS, chaos.DEFAULT_SKEW_SECONDS)


@pytest.mark.parametrize("name", sorted(CHAOS["keys"]))
def test_chaos_kid(name: str) -> None:
    assert chaos.kid_of(KEYS[name]) == CHAOS["keys"][name]["kid"]


@pytest.mark.parametrize("case", CHAOS["valid"], ids=ids(CHAOS["valid"]))
def test_chaos_valid(case: dict[str, Any]) -> None:
    f = case["fields"]
    fields = chaos.Fields(target=f["target"], fault=f["fault"], p=f["p"], exp=f["exp"], jti=f["jti"], ms=f.get("ms", 0),
                          iat=f.get("iat", 0))
    raw = KEYS[case["key"]]
    assert chaos.signing_input(chaos.kid_of(raw), fields) == case["signing_input"]
    assert chaos.sign(raw, fields) == case["value"]
    assert case["value"].endswith(";sig=" + case["sig"])
    assert verify(case["value"], case.get("keyring"), case["now"]) == fields


@pytest.mark.parametrize("case", CHAOS["invalid"], ids=ids(CHAOS["invalid"]))
def test_chaos_invalid(case: dict[str, Any]) -> None:
    with pytest.raises(chaos.Reject) as e:
        verify(case["value"], case.get("keyring"), case["now"])
    assert (e.value.check, e.value.field) == (case["check"], case["field"])


@pytest.mark.parametrize("case", CHAOS["key_encodings"], ids=ids(CHAOS["key_encodings"]))
def test_chaos_key_encoding(case: dict[str, Any]) -> None:
    if case.get("error"):
        with pytest.raises(chaos.InvalidKey):
            chaos.decode_key(case["input"])
    else:
        assert chaos.kid_of(chaos.decode_key(case["input"])) == case["kid"]


@pytest.mark.parametrize("case", CHAOS["fuzz_verify"], ids=ids(CHAOS["fuzz_verify"]))
def test_chaos_fuzz_verify(case: dict[str, Any]) -> None:
    try:
        chaos.verify(case["value"], ring(case["keyring"]), case["now"])
        got = (True, "", "")
    except chaos.Reject as r:
        got = (False, r.check, r.field)
    assert got == (case["ok"], case["check"], case["field"])


@pytest.mark.parametrize("case", CHAOS["fuzz_sign"], ids=ids(CHAOS["fuzz_sign"]))
def test_chaos_fuzz_sign(case: dict[str, Any]) -> None:
    raw = base64.b64decode(case["key_b64"])
    if case.get("key_error"):
        with pytest.raises(chaos.InvalidKey):
            chaos.new_key(raw)
        return
    fault = {1: "latency", 2: "error", 3: "timeout", 4: "reset"}.get(case["fault"], f"fault({case['fault']})")
    units = case["p_units"]
    p = chaos.p_text(units) if 1 <= units <= 10000 else f"units({units})"
    fields = chaos.Fields(target=case["target"], fault=fault, p=p, exp=case["exp"], jti=case["jti"], ms=case["ms"])
    if case.get("error"):
        with pytest.raises(ValueError):
            chaos.sign(chaos.new_key(raw), fields)
    else:
        assert chaos.sign(chaos.new_key(raw), fields) == case["value"]


# -- freeze ------------------------------------------------------------------


def test_freeze_constants() -> None:
    assert FREEZE["key"] == freeze.KEY
    assert (FREEZE["cache_ttl_ms"], FREEZE["max_read_age_ms"], FREEZE["record_retention_ms"]) == (
        freeze.CACHE_TTL_MS, freeze.MAX_READ_AGE_MS, freeze.RECORD_RETENTION_MS)
    assert FREEZE["header_max_ttl_seconds"] == chaos.MAX_AHEAD_SECONDS
    assert (FREEZE["max_reason_chars"], FREEZE["max_ref_chars"]) == (freeze.MAX_REASON_CHARS, freeze.MAX_REF_CHARS)


@pytest.mark.parametrize("case", FREEZE["items"], ids=ids(FREEZE["items"]))
def test_freeze_item(case: dict[str, Any]) -> None:
    f = freeze.read_freeze(case["item"])
    now = case["now_ms"]
    if f is None:
        got = {"frozen": False, "state": "", "end_ms": None, "chaos_not_before": None, "malformed_attributes": []}
    else:
        got = {"frozen": f.frozen(now), "state": f.state(now), "end_ms": f.end_ms, "chaos_not_before": f.chaos_not_before,
               "malformed_attributes": list(f.malformed_attributes)}
    assert got == case["want"], case["why"]


def header_fields(h: dict[str, int]) -> chaos.Fields:
    return chaos.Fields(target="core-api", fault="error", p="1", exp=h["exp"], jti="x" * 16, iat=h.get("iat", 0))


def verdict(refused: tuple[str, str] | None) -> dict[str, Any]:
    return {"honoured": refused is None, "field": "" if refused is None else refused[0]}


@pytest.mark.parametrize("case", FREEZE["headers"], ids=ids(FREEZE["headers"]))
def test_freeze_header(case: dict[str, Any]) -> None:
    f = freeze.read_freeze(case["item"])
    refused = None if f is None else f.check(header_fields(case["header"]), case["now_ms"])
    assert verdict(refused) == case["want"], case["why"]


@pytest.mark.parametrize("case", FREEZE["readings"], ids=ids(FREEZE["readings"]))
def test_freeze_reading(case: dict[str, Any]) -> None:
    r = freeze.Reading(case["item"], case["read_at_ms"])
    now = case["now_ms"]
    got = {"refuses_all": r.refuses_all(now), **verdict(r.check(header_fields(case["header"]), now))}
    assert got == case["want"], case["why"]


@pytest.mark.parametrize("case", FREEZE["mints"], ids=ids(FREEZE["mints"]))
def test_freeze_mint(case: dict[str, Any]) -> None:
    wait = freeze.mint_wait_ms(case["item"], case["now_ms"])
    assert {"refused": wait is None, "wait_ms": wait or 0} == case["want"]


@pytest.mark.parametrize("case", FREEZE["refs"], ids=[repr(c["ref"]) for c in FREEZE["refs"]])
def test_freeze_ref(case: dict[str, Any]) -> None:
    assert freeze.valid_ref(case["ref"]) == case["valid"]


def test_freeze_check_through_verify() -> None:
    """The freeze check runs last in verify, through the reading it is given."""
    case = next(c for c in CHAOS["valid"] if c["fields"].get("iat") and c["now"] > c["fields"]["iat"] + 1)
    # Lifted half a second after the header's iat, before now: the header was minted before the end.
    lifted_after = {"pk": {"S": freeze.KEY}, "actor": {"S": "alice"}, "reason": {"S": "x"}, "set_at": {"N": "0"},
                    "lifted_at": {"N": str(case["fields"]["iat"] * 1000 + 500)}, "lifted_by": {"S": "bob"}, "version": {"N": "2"}}
    now_ms = int(case["now"] * 1000)
    r = freeze.Reading(lifted_after, now_ms)
    with pytest.raises(chaos.Reject) as e:
        chaos.verify(case["value"], ring(case.get("keyring")), case["now"], freeze=lambda f: r.check(f, now_ms))
    assert (e.value.check, e.value.field) == ("freeze", "iat")
    assert chaos.verify(case["value"], ring(case.get("keyring")), case["now"],
                        freeze=lambda f: freeze.Reading(None, now_ms).check(f, now_ms)).iat == case["fields"]["iat"]


# -- gauge and EMF -----------------------------------------------------------


@pytest.mark.parametrize("case", EMF["cases"], ids=ids(EMF["cases"]))
def test_emf(case: dict[str, Any]) -> None:
    line = gauge.emf_line(case["dependency"], gauge.STATES[case["state"]], case["timestamp_ms"], service=case["service"],
                          instance=case["instance"], namespace=case["namespace"], instance_dimension=case["instance_dimension"])
    # Compared as JSON values, after a round trip through the text written.
    assert (None if line is None else json.loads(json.dumps(line, separators=(",", ":")))) == case["line"]


def test_gauge_names() -> None:
    names = GAUGE["names"]
    assert (names["default_namespace"], names["metric_name"], names["prometheus_metric_name"]) == (
        gauge.DEFAULT_NAMESPACE, gauge.METRIC_NAME, gauge.PROMETHEUS_METRIC_NAME)
    assert names["dimensions"] == [gauge.DIM_DEPENDENCY, gauge.DIM_SERVICE, gauge.DIM_INSTANCE]
    assert {s["name"]: s["value"] for s in GAUGE["states"]} == gauge.STATES
    assert (EMF["default_namespace"], EMF["metric_name"]) == (gauge.DEFAULT_NAMESPACE, gauge.METRIC_NAME)


@pytest.mark.parametrize("case", GAUGE["state_names"], ids=[repr(c["input"]) for c in GAUGE["state_names"]])
def test_state_name(case: dict[str, Any]) -> None:
    assert gauge.parse_state(case["input"]) == case["value"]


@pytest.mark.parametrize("case", GAUGE["values"], ids=[repr(c["value"]) for c in GAUGE["values"]])
def test_gauge_value(case: dict[str, Any]) -> None:
    assert gauge.gauge_state(case["value"]) == case["state"]


@pytest.mark.parametrize("case", GAUGE["fleet"], ids=[f"{c['has_data']}-{c['max']}-{c['min']}" for c in GAUGE["fleet"]])
def test_fleet(case: dict[str, Any]) -> None:
    assert gauge.fleet_state(case["has_data"], case["max"], case["min"]) == case["shown"]
    assert gauge.fleet_state(case["has_data"], case["max"], case["min"], override_active=True) == "forced_open"


# -- degradation matrix ------------------------------------------------------


def test_matrix_is_the_contracts() -> None:
    assert list(degradation.BEHAVIOURS) == MATRIX["behaviours"]
    assert [dataclasses.asdict(t) for t in degradation.TOOLS] == MATRIX["tools"]
    assert [degradation.row_json(r) for r in degradation.ROWS] == MATRIX["rows"]


@pytest.mark.parametrize("case", MATRIX["impact"], ids=ids(MATRIX["impact"]))
def test_matrix_impact(case: dict[str, Any]) -> None:
    got = degradation.impact(case["forced"])
    assert {
        "tools": [{"tool": t.tool, "behaviour": t.behaviour, "because": list(t.because)} for t in got.tools],
        "not_obeyed": list(got.not_obeyed),
        "unknown": list(got.unknown),
    } == case["want"]


@pytest.mark.parametrize("case", MATRIX["answers"], ids=ids(MATRIX["answers"]))
def test_matrix_answer(case: dict[str, Any]) -> None:
    assert degradation.classify(case["is_error"], case["structured"]) == case["behaviour"]


@pytest.mark.parametrize("case", MATRIX["checks"], ids=ids(MATRIX["checks"]))
def test_matrix_check(case: dict[str, Any]) -> None:
    effect = degradation.ROWS_BY_DEPENDENCY[case["dependency"]].effect(case["tool"])
    problem = degradation.check(effect, case["is_error"], case["structured"])
    assert (problem is None) == case["matches"], problem


@pytest.mark.parametrize("case", MATRIX["estimates"], ids=ids(MATRIX["estimates"]))
def test_matrix_estimate(case: dict[str, Any]) -> None:
    assert degradation.estimate_calls(case["calls_per_minute"], case["for_seconds"]) == case["calls"]
