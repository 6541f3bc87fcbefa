"""The vectors catch wrong readers: each test swaps one rule of the package
for a plausible mistake (monkeypatch) and checks that the vector tests then
fail, and on the cases the rule is about. A vector suite a wrong reader
could pass would prove nothing."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable

import pytest

import test_vectors as tv
from kosha_contract import bucket, chaos, degradation, freeze, override


def failing(test: Callable[[dict[str, Any]], None], cases: list[dict[str, Any]]) -> list[str]:
    out = []
    for c in cases:
        try:
            test(c)
        except (AssertionError, pytest.fail.Exception):
            out.append(c.get("name", repr(c)))
    return out


def test_reader_that_expires_a_malformed_expiry_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = override.read_override

    def expires_when_unreadable(item: Any, now_ms: int) -> override.OverrideReading:
        r = right(item, now_ms)
        if "expires_at" in r.malformed_attributes:  # "can't read the expiry, so it must be over"
            return dataclasses.replace(r, active=False)
        return r

    assert failing(tv.test_override, tv.OVERRIDES["cases"]) == []
    monkeypatch.setattr(override, "read_override", expires_when_unreadable)
    failed = failing(tv.test_override, tv.OVERRIDES["cases"])
    want = [c["name"] for c in tv.OVERRIDES["cases"]
            if c["want"]["treatment"] == "active_malformed" and "expires_at" in c["want"]["malformed_attributes"]]
    assert len(want) >= 10 and failed == want


def test_reader_that_skips_malformed_items_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = override.read_override

    def skips(item: Any, now_ms: int) -> override.OverrideReading:
        r = right(item, now_ms)
        return override.OverrideReading(active=False) if r.malformed else r

    monkeypatch.setattr(override, "read_override", skips)
    assert len(failing(tv.test_override, tv.OVERRIDES["cases"])) >= 40


def test_take_without_the_clamp_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def unclamped(limits: bucket.Limits, tokens: float, updated_at_ms: int, now_ms: int) -> float:
        return min(limits.capacity, tokens + (now_ms - updated_at_ms) / 1000 * limits.refill_per_second)

    monkeypatch.setattr(bucket, "refill", unclamped)
    failed = failing(tv.test_bucket, tv.BUCKETS["cases"])
    assert "6: reader clock 500 ms behind" in failed and "updated_at 1 s ahead, nearly empty" in failed


def test_take_stamping_now_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = bucket._put

    def stamps_now(client: str, limits: bucket.Limits, refilled: float, stamp: int, cond: bucket.Condition,
                   write_id: str = "") -> bucket.TakeResult:
        seen = cond.values.get(":seen")
        if seen is not None:
            stamp = min(stamp, max(int(seen["N"]), stamp - 1))  # the LLD's updated_at = now
        return right(client, limits, refilled, stamp, cond, write_id)

    monkeypatch.setattr(bucket, "_put", stamps_now)
    assert "5: written this millisecond" in failing(tv.test_bucket, tv.BUCKETS["cases"])


def test_take_dropping_write_id_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = bucket._put

    def drops(client: str, limits: bucket.Limits, refilled: float, stamp: int, cond: bucket.Condition,
              write_id: str = "") -> bucket.TakeResult:
        return right(client, limits, refilled, stamp, cond)

    monkeypatch.setattr(bucket, "_put", drops)
    assert failing(tv.test_bucket, tv.BUCKETS["cases"]) == ["write_id carried forward by the take"]


def test_verifier_without_the_cap_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = chaos.verify

    def no_cap(value: str, keyring: Any, now: float, targets: Any = chaos.DEFAULT_TARGETS, max_ahead: int = 900, skew: int = 30) -> chaos.Fields:
        return right(value, keyring, now, targets, 10**12, skew)

    monkeypatch.setattr(chaos, "verify", no_cap)
    failed = failing(tv.test_chaos_invalid, tv.CHAOS["invalid"])
    assert failed == [c["name"] for c in tv.CHAOS["invalid"] if c["check"] == "cap"]


def test_verifier_with_lenient_p_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(chaos._CHECKS, "p", lambda v: v.replace(".", "", 1).isdigit())
    assert "p with a trailing zero" in failing(tv.test_chaos_invalid, tv.CHAOS["invalid"])


def test_gauge_with_bankers_rounding_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    from kosha_contract import gauge

    monkeypatch.setattr(gauge, "gauge_state", lambda v: gauge.NAMES.get(round(v)) if 0 <= round(v) <= 3 else None)
    failed = failing(tv.test_gauge_value, tv.GAUGE["values"])
    assert failed, "Python's round() rounds halves to even; the gauge rounds them away from zero"


# -- degradation matrix ------------------------------------------------------


def test_reader_that_sees_degraded_before_deferred_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def degraded_first(is_error: bool, structured: dict[str, Any]) -> str:
        if is_error:
            return "failed"
        if structured.get("degraded") is True:
            return "degraded"
        return "deferred" if structured.get("status") == "deferred" else "unaffected"

    assert failing(tv.test_matrix_answer, tv.MATRIX["answers"]) == []
    monkeypatch.setattr(degradation, "classify", degraded_first)
    assert failing(tv.test_matrix_answer, tv.MATRIX["answers"]) == ["deferred and degraded"]


def test_truthy_reader_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    def truthy(is_error: bool, structured: dict[str, Any]) -> str:
        if is_error:
            return "failed"
        if structured.get("status") == "deferred":
            return "deferred"
        return "degraded" if structured.get("degraded") else "unaffected"  # "true" is truthy

    monkeypatch.setattr(degradation, "classify", truthy)
    assert failing(tv.test_matrix_answer, tv.MATRIX["answers"]) == ["degraded as text"]


def test_check_without_positive_fields_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = degradation.check

    def no_positive(effect: degradation.Effect, is_error: bool, structured: dict[str, Any]) -> str | None:
        return right(dataclasses.replace(effect, signal=dataclasses.replace(effect.signal, positive=())), is_error, structured)

    assert failing(tv.test_matrix_check, tv.MATRIX["checks"]) == []
    monkeypatch.setattr(degradation, "check", no_positive)
    failed = failing(tv.test_matrix_check, tv.MATRIX["checks"])
    assert "screening-sim / screen_entity: deferred, no retry" in failed and "screening-sim / screen_entity: deferred, retry 0" in failed


def test_impact_where_the_last_named_wins_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    right = degradation.impact

    def last_wins(forced: list[str]) -> degradation.Impact:
        tools: dict[str, degradation.ToolImpact] = {}
        for dep in forced:
            for t in right([dep]).tools:
                tools[t.tool] = t
        order = [t.name for t in degradation.TOOLS]
        r = right(forced)
        return dataclasses.replace(r, tools=tuple(sorted(tools.values(), key=lambda t: order.index(t.tool))))

    assert failing(tv.test_matrix_impact, tv.MATRIX["impact"]) == []
    monkeypatch.setattr(degradation, "impact", last_wins)
    assert "openai and core-api: failed is worse than degraded" not in failing(tv.test_matrix_impact, tv.MATRIX["impact"])
    assert "core-api and openai: the same, in the other order" in failing(tv.test_matrix_impact, tv.MATRIX["impact"])


def test_impact_obeying_every_override_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    rows = {k: dataclasses.replace(r, breaker=True) for k, r in degradation.ROWS_BY_DEPENDENCY.items()}
    monkeypatch.setattr(degradation, "ROWS_BY_DEPENDENCY", rows)
    failed = failing(tv.test_matrix_impact, tv.MATRIX["impact"])
    assert "postgres: no breaker" in failed and "core-api and postgres: only core-api is obeyed" in failed


def test_estimate_with_bankers_rounding_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(degradation, "_round_half_away", round)
    assert "0.5/min over 60s" in failing(tv.test_matrix_estimate, tv.MATRIX["estimates"])
def test_freeze_reader_rounding_the_end_down_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A header minted in the second of a lift, before it, would be honoured."""
    monkeypatch.setattr(freeze.Freeze, "chaos_not_before", property(lambda f: None if f.end_ms is None else f.end_ms // 1000))
    failed = failing(tv.test_freeze_header, tv.FREEZE["headers"])
    assert "lifted at .400: iat of that second is void" in failed


def test_freeze_reader_trusting_v1_exp_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A v=1 header has no iat: reading it as issued at exp (or now) would honour one minted before the freeze."""
    monkeypatch.setattr(chaos.Fields, "issued", property(lambda f: f.iat or f.exp))
    failed = failing(tv.test_freeze_header, tv.FREEZE["headers"])
    assert "lifted: v=1 a second short" in failed and "lifted: v=1 minted after the lift with a 5-minute ttl" in failed


def test_freeze_reader_releasing_an_unreadable_end_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """An unreadable expires_at counts as absent: frozen until lifted, never "over"."""
    monkeypatch.setattr(freeze.Freeze, "frozen", lambda f, now_ms: f.end_ms is not None and now_ms < f.end_ms)
    failed = failing(tv.test_freeze_item, tv.FREEZE["items"])
    assert "expires_at a string" in failed and "until lifted (no expires_at)" in failed


def test_freeze_reading_trusted_forever_fails(monkeypatch: pytest.MonkeyPatch) -> None:
    """A reading the store has not refreshed in max_read_age may hide a freeze."""
    monkeypatch.setattr(freeze.Reading, "known", lambda r, now_ms: r.read_at_ms is not None)
    failed = failing(tv.test_freeze_reading, tv.FREEZE["readings"])
    assert failed == ["no item, read a millisecond past max_read_age"]
