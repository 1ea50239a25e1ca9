"""Random sequences of the writes Mastra's storage makes, in plain SQL, for the live-refresh exactness tests.

Each write mirrors one of Mastra's storage methods (@mastra/libsql's MemoryLibSQL and the OM
storage; @mastra/pg writes the same rows):

* saveMessages: `INSERT … ON CONFLICT(id) DO UPDATE SET thread_id, content, role, type, resourceId`
  in one batch (a new message, an upsert of an existing one keeping its length, or one moved to
  another thread), then, as a separate statement, `UPDATE mastra_threads SET updatedAt = now` of
  the first message's thread only;
* updateMessages: `UPDATE mastra_messages SET content = …` and every touched thread's updatedAt, one batch;
* deleteMessages: the messages deleted and their threads' updatedAt set, one transaction;
* saveThread / updateThread (title, metadata, updatedAt) / deleteThread (its messages, then the
  thread; its OM records stay, Mastra #16621) / cloneThread (a new thread and copies of its messages);
* the OM record: a new generation (a row copied with generationCount + 1), an in-place update
  (flags, token counts, observations; updatedAt set), a record for a thread that had none, and
  clearObservationalMemory (every row of a lookup key deleted).

Times come from a clock that only moves forward (ISO-8601 with milliseconds, as `Date.toISOString`),
sometimes repeating the previous millisecond (two writes in one millisecond). `Sql` runs statements
on a SQLite file, a PostgreSQL schema or a libSQL server.
"""

from __future__ import annotations

import json
import random
import sqlite3
from datetime import UTC, datetime, timedelta
from typing import ClassVar


class Sql:
    """Statements on one store: `query(sql, params)` rows; `run([(sql, params), …])` in one transaction.

    SQL is written with `?` placeholders; `cast(column_type)` wraps a placeholder for PostgreSQL.
    """

    dialect = "sqlite"

    def columns(self, table: str) -> dict[str, str]:
        """{column: type} of TABLE, in table order."""
        raise NotImplementedError

    def query(self, sql: str, params=()) -> list[tuple]:
        raise NotImplementedError

    def run(self, statements: list[tuple[str, tuple]]) -> None:
        raise NotImplementedError

    def placeholder(self, kind: str) -> str:
        return "?"

    def close(self) -> None:
        pass


class FileSql(Sql):
    """A SQLite file written through Python's sqlite3 (WAL, as Mastra's LibSQLStore sets it)."""

    def __init__(self, path):
        self.conn = sqlite3.connect(path, isolation_level=None, timeout=30)
        self.conn.execute("PRAGMA journal_mode=WAL")

    def columns(self, table):
        return {r[1]: r[2] for r in self.conn.execute(f"PRAGMA table_info({table})")}

    def query(self, sql, params=()):
        return self.conn.execute(sql, params).fetchall()

    def run(self, statements):
        self.conn.execute("BEGIN IMMEDIATE")
        for sql, params in statements:
            self.conn.execute(sql, params)
        self.conn.execute("COMMIT")

    def close(self):
        self.conn.close()


class PgSql(Sql):
    """A PostgreSQL schema written through psycopg (Mastra's @mastra/pg tables, twins included)."""

    dialect = "postgresql"

    def __init__(self, url: str, schema: str):
        import psycopg

        self.schema = schema
        self.conn = psycopg.connect(url, autocommit=True)
        self.conn.execute(f'SET search_path TO "{schema}"')

    def columns(self, table):
        return {r[0]: r[1] for r in self.conn.execute(
            "SELECT column_name, data_type FROM information_schema.columns WHERE table_schema = %s AND table_name = %s "
            "ORDER BY ordinal_position", (self.schema, table))}

    @staticmethod
    def _pg(sql: str) -> str:
        return sql.replace("%", "%%").replace("?", "%s")

    def query(self, sql, params=()):
        return self.conn.execute(self._pg(sql), params).fetchall()

    def run(self, statements):
        with self.conn.transaction():
            for sql, params in statements:
                self.conn.execute(self._pg(sql), params)

    def placeholder(self, kind):
        return f"CAST(? AS {kind})"

    def close(self):
        self.conn.close()


class SqldSql(Sql):
    """A libSQL server (sqld) written over Hrana with plain httpx; a transaction is one pipeline."""

    def __init__(self, url: str):
        import httpx

        self.url = url.rstrip("/")
        self.http = httpx.Client(timeout=60)

    @staticmethod
    def _arg(value):
        if value is None:
            return {"type": "null"}
        if isinstance(value, int):
            return {"type": "integer", "value": str(value)}
        return {"type": "text", "value": str(value)}

    def _pipeline(self, statements):
        requests = [{"type": "execute", "stmt": {"sql": sql, "args": [self._arg(p) for p in params]}}
                    for sql, params in statements] + [{"type": "close"}]
        body = self.http.post(self.url + "/v2/pipeline", json={"baton": None, "requests": requests}).json()
        out = []
        for result in body["results"][:-1]:
            assert result["type"] == "ok", result
            res = result["response"]["result"]
            out.append([tuple(None if v["type"] == "null" else (int(v["value"]) if v["type"] == "integer"
                                                                  else v.get("value")) for v in row)
                        for row in res["rows"]])
        return out

    def columns(self, table):
        return {r[1]: r[2] for r in self.query(f"PRAGMA table_info({table})")}

    def query(self, sql, params=()):
        return self._pipeline([(sql, tuple(params))])[0]

    def run(self, statements):
        self._pipeline([("BEGIN", ()), *statements, ("COMMIT", ())])

    def close(self):
        self.http.close()


THREADS, MESSAGES, OM = "mastra_threads", "mastra_messages", "mastra_observational_memory"


class MastraWrites:
    """Mastra's writes on SQL, chosen at random from RNG; `step()` makes one and returns its name."""

    def __init__(self, sql: Sql, rng: random.Random):
        self.sql, self.rng = sql, rng
        self.cols = {t: sql.columns(t) for t in (THREADS, MESSAGES, OM)}
        self.clock = datetime(2027, 1, 1, tzinfo=UTC)
        self.n = 0
        self.first_round = list(self.WEIGHTS)   # every write kind once, in an order the seed shuffles
        rng.shuffle(self.first_round)
        self.ours: list[str] = []   # messages written here (their content is ours to change)

    # -- helpers -------------------------------------------------------------------------------

    def now(self) -> str:
        if self.rng.random() > 0.15:   # sometimes the same millisecond again
            self.clock += timedelta(milliseconds=self.rng.randint(1, 5000))
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def fresh_id(self, prefix: str) -> str:
        self.n += 1
        return f"{prefix}-live-{self.n}-{self.rng.randrange(10**6):06d}"

    def pick(self, sql: str, params=()):
        # sorted: PostgreSQL returns rows in no fixed order, and a seed must give one sequence of writes
        rows = sorted(self.sql.query(sql, params), key=repr)
        return self.rng.choice(rows) if rows else None

    def copy_row(self, table: str, source_id: str, values: dict) -> tuple[str, tuple]:
        """INSERT of TABLE's row SOURCE_ID copied with VALUES in place (a time's `…Z` twin follows it)."""
        cols = self.cols[table]
        exprs, params = [], []
        for col, kind in cols.items():
            base = col[:-1] if col.endswith("Z") and col[:-1] in values else col
            if base in values:
                exprs.append(self.sql.placeholder(kind))
                params.append(values[base])
            else:
                exprs.append(f'"{col}"')
        names = ", ".join(f'"{c}"' for c in cols)
        return (f"INSERT INTO {table} ({names}) SELECT {', '.join(exprs)} FROM {table} WHERE id = ?",
                (*params, source_id))

    def stamp(self, table: str, column: str = "updatedAt") -> str:
        """SET clause of a time column (and its twin on PostgreSQL) with one placeholder each."""
        cols = self.cols[table]
        out = f'"{column}" = {self.sql.placeholder(cols[column])}'
        if column + "Z" in cols:
            out += f', "{column}Z" = {self.sql.placeholder(cols[column + "Z"])}'
        return out

    def stamp_params(self, table: str, value: str, column: str = "updatedAt") -> tuple:
        return (value, value) if column + "Z" in self.cols[table] else (value,)

    def bump(self, thread_id: str, now: str) -> tuple[str, tuple]:
        return (f"UPDATE {THREADS} SET {self.stamp(THREADS)} WHERE id = ?", (*self.stamp_params(THREADS, now),
                                                                            thread_id))

    @staticmethod
    def content(text: str) -> str:
        return json.dumps({"format": 2, "parts": [{"type": "text", "text": text}], "content": text})

    def message_upsert(self, message_id: str, thread: tuple, text: str, created: str) -> tuple[str, tuple]:
        cols = self.cols[MESSAGES]
        names = ["id", "thread_id", "content", "role", "type", "createdAt", "resourceId"]
        values = [message_id, thread[0], self.content(text), self.rng.choice(["user", "assistant"]), "v2", created,
                  thread[1]]
        if "createdAtZ" in cols:
            names.append("createdAtZ")
            values.append(created)
        marks = ", ".join(self.sql.placeholder(cols[n]) for n in names)
        quoted = ", ".join(f'"{n}"' for n in names)
        return (f"INSERT INTO {MESSAGES} ({quoted}) VALUES ({marks}) ON CONFLICT (id) DO UPDATE SET "
                'thread_id = excluded.thread_id, content = excluded.content, role = excluded.role, '
                'type = excluded.type, "resourceId" = excluded."resourceId"', tuple(values))

    def text(self, length: int = 24) -> str:
        return "".join(self.rng.choice("abcdefghij") for _ in range(length))

    def a_thread(self):
        return self.pick(f'SELECT id, "resourceId" FROM {THREADS}')

    def our_message(self):
        if not self.ours:
            return None
        found = self.sql.query(f"SELECT id, thread_id FROM {MESSAGES} WHERE id = ?", (self.rng.choice(self.ours),))
        return found[0] if found else None

    # -- Mastra's writes ----------------------------------------------------------------------

    def save_message(self):
        thread = self.a_thread()
        if thread is None:
            return self.create_thread()
        mid = self.fresh_id("msg")
        now = self.now()
        self.sql.run([self.message_upsert(mid, thread, self.text(), now)])
        self.ours.append(mid)
        self.sql.run([self.bump(thread[0], self.now())])

    def upsert_same_length(self):
        found = self.our_message()
        if found is None:
            return self.save_message()
        thread = self.sql.query(f'SELECT id, "resourceId" FROM {THREADS} WHERE id = ?', (found[1],))
        if not thread:
            return self.save_message()
        self.sql.run([self.message_upsert(found[0], thread[0], self.text(), self.now())])
        self.sql.run([self.bump(found[1], self.now())])

    def upsert_moving(self):
        found, thread = self.our_message(), self.a_thread()
        if found is None or thread is None:
            return self.save_message()
        self.sql.run([self.message_upsert(found[0], thread, self.text(), self.now())])
        self.sql.run([self.bump(thread[0], self.now())])   # only the new thread's updatedAt, as Mastra does

    def update_message(self):
        found = self.our_message()
        if found is None:
            return self.save_message()
        now = self.now()
        self.sql.run([(f"UPDATE {MESSAGES} SET content = ? WHERE id = ?", (self.content(self.text()), found[0])),
                      self.bump(found[1], now)])

    def delete_messages(self):
        rows = self.sql.query(f"SELECT id, thread_id FROM {MESSAGES}")
        if not rows:
            return self.save_message()
        chosen = self.rng.sample(rows, min(len(rows), self.rng.randint(1, 3)))
        if self.sql.dialect == "sqlite" and self.rng.random() < 0.5:
            # the newest row: SQLite gives its rowid to the next insert again
            chosen = self.sql.query(f"SELECT id, thread_id FROM {MESSAGES} ORDER BY rowid DESC LIMIT 1")
        now = self.now()
        marks = ", ".join("?" * len(chosen))
        self.sql.run([(f"DELETE FROM {MESSAGES} WHERE id IN ({marks})", tuple(r[0] for r in chosen)),
                      *(self.bump(t, now) for t in {r[1] for r in chosen})])

    def create_thread(self):
        source = self.pick(f"SELECT id, \"resourceId\" FROM {THREADS}")
        now = self.now()
        tid = self.fresh_id("thread")
        resource = source[1] if source and self.rng.random() < 0.7 else self.fresh_id("res")
        if source is None:
            return
        self.sql.run([self.copy_row(THREADS, source[0], {"id": tid, "resourceId": resource, "title": self.text(8),
                                                         "createdAt": now, "updatedAt": now})])

    def update_thread(self):
        thread = self.a_thread()
        if thread is None:
            return self.create_thread()
        self.sql.run([(f"UPDATE {THREADS} SET title = ?, {self.stamp(THREADS)} WHERE id = ?",
                       (self.text(8), *self.stamp_params(THREADS, self.now()), thread[0]))])

    def delete_thread(self):
        thread = self.a_thread()
        if thread is None:
            return
        self.sql.run([(f"DELETE FROM {MESSAGES} WHERE thread_id = ?", (thread[0],)),
                      (f"DELETE FROM {THREADS} WHERE id = ?", (thread[0],))])

    def clone_thread(self):
        thread = self.a_thread()
        if thread is None:
            return
        now, tid = self.now(), self.fresh_id("clone")
        statements = [self.copy_row(THREADS, thread[0], {"id": tid, "createdAt": now, "updatedAt": now})]
        for (mid,) in self.sql.query(f"SELECT id FROM {MESSAGES} WHERE thread_id = ?", (thread[0],))[:30]:
            statements.append(self.copy_row(MESSAGES, mid, {"id": self.fresh_id("msg"), "thread_id": tid}))
        self.sql.run(statements)

    def om_generation(self):
        row = self.pick(f'SELECT id, "lookupKey", "generationCount" FROM {OM} o WHERE "generationCount" = '
                        f'(SELECT max("generationCount") FROM {OM} i WHERE i."lookupKey" = o."lookupKey")')
        if row is None:
            return self.om_for_thread()
        now = self.now()
        self.sql.run([self.copy_row(OM, row[0], {"id": self.fresh_id("om"), "generationCount": int(row[2]) + 1,
                                                 "activeObservations": "* " + self.text(40),
                                                 "observationTokenCount": self.rng.randint(0, 5000),
                                                 "createdAt": now, "updatedAt": now})])

    def om_update(self):
        row = self.pick(f"SELECT id FROM {OM}")
        if row is None:
            return self.om_for_thread()
        choice = self.rng.choice(["isObserving", "pendingMessageTokens", "activeObservations", "lastObservedAt"])
        value = {"isObserving": self.rng.randint(0, 1), "pendingMessageTokens": self.rng.randint(0, 40000),
                 "activeObservations": "* " + self.text(40), "lastObservedAt": self.now()}[choice]
        cols = self.cols[OM]
        if cols[choice] == "boolean":   # @mastra/pg's flags are BOOLEAN
            value = bool(value)
        sets = f'"{choice}" = {self.sql.placeholder(cols[choice])}'
        params = [value]
        if choice + "Z" in cols:
            sets += f', "{choice}Z" = {self.sql.placeholder(cols[choice + "Z"])}'
            params.append(value)
        self.sql.run([(f"UPDATE {OM} SET {sets}, {self.stamp(OM)} WHERE id = ?",
                       (*params, *self.stamp_params(OM, self.now()), row[0]))])

    def om_for_thread(self):
        source = self.pick(f"SELECT id FROM {OM} WHERE scope = 'thread'")
        thread = self.pick(f'SELECT id, "resourceId" FROM {THREADS} t WHERE NOT EXISTS (SELECT 1 FROM {OM} o '
                           "WHERE o.\"lookupKey\" = 'thread:' || t.id)")
        if source is None or thread is None:
            return
        now = self.now()
        self.sql.run([self.copy_row(OM, source[0], {"id": self.fresh_id("om"), "lookupKey": f"thread:{thread[0]}",
                                                    "threadId": thread[0], "resourceId": thread[1],
                                                    "generationCount": 0, "createdAt": now, "updatedAt": now})])

    def om_clear(self):
        row = self.pick(f'SELECT DISTINCT "lookupKey" FROM {OM}')
        if row is not None:
            self.sql.run([(f'DELETE FROM {OM} WHERE "lookupKey" = ?', (row[0],))])

    WEIGHTS: ClassVar[dict[str, float]] = {
        "save_message": 6, "upsert_same_length": 3, "upsert_moving": 1, "update_message": 2, "delete_messages": 2,
        "create_thread": 1, "update_thread": 1, "delete_thread": 1, "clone_thread": 1, "om_generation": 2,
        "om_update": 2, "om_for_thread": 1, "om_clear": 0.5}

    def step(self) -> str:
        """Make one write and return its name: each kind once first (a short sequence still has them all:
        drawn by weight alone, `om_clear`'s 0.5 of 23.5 was missing from a 96-step sequence), then by weight."""
        if self.first_round:
            name = self.first_round.pop(0)
        else:
            name = self.rng.choices(list(self.WEIGHTS), weights=list(self.WEIGHTS.values()))[0]
        getattr(self, name)()
        return name
