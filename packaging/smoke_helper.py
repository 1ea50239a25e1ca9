"""Check that an app's helper child answers: `python packaging/smoke_helper.py APP DB` (packaging/smoke.sh).

Starts `APP --studio-child helper` (the frozen app's helper process, studio.app.helper_process),
sends it two requests (the thread listing of DB, then the What-if replay of its first thread with an
OM record, with the stored settings) and compares the replies with what this process computes.
Exit 0 when they match, 1 otherwise.
"""

from __future__ import annotations

import pickle
import subprocess
import sys


def main(app: str, db: str) -> int:
    """Run one helper request against APP; return 0 when its listing of DB equals ours."""
    from studio.app.helper_process import CANCEL
    from studio.app.listing import load_listing
    from studio.engine.timeline_cache import load_timeline
    from studio.engine.whatif import WhatIfSettings
    from studio.engine.whatif_chart import replay_in_store, replay_packed
    from studio.store import open_store

    with open_store(db) as store:
        thread_id = next(r.thread.id for r in load_listing(store).rows if r.has_om)
        timeline = load_timeline(store, thread_id)
    settings = WhatIfSettings.from_record(timeline.generations[-1])
    requests = [(1, db, 1, load_listing, (), {}),
                (2, db, 1, replay_in_store, (thread_id, None, settings, None, None, None, CANCEL), {})]
    replies = []
    proc = subprocess.Popen([app, "--studio-child", "helper"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        for request in requests:   # the protocol: (seq, path, generation, fn, args, secrets) -> (seq, ok, value)
            pickle.dump(request, proc.stdin)
            proc.stdin.flush()
            replies.append(pickle.load(proc.stdout))
    finally:
        proc.stdin.close()
        proc.wait(timeout=30)
    (_, ok, listing), (_, replay_ok, replay) = replies
    if not ok or not replay_ok:
        print(f"smoke_helper: the helper failed: {listing if not ok else replay}", file=sys.stderr)
        return 1
    here = replay_packed(timeline, settings)
    if replay.point_columns != here.point_columns or replay.event_columns != here.event_columns:
        print("smoke_helper: the helper's What-if replay differs from this process's", file=sys.stderr)
        return 1
    with open_store(db) as store:
        expected = load_listing(store)
    got = ([r.thread.id for r in listing.rows], listing.resources)
    want = ([r.thread.id for r in expected.rows], expected.resources)
    if got != want or not got[0]:
        print(f"smoke_helper: the helper's listing {got} differs from {want}", file=sys.stderr)
        return 1
    print(f"smoke_helper: helper process of {app} listed {len(got[0])} threads and replayed {thread_id} "
          f"({replay.n_points} points, {replay.n_events} events)")
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:3]))
