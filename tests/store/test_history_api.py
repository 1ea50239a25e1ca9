"""The Python history API beyond the oracle cases: getThreadById, ownership checks, arguments, JSONB metadata."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from studio.common.metadata_filter import ValidationError, message_metadata_matches
from studio.store import open_store
from studio.store.history import get_thread_by_id, js_date_iso, list_messages, list_threads, recall
from tests.conftest import load_oracle


def test_get_thread_by_id(fixture_db):
    with open_store(fixture_db("support")) as store:
        thread = get_thread_by_id(store, "support-1")
        expected = next(t for t in load_oracle("support")["resources"]["user-alice"]["threads"]
                        if t["id"] == "support-1")
        assert (thread.resource_id, thread.title, thread.metadata, thread.created_at) == (
            expected["resourceId"], expected["title"], expected["metadata"], expected["createdAt"])
        assert get_thread_by_id(store, "support-1", "user-alice").id == "support-1"
        assert get_thread_by_id(store, "support-1", "user-bob") is None
        assert get_thread_by_id(store, "nope") is None


def test_recall_checks_the_resource_when_given(fixture_db):
    with open_store(fixture_db("support")) as store:
        assert recall(store, "support-1", resource_id="user-alice").message_ids
        with pytest.raises(ValidationError, match="is for resource with id user-alice"):
            recall(store, "support-1", resource_id="user-bob")
        with pytest.raises(ValidationError, match="No thread found"):
            recall(store, "nope", resource_id="user-bob")
        assert recall(store, "nope").message_ids == []            # without a resource Mastra does not check


def test_recall_defaults_and_history_switch(fixture_db):
    with open_store(fixture_db("support")) as store:
        default = recall(store, "support-1")
        assert (len(default.messages), default.per_page, default.page) == (10, 10, 0)
        assert recall(store, "support-1", last_messages=5).message_ids == default.message_ids[-5:]
        off = recall(store, "support-1", last_messages=False)
        assert (off.message_ids, off.total, off.has_more) == ([], 0, False)
        assert len(recall(store, "support-1", last_messages=False, per_page=3).messages) == 3


def test_camel_and_snake_case_arguments_agree(fixture_db):
    with open_store(fixture_db("support")) as store:
        a = recall(store, "support-meta", per_page=False,
                   filter={"dateRange": {"start": "2026-03-02T10:00:00.000Z", "startExclusive": True}})
        b = recall(store, "support-meta", per_page=False,
                   filter={"date_range": {"start": datetime(2026, 3, 2, 10, tzinfo=UTC),
                                          "start_exclusive": True}})
        assert a.message_ids == b.message_ids == ["meta-msg-2", "meta-msg-3", "meta-msg-4", "meta-msg-5"]
        t1 = list_threads(store, filter={"resourceId": "user-alice"})
        t2 = list_threads(store, filter={"resource_id": "user-alice"})
        assert t1.thread_ids == t2.thread_ids == ["support-2", "support-1"]


@pytest.mark.parametrize("call", [
    lambda s: list_threads(s, page=-1),
    lambda s: list_threads(s, per_page=-5),
    lambda s: list_threads(s, per_page=1.5),
    lambda s: list_threads(s, per_page=False, page=2),
    lambda s: list_threads(s, order_by={"field": "title"}),
    lambda s: list_threads(s, order_by={"field": "createdAt", "direction": "down"}),
    lambda s: list_threads(s, filter={"resource": "user-alice"}),
    lambda s: list_threads(s, filter={"metadata": {"a b": 1}}),
    lambda s: recall(s, "support-1", page=-1),
    lambda s: recall(s, "support-1", per_page=True),
    lambda s: recall(s, "support-1", filter={"dateRange": {"start": object()}}),
    lambda s: recall(s, "support-1", filter={"date_range": {"from": "2026"}}),
    lambda s: recall(s, "support-1", order_by={"field": "updatedAt"}),
    lambda s: recall(s, "support-1", last_messages=-1),
    lambda s: list_messages(s, "  "),
    lambda s: list_messages(s, "support-1", include=[{"id": "x", "withPreviousMessages": -1}]),
    lambda s: list_messages(s, "support-1", include="x"),
])
def test_bad_arguments_raise_validation_errors(fixture_db, call):
    with open_store(fixture_db("support")) as store, pytest.raises(ValidationError):
        call(store)


def test_js_date_iso():
    assert js_date_iso("2026-03-02") == "2026-03-02T00:00:00.000Z"
    assert js_date_iso("2026-03-02T10:00:00+02:00") == "2026-03-02T08:00:00.000Z"
    assert js_date_iso("2026-03-02T10:00:00.5Z") == "2026-03-02T10:00:00.500Z"
    assert js_date_iso(0) == "1970-01-01T00:00:00.000Z"
    assert js_date_iso(datetime(2026, 1, 2, 3, 4, 5, 678000)) == "2026-01-02T03:04:05.678Z"
    for bad in ("yesterday", "", True, None):
        with pytest.raises(ValidationError):
            js_date_iso(bad)


def test_jsonb_text_and_null_thread_metadata_filter_alike(fixture_db):
    """Thread metadata may be JSONB (Mastra's writes), JSON text (older rows) or NULL; filters read all three."""
    import libsql

    path = fixture_db("history")
    conn = libsql.connect(str(path))
    assert conn.execute("SELECT typeof(metadata) FROM mastra_threads WHERE id = 'hist-1'").fetchall()[0][0] == "blob"
    conn.execute("""UPDATE mastra_threads SET metadata = '{"category": "billing", "n": 1}' WHERE id = 'hist-2'""")
    conn.execute("UPDATE mastra_threads SET metadata = NULL WHERE id = 'hist-1-branch'")
    conn.commit()
    conn.close()
    with open_store(path) as store:
        billing = list_threads(store, filter={"metadata": {"category": "billing"}}, per_page=False)
        assert billing.thread_ids == ["hist-2", "hist-1"]
        assert list_threads(store, filter={"metadata": {"n": 1}}).thread_ids == ["hist-2"]
        assert list_threads(store, filter={"metadata": {"n": True}}).thread_ids == ["hist-2"]  # json_extract: 1 = true
        assert "hist-1-branch" in list_threads(store, filter={"metadata": {"category": None}}).thread_ids


def test_sql_filter_equals_the_in_memory_rule(fixture_db):
    """recall's SQL metadata predicate and storageMessageMatchesMetadataFilter agree on every support message."""
    filters = [{"category": "billing"}, {"escalated": True}, {"escalated": False}, {"priority": 2},
               {"archivedAt": None}, {"note": "second match"}, {"category": "billing", "priority": 2}]
    with open_store(fixture_db("support")) as store:
        for thread_id in ("support-meta", "support-1"):
            messages = store.list_messages(thread_id)
            for metadata in filters:
                sql = recall(store, thread_id, per_page=False, filter={"metadata": metadata}).message_ids
                assert sql == [m.id for m in messages if message_metadata_matches(m.content, metadata)], metadata


def test_canonical_times_are_sorted_by_their_text_and_every_order_is_the_time_sort():
    """`_js_sorted` sorts messages whose createdAt are all `Date.toISOString()` strings by their text (text order
    is time order for that fixed-width form), anything else by time. First principles: the result always equals a
    stable sort by `new Date(createdAt).getTime()` (iso_to_ms) in the asked direction, NaN-free here, and it says
    so (sorting it again changes nothing)."""
    from studio.store.history import _canonical, _js_sorted
    from studio.store.records import Message, iso_to_ms

    def messages(times):
        return [Message(id=f"m{i}", thread_id="t", role="user", content="x", created_at=t) for i, t in enumerate(times)]

    ascending = ["2026-11-29T20:40:53.819Z", "2026-11-29T20:40:53.819Z", "2026-11-29T20:41:00.000Z",
                 "2027-01-01T00:00:00.000Z"]
    assert _canonical(ascending) and _canonical(ascending[::-1]) and _canonical([])
    shuffled = [ascending[2], ascending[0], ascending[3], ascending[1]]
    for times in (ascending, ascending[::-1], shuffled,
                  ["2026-11-29T20:40:53.819Z", "2026-11-29T20:40:53.9Z"],          # not fixed width: times decide
                  ["2026-11-29T21:40:53.819+01:00", "2026-11-29T20:40:53.900Z"],  # offsets: text order ≠ time order
                  [" 2026-11-29T20:40:53.819Z", "2026-11-29T20:40:53.800Z"]):
        ms = [iso_to_ms(t) for t in times]
        for descending in (False, True):
            pairs = sorted(zip(ms, messages(times), strict=True), key=lambda p: -p[0] if descending else p[0])
            got, exact = _js_sorted(messages(times), descending)
            assert [m.id for m in got] == [m.id for _, m in pairs] and exact, (times, descending)
            assert [m.id for m in _js_sorted(got, descending)[0]] == [m.id for m in got]
    assert not _canonical(["2026-11-29T20:40:5a.819Z"])
    assert not _canonical(["2026-11-29T20:40:53.819", "Z2026-11-29T20:40:53.819Z"])  # 24 a value, not in all
    assert not _js_sorted(messages(["2026-11-29T20:40:53.819Z", "not a date"]))[1]    # NaN: no promise


@pytest.mark.parametrize("year", ["0000", "0001", "1900", "1999", "2000", "2023", "2024", "2100", "2400", "9999"])
def test_canonical_accepts_exactly_the_dates_fromisoformat_reads(year):
    """`_canonical`'s one-pass pattern against `datetime.fromisoformat` (the parser `iso_to_ms` reads that form
    with): every month 00-13, the days around each month's end, hours, minutes and seconds at their bounds."""
    from studio.store.history import _canonical

    def reads(text):
        try:
            datetime.fromisoformat(text[:23])
        except ValueError:
            return False
        return True

    for month in range(14):
        for day in (0, 1, 9, 10, 19, 20, 27, 28, 29, 30, 31, 32):
            for clock in ("00:00:00.000", "23:59:59.999", "24:00:00.000", "12:60:00.000", "12:00:60.000",
                          "19:05:09.090", "20:00:00.000"):
                text = f"{year}-{month:02d}-{day:02d}T{clock}Z"
                assert _canonical([text]) == reads(text), text
                assert _canonical(["2026-11-29T20:40:53.819Z", text]) == reads(text), text
