"""The status bar's "Statuses N / M" progress fits its text on one line at 1024 px wide.

A 5,007-thread database showed "Statuses 0 / 5006" clipped onto two lines at 1024×700: the bar was
squeezed below its text's width. First principles: a progress bar's text is drawn inside its
contents; the bar must be at least the text's advance wide (plus the frame) and a line high.
"""

from __future__ import annotations

from PySide6.QtWidgets import QApplication


def test_the_statuses_progress_fits_its_text_at_1024(studio, studio_ctx, fixture_db):
    window = studio(fixture_db("support"), thread_id="support-1")
    window.resize(1024, 700)
    progress = window.progress
    progress.setRange(0, 5006)                    # as on the 5,007-thread database
    progress.setValue(0)
    progress.show()
    for _ in range(3):
        QApplication.processEvents()
    text = progress.text()
    assert text == "Statuses 0 / 5006"
    metrics = progress.fontMetrics()
    need = metrics.horizontalAdvance(text)
    for width in (progress.sizeHint().width(), progress.minimumSizeHint().width(), progress.width()):
        assert width >= need + 8, (width, need)   # the text plus the frame and a little air on each side
    assert progress.height() >= metrics.height()  # one whole line of text
    # the bar's final value (the total done) fits too
    progress.setValue(5006)
    assert progress.width() >= metrics.horizontalAdvance(progress.text()) + 8
    assert window.width() == 1024
