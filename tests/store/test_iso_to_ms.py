"""`iso_to_ms` on the shape Mastra writes (`toISOString()`, 24 characters) takes an arithmetic road; it must
give what `datetime.fromisoformat` (the general road, JavaScript's `new Date(text).getTime()` for these
forms) gives, for valid and invalid fields alike."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from studio.store.records import iso_to_ms

CASES = ["2026-11-29T20:40:53.819Z", "1970-01-01T00:00:00.000Z", "1969-12-31T23:59:59.999Z",
         "2024-02-29T12:00:00.001Z", "2023-02-29T12:00:00.001Z", "2026-04-31T00:00:00.000Z",
         "2026-13-01T00:00:00.000Z", "2026-00-10T00:00:00.000Z", "2026-01-10T24:00:00.000Z",
         "2026-01-10T23:60:00.000Z", "2026-01-10T23:59:60.000Z", "0001-01-01T00:00:00.000Z",
         "9999-12-31T23:59:59.999Z", "0000-01-01T00:00:00.000Z", "2026-01-10T2٣:00:00.000Z",
         "2026-01-10 23:00:00.000Z", "2026-01-10T23:00:00,000Z", "2026-01-1xT23:00:00.000Z"]


def _general(text: str) -> int | None:
    try:
        return round(datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC).timestamp() * 1000)
    except ValueError:
        return None


@pytest.mark.parametrize("text", CASES)
def test_the_fast_road_gives_the_general_roads_answer(text):
    assert len(text) == 24
    assert iso_to_ms(text) == _general(text)
