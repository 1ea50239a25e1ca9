"""An open's listing reads the store's OM lookup keys once (issue 21: a reopen's listing is part of its wait)."""

from __future__ import annotations

from studio.app.listing import load_listing
from studio.app.live import load_live_listing, load_live_listing_in_two_steps
from studio.store import open_store
from tests.conftest import copy_fixture


def test_the_live_listing_reads_the_lookup_keys_once_and_equals_the_plain_listing(tmp_path, monkeypatch):
    path = copy_fixture("support", tmp_path / "db")
    with open_store(path) as store:
        plain = load_listing(store)
        asked: list = []
        real = store.om_lookup_keys
        monkeypatch.setattr(store, "om_lookup_keys", lambda only=None: (asked.append(only), real(only))[1])
        live = load_live_listing(store)
        assert asked == [None]
        asked.clear()
        shown: list = []
        counts = load_live_listing_in_two_steps(store, shown.append)
        assert asked == [None]
        assert live.lookup_keys == counts.lookup_keys == real()
    assert [(r.thread.id, r.lookup_key, r.orphan) for r in live.listing.rows] \
        == [(r.thread.id, r.lookup_key, r.orphan) for r in plain.rows] \
        == [(r.thread.id, r.lookup_key, r.orphan) for r in shown[0].rows]
