"""Which database pages a WAL file's frames wrote since a position (no Qt, no SQL: the file's bytes).

A live refresh of a file in WAL mode asks whether the commits since its last marks wrote any page of
a table (the OM table, whose rows are large: reading it on every refresh cost most of the refresh)
before reading that table. The WAL answers it: every frame of the -wal names the page it writes.

The format (sqlite.org/fileformat2.html#walformat, big-endian): a 32-byte header (magic, version,
page size, checkpoint sequence, salt-1, salt-2, checksums), then frames of a 24-byte header (page
number, the database size in pages for a commit frame else 0, salt-1, salt-2, checksums) and the
page. A frame belongs to the WAL's current generation when its salts equal the header's: a WAL
restarted after a checkpoint gets new salts and is written again from its start, so frames of the
generation before that were not overwritten yet keep the old salts and are not counted. Frames
past the last commit frame belong to a transaction not committed (or rolled back): they are looked
at (a page they name counts as written: more reads, never fewer) but no position stops after them.

A position (`WalPosition`) is the header's salts and a number of frames. `wal_position(path)` is
where the WAL ends now; `pages_since(path, position)` the pages the frames after POSITION name,
or None when that cannot be told (the WAL was restarted or truncated since: its frames were
checkpointed into the main file, pages unknown). Checksums are not verified: a frame whose salts
match but whose bytes are torn (a writer died mid-frame) only adds a page to the answer.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

__all__ = ["WalPosition", "pages_since", "wal_position"]

_MAGICS = (0x377F0682, 0x377F0683)
_HEADER = struct.Struct(">IIIIII")        # magic, version, page size, checkpoint sequence, salt-1, salt-2
_FRAME = struct.Struct(">IIII")           # page number, database size after commit (0: not a commit), salts
_HEADER_SIZE = 32
_FRAME_HEADER_SIZE = 24


@dataclass(frozen=True)
class WalPosition:
    """A point in a WAL: SALTS (salt-1, salt-2 of its header; None: no WAL or an empty one), FRAMES (frames of
    that generation before the point), PAGE_SIZE (bytes), and LAST_START: where the last committed
    transaction before the point starts (frames) — the point to look again from when that transaction
    may have been in flight (see `studio.store.live_changes`)."""

    salts: tuple[int, int] | None
    frames: int
    page_size: int = 0
    last_start: int = 0

    def held_back(self) -> WalPosition:
        """The same WAL with its last transaction not counted yet (it is looked at again next time)."""
        return WalPosition(self.salts, self.last_start, self.page_size, self.last_start)


def _wal_path(path: str | os.PathLike[str]) -> Path:
    return Path(os.fsdecode(os.fspath(path)) + "-wal")


def _header(fd: int) -> tuple[tuple[int, int], int] | None:
    raw = os.pread(fd, _HEADER_SIZE, 0)
    if len(raw) < _HEADER_SIZE:
        return None
    magic, _version, page_size, _seq, salt1, salt2 = _HEADER.unpack_from(raw)
    if magic not in _MAGICS or page_size < 512 or page_size & (page_size - 1):
        return None
    return (salt1, salt2), page_size


def _frames(fd: int, salts: tuple[int, int], page_size: int, start: int):
    """Yield (index, page number, is a commit) of the frames of generation SALTS from frame START on."""
    size = os.fstat(fd).st_size
    index = start
    while True:
        offset = _HEADER_SIZE + index * (_FRAME_HEADER_SIZE + page_size)
        if offset + _FRAME_HEADER_SIZE + page_size > size:
            return
        raw = os.pread(fd, _FRAME.size, offset)
        if len(raw) < _FRAME.size:
            return
        page, commit, salt1, salt2 = _FRAME.unpack(raw)
        if (salt1, salt2) != salts:
            return
        yield index, page, commit != 0
        index += 1


def _scan(path, start: int, salts: tuple[int, int] | None) -> tuple[WalPosition, set[int]] | None:
    """Read the WAL of PATH from frame START of generation SALTS (None: whatever generation it has, from 0).

    Returns (the position after its last commit frame, the pages of the frames read), or None when the
    WAL's generation is not SALTS (restarted or truncated since).
    """
    try:
        fd = os.open(_wal_path(path), os.O_RDONLY)
    except FileNotFoundError:
        return None if salts is not None else (WalPosition(None, 0), set())
    try:
        head = _header(fd)
        if head is None:
            return None if salts is not None else (WalPosition(None, 0), set())
        now_salts, page_size = head
        if salts is not None and now_salts != salts:
            return None
        pages: set[int] = set()
        end = last_start = start
        for index, page, commit in _frames(fd, now_salts, page_size, start):
            pages.add(page)
            if commit:
                last_start, end = end, index + 1
        return WalPosition(now_salts, end, page_size, last_start), pages
    finally:
        os.close(fd)


def wal_position(path: str | os.PathLike[str]) -> WalPosition:
    """Return where the WAL of the database PATH ends now (after its last commit frame).

    WalPosition(None, 0) when there is no -wal or it has no valid header yet. Reads the frame headers
    (24 bytes each) of the WAL's current generation. Raises OSError when the -wal cannot be read.
    """
    got = _scan(path, 0, None)
    assert got is not None   # no salts asked for: always an answer
    return got[0]


def pages_since(path: str | os.PathLike[str], position: WalPosition) -> tuple[set[int], WalPosition] | None:
    """Return (the page numbers the WAL frames after POSITION name, where the WAL ends now), or None when
    it cannot be told: POSITION had no WAL header (its generation is unknown), or the WAL was restarted
    or truncated since (its frames went into the main file). Reads only the frame headers after POSITION.
    Raises OSError when the -wal cannot be read.
    """
    if position.salts is None:
        return None
    got = _scan(path, position.frames, position.salts)
    if got is None:
        return None
    end, pages = got
    if end.frames < position.frames:   # fewer frames than before in the same generation: cannot happen; be safe
        return None
    return pages, end
