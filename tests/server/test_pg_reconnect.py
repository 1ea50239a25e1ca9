"""After a PostgreSQL restart the store and the window reconnect (issue 22, item 7).

A restart ends every session: psycopg then says "the connection is closed" (or "server closed the
connection unexpectedly"). The read session is reopened once, at the next load (F5, the live
refresh), before anything is reported; the figures read afterwards are those read before.
"""

from __future__ import annotations

from studio.store import open_store

SCENARIO = "support"


def test_the_store_reads_again_after_a_server_restart(pg_corpus):
    with open_store(pg_corpus.target(SCENARIO)) as store:
        with store.snapshot():
            before = [t.id for t in store.list_threads()]
        print_before = store.fingerprint()
        pg_corpus.restart()
        assert store.fingerprint() == print_before     # the live refresh's check, outside a load: reconnected
        pg_corpus.restart()
        with store.snapshot():                          # a load (F5): reconnected at its BEGIN
            assert [t.id for t in store.list_threads()] == before


def test_the_window_reconnects_on_f5_after_a_server_restart(pg_corpus, studio):
    window = studio(pg_corpus.target(SCENARIO))
    rows = window.thread_model.rowCount()
    assert rows > 0 and window.error_box is None
    pg_corpus.restart()
    window.refresh_action.trigger()
    assert window.context.runner.wait_idle()
    assert window.error_box is None, window.error_box.text()
    assert window.thread_model.rowCount() == rows
    assert "closed" not in window.statusBar().currentMessage()
