"""The cross-session cache of per-thread results (no Qt): an unchanged store reopens without recomputing.

One file per store under `studio.paths.user_cache_dir() / "thread-results"` (never beside the
user's data), named by a hash of the store's identity (a file's real path; a server's redacted
display): a line of JSON (version, identity, the entries, and `texts`: the bytes that follow), then
the entries' findings texts (UTF-8) one after the other. It holds, per thread, a `ThreadResult` (status,
message count, findings) with its findings packed: the JSON text of the list (in the file, [start,
length] in bytes of the texts) and its counts per severity (`PackedFindings`). Reading the file parses the
entries but no finding (two thirds of the file on the benchmark store), and a reopen hands the texts
on to the studio, which decodes a thread's findings when they are read (a badge needs the counts
only). Statuses read back share their equal settings and flags (`status_from_json`). Each entry has:

* `digest`: `thread_results.thread_digests` of the rows it was computed from. A result is reused
  when the thread's digest is the same (any change to the thread's rows changes it, a message
  edited in place to a text of the same length included);
* `stamp`: the file's stamp when the result was last computed or checked (`file_stamp`: device,
  inode, size and mtime of the file and its -wal, SQLite's file change counter, the WAL header).
  While a file's stamp is what an entry holds, the entry is reused without reading a row: SQLite
  changes the file's mtime and its change counter or WAL on every commit, and a replaced file
  (another inode, size or mtime) gets another stamp. Servers have no stamp: digests decide.

A save costs what changed: a live refresh's few results are appended to the store's journal file
(`NAME.journal`, one JSON line a save) instead of rewriting the whole cache (20 MB for 5,000 threads,
~0.3 CPU-s a commit beside an agent); a load applies the journal's lines after the file; a save that
changes many entries, or finds the journal past JOURNAL_LIMIT_BYTES, rewrites the file and removes
the journal. An entry only ever stands for the rows its digest names, so a line applied twice or out
of date can make a result be computed again, never a wrong one be shown.

Everything here is best effort: a cache that is missing, unreadable, corrupt, of another version or
unwritable is ignored (its results are computed again) and nothing is reported to the user; a journal
line cut short by a crash is skipped. A findings text is checked for its shape ("[…]") when read, and
decoded when used: by `thread_results` at once (a text that does not decode is no result), by the
studio's reopen when the findings are read (one damaged in place, the file's shape intact, lists none).
CACHE_VERSION changes whenever what a result holds or how it is computed changes.
"""

from __future__ import annotations

import contextlib
import dataclasses
import hashlib
import json
import os
from dataclasses import dataclass
from pathlib import Path

from studio import __version__
from studio.common.om_settings import OMSettings, ThresholdRange
from studio.engine.status import FlagState, ThreadStatus
from studio.store.file_head import read_head

TYPE_CHECKING = False  # typing.TYPE_CHECKING without importing typing
if TYPE_CHECKING:
    from studio.store.memory_store import MemoryStore

#: The shape and meaning of a cached result; a file of another version is ignored.
CACHE_VERSION = 3
#: Bytes of the SQLite header / WAL header read for a stamp (the change counter is at 24..27).
HEADER_BYTES = 100
WAL_HEADER_BYTES = 32
#: A journal past this size (bytes) is folded into the cache file at the next save.
JOURNAL_LIMIT_BYTES = 1 << 20
#: A save that changed more entries than this rewrites the file (an open's round) instead of journaling.
JOURNAL_MAX_ENTRIES = 64
#: The fields `status_to_json` writes: a status's, its settings', a flag's.
_STATUS_FIELDS = tuple(f.name for f in dataclasses.fields(ThreadStatus))
_SETTINGS_FIELDS = tuple(f.name for f in dataclasses.fields(OMSettings))
_FLAG_FIELDS = tuple(f.name for f in dataclasses.fields(FlagState))


def file_stamp(path: Path | None) -> list | None:
    """Return the stamp of the SQLite file at PATH (see module docstring), or None (no file, unreadable).

    Reads the first HEADER_BYTES of the file and WAL_HEADER_BYTES of its -wal, without locking either.
    """
    if path is None:
        return None
    try:
        st = os.stat(path)
        header = read_head(path, HEADER_BYTES)   # never a close of the database: see studio.store.file_head
        stamp = [st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns, header.hex()]
        wal = Path(f"{path}-wal")
        # an empty -wal holds nothing (a reader's open creates one, the last close deletes it): no part of the stamp
        if wal.exists() and os.stat(wal).st_size > 0:
            wst = os.stat(wal)
            with open(wal, "rb") as f:
                stamp += [wst.st_ino, wst.st_size, wst.st_mtime_ns, f.read(WAL_HEADER_BYTES).hex()]
        return stamp
    except OSError:
        return None


@dataclass
class PackedFindings:
    """One thread's health findings as the cache keeps them: TEXT, the JSON text (UTF-8 bytes) of the list of
    `Finding.to_json()` dicts, and SEVERITIES, {severity: findings} (what a badge shows without decoding)."""

    severities: dict[str, int]
    text: bytes

    @classmethod
    def pack(cls, findings: list[dict]) -> PackedFindings:
        """Return FINDINGS packed. Raises TypeError/ValueError for a value JSON or UTF-8 cannot hold."""
        severities: dict[str, int] = {}
        for f in findings:
            severities[f["severity"]] = severities.get(f["severity"], 0) + 1
        return cls(severities, json.dumps(findings, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))

    def decode(self) -> list[dict]:
        """Return the findings (a text that is not a list of dicts, which only a damaged cache holds, is [])."""
        found = self.decoded()
        return [] if found is None else found

    def decoded(self) -> list[dict] | None:
        """Return the findings, or None when the text is not a list of dicts."""
        try:
            found = json.loads(self.text)
        except ValueError:
            return None
        return found if isinstance(found, list) and all(isinstance(f, dict) for f in found) else None


def status_to_json(status: ThreadStatus) -> dict:
    """Return every field of STATUS as JSON values (settings and flags as objects): `dataclasses.asdict(status)`.

    Made field by field (asdict's recursion and deep copies cost 50 us a status: 0.26 CPU-s of a first open
    of 5,000 threads): the status's own fields are numbers, text and booleans; the settings' are those or a
    ThresholdRange (an object of two numbers); a flag's are those too. Each call makes new dicts."""
    out = {name: getattr(status, name) for name in _STATUS_FIELDS}
    settings = {name: getattr(status.settings, name) for name in _SETTINGS_FIELDS}
    for name in ("message_tokens", "reflection_tokens"):
        if isinstance(settings[name], ThresholdRange):
            settings[name] = {"min": settings[name].min, "max": settings[name].max}
    out["settings"] = settings
    out["flags"] = [{name: getattr(f, name) for name in _FLAG_FIELDS} for f in status.flags]
    return out


def status_from_json(data: dict, shared: dict | None = None) -> ThreadStatus:
    """Return the ThreadStatus that `status_to_json` wrote. Raises TypeError/KeyError/ValueError on another shape.

    SHARED: a dict kept across calls, in which equal settings (frozen) and flags are made once and shared by
    the statuses (5,000 statuses of a few configurations: fewer objects to make, pickle and unpickle)."""
    shared = {} if shared is None else shared
    key = ("settings", str(data["settings"]))
    settings = shared.get(key)
    if settings is None:
        fields = dict(data["settings"])
        for name in ("message_tokens", "reflection_tokens"):
            if isinstance(fields[name], dict):
                fields[name] = ThresholdRange(**fields[name])
        settings = shared[key] = OMSettings(**fields)
    flags = []
    for f in data["flags"]:
        key = ("flag", f["name"], f["set"], f["stale"], f["age_ms"], len(f))
        flag = shared.get(key)
        if flag is None:
            flag = shared[key] = FlagState(**f)
        flags.append(flag)
    return ThreadStatus(**{**data, "settings": settings, "flags": flags})


class ResultCache:
    """The cached results of one store (see module docstring); load on first use, `put` writes the file."""

    def __init__(self, file: Path, identity: str, store_path: Path | None):
        self.file = file
        self._identity = identity
        self._store_path = store_path
        self.journal = file.with_name(f"{file.name}.journal")
        self._entries: dict[str, dict] | None = None
        self._texts = b""   # the findings texts of the file's entries, one after the other (see `_load`)
        self._store: dict | None = None   # the store-wide findings and the stamp they hold under (`store_findings`)
        self._store_dirty = False
        self._dirty = False
        #: Ids whose entries changed since the last save (None: too many to journal; rewrite the file).
        self._changed: set[str] | None = set()
        #: Results `put` has received in this process (computed afresh, stored or not).
        self.computed = 0
        self._shared: dict = {}   # settings and flags the statuses `valid` returns share (`status_from_json`)

    @classmethod
    def for_store(cls, store: MemoryStore, directory: Path | None = None) -> ResultCache:
        """Return the cache of STORE, in DIRECTORY (default: `user_cache_dir() / "thread-results"`)."""
        from studio.paths import user_cache_dir

        path = store.location.path
        identity = f"file:{os.path.realpath(path)}" if path is not None else f"{store.dialect}:{store.location.display}"
        directory = user_cache_dir() / "thread-results" if directory is None else directory
        name = hashlib.sha256(identity.encode("utf-8", "surrogatepass")).hexdigest()[:32]
        return cls(directory / f"{name}.json", identity, None if path is None else Path(path))

    def stamp_now(self) -> list | None:
        """Return the store's stamp now (`file_stamp`; None for a server)."""
        return file_stamp(self._store_path)

    def load(self) -> int:
        """Read the cache file (and its journal) now, if not read yet; return how many entries it holds."""
        return len(self._load())

    def _load(self) -> dict[str, dict]:
        if self._entries is None:
            self._entries = {}
            try:
                raw = self.file.read_bytes()
                head, _, texts = raw.partition(b"\n")
                data = json.loads(head)
                if (isinstance(data, dict) and data.get("version") == [CACHE_VERSION, __version__]
                        and data.get("identity") == self._identity and isinstance(data.get("threads"), dict)):
                    self._texts = texts
                    if data.get("texts") == len(texts):   # not cut short
                        self._entries = data["threads"]
                        self._store = data.get("store")
                        self._apply_journal(self._entries)
            except (OSError, ValueError):   # missing or corrupt: start empty
                pass
            if not self._entries:   # the journal goes with the file it extends: the next save writes a file
                self._changed = None
                if self._store is None:   # nothing read
                    self._texts = b""
        return self._entries

    def _text_of(self, entry: dict) -> bytes | None:
        """Return ENTRY's findings text as UTF-8: inline (`put`, the journal: a str) or [start, length] in the
        file's texts (bytes, never decoded here: the studio decodes a thread's findings when it reads them)."""
        where = entry.get("findings")
        if isinstance(where, str):
            try:
                return where.encode("utf-8")
            except UnicodeEncodeError:
                return None
        if type(where) is list and len(where) == 2:
            start, length = where
            if type(start) is int and type(length) is int and start >= 0 and length >= 0 \
                    and start + length <= len(self._texts):
                return self._texts[start:start + length]
        return None

    def _inline_of(self, entry: dict) -> dict | None:
        """Return ENTRY with its findings text inline (a str: a journal line), or None when it has none."""
        text = self._text_of(entry)
        try:
            return None if text is None else {**entry, "findings": text.decode("utf-8")}
        except UnicodeDecodeError:
            return None

    def _packed_of(self, entry: dict) -> PackedFindings | None:
        """Return ENTRY's findings packed, or None when they are not shaped as `put` writes them."""
        text, severities = self._text_of(entry), entry.get("severities")
        if not (text is not None and text.startswith(b"[") and text.endswith(b"]") and type(severities) is dict
                and all(type(v) is int for v in severities.values())):   # JSON object keys are strings
            return None
        return PackedFindings(severities, text)

    def _apply_journal(self, entries: dict[str, dict]) -> None:
        """Apply the journal's lines (saves since the file was last written) to ENTRIES, in order; a line
        that does not decode, or names another version or store, is skipped."""
        try:
            lines = self.journal.read_bytes().splitlines()
        except OSError:
            return
        for line in lines:
            try:
                data = json.loads(line)
            except ValueError:
                continue
            if (isinstance(data, dict) and data.get("version") == [CACHE_VERSION, __version__]
                    and data.get("identity") == self._identity and isinstance(data.get("threads"), dict)):
                entries.update(data["threads"])
                if "store" in data:
                    self._store = data["store"]

    def has(self, thread_id: str) -> bool:
        """Return True when the cache holds an entry for THREAD_ID (valid or not)."""
        return isinstance(self._load().get(thread_id), dict)

    def valid(self, thread_id: str, *, stamp: list | None = None, digest: str | None = None,
              packed: bool = False) -> dict | None:
        """Return the cached result of THREAD_ID when it still holds: its entry's stamp is STAMP (not None),
        or its digest is DIGEST (not None); else None (an entry that does not decode is None too).

        The result: {"status": ThreadStatus or None, "messages": int, "findings": [dicts], "digest": str,
        "uncountable": str or None}; PACKED: "findings" is a `PackedFindings` (not decoded).
        """
        entry = self._load().get(thread_id)
        if not isinstance(entry, dict) or entry.get("digest") is None:
            return None
        if not ((stamp is not None and entry.get("stamp") == stamp)
                or (digest is not None and entry.get("digest") == digest)):
            return None
        try:
            status = entry["status"]
            findings = self._packed_of(entry)
            if findings is None:
                return None
            if not packed:   # decoded here: a text that does not decode is no result
                findings = findings.decoded()
                if findings is None:
                    return None
            uncountable = entry.get("uncountable")
            if uncountable is not None and not isinstance(uncountable, str):
                return None
            return {"status": None if status is None else status_from_json(status, self._shared),
                    "messages": int(entry["messages"]), "findings": findings, "digest": entry["digest"],
                    "uncountable": uncountable}
        except (KeyError, TypeError, ValueError, AttributeError):
            return None

    def store_findings(self, stamp: list | None) -> list[dict] | None:
        """Return the store-wide findings `put_store_findings` stored under STAMP (not None), else None."""
        self._load()
        entry = self._store
        if stamp is None or not isinstance(entry, dict) or entry.get("stamp") != stamp:
            return None
        found = entry.get("findings")
        return found if isinstance(found, list) and all(isinstance(f, dict) for f in found) else None

    def put_store_findings(self, findings: list[dict], stamp: list) -> None:
        """Store the store-wide FINDINGS of the file under STAMP, in memory (`save` writes them). Only findings that
        do not depend on the clock belong here (see `studio.app.open_results.load_store_findings`)."""
        self._load()
        self._store = {"stamp": stamp, "findings": findings}
        self._store_dirty = self._dirty = True

    def put(self, results: dict[str, dict], stamp: list | None, checked: list[str] = ()) -> None:
        """Store RESULTS ({thread id: a result shaped as `valid` returns it}; those without a digest are
        left out) under STAMP and mark the entries of CHECKED (ids whose digest was found unchanged) with
        STAMP too, in memory; `save` writes them."""
        entries = self._load()
        self.computed += len(results)
        touched: list[str] = []
        for tid in checked:
            if isinstance(entries.get(tid), dict) and entries[tid].get("stamp") != stamp:
                entries[tid]["stamp"] = stamp
                touched.append(tid)
        for tid, r in results.items():
            if r["digest"]:
                try:
                    findings = PackedFindings.pack(r["findings"])
                except (TypeError, ValueError, KeyError):   # a value JSON cannot hold: computed each time
                    continue
                entries[tid] = {"digest": r["digest"], "stamp": stamp, "messages": r["messages"],
                                "status": None if r["status"] is None else status_to_json(r["status"]),
                                "findings": findings.text.decode("utf-8"), "severities": findings.severities,
                                "uncountable": r.get("uncountable")}
                touched.append(tid)
        if touched:
            self._dirty = True
            if self._changed is not None:
                self._changed.update(touched)
                if len(self._changed) > JOURNAL_MAX_ENTRIES:
                    self._changed = None

    def save(self) -> None:
        """Write the entries `put` changed (nothing when none changed): up to JOURNAL_MAX_ENTRIES of them appended to
        the journal as one line (see the module docstring), else the whole file rewritten and the journal
        removed. A write that fails is ignored."""
        if not self._dirty:
            return
        self._dirty = False
        entries = self._load()
        changed, self._changed = self._changed, set()
        store_dirty, self._store_dirty = self._store_dirty, False
        journal_size = self._size(self.journal) or 0
        if changed is not None and self._size(self.file) is not None and journal_size < JOURNAL_LIMIT_BYTES:
            # findings inline: a line never points into a file another session may rewrite meanwhile
            line = {"version": [CACHE_VERSION, __version__], "identity": self._identity,
                    "threads": {tid: inline for tid in sorted(changed)
                                if tid in entries and (inline := self._inline_of(entries[tid])) is not None}}
            if store_dirty:
                line["store"] = self._store
            try:
                with open(self.journal, "a", encoding="utf-8") as out:
                    out.write(json.dumps(line, ensure_ascii=False, separators=(",", ":")) + "\n")
                return
            except (OSError, ValueError, TypeError):   # unwritable: the whole file below
                pass
        texts: list[bytes] = []
        at = 0
        threads = {}
        for tid, entry in entries.items():
            blob = self._text_of(entry)
            if blob is None:   # a text UTF-8 cannot hold (a lone surrogate): computed again next time
                continue
            threads[tid] = {**entry, "findings": [at, len(blob)]}
            texts.append(blob)
            at += len(blob)
        data = {"version": [CACHE_VERSION, __version__], "identity": self._identity, "threads": threads,
                "texts": at, "store": self._store}
        tmp = self.file.with_name(f"{self.file.name}.{os.getpid()}.tmp")
        try:
            self.file.parent.mkdir(parents=True, exist_ok=True)
            with open(tmp, "wb") as out:
                out.write(json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))
                out.write(b"\n")
                out.writelines(texts)
            os.replace(tmp, self.file)
            self.journal.unlink(missing_ok=True)   # folded into the file
        except (OSError, ValueError, TypeError):   # unwritable (or a value JSON cannot hold): keep computing
            with contextlib.suppress(OSError):
                tmp.unlink(missing_ok=True)

    @staticmethod
    def _size(path: Path) -> int | None:
        """Return the size (bytes) of PATH (the cache file or its journal), or None when it is missing or cannot
        be looked at (a folder this user may not search: no journal is then written beside the file, and the
        whole-file write fails quietly as any unwritable cache does)."""
        try:
            return os.stat(path).st_size
        except OSError:
            return None
