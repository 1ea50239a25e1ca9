"""The studio builds Mastra's token counter (tiktoken o200k_base) before its window shows.

tiktoken builds its encoder in native code holding Python's interpreter lock (~0.15–0.2 CPU-s), so
whichever thread builds it stops every other one, the GUI thread included: built by the first status a
worker computed, it froze the shown window (0.5–0.6 s at load 7 in benchmarks/locked_store_benchmark.py,
right after a writer let go of a locked file). `run_studio` builds it before the window exists; the
check here is that the window is made after the encoder the counts ask for is in the cache (a build
under another cache key — `tiktoken_encoding()` without its argument — would be built again by the
first count, which is what the first version of the warm-up did).
"""

from __future__ import annotations

from argparse import Namespace

from studio.engine import exact_counts
from studio.ui import app as studio_app
from studio.ui.widgets import main_window


def test_the_encoder_the_counts_use_is_built_before_the_window_is_made(qapp, fixture_db, tmp_path, monkeypatch):
    exact_counts.tiktoken_encoding.cache_clear()
    made = []
    real_init = main_window.MainWindow.__init__

    def recording_init(self, *a, **kw):
        before = exact_counts.tiktoken_encoding.cache_info()
        exact_counts.tiktoken_encoding("o200k_base")   # what exact_tokens asks for
        after = exact_counts.tiktoken_encoding.cache_info()
        made.append(after.misses == before.misses)     # a hit: already built, nothing built now
        real_init(self, *a, **kw)

    monkeypatch.setattr(main_window.MainWindow, "__init__", recording_init)
    args = Namespace(path=str(fixture_db("support")), screenshot=str(tmp_path / "w.png"), thread=None, tab=None,
                     size="1000x700")
    assert studio_app.run_studio(args) == 0
    assert made == [True]
