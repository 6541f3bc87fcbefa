"""The degradation matrix (docs/contracts/degradation-matrix.md, LLD section 8).

    row = ROWS_BY_DEPENDENCY["screening-sim"]
    effect = row.effect("screen_entity")           # deferred, status "deferred" with retry_after_s
    problem = check(effect, is_error, structured)  # None when a tool's answer shows it
    classify(is_error, structured)                 # how a client reads any answer

A data plane shows each row when the dependency is down; a client reads an
answer with classify(); impact() is what forcing dependencies together does
(the worst behaviour per tool, of the rows whose breaker an override forces).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

BEHAVIOURS = ("unaffected", "degraded", "deferred", "failed")  # harmless first


@dataclasses.dataclass(frozen=True)
class Tool:
    name: str
    noun: str  # one call, singular ("screening")
    data: bool  # goes through core-api (and PostgreSQL behind it)


TOOLS = (
    Tool("search_knowledge_base", "search query", True),
    Tool("screen_entity", "screening", False),
    Tool("raise_dispute", "dispute", True),
    Tool("flag_transaction_for_review", "review flag", True),
    Tool("get_service_health", "health check", False),
)


@dataclasses.dataclass(frozen=True)
class Signal:
    """What a client sees: a tool error or not, exact field values, fields above zero."""

    error: bool
    text: str
    fields: tuple[tuple[str, Any], ...] = ()
    positive: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class Effect:
    tool: str
    behaviour: str
    detail: str
    signal: Signal


@dataclasses.dataclass(frozen=True)
class Row:
    dependency: str
    title: str
    breaker: bool  # an override breaker#<dependency> forces it; else no instance obeys one
    effects: tuple[Effect, ...]
    platform: str = ""
    platform_signal: str = ""

    def effect(self, tool: str) -> Effect:
        """The row's effect on tool: the one it names, or unaffected."""
        for e in self.effects:
            if e.tool == tool:
                return e
        return Effect(tool, "unaffected", "", NONE)


NONE = Signal(False, "none")
_DEGRADED = Signal(False, 'degraded: true, degraded_reason: "embeddings_unavailable"',
                   (("degraded", True), ("degraded_reason", "embeddings_unavailable")))
_DEFERRED = Signal(False, 'status: "deferred" with retry_after_s', (("status", "deferred"),), ("retry_after_s",))
_UNAVAILABLE = Signal(True, "error dependency_unavailable with retry_after_s",
                      (("error", "dependency_unavailable"),), ("retry_after_s",))
_CORE_API = Signal(True, 'error dependency_unavailable with dependency: "core-api"',
                   (("error", "dependency_unavailable"), ("dependency", "core-api")))


def _data_tools(behaviour: str, detail: str, signal: Signal) -> tuple[Effect, ...]:
    return tuple(Effect(t.name, behaviour, detail, signal) for t in TOOLS if t.data)


_OUTBOX = "events stay in ops.outbox until SQS recovers"

ROWS = (
    Row("openai", "OpenAI", True,
        (Effect("search_knowledge_base", "degraded", "full-text-only ranking", _DEGRADED),)),
    Row("screening-sim", "screening-sim", True,
        (Effect("screen_entity", "deferred", "no synchronous result; the request is recorded for later", _DEFERRED),)),
    Row("dynamodb", "DynamoDB", False, (),
        "rate limiting fails open (every client admitted); breaker overrides get no new reads "
        "(each instance keeps the last it read)",
        "metric + alarm only"),
    Row("sqs", "SQS", False,
        (Effect("raise_dispute", "unaffected", _OUTBOX, NONE),
         Effect("flag_transaction_for_review", "unaffected", _OUTBOX, NONE))),
    Row("postgres", "PostgreSQL", False,
        _data_tools("failed", "dependency_unavailable once the breaker in front of it (core-api's) opens", _UNAVAILABLE)),
    Row("core-api", "core-api", True,
        _data_tools("failed", "the breaker opens: every call fails fast", _CORE_API)
        + (Effect("get_service_health", "unaffected", "still answers, from the gateway's own state", NONE),)),
    Row("cognito-jwks", "Cognito JWKS", False, (),
        "cached signing keys are used until they expire (10 min + grace); past that, calls fail authentication",
        "none while the cache is valid"),
)
ROWS_BY_DEPENDENCY = {r.dependency: r for r in ROWS}


def classify(is_error: bool, structured: dict[str, Any]) -> str:
    """How a client reads a tool's answer: a tool error is failed; status "deferred"
    is deferred; degraded true (the boolean) is degraded; anything else is unaffected."""
    if is_error:
        return "failed"
    if structured.get("status") == "deferred":
        return "deferred"
    if structured.get("degraded") is True:
        return "degraded"
    return "unaffected"


def check(effect: Effect, is_error: bool, structured: dict[str, Any]) -> str | None:
    """None when the answer shows effect (the behaviour classify reads, the error flag,
    every field's exact value, every positive field above zero); else the first difference."""
    got = classify(is_error, structured)
    if got != effect.behaviour:
        return f"{effect.tool} answered {got}, the matrix says {effect.behaviour}"
    if is_error != effect.signal.error:
        return f"{effect.tool}: isError {is_error}, the matrix says {effect.signal.error}"
    for k, want in effect.signal.fields:
        v = structured.get(k)
        # Exact: the same JSON type and value ("true" is not true, 1 is not true).
        if type(v) is not type(want) or v != want:
            return f"{effect.tool}: {k} is {v!r}, the matrix says {want!r}"
    for k in effect.signal.positive:
        v = structured.get(k)
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0:
            return f"{effect.tool}: {k} is {v!r}, the matrix says a number above zero"
    return None


@dataclasses.dataclass(frozen=True)
class ToolImpact:
    tool: str
    behaviour: str
    because: tuple[str, ...]  # the forced dependencies that cause it


@dataclasses.dataclass(frozen=True)
class Impact:
    tools: tuple[ToolImpact, ...]  # in TOOLS order
    not_obeyed: tuple[str, ...]  # in the matrix, without a breaker: the override changes nothing
    unknown: tuple[str, ...]  # no row: what forcing it does is unknown


def impact(forced: list[str]) -> Impact:
    """What forcing the dependencies together does: per tool the worst behaviour of the
    obeyed rows, with the dependencies causing it in the order named."""
    worst: dict[str, tuple[Effect, list[str]]] = {}
    not_obeyed: list[str] = []
    unknown: list[str] = []
    seen: set[str] = set()
    for dep in forced:
        if dep in seen:
            continue
        seen.add(dep)
        row = ROWS_BY_DEPENDENCY.get(dep)
        if row is None:
            unknown.append(dep)
            continue
        if not row.breaker:
            not_obeyed.append(dep)
            continue
        for e in row.effects:
            cur = worst.get(e.tool)
            if cur is None or BEHAVIOURS.index(e.behaviour) > BEHAVIOURS.index(cur[0].behaviour):
                worst[e.tool] = (e, [dep])
            elif e.behaviour == cur[0].behaviour:
                cur[1].append(dep)
    tools = tuple(ToolImpact(t.name, worst[t.name][0].behaviour, tuple(worst[t.name][1])) for t in TOOLS if t.name in worst)
    return Impact(tools, tuple(not_obeyed), tuple(unknown))


MAX_INT64 = 9223372036854775807


def _round_half_away(x: float) -> float:
    """x >= 0 rounded to the nearest whole number, halves up (Go's math.Round)."""
    r = math.floor(x)
    return r + 1 if x - r >= 0.5 else r


def about(x: float) -> int:
    """An expected count as a person states one: nearest whole number below 100, two
    significant figures from 100 on; 0 for a count that is not positive, MAX_INT64 from 9e18."""
    if math.isnan(x) or x <= 0:
        return 0
    if x >= 9e18:
        return MAX_INT64
    unit = 1.0
    while x / unit >= 100:
        unit *= 10
    return int(_round_half_away(x / unit) * unit)


def estimate_calls(calls_per_minute: float, for_seconds: float) -> int:
    """The calls a behaviour touches while an override holds (an hour when for_seconds is 0)."""
    over = for_seconds if for_seconds > 0 else 3600.0
    return about(calls_per_minute * over / 60)


def row_json(row: Row) -> dict[str, Any]:
    """A row as the vectors (and koshactl's -o json) write it."""

    def signal(s: Signal) -> dict[str, Any]:
        out: dict[str, Any] = {"error": s.error}
        if s.fields:
            out["fields"] = dict(s.fields)
        if s.positive:
            out["positive"] = list(s.positive)
        out["text"] = s.text
        return out

    out: dict[str, Any] = {
        "dependency": row.dependency,
        "title": row.title,
        "breaker": row.breaker,
        "effects": [{"tool": e.tool, "behaviour": e.behaviour, "detail": e.detail, "signal": signal(e.signal)} for e in row.effects],
    }
    if row.platform:
        out["platform"] = row.platform
    if row.platform_signal:
        out["platform_signal"] = row.platform_signal
    return out
