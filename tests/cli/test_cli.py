"""The command line: `inspect` and `tokens` JSON equal Mastra's oracle on every fixture; errors exit 2."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest

from studio.cli import main
from tests.conftest import FIXTURE_NAMES, load_oracle
from tests.oracle_facts import current_generation


def run_json(capsys, argv) -> dict:
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


def files_digest(path: Path) -> tuple:
    return tuple(hashlib.sha256(Path(str(path) + ext).read_bytes()).hexdigest()
                 if Path(str(path) + ext).exists() else None for ext in ("", "-wal"))


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_inspect_equals_oracle(fixture_db, capsys, name):
    path = fixture_db(name)
    before = files_digest(path)
    data = run_json(capsys, ["inspect", str(path), "--json"])
    assert files_digest(path) == before
    oracle = load_oracle(name)

    # Thread list: per resource, the same threads in Mastra's listThreads order, same fields.
    for resource_id, res in oracle["resources"].items():
        ours = [t for t in data["threads"] if t["resource_id"] == resource_id]
        assert [t["id"] for t in ours] == [t["id"] for t in res["threads"]]
        for o, m in zip(ours, res["threads"], strict=True):
            assert (o["title"], o["metadata"], o["created_at"], o["updated_at"]) == (
                m["title"], m["metadata"], m["createdAt"], m["updatedAt"])
    for t in data["threads"]:
        assert t["message_count"] == len(oracle["threads"][t["id"]]["messages"])

    # OM: every lookup key, its status per thread and its history, value by value.
    om = {r["lookup_key"]: r for r in data["observational_memory"]}
    assert set(om) == set(oracle["om"])
    for key, expected in oracle["om"].items():
        got = om[key]
        assert (got["scope"], got["resource_id"], got["thread_id"]) == (
            expected["scope"], expected["resourceId"], expected["threadId"])
        assert set(got["status"]) == set(expected["status"])
        for thread_id, st in expected["status"].items():
            g = got["status"][thread_id]
            assert g["pending_tokens"] == st["pendingTokens"]
            assert g["threshold"] == st["threshold"]
            assert g["reflection_threshold"] == st["effectiveObservationTokensThreshold"]
            assert g["unbuffered_pending_tokens"] == st["unbufferedPendingTokens"]
            assert g["should_observe"] == st["shouldObserve"]
            assert g["should_reflect"] == st["shouldReflect"]
            assert g["buffered_chunk_count"] == st["bufferedChunkCount"]
            assert g["buffered_chunk_tokens"] == st["bufferedChunkTokens"]
            assert g["can_activate"] == st["canActivate"]
            assert got["record_id"] == st["recordId"]
            assert got["generation_count"] == st["generationCount"]
            assert got["observation_token_count"] == st["observationTokenCount"]
        assert [(h["record_id"], h["generation_count"], h["origin_type"], h["observation_token_count"])
                for h in got["history"]] == [
            (h["id"], h["generationCount"], h["originType"], h["observationTokenCount"]) for h in expected["history"]]


O200K_URL = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"


@pytest.fixture(scope="module")
def o200k(tmp_path_factory):
    """Stock `tiktoken.get_encoding("o200k_base")`, its download served from a cache seeded with the bundled ranks.

    tiktoken checks the file against OpenAI's published SHA-256 itself, so this is tiktoken's own
    encoding, built by tiktoken's own code path (not the studio's).
    """
    import shutil

    import tiktoken
    import tiktoken.registry

    from studio.paths import TOKENIZERS

    cache = tmp_path_factory.mktemp("tiktoken-cache")
    shutil.copyfile(TOKENIZERS / "o200k_base.tiktoken", cache / hashlib.sha1(O200K_URL.encode()).hexdigest())
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("TIKTOKEN_CACHE_DIR", str(cache))
        mp.setattr(tiktoken.registry, "ENCODINGS", {})
        return tiktoken.get_encoding("o200k_base")


def _compact_json(value) -> str:
    """JSON.stringify(VALUE) for the plain objects the fixtures hold (no spaces, non-ASCII kept)."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


def visible_texts(path: Path, thread_id: str) -> dict[str, str]:
    """Return {message id: the text a model is sent for it}, read from the raw rows with sqlite3.

    What a model sees of a stored message (AI SDK v4 UI parts, as Mastra converts them for a call):
    the role, then each part in order: a text part's text; a reasoning part's text (its details'
    texts, else `reasoning`); a tool invocation's tool name, its arguments (a string as stored, else
    compact JSON) and, once it has a result, the result (compact JSON). `data-*` parts are UI-only
    markers Mastra strips before a call, and a file part is not text. Pieces are joined by newlines;
    a message with no parts list contributes its `content.content` string. The fixtures hold only
    these part types (checked below), so an unknown one fails the test instead of being guessed.
    """
    import sqlite3

    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = conn.execute("SELECT id, role, content FROM mastra_messages WHERE thread_id = ?",
                            (thread_id,)).fetchall()
    finally:
        conn.close()
    texts: dict[str, str] = {}
    for message_id, role, raw in rows:
        content = json.loads(raw)
        pieces = [role]
        parts = content.get("parts")
        if not isinstance(parts, list):
            pieces.append(content.get("content") or "")
            parts = []
        for part in parts:
            kind = part["type"]
            if kind == "text":
                pieces.append(part["text"])
            elif kind == "reasoning":
                details = [d["text"] for d in part.get("details") or [] if isinstance(d.get("text"), str)]
                pieces.extend(details or [part["reasoning"]])
            elif kind == "tool-invocation":
                call = part["toolInvocation"]
                args = call["args"]
                pieces += [call["toolName"], args if isinstance(args, str) else _compact_json(args)]
                if call["state"] == "result":
                    result = call["result"]
                    pieces.append(result if isinstance(result, str) else _compact_json(result))
            else:
                assert kind == "file" or kind.startswith("data-"), f"part type {kind!r} not covered by this test"
        texts[message_id] = "\n".join(p for p in pieces if p)
    return texts


@pytest.mark.parametrize("name", FIXTURE_NAMES)
def test_tokens_equal_oracle_for_every_thread(fixture_db, capsys, name, o200k):
    path = fixture_db(name)
    oracle = load_oracle(name)
    for thread_id, expected in oracle["tokens"].items():
        data = run_json(capsys, ["tokens", str(path), thread_id, "--json"])
        assert data["thread_id"] == thread_id
        assert data["per_message"] == expected["perMessage"]
        assert data["all_messages"] == expected["allMessages"]
        assert data["exact"]["encoding"] == "o200k_base"
        assert data["exact"]["per_message"] == {
            message_id: len(o200k.encode_ordinary(text)) for message_id, text in visible_texts(path, thread_id).items()}
        assert set(data["exact"]["per_message"]) == set(expected["perMessage"])


def test_tokens_unknown_thread_exits_2(fixture_db, capsys):
    assert main(["tokens", str(fixture_db("support")), "no-such-thread", "--json"]) == 2
    assert "No thread 'no-such-thread'" in capsys.readouterr().err


@pytest.mark.parametrize("content,message", [
    (None, "No such file"),
    (b"", "empty"),
    (b"definitely not sqlite" * 50, "not a SQLite database"),
])
def test_inspect_bad_input_exits_2_with_a_message(tmp_path, capsys, content, message):
    path = tmp_path / "bad.db"
    if content is not None:
        path.write_bytes(content)
    assert main(["inspect", str(path), "--json"]) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""
    if content is not None:
        assert path.read_bytes() == content


def test_inspect_directory_exits_2(tmp_path, capsys):
    assert main(["inspect", str(tmp_path), "--json"]) == 2
    assert "directory" in capsys.readouterr().err


def test_usage_error_exits_2(capsys):
    assert main(["inspect"]) == 2


def test_stale_is_reflecting_flag_is_reported(fixture_db, capsys):
    import libsql

    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("""UPDATE mastra_observational_memory SET "isReflecting" = 1, "updatedAt" = '2020-01-01T00:00:00.000Z'
                    WHERE "lookupKey" = 'thread:support-1'""")
    conn.commit()
    conn.close()
    data = run_json(capsys, ["inspect", str(path), "--json"])
    om = {r["lookup_key"]: r for r in data["observational_memory"]}
    assert om["thread:support-1"]["status"]["support-1"]["flags"] == {"isReflecting": "stale"}
    assert om["thread:support-2"]["status"]["support-2"]["flags"] == {}


def test_om_record_of_a_deleted_thread_is_listed_with_mastras_status(fixture_db, capsys):
    import libsql

    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute("DELETE FROM mastra_threads WHERE id = 'support-3'")
    conn.commit()
    conn.close()
    data = run_json(capsys, ["inspect", str(path), "--json"])
    om = {r["lookup_key"]: r for r in data["observational_memory"]}
    assert om["thread:support-3"]["thread_missing"] is True
    # Mastra's getStatus still reports on the thread id (its messages are still stored here: same figures).
    expected = load_oracle("support")["om"]["thread:support-3"]["status"]["support-3"]
    got = om["thread:support-3"]["status"]["support-3"]
    assert (got["pending_tokens"], got["threshold"]) == (expected["pendingTokens"], expected["threshold"])
    assert om["thread:support-1"]["thread_missing"] is False


def test_inspect_recount_says_which_estimator_the_stored_count_matches(fixture_db, capsys):
    data = run_json(capsys, ["inspect", str(fixture_db("buffered")), "--json", "--recount"])
    [om] = data["observational_memory"]
    oracle = {h["id"]: h for h in load_oracle("buffered")["om"]["thread:long-run"]["history"]}
    for h in om["history"]:
        assert h["recount"]["tokenx"] == oracle[h["record_id"]]["countObservations"]
        assert h["recount"]["stored"] == h["observation_token_count"]
    assert {h["recount"]["matches"] for h in om["history"]} == {"tokenx", "neither"}  # gens 0, 2-4 drifted


def test_malformed_om_json_is_reported_and_defaults_apply(fixture_db, capsys):
    import libsql

    path = fixture_db("buffered")
    conn = libsql.connect(str(path))
    conn.execute("""UPDATE mastra_observational_memory SET config = '{broken', "bufferedObservationChunks" = '[{bad'
                    WHERE "generationCount" = ?""", (current_generation("buffered", "thread:long-run"),))
    conn.commit()
    conn.close()
    data = run_json(capsys, ["inspect", str(path), "--json"])
    [om] = data["observational_memory"]
    assert set(om["json_errors"]) == {"config", "bufferedObservationChunks"}
    assert "malformed JSON" in om["json_errors"]["config"]
    # Mastra's defaults stand in for the unreadable config (30,000 / 40,000 tokens); chunks read as none.
    assert (om["message_tokens"], om["observation_tokens"]) == (30000, 40000)
    assert om["status"]["long-run"]["buffered_chunk_count"] == 0


@pytest.mark.parametrize("sql", [
    """UPDATE mastra_observational_memory SET "lastObservedAt" = '9999-12-31T23:59:59.999Z'""",
    """UPDATE mastra_observational_memory SET "lastObservedAt" = 99999999999999999999""",
    """UPDATE mastra_observational_memory SET "observationTokenCount" = 'n/a', "generationCount" = 'x'""",
    """UPDATE mastra_observational_memory SET "observedMessageIds" = '[["a"], 5, null]'""",
    """UPDATE mastra_observational_memory SET "bufferedObservationChunks" = '[{"messageTokens": "12"}]'""",
    """UPDATE mastra_observational_memory SET config = '{"observation": {"messageTokens": 1e400}}'""",
    """UPDATE mastra_threads SET metadata = '""" + "[" * 100000 + "]" * 100000 + """'""",
    """UPDATE mastra_messages SET content = '""" + "[" * 100000 + "]" * 100000 + """' WHERE rowid = 1""",
])
def test_odd_stored_values_do_not_break_inspect(fixture_db, capsys, sql):
    """Values Mastra would never write (or would choke on) still give a full report, not a crash."""
    import libsql

    path = fixture_db("support")
    conn = libsql.connect(str(path))
    conn.execute(sql)
    conn.commit()
    conn.close()
    data = run_json(capsys, ["inspect", str(path), "--json"])
    assert len(data["threads"]) == 6
    assert {r["lookup_key"] for r in data["observational_memory"]} == set(load_oracle("support")["om"])
    for thread_id in ("support-1", "support-2"):
        run_json(capsys, ["tokens", str(path), thread_id, "--json"])


def test_every_write_command_has_the_shared_write_options():
    """The eight write commands share their options through one `add_write_arguments`: the target with
    --password-stdin, --yes, --full-backup, --json; a command that does not write has none of --yes/--full-backup."""
    from studio.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if a.dest == "command")
    shared = {"path", "password_stdin", "yes", "full_backup", "json"}
    writers = {name for name, p in sub.choices.items() if {"full_backup", "yes"} <= {a.dest for a in p._actions}}
    assert writers == {"reflect", "revert", "observe", "activate", "clone", "delete-thread", "update-thread",
                       "working-memory"}
    for name in writers:
        assert shared <= {a.dest for a in sub.choices[name]._actions}, name
