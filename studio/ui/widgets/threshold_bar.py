"""A large labelled threshold bar: "<title>", the bar, "tokens / threshold · %" and the over-threshold state."""

from __future__ import annotations

from PySide6.QtCore import QRectF, QSize
from PySide6.QtGui import QPainter
from PySide6.QtWidgets import QHBoxLayout, QSizePolicy, QVBoxLayout, QWidget

from studio.app import text as fmt
from studio.ui.style import BarValue, paint_bar
from studio.ui.widgets.common import ElidedLabel, plain_label, set_role


class _BarCanvas(QWidget):
    """The painted bar itself."""

    def __init__(self, parent=None):
        super().__init__(parent)
        self.bar = BarValue(placeholder="")
        self.buffered = 0
        self.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)

    def sizeHint(self) -> QSize:
        return QSize(240, 18)

    def minimumSizeHint(self) -> QSize:
        return QSize(80, 18)

    def paintEvent(self, _event) -> None:
        p = QPainter(self)
        paint_bar(p, QRectF(self.rect()).adjusted(0.5, 0.5, -0.5, -0.5), self.bar, light=False, text=False,
                  buffered=self.buffered, radius=4)
        p.end()


class ThresholdBar(QWidget):
    """Show VALUE tokens against THRESHOLD tokens with a title, figures and an over/under state line."""

    def __init__(self, title: str, *, over_text: str, under_text: str, parent=None):
        super().__init__(parent)
        self._over_text, self._under_text = over_text, under_text
        self._title = ElidedLabel(title, "heading")
        self._title.setToolTip(title)
        self._canvas = _BarCanvas()
        self._figures = plain_label("")
        self._percent = plain_label("", selectable=False)
        self._state = plain_label("", "muted", wrap=True)
        layout = QVBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        layout.setSpacing(4)
        layout.addWidget(self._title)
        layout.addWidget(self._canvas)
        row = QHBoxLayout()
        row.addWidget(self._figures)
        row.addStretch(1)
        row.addWidget(self._percent)
        layout.addLayout(row)
        layout.addWidget(self._state)

    # -- reading (tests, accessibility) ----------------------------------------------------

    def title(self) -> str:
        """Return the bar's title."""
        return self._title.text()

    def value(self) -> int | None:
        """Return the tokens shown (None when empty)."""
        return self._canvas.bar.value

    def threshold(self) -> int | None:
        """Return the threshold shown (None when empty)."""
        return self._canvas.bar.threshold

    def is_over(self) -> bool:
        """Return True when the value is at or over the threshold."""
        return self._canvas.bar.known and self._canvas.bar.state == "over"

    def figures_text(self) -> str:
        """Return the figures line ("2,488 / 2,500 tokens")."""
        return self._figures.text()

    def state_text(self) -> str:
        """Return the state line."""
        return self._state.text()

    # -- writing ---------------------------------------------------------------------------

    def set_value(self, value: int, threshold: int, *, buffered: int = 0, note: str = "") -> None:
        """Show VALUE / THRESHOLD tokens; BUFFERED tokens are marked inside the fill; NOTE follows the state."""
        bar = BarValue(value, threshold)
        self._canvas.bar, self._canvas.buffered = bar, buffered
        self._canvas.update()
        self._figures.setText(f"{fmt.tokens(value)} / {fmt.tokens(threshold)} tokens")
        self._percent.setText(f"{fmt.percent(value, threshold)}%")
        over = bar.state == "over"
        if over:
            state = f"Over the threshold by {fmt.token_count(value - threshold)}"
        else:
            state = f"{fmt.token_count(threshold - value)} left"
        self._state.setText(f"{state} · {note}" if note else state)
        set_role(self._percent, "heading")
        style = "color: #b91c1c; font-weight: 600;" if over else ""
        if self._state.styleSheet() != style:   # a style sheet set again re-polishes and lays the bar out again
            self._state.setStyleSheet(style)
        self.setToolTip(fmt.plain_tooltip(f"{fmt.ratio_text(value, threshold)}\n"
                                          f"{self._over_text if over else self._under_text}"))

    def clear(self, text: str = "") -> None:
        """Show an empty bar with TEXT as the state line."""
        self._canvas.bar, self._canvas.buffered = BarValue(placeholder=""), 0
        self._canvas.update()
        self._figures.setText(fmt.NONE)
        self._percent.setText("")
        self._state.setText(text)
        if self._state.styleSheet():
            self._state.setStyleSheet("")
        self.setToolTip("")
