"""Search across every thread, checked against a brute-force reading of the raw rows (every message's JSON parsed,
its text parts joined, NFC + case folding, every term required) on real Mastra fixtures, plus stored texts planted
to test what the fast path must not miss: non-ASCII case folding, decomposed accents, JSON \\u escapes,
backslashes and quotes in terms."""

from __future__ import annotations

import json
import sqlite3
import unicodedata

import pytest

from studio.app.search import parse_query, search
from studio.cli import main
from studio.store import open_store
from tests.conftest import copy_fixture


def _fold(text: str) -> str:
    return unicodedata.normalize("NFC", text).casefold()


def _brute(path, terms: list[str], metadata: dict | None = None) -> list[tuple[str, str]]:
    """(thread, message) of every match, threads by updatedAt DESC then id DESC, messages by createdAt DESC."""
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    threads = conn.execute('SELECT id FROM mastra_threads ORDER BY "updatedAt" DESC, id DESC').fetchall()
    out = []
    for (tid,) in threads:
        rows = conn.execute('SELECT id, content FROM mastra_messages WHERE thread_id = ? ORDER BY "createdAt" DESC',
                            (tid,)).fetchall()
        for mid, raw in rows:
            try:
                content = json.loads(raw)
            except ValueError:
                content = raw
            parts = content.get("parts", []) if isinstance(content, dict) else []
            texts = [p["text"] for p in parts if isinstance(p, dict) and p.get("type") == "text"]
            text = "\n".join(texts) if texts else (content if isinstance(content, str) else
                                                    content.get("content", "") if isinstance(content, dict) else "")
            if metadata and not all((content.get("metadata") or {}).get(k) == v for k, v in metadata.items()):
                continue
            if all(t in _fold(text) for t in terms):
                out.append((tid, mid))
    conn.close()
    return out


@pytest.mark.parametrize(("fixture", "query"), [("support", "lisbon budget"), ("collab", '"QA sign-off"'),
                                                ("resource", "Montréal"), ("buffered", "THE"),
                                                ("tools", "weather")])
def test_search_equals_brute_force(tmp_path, fixture, query):
    path = copy_fixture(fixture, tmp_path)
    with open_store(path) as store:
        hits = search(store, query)
    expected = _brute(path, parse_query(query))
    assert [(h.thread_id, h.message_id) for h in hits] == expected
    assert all(_fold(parse_query(query)[0]) in _fold(h.snippet) for h in hits)


def test_metadata_filter_alone_and_with_words(tmp_path):
    path = copy_fixture("support", tmp_path)
    meta = {"provider": "scripted"}
    with open_store(path) as store:
        only = search(store, "", metadata=meta)
        both = search(store, "budget", metadata=meta)
    assert [(h.thread_id, h.message_id) for h in only] == _brute(path, [], meta) and only
    assert [(h.thread_id, h.message_id) for h in both] == _brute(path, ["budget"], meta)


def _plant(path, thread_id: str, texts: list[str], *, ascii_json: bool = False) -> None:
    conn = sqlite3.connect(path)
    resource = conn.execute('SELECT "resourceId" FROM mastra_threads WHERE id = ?', (thread_id,)).fetchone()[0]
    for i, text in enumerate(texts):
        content = json.dumps({"format": 2, "parts": [{"type": "text", "text": text}]}, ensure_ascii=ascii_json)
        conn.execute('INSERT INTO mastra_messages (id, thread_id, content, role, type, "createdAt", "resourceId") '
                     "VALUES (?, ?, ?, 'user', 'v2', ?, ?)",
                     (f"planted-{thread_id}-{i}-{ascii_json}", thread_id, content,
                      f"2030-01-01T00:00:0{i}.000Z", resource))
    conn.commit()
    conn.close()


def test_unicode_and_escapes_are_found(tmp_path):
    path = copy_fixture("history", tmp_path)
    _plant(path, "hist-2", ["Meet at the Straße corner", "cafe\u0301 au lait (decomposed)",
                            'path C:\\temp\\x and "quoted"'])
    _plant(path, "hist-1", ["Ζήτω CAFÉ in Athens"], ascii_json=True)   # stored as \\u escapes
    planted = {"STRASSE": {"planted-hist-2-0-False"}, "café": {"planted-hist-2-1-False", "planted-hist-1-0-True"},
               "ΖΉΤΩ": {"planted-hist-1-0-True"}, "c:\\temp": {"planted-hist-2-2-False"},
               '"\\"quoted\\""': set(), "quoted": {"planted-hist-2-2-False"}}
    with open_store(path) as store:
        for query, ids in planted.items():
            hits = [(h.thread_id, h.message_id) for h in search(store, query)]
            assert hits == _brute(path, parse_query(query)), query
            assert ids <= {m for _t, m in hits}, query


def test_cli_search_json_and_blank_query(tmp_path, capsys):
    path = copy_fixture("support", tmp_path)
    assert main(["search", str(path), "lisbon", "--json", "--limit", "2"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert len(doc) == 2 and set(doc[0]) >= {"thread_id", "message_id", "role", "time", "snippet"}
    assert [(d["thread_id"], d["message_id"]) for d in doc] == _brute(path, ["lisbon"])[:2]
    assert main(["search", str(path), "   "]) == 2
