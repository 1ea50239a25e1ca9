"""The listing's steps on local files: `loaders.load_listing_in_two_steps` gives what `load_listing` gives.

A server store's first open shows the threads before their counts (tests/server/test_server_listing_steps.py:
"…" until the aggregate is in, then Mastra's values). A local file is read in one step: its message
aggregate runs in-process and would freeze a list painted before it, so its counts are there at once.
"""

from __future__ import annotations

import pytest

from studio.app.listing import load_listing
from studio.store import open_store
from tests.conftest import load_oracle
from tests.ui.listing_steps import record_steps, step_problems


@pytest.mark.parametrize("name", ["support", "resource", "history"])
def test_a_local_file_shows_its_counts_at_once(studio, studio_ctx, fixture_db, name):
    window = studio()
    seen = record_steps(window)
    window.open_database(fixture_db(name))
    assert studio_ctx.runner.wait_idle()
    assert seen and all(counted for counted, _ in seen)
    assert step_problems([(False, {}), *seen], load_oracle(name)) == []   # (no first step expected here)


def test_a_refresh_keeps_the_counts_shown(studio, studio_ctx, fixture_db):
    """A refresh reads the counts before it shows anything: the rows never go back to "…"."""
    window = studio(fixture_db("support"))
    seen = record_steps(window)
    window.refresh()
    assert studio_ctx.runner.wait_idle()
    assert seen and all(counted for counted, _ in seen)
    assert step_problems([(False, {}), *seen], load_oracle("support")) == []


def test_one_step_listing_equals_two_steps(fixture_db):
    """`load_listing` (the refresh and the helper process) gives the rows the two steps end with."""
    from studio.app.listing import load_listing_in_two_steps

    with open_store(fixture_db("collab")) as store, store.snapshot():
        firsts = []
        counts = load_listing_in_two_steps(store, firsts.append)
        whole = load_listing(store)
    (first,) = firsts
    assert not first.counted and all(r.thread.message_count is None for r in first.rows if not r.orphan)
    counts.apply(first.rows)
    got = [(r.thread.id, r.thread.message_count, r.thread.newest_message_at, r.activity_ms, r.updated_at_stale)
           for r in first.rows]
    assert got == [(r.thread.id, r.thread.message_count, r.thread.newest_message_at, r.activity_ms,
                    r.updated_at_stale) for r in whole.rows]
    assert counts.data_version == whole.data_version


def test_a_cancelled_two_step_listing_skips_the_count(fixture_db):
    """A window closed while the threads were being shown: the worker does not count (the close waits for it)."""
    import threading

    from studio.app.listing import load_listing_in_two_steps

    cancel = threading.Event()
    firsts = []

    def first(listing):
        firsts.append(listing)
        cancel.set()

    with open_store(fixture_db("collab")) as store, store.snapshot():
        counted = []
        store.message_stats = lambda: counted.append(1) or {}   # the aggregate the count step runs
        assert load_listing_in_two_steps(store, first, cancel) is None
        assert len(firsts) == 1 and firsts[0].rows and counted == []
        cancel.clear()
        assert load_listing_in_two_steps(store, lambda _l: None, cancel) is not None and counted == [1]
