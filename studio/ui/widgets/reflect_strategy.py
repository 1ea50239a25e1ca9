"""The *How to reflect* box of the Reflect Now dialog: a model (`provider/model`, base URL, key status) or
the offline rule-based condenser. Models and base URLs are remembered in the settings; keys never are.

The Observe Now dialog uses the same box with its own title, offline strategy text and settings
prefix for the chosen strategy (`StrategyBox(..., title=, rule_label=, rule_note=, rule_tip=,
settings_prefix="observe")`); both dialogs share the recent models and their base URLs."""

from __future__ import annotations

import json
from typing import Any

from PySide6.QtCore import QSettings, QTimer, Signal
from PySide6.QtWidgets import (
    QButtonGroup,
    QComboBox,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QRadioButton,
    QSizePolicy,
    QWidget,
)

from studio.app import text as fmt
from studio.app.reflection import LLM, RULE_BASED
from studio.llm import key_status
from studio.ui.tasks import TaskRunner, submit_job
from studio.ui.widgets.common import plain_label, set_role

#: QSettings keys: recently used models (most recent first), base URLs per model (a JSON object), strategy.
RECENT_MODELS_KEY = "reflect/recentModels"
BASE_URLS_KEY = "reflect/baseUrls"
STRATEGY_KEY = "reflect/strategy"
MAX_RECENT_MODELS = 8
MODEL_PLACEHOLDER = "provider/model, e.g. openai/gpt-4o-mini or ollama/llama3.1"
BASE_URL_PLACEHOLDER = "provider default (set one for a local or self-hosted server)"
RULE_BASED_NOTE = "nothing leaves this computer; never drops a high-priority observation"
RULE_BASED_TIP = ("Deterministic rules, no model: merges duplicate observations and empty date groups, then drops "
                  "completed and low-priority observations (oldest first), then older medium ones, until the log is "
                  "below the reflection threshold; never a high-priority one. It says so when the threshold cannot "
                  "be reached that way.")
#: Wait after the last keystroke before the key status is looked up again (ms).
KEY_CHECK_DELAY_MS = 250


class StrategyBox(QGroupBox):
    """Choose the strategy ("llm" with a model and optional base URL, or "rule-based"); show the key status.

    The key is looked up off the GUI thread (an OS keyring may be slow) and only where it comes
    from is shown. SETTINGS (optional) remembers the strategy, recent models and their base URLs.
    """

    changed = Signal()   # strategy, model or base URL edited

    def __init__(self, runner: TaskRunner, settings: QSettings | None = None, parent: QWidget | None = None, *,
                 title: str = "How to reflect", rule_label: str = "&Offline rule-based condenser",
                 rule_note: str = RULE_BASED_NOTE, rule_tip: str = RULE_BASED_TIP, settings_prefix: str = "reflect"):
        super().__init__(title, parent)
        self._runner = runner
        self._settings = settings
        # models and base URLs are shared by every dialog that calls a model; the strategy is per dialog
        self._keys = {"recent": RECENT_MODELS_KEY, "urls": BASE_URLS_KEY,
                      "strategy": STRATEGY_KEY.replace("reflect/", f"{settings_prefix}/", 1)}
        grid = QGridLayout(self)
        grid.setHorizontalSpacing(8)
        grid.setVerticalSpacing(6)
        self.llm_radio = QRadioButton("&Model")
        self.rule_radio = QRadioButton(rule_label)
        self.rule_radio.setToolTip(rule_tip)
        self._group = QButtonGroup(self)
        self._group.addButton(self.llm_radio)
        self._group.addButton(self.rule_radio)
        self.model_combo = QComboBox()
        self.model_combo.setEditable(True)
        self.model_combo.setInsertPolicy(QComboBox.InsertPolicy.NoInsert)
        self.model_combo.lineEdit().setPlaceholderText(MODEL_PLACEHOLDER)
        self.model_combo.setSizePolicy(QSizePolicy.Policy.Expanding, QSizePolicy.Policy.Fixed)
        self.model_combo.setMinimumContentsLength(22)
        self.base_url_edit = QLineEdit()
        self.base_url_edit.setPlaceholderText(BASE_URL_PLACEHOLDER)
        self.base_url_edit.setClearButtonEnabled(True)
        self.key_label = plain_label("", "badge", selectable=False)
        self.key_label.setSizePolicy(QSizePolicy.Policy.Maximum, QSizePolicy.Policy.Fixed)
        self.rule_note = plain_label(rule_note, "muted", selectable=False)
        self.rule_note.setToolTip(rule_tip)
        key_row = QHBoxLayout()
        key_row.setContentsMargins(0, 0, 0, 0)
        key_row.addWidget(self.key_label)
        key_row.addStretch(1)
        rule_row = QHBoxLayout()
        rule_row.setContentsMargins(0, 0, 0, 0)
        rule_row.addWidget(self.rule_radio)
        rule_row.addWidget(self.rule_note, 1)
        grid.addWidget(self.llm_radio, 0, 0)
        grid.addWidget(self.model_combo, 0, 1)
        grid.addWidget(plain_label("Base URL", "muted", selectable=False), 0, 2)
        grid.addWidget(self.base_url_edit, 0, 3)
        grid.addLayout(key_row, 1, 1, 1, 3)
        grid.addLayout(rule_row, 2, 0, 1, 4)
        grid.setColumnStretch(1, 3)
        grid.setColumnStretch(3, 2)

        self._busy = False
        self._rule_available = True
        self._restore()
        self._key_timer = QTimer(self, singleShot=True, interval=KEY_CHECK_DELAY_MS, timeout=self._check_key)
        self.model_combo.editTextChanged.connect(self._on_model_edited)
        self.model_combo.activated.connect(self._on_model_combo_activated)
        self.base_url_edit.textChanged.connect(self._on_model_edited)
        self._group.buttonToggled.connect(self._on_group_button_toggled)
        self._update()
        if self.strategy() == LLM:
            self._key_timer.start()

    # -- reading and choosing --------------------------------------------------------------

    def strategy(self) -> str:
        """Return "llm" or "rule-based"."""
        return RULE_BASED if self.rule_radio.isChecked() else LLM

    def set_strategy(self, strategy: str) -> None:
        """Choose "llm" or "rule-based"."""
        (self.rule_radio if strategy == RULE_BASED else self.llm_radio).setChecked(True)

    def model_text(self) -> str:
        """Return the model typed or chosen (`provider/model`), stripped."""
        return self.model_combo.currentText().strip()

    def base_url(self) -> str | None:
        """Return the base URL typed, or None for the provider's default."""
        return self.base_url_edit.text().strip() or None

    def set_model(self, model: str, base_url: str | None = None) -> None:
        """Choose MODEL (`provider/model`) with BASE_URL (None: the provider's default) and the model strategy."""
        self.set_strategy(LLM)
        self.model_combo.setEditText(model)
        self.base_url_edit.setText(base_url or "")

    def set_rule_available(self, available: bool, why: str = "") -> None:
        """Enable the offline strategy, or disable it saying WHY (then the model strategy is chosen)."""
        self.rule_radio.setEnabled(available and not self._busy)
        self._rule_available = available
        if not available:
            self.set_strategy(LLM)
            self.rule_note.setText(why)

    def offer_default_model(self, model: str | None) -> None:
        """Put the record's own Reflector MODEL first and choose it (the model strategy, unless the user chose
        offline)."""
        if not model:
            return
        if self.model_combo.findText(model) < 0:
            self.model_combo.insertItem(0, model)
        self.model_combo.setEditText(model)
        self.base_url_edit.setText(self._base_urls().get(model, ""))
        if self._saved_strategy() != RULE_BASED:
            self.set_strategy(LLM)

    def key_text(self) -> str:
        """Return the key status shown (where the key comes from; never the key)."""
        return self.key_label.text()

    def set_busy(self, busy: bool) -> None:
        """Lock the choices while a preview or a commit runs."""
        self._busy = busy
        self._update()

    def stop(self) -> None:
        """Stop looking keys up (the dialog closes)."""
        self._key_timer.stop()
        self._runner.cancel(self._task_key)

    # -- remembering -----------------------------------------------------------------------

    def remember(self) -> None:
        """Remember the strategy, and the model with its base URL (no key is ever stored)."""
        if self._settings is None:
            return
        self._settings.setValue(self._keys["strategy"], self.strategy())
        model = self.model_text()
        if self.strategy() == LLM and model:
            recent = [model] + [m for m in self._recent_models() if m != model]
            self._settings.setValue(self._keys["recent"], recent[:MAX_RECENT_MODELS])
            urls = self._base_urls()
            if self.base_url():
                urls[model] = self.base_url()
            else:
                urls.pop(model, None)
            self._settings.setValue(self._keys["urls"], json.dumps(urls, sort_keys=True))
        self._settings.sync()

    def _restore(self) -> None:
        recent = self._recent_models()
        self.model_combo.addItems(recent)
        self.model_combo.setEditText(recent[0] if recent else "")
        if recent:
            self.base_url_edit.setText(self._base_urls().get(recent[0], ""))
        self.set_strategy(RULE_BASED if self._saved_strategy() == RULE_BASED or not recent else LLM)

    def _saved_strategy(self) -> str:
        return str(self._settings.value(self._keys["strategy"], "") or "") if self._settings is not None else ""

    def _recent_models(self) -> list[str]:
        if self._settings is None:
            return []
        value = self._settings.value(self._keys["recent"], [])
        if isinstance(value, str):
            value = [value]
        return [str(v) for v in (value or []) if v][:MAX_RECENT_MODELS]

    def _base_urls(self) -> dict[str, str]:
        raw = self._settings.value(self._keys["urls"], "") if self._settings is not None else ""
        try:
            value = json.loads(raw) if isinstance(raw, str) and raw else {}
        except ValueError:
            return {}
        return {str(k): str(v) for k, v in value.items()} if isinstance(value, dict) else {}

    # -- slots -----------------------------------------------------------------------------

    def _on_group_button_toggled(self, _button, checked: bool) -> None:
        if checked:
            self._update()
            if self.strategy() == LLM:
                self._key_timer.start()
            self.changed.emit()

    def _on_model_combo_activated(self, index: int) -> None:
        """A model picked from the list brings back the base URL last used with it."""
        self.base_url_edit.setText(self._base_urls().get(self.model_combo.itemText(index), ""))

    def _on_model_edited(self, _text: str) -> None:
        if self.strategy() == LLM:
            self._key_timer.start()
        self.changed.emit()

    def _update(self) -> None:
        llm = self.strategy() == LLM
        self.model_combo.setEnabled(llm and not self._busy)
        self.base_url_edit.setEnabled(llm and not self._busy)
        self.key_label.setVisible(llm)
        self.llm_radio.setEnabled(not self._busy)
        self.rule_radio.setEnabled(not self._busy and self._rule_available)

    # -- key status ------------------------------------------------------------------------

    @property
    def _task_key(self) -> str:
        return f"reflect-key-{id(self)}"

    def _check_key(self) -> None:
        model, base_url = self.model_text(), self.base_url()
        if not model:
            self._show_key("No model chosen", "badge")
            return
        self._show_key("Checking the key…", "badge")
        submit_job(self._runner, lambda _p, _c: key_status(model, base_url=base_url),
                   on_done=lambda status: self._on_key_checked(model, status),
                   on_error=lambda exc: self._on_key_checked(model, exc), key=self._task_key)

    def _on_key_checked(self, model: str, status: Any) -> None:
        if model != self.model_text():
            return
        if isinstance(status, Exception):
            self._show_key(str(status) or status.__class__.__name__, "badge-stale")
        else:
            self._show_key(status.message, "badge-live" if status.usable else "badge-stale")

    def _show_key(self, text: str, role: str) -> None:
        self.key_label.setText(text)
        self.key_label.setToolTip(fmt.plain_tooltip(text))
        set_role(self.key_label, role)
