"""MongoDB targets (`mongodb://`, `mongodb+srv://`): parsing, the password's places and redaction, and how BSON
values read (no server needed; the reads against a server are tests/server/test_mongo_store.py).

Expected values from first principles: @mastra/mongodb's MongoDBStore takes `uri` and `dbName`, so the database is
the URL's path; a secret never appears in what is shown or remembered; a BSON Date reads as JavaScript's
`toISOString()` prints the same instant, and JavaScript prints the double 10.0 as 10.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from studio.errors import StoreError
from studio.store import credentials as cred
from studio.store import target as tg
from studio.store.backends.mongodb import iso_to_bson_date, to_mastra

# (URL, database, shown: redact_url, remembered: strip_secrets, keyring username)
FORMS = [
    ("mongodb://alice:pw@127.0.0.1:27017/support?replicaSet=rs0", "support",
     "mongodb://alice:***@127.0.0.1:27017/support?replicaSet=rs0", "mongodb://alice@127.0.0.1:27017/support?replicaSet=rs0",
     "mongodb://alice@127.0.0.1:27017/support"),
    ("mongodb+srv://bob:p%40ss@Cluster0.example.net/mastra?retryWrites=true&w=majority", "mastra",
     "mongodb+srv://bob:***@Cluster0.example.net/mastra?retryWrites=true&w=majority",
     "mongodb+srv://bob@Cluster0.example.net/mastra?retryWrites=true&w=majority",
     "mongodb+srv://bob@cluster0.example.net/mastra"),
    ("mongodb://h1:27017,h2:27018/agent_memory", "agent_memory", "mongodb://h1:27017,h2:27018/agent_memory",
     "mongodb://h1:27017,h2:27018/agent_memory", "mongodb://h1:27017,h2:27018/agent_memory"),
]


@pytest.mark.parametrize("url,db,shown,remembered,user", FORMS)
def test_mongodb_urls_parse_and_never_show_their_password(url, db, shown, remembered, user):
    target = tg.parse_target(url)
    assert (target.kind, target.schema, target.display, target.path) == (tg.MONGODB, db, shown, None)
    assert target.conninfo == url and tg.is_server_target(url) and cred.secret_kind(url) == "password"
    assert tg.strip_secrets(url) == remembered and cred.keyring_target(url) == user
    assert "pw" not in repr(target) and "p%40ss" not in repr(target)


@pytest.mark.parametrize("url,words", [("mongodb://127.0.0.1:27017", "names no database"),
                                       ("mongodb://127.0.0.1:27017/", "names no database"),
                                       ("mongodb:///db", "names no server"),
                                       ("mongodb://u:secret@h/bad.name", "not a MongoDB database name")])
def test_unusable_mongodb_urls_get_one_sentence_without_the_secret(url, words):
    with pytest.raises(StoreError, match=words) as caught:
        tg.parse_target(url)
    assert "secret" not in str(caught.value)


def test_mongodb_password_order_url_then_session_then_env_then_keyring(memory_keyring):
    url = "mongodb://alice@db.example:27017/mem?authSource=admin"
    assert cred.mongodb_password("mongodb://db.example/mem", env={"MONGODB_PASSWORD": "x"}) == (None, "none")
    memory_keyring.set_password("memory-studio", "mongodb://alice@db.example:27017/mem", "from-keyring")
    assert cred.mongodb_password(url, env={}) == ("from-keyring", "keyring")
    assert cred.mongodb_password(url, env={}, keyring_get=None) == (None, "none")
    assert cred.mongodb_password(url, env={"MONGODB_PASSWORD": "from-env"}) == ("from-env", "MONGODB_PASSWORD")
    cred.remember_for_session(url, "typed")
    try:
        assert cred.mongodb_password(url, env={"MONGODB_PASSWORD": "from-env"}) == ("typed", "session")
    finally:
        cred.forget_for_session(url)
    assert cred.mongodb_password("mongodb://alice:in-url@db.example:27017/mem", env={}) == ("in-url", "url")


def test_bson_values_read_as_mastra_prints_them():
    when = datetime(2026, 12, 5, 1, 21, 17, 893000, tzinfo=UTC)
    doc = {"createdAt": when, "metadata": {"clone": {"clonedAt": when.astimezone(timezone(timedelta(hours=2)))},
                                           "n": 10.0, "half": 2.5, "tags": ["a", when], "none": None, "ok": True}}
    assert to_mastra(doc) == {"createdAt": "2026-12-05T01:21:17.893Z",
                              "metadata": {"clone": {"clonedAt": "2026-12-05T01:21:17.893Z"}, "n": 10, "half": 2.5,
                                           "tags": ["a", "2026-12-05T01:21:17.893Z"], "none": None, "ok": True}}
    assert iso_to_bson_date("2026-12-05T01:21:17.893Z") == when
    with pytest.raises(StoreError):
        iso_to_bson_date("not a time")


def test_writes_not_built_for_mongodb_are_refused_before_anything_is_sent():
    from studio.errors import WriteRefused
    from studio.store.write.transaction import write_transaction

    with pytest.raises(WriteRefused, match="not built for @mastra/mongodb") as caught, \
            write_transaction("mongodb://u:pw@127.0.0.1:9/support", label="write"):
        pass
    assert caught.value.reason == "invalid" and ":pw@" not in str(caught.value)
