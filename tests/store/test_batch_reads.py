"""The batched reads return, for every (id, cursor) pair, exactly what the one-at-a-time reads return.

`messages_since_many` must equal `list_messages(id, since=…)` / `list_resource_messages(id, since=…)`
message for message and in order, for any mix of pairs: no cursor, a cursor between two stored
messages, a cursor equal to a stored createdAt (`>=` keeps it), a cursor after every message, the
same id under two cursors (two rounds), and an id with no messages. `om_histories` must equal
`om_history` for every lookup key.
"""

from __future__ import annotations

import pytest

from studio.store import open_store
from tests.conftest import copy_fixture

FIXTURES = ["support", "buffered", "resource", "collab", "tools", "history"]


def _cursors(created: list[str]) -> list[str | None]:
    """No cursor, the middle message's time (kept: >=), just after it, and after everything."""
    out: list[str | None] = [None, "9999-12-31T23:59:59.999Z"]
    if created:
        mid = sorted(created)[len(created) // 2]
        out += [mid, mid[:-1] + "9Z" if mid.endswith("Z") else mid + "~"]
    return out


def _ids(messages) -> list[str]:
    return [m.id for m in messages]


@pytest.mark.parametrize("name", FIXTURES)
def test_messages_since_many_equals_list_messages(name, tmp_path):
    with open_store(copy_fixture(name, tmp_path)) as store:
        threads = store.list_threads()
        wanted = {(t.id, c) for t in threads for c in _cursors([m.created_at for m in store.list_messages(t.id)])}
        wanted.add(("no-such-thread", None))
        batch = store.messages_since_many(wanted)
        assert set(batch) == wanted
        for thread_id, since in wanted:
            assert _ids(batch[(thread_id, since)]) == _ids(store.list_messages(thread_id, since=since))
        # whole messages, not only their ids
        some = next(iter(sorted(wanted, key=str)))
        assert batch[some] == store.list_messages(some[0], since=some[1])

        resources = {t.resource_id for t in threads}
        wanted = {(r, c) for r in resources
                  for c in _cursors([m.created_at for m in store.list_resource_messages(r)])}
        batch = store.messages_since_many(wanted, by="resource")
        for resource_id, since in wanted:
            assert _ids(batch[(resource_id, since)]) == _ids(store.list_resource_messages(resource_id, since=since))


@pytest.mark.parametrize("name", FIXTURES)
def test_om_histories_equals_om_history(name, tmp_path):
    with open_store(copy_fixture(name, tmp_path)) as store:
        histories = store.om_histories()
        keys = [k["lookupKey"] for k in store.om_lookup_keys()]
        assert sorted(histories) == sorted(keys)
        for key in keys:
            assert [r.columns for r in histories[key]] == [r.columns for r in store.om_history(key)]
