"""Check that an app's helper child answers: `python packaging/smoke_helper.py APP DB` (packaging/smoke.sh).

Starts `APP --studio-child helper` (the frozen app's helper process, studio.ui.helper_process),
sends it one request (the thread listing of DB) and compares the reply with the listing computed
in this process. Exit 0 when they match, 1 otherwise.
"""

from __future__ import annotations

import pickle
import subprocess
import sys


def main(app: str, db: str) -> int:
    """Run one helper request against APP; return 0 when its listing of DB equals ours."""
    from studio.store.memory_store import MemoryStore
    from studio.ui.loaders import load_listing

    proc = subprocess.Popen([app, "--studio-child", "helper"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        pickle.dump((db, 1, load_listing, ()), proc.stdin)
        proc.stdin.flush()
        ok, listing = pickle.load(proc.stdout)
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    if not ok:
        print(f"smoke_helper: the helper failed: {listing}", file=sys.stderr)
        return 1
    with MemoryStore.open(db) as store:
        expected = load_listing(store)
    got = ([r.thread.id for r in listing.rows], listing.resources)
    want = ([r.thread.id for r in expected.rows], expected.resources)
    if got != want or not got[0]:
        print(f"smoke_helper: the helper's listing {got} differs from {want}", file=sys.stderr)
        return 1
    print(f"smoke_helper: helper process of {app} listed {len(got[0])} threads")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
