"""The breaker_state gauge (docs/contracts/breaker-state-metric.md).

    line = emf_line("openai", STATES["open"], timestamp_ms, service="gateway", instance="gw-1")
    if line is not None: print(json.dumps(line, separators=(",", ":")))   # one log line

Values: 0 closed, 1 half_open, 2 open, 3 forced_open. Publish on every state
change and at least every 60 s. Never average the gauge: describe a fleet by
its worst (Maximum) and best (Minimum) value.
"""

from __future__ import annotations

import math
from typing import Any

DEFAULT_NAMESPACE = "Kosha/Resilience"
METRIC_NAME = "breaker_state"
PROMETHEUS_METRIC_NAME = "kosha_breaker_state"
DIM_DEPENDENCY, DIM_SERVICE, DIM_INSTANCE = "dependency", "service", "instance"
STATES = {"closed": 0, "half_open": 1, "open": 2, "forced_open": 3}
NAMES = {v: k for k, v in STATES.items()}


def dimension_value(v: str) -> bool:
    """A usable CloudWatch dimension value: 1 to 1024 printable ASCII characters, not all blank."""
    return v.strip() != "" and len(v) <= 1024 and all(" " <= c <= "~" for c in v)


def dimension_sets(service: str, instance: str, with_instance: bool) -> list[list[str]]:
    """The sets a line names: [dependency], plus [dependency, service] with a usable
    service, plus the instance-level set only when asked for and usable."""
    sets = [[DIM_DEPENDENCY]]
    if dimension_value(service):
        sets.append([DIM_DEPENDENCY, DIM_SERVICE])
        if with_instance and dimension_value(instance):
            sets.append([DIM_DEPENDENCY, DIM_SERVICE, DIM_INSTANCE])
    return sets


def emf_line(
    dependency: str,
    state: int,
    timestamp_ms: int,
    *,
    service: str = "",
    instance: str = "",
    namespace: str = "",
    instance_dimension: bool = False,
) -> dict[str, Any] | None:
    """The EMF document for one gauge value; None when dependency is not a
    usable dimension value (write no line then)."""
    if not dimension_value(dependency):
        return None
    line: dict[str, Any] = {
        "_aws": {
            "Timestamp": timestamp_ms,
            "CloudWatchMetrics": [
                {
                    "Namespace": namespace or DEFAULT_NAMESPACE,
                    "Dimensions": dimension_sets(service, instance, instance_dimension),
                    "Metrics": [{"Name": METRIC_NAME, "Unit": "None"}],
                }
            ],
        },
        "dependency": dependency,
    }
    if service:
        line["service"] = service
    if instance:
        line["instance"] = instance
    line["breaker_state"] = state
    line["state"] = NAMES[state]
    return line


def parse_state(text: str) -> int | None:
    """A state name as people write it (case ignored, "-" or " " for "_",
    "forced", "half", or the values "0".."3"); None when it names no state."""
    norm = text.strip().lower().replace("-", "_").replace(" ", "_")
    aliases = {"halfopen": 1, "half": 1, "forcedopen": 3, "forced": 3}
    if norm in STATES:
        return STATES[norm]
    if norm in aliases:
        return aliases[norm]
    if norm in ("0", "1", "2", "3"):
        return int(norm)
    return None


def gauge_state(value: float) -> str | None:
    """The state a gauge value encodes, rounded to the nearest integer (halves
    away from zero); None for anything outside 0..3, NaN or infinite."""
    if math.isnan(value) or math.isinf(value):
        return None
    a = abs(value)
    r = math.floor(a)
    if a - r >= 0.5:  # exact: a double minus its floor loses nothing
        r += 1
    r = int(math.copysign(r, value)) if r else 0
    return NAMES.get(r) if 0 <= r <= 3 else None


def fleet_state(has_data: bool, maximum: float, minimum: float, override_active: bool = False) -> str:
    """What the dashboard shows for a dependency: forced_open under an active
    override; else no_data, mixed, or the state worst and best agree on."""
    if override_active:
        return "forced_open"
    if not has_data:
        return "no_data"
    hi, lo = gauge_state(maximum), gauge_state(minimum)
    if hi is None or lo is None:
        return "no_data"
    return hi if hi == lo else "mixed"
