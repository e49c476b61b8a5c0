"""Fixtures for the whole suite. Non-fixture helpers live in ``tests/helpers.py``."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import write_lines


@pytest.fixture
def tiny_trace(tmp_path: Path) -> Path:
    return write_lines(
        tmp_path / "tiny.tr",
        [
            "0 2 1.5 1 2",
            "0.5 1 3 3",
            "1 3 1 1 1 1",
        ],
    )
