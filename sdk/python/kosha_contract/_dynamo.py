"""DynamoDB JSON attribute values: reading the numbers the contracts use
and writing numbers as koshactl writes them."""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from decimal import Decimal
from typing import Any

AttributeValue = Mapping[str, Any]
"""One attribute in DynamoDB JSON: {"S": "x"}, {"N": "1"}, {"BOOL": True}, ..."""

Item = Mapping[str, AttributeValue]
"""An item in DynamoDB JSON, as GetItem returns it (boto3's client API)."""

_INT = re.compile(r"[+-]?[0-9]+")
_DECIMAL = re.compile(r"[+-]?(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?")
_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1


def string(item: Item, name: str) -> str | None:
    """The attribute's string when it is of type S, else None."""
    v = item.get(name)
    if isinstance(v, Mapping) and len(v) == 1 and isinstance(v.get("S"), str):
        return v["S"]
    return None


def number_text(item: Item, name: str) -> str | None:
    """The attribute's number text when it is of type N, else None."""
    v = item.get(name)
    if isinstance(v, Mapping) and len(v) == 1 and isinstance(v.get("N"), str) and _DECIMAL.fullmatch(v["N"]):
        return v["N"]
    return None


def whole(item: Item, name: str) -> int | None:
    """The attribute as a whole 64-bit number, written without a fraction or
    exponent (how DynamoDB returns whole numbers); None otherwise."""
    text = number_text(item, name)
    if text is None or not _INT.fullmatch(text):
        return None
    n = int(text)
    return n if _INT64_MIN <= n <= _INT64_MAX else None


def real(item: Item, name: str) -> float | None:
    """The attribute as a float (the nearest double), or None when it is not a number."""
    text = number_text(item, name)
    return None if text is None else float(text)


def truncated(item: Item, name: str) -> int | None:
    """The attribute as a whole number, a fraction truncated toward zero; None when not a number."""
    text = number_text(item, name)
    if text is None:
        return None
    if _INT.fullmatch(text):
        n = int(text)
        if _INT64_MIN <= n <= _INT64_MAX:
            return n
    f = float(text)
    return math.trunc(f) if math.isfinite(f) else None


def format_number(x: int | float) -> str:
    """A number as koshactl writes it: integers in base 10, other values in
    the shortest decimal that reads back to the same double, never with an
    exponent; negative zero as "0"."""
    if isinstance(x, int):
        return str(x)
    if x == 0:
        return "0"
    if x.is_integer():
        return str(int(x))
    return format(Decimal(repr(x)), "f")


def n(x: int | float) -> dict[str, str]:
    """A number attribute value in DynamoDB JSON."""
    return {"N": format_number(x)}


def s(x: str) -> dict[str, str]:
    """A string attribute value in DynamoDB JSON."""
    return {"S": x}
