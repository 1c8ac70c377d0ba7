"""Tests for brushfire.sizes: memory sizes as people write and read them."""

from __future__ import annotations

import pytest

from brushfire.sizes import format_size


@pytest.mark.parametrize(("n", "text"), [
    (3 << 30, "3.00 GB"), (512 << 20, "512 MB"), (1 << 20, "1 MB"),
    (250_000, "244 KB"),  # (a small source's copy: it read "about 0 MB")
    (1 << 10, "1 KB"), (900, "900 bytes"), (0, "0 bytes"),
])
def test_a_size_reads_in_the_unit_that_shows_it(n: int, text: str) -> None:
    assert format_size(n) == text
