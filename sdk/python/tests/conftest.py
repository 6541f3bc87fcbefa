"""Shared fixtures: the vector files, found from this directory up to the repository root."""

from __future__ import annotations

import json
import pathlib
import sys
from typing import Any

import pytest

HERE = pathlib.Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))  # the package, without installing it


def vectors_dir() -> pathlib.Path:
    """docs/contracts/vectors of the repository (KOSHA_VECTORS overrides it)."""
    import os

    if os.environ.get("KOSHA_VECTORS"):
        return pathlib.Path(os.environ["KOSHA_VECTORS"])
    for d in HERE.parents:
        if (d / "docs" / "contracts" / "vectors").is_dir():
            return d / "docs" / "contracts" / "vectors"
    raise RuntimeError("docs/contracts/vectors not found above " + str(HERE))


def load(name: str) -> dict[str, Any]:
    with open(vectors_dir() / name, encoding="utf-8") as f:
        doc: dict[str, Any] = json.load(f)
    return doc


@pytest.fixture(scope="session")
def vectors() -> Any:
    return load
