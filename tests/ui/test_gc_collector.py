"""The studio's GUI-thread garbage collector: young cycles freed, full collections only when the old generation grew."""

from __future__ import annotations

import gc
import weakref

from studio.ui.app import application


class _Node:
    def __init__(self):
        self.me = self   # a reference cycle: only the cyclic collector frees it


def _full_collections() -> int:
    return gc.get_stats()[2]["collections"]


def _age(collector) -> None:
    """Let generation-1 and generation-0 collections pass (as allocations would): a full collection is due by count."""
    for _ in range(collector.threshold[2] + 1):
        gc.collect(1)
    for _ in range(collector.threshold[1] + 1):
        gc.collect(0)
    _, l1, l2 = gc.get_count()
    assert l1 >= collector.threshold[1] and l2 >= collector.threshold[2]


def _allocate_young(n: int) -> list:
    return [[] for _ in range(n)]   # containers the collector tracks


def test_young_cycles_are_collected_on_the_gui_thread(qapp):
    collector = application()._studio_gc
    assert not gc.isenabled()
    node = _Node()
    ref = weakref.ref(node)
    del node
    keep = _allocate_young(collector.threshold[0] + 50)
    collector.check()
    assert ref() is None
    del keep


def test_no_full_collection_while_the_old_generation_barely_grew(qapp):
    """pyqtgraph's collector ran a full collection each time ten generation-1 collections had passed:
    with a big thread's timeline loaded, ~300 ms on the GUI thread every few seconds."""
    collector = application()._studio_gc
    collector.collect_all()
    _age(collector)
    keep = _allocate_young(collector.threshold[0] + 50)
    before = _full_collections()
    collector.check()
    assert _full_collections() == before
    del keep


def test_a_full_collection_once_the_old_generation_grew_by_a_quarter(qapp):
    collector = application()._studio_gc
    collector.collect_all()
    old = len(gc.get_objects(generation=2))
    grown = [_Node() for _ in range(old // 4 + 1000)]   # long-lived now: they survive into generation 2
    collector.collect_young()
    assert collector.promoted > old // 4
    _age(collector)
    keep = _allocate_young(collector.threshold[0] + 50)
    before = _full_collections()
    collector.check()
    assert _full_collections() == before + 1
    del grown, keep


def test_a_check_never_lists_the_oldest_generation(qapp, monkeypatch):
    """Listing the oldest generation to see whether it grew took 20-100 ms on the GUI thread with a big
    thread's timeline loaded, at every due generation-1 collection: the collector counts promotions instead."""
    collector = application()._studio_gc
    collector.collect_all()
    _age(collector)
    listed = []
    real = gc.get_objects
    monkeypatch.setattr(gc, "get_objects", lambda generation=None: listed.append(generation) or real(generation))
    keep = _allocate_young(collector.threshold[0] + 50)
    before = _full_collections()
    collector.check()
    assert _full_collections() == before and 2 not in listed and None not in listed
    del keep


def test_a_burst_of_survivors_is_frozen_not_scanned(qapp):
    """A big thread's timeline arriving left ~85,000 objects in generation 1: scanning them took 30-35 ms
    on the GUI thread. A generation 1 that large is frozen (never scanned again) after a generation-0
    pass has freed the new garbage; it still counts as promoted for the full-collection rule."""
    from studio.ui.gc_collector import FREEZE_MIN_OBJECTS

    collector = application()._studio_gc
    collector.collect_all()
    burst = _allocate_young(FREEZE_MIN_OBJECTS + 100)
    gc.collect(0)                       # what the timer's generation-0 passes do: survivors reach generation 1
    assert len(gc.get_objects(generation=1)) >= FREEZE_MIN_OBJECTS
    node = _Node()                      # new garbage: a cycle in generation 0
    ref = weakref.ref(node)
    del node
    frozen_before, promoted_before = gc.get_freeze_count(), collector.promoted
    scanned = gc.get_stats()[1]["collections"]
    collector.collect_young()
    assert ref() is None                                  # the young cycle was freed
    assert gc.get_stats()[1]["collections"] == scanned    # generation 1 was not scanned
    assert gc.get_freeze_count() >= frozen_before + len(burst)
    assert len(gc.get_objects(generation=1)) == 0
    assert collector.promoted >= promoted_before + len(burst)
    del burst


def test_a_small_generation_one_is_still_scanned(qapp):
    collector = application()._studio_gc
    collector.collect_all()
    keep = _allocate_young(1000)
    gc.collect(0)
    node = _Node()
    gc.collect(0)                       # the cycle reaches generation 1 alive (still referenced)
    ref = weakref.ref(node)
    del node                            # garbage now, in generation 1
    frozen_before = gc.get_freeze_count()
    collector.collect_young()
    assert ref() is None and gc.get_freeze_count() == frozen_before
    del keep
