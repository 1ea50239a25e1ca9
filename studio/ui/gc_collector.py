"""Python's cyclic garbage collector, run on the GUI thread only, with CPython's own rule for full collections.

Automatic collection runs in whichever thread happens to allocate; when it frees a cycle that holds
a Qt object from a worker, Qt destroys the QObject off its thread (a deadlock, or a crash). So the
studio disables automatic collection and collects on a GUI-thread timer. pyqtgraph's
`GarbageCollector` does the same but runs a full (generation 2) collection every time ten
generation-1 collections have passed; a full collection visits every live object (~300 ms with
a 20,000-message thread's timeline and replay loaded: a stall each time). CPython itself runs a
full collection only when the objects that reached the oldest generation since the last one
exceed a quarter of those it kept then; `GuiThreadCollector` applies that rule too. It counts the
objects its generation-1 collections promote (the young generations are small) instead of listing
the oldest generation, which took 20–100 ms on the GUI thread with such a timeline loaded.

A burst of survivors (a big thread's timeline arriving: 20,000 messages and 20,000 chart points,
~85,000 objects in the young generations) made one generation-1 collection scan them all: 30–35 ms
on the GUI thread, landing in whatever the user did next (turning What-if on). Young generations
of `FREEZE_MIN_OBJECTS` or more are therefore moved out of the collector's reach (`gc.freeze`, as
the Overview does with a big listing) after a generation-0 collection has freed the new garbage:
that is data refcounting frees, and CPython would only have promoted it to the oldest generation.

`collect_garbage_on_gui_thread` installs the collector on the application (`ensure_gui_thread_gc`
on whichever QApplication a chart is made on); `WeakMethod` gives pyqtgraph a callable that keeps
no widget alive, so no cycle is made in the first place.
"""

from __future__ import annotations

import gc
import weakref

from PySide6.QtCore import QCoreApplication, QObject, QTimer

#: Young generations this large (objects) are frozen, not scanned: a scan of 20,000 objects takes
#: ~8 ms on the GUI thread, of 85,000 (a 20,000-message thread's timeline) 30–35 ms.
FREEZE_MIN_OBJECTS = 20_000


class GuiThreadCollector(QObject):
    """Disable automatic collection and collect on a GUI-thread timer every INTERVAL_S seconds.

    Young generations are collected at CPython's thresholds (`gc.get_threshold()`); the oldest only
    when the objects promoted into it since the last full collection exceed a quarter of those that
    full collection kept (CPython's long-lived rule; `promoted` counts what this collector moved).
    """

    def __init__(self, interval_s: float, parent: QObject | None = None):
        super().__init__(parent)
        self.threshold = gc.get_threshold()
        self.promoted = 0   # objects moved into the oldest generation since the last full collection
        self._long_lived = len(gc.get_objects(generation=2))
        gc.disable()
        self.timer = QTimer(self)
        self.timer.timeout.connect(self.check)
        self.timer.start(int(interval_s * 1000))

    def check(self) -> None:
        """Collect what is due now (called by the timer; cheap when nothing is)."""
        t0, t1, t2 = self.threshold
        l0, l1, l2 = gc.get_count()
        if l0 <= t0:
            return
        if l0 >= FREEZE_MIN_OBJECTS:
            # a burst (a listing of 5,000 threads arrived from a worker): scanning it took 30–40 ms on the
            # GUI thread. Its rows are data refcounting frees; it is moved out of reach as it is (a cycle
            # made in the same half second stays uncollected: a bounded leak, not a stall)
            gc.freeze()
            self.promoted += l0
            return
        if l1 < t1:
            gc.collect(0)
        elif l2 < t2 or not self._full_due():
            self.collect_young()
        else:
            self.collect_all()

    def collect_young(self) -> int:
        """Collect generations 0 and 1 now (their survivors move to the oldest); return the unreachable found.

        When generation 1 holds `FREEZE_MIN_OBJECTS` or more (a burst of long-lived data), only
        generation 0 is collected and the survivors are frozen (`gc.freeze`: no later collection
        scans them; refcounting still frees them). They count as promoted all the same.
        """
        n1 = len(gc.get_objects(generation=1))
        young = len(gc.get_objects(generation=0)) + n1
        if n1 >= FREEZE_MIN_OBJECTS:
            found = gc.collect(0)
            gc.freeze()
        else:
            found = gc.collect(1)
        self.promoted += max(0, young - found)
        return found

    def collect_all(self) -> int:
        """Run a full collection now; return how many unreachable objects it found."""
        found = gc.collect(2)
        self._long_lived = len(gc.get_objects(generation=2))
        self.promoted = 0
        return found

    def _full_due(self) -> bool:
        return self.promoted > self._long_lived / 4


#: How often (s) the GUI thread runs Python's cyclic garbage collector (see collect_garbage_on_gui_thread).
GC_INTERVAL_S = 0.5


def collect_garbage_on_gui_thread(app: QCoreApplication) -> None:
    """Run Python's cyclic garbage collector only on the GUI thread of APP (idempotent).

    Automatic collection runs in whichever thread happens to allocate; when it frees a cycle that
    holds a Qt object (a closed dialog, a widget's bound method) from a database or network worker,
    Qt destroys the QObject off its thread and deadlocks with the GUI thread (seen: ~QObject
    waiting on a mutex the GUI thread held). Collection is disabled and done on a GUI-thread timer.
    """
    if getattr(app, "_studio_gc", None) is not None:
        return
    app._studio_gc = GuiThreadCollector(GC_INTERVAL_S)


def ensure_gui_thread_gc() -> None:
    """Make sure cyclic garbage collection runs only on the GUI thread of the running QApplication.

    pyqtgraph's items sit in reference cycles (context menus, signal lambdas); freed from a worker
    thread they would delete Qt objects off the GUI thread. `studio.ui.app.application()` already
    sets this up; this covers charts created on a QApplication the studio did not configure.
    """
    app = QCoreApplication.instance()
    if app is not None:
        collect_garbage_on_gui_thread(app)


class WeakMethod:
    """Call OWNER.NAME(...) while OWNER lives (else return ""), without keeping OWNER alive.

    pyqtgraph keeps a marker tooltip callable on its item; a bound method there would tie the item
    and the widget in a reference cycle, which Python may collect on a worker thread (deleting Qt
    objects off the GUI thread).
    """

    def __init__(self, owner, name: str):
        self._ref = weakref.ref(owner)
        self._name = name

    def __call__(self, *args, **kwargs):
        owner = self._ref()
        return getattr(owner, self._name)(*args, **kwargs) if owner is not None else ""
