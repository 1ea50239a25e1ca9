"""The Participants tab's tables: speakers of a multi-user thread, and the anomalies of its `<turn>` tags."""

from __future__ import annotations

from enum import IntEnum

from PySide6.QtCore import QModelIndex, QPersistentModelIndex, Qt

from studio.app import text as fmt
from studio.engine.speakers import Anomaly, Speaker, SpeakerReport
from studio.ui.models.base import TableModel
from studio.ui.models.roles import ID_ROLE, RECORD_ROLE, SORT_ROLE

_RIGHT = int(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)


class ParticipantColumn(IntEnum):
    """Columns of the participants table."""

    NAME = 0
    ROLE = 1
    AUTHOR_ID = 2
    MESSAGES = 3
    TOKENS = 4


PARTICIPANT_HEADERS = {
    ParticipantColumn.NAME: "Name",
    ParticipantColumn.ROLE: "Role",
    ParticipantColumn.AUTHOR_ID: "author_id",
    ParticipantColumn.MESSAGES: "Messages",
    ParticipantColumn.TOKENS: "Tokens",
}
PARTICIPANT_TIPS = {
    ParticipantColumn.NAME: "author_name of the speaker's <turn> tags (decoded; shown as stored, never as markup)",
    ParticipantColumn.ROLE: "functional_role of the speaker's <turn> tags",
    ParticipantColumn.MESSAGES: "User messages attributed to the speaker (the first <turn> of each message)",
    ParticipantColumn.TOKENS: "Mastra's token estimate of those messages (the figure its thresholds use)",
}


class ParticipantModel(TableModel):
    """Speakers of one thread, in order of first appearance (a SpeakerReport's `speakers`)."""

    COLUMNS = ParticipantColumn
    HEADERS = PARTICIPANT_HEADERS
    HEADER_TIPS = PARTICIPANT_TIPS

    def __init__(self, parent=None):
        super().__init__(parent)
        self._speakers: list[Speaker] = []

    def set_report(self, report: SpeakerReport | None) -> None:
        """Show REPORT's speakers (None: none)."""
        self.beginResetModel()
        self._speakers = list(report.speakers) if report is not None else []
        self.endResetModel()

    def speaker(self, row: int) -> Speaker | None:
        """Return the Speaker at ROW, or None."""
        return self._speakers[row] if 0 <= row < len(self._speakers) else None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._speakers)

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._speakers):
            return None
        sp = self._speakers[index.row()]
        col = ParticipantColumn(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            return {
                ParticipantColumn.NAME: sp.author_name or "(no author_name)",
                ParticipantColumn.ROLE: sp.functional_role or "",
                ParticipantColumn.AUTHOR_ID: sp.author_id or "(no author_id)",
                ParticipantColumn.MESSAGES: fmt.tokens(sp.messages),
                ParticipantColumn.TOKENS: fmt.tokens(sp.tokens),
            }[col]
        if role == Qt.ItemDataRole.TextAlignmentRole and col in (ParticipantColumn.MESSAGES, ParticipantColumn.TOKENS):
            return _RIGHT
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = [sp.label, f"author_id {sp.author_id or '(none)'}"]
            if len(sp.names) > 1:
                lines.append("names seen: " + ", ".join(sp.names))
            if len(sp.roles) > 1:
                lines.append("roles seen: " + ", ".join(sp.roles))
            return fmt.plain_tooltip("\n".join(lines))
        if role == SORT_ROLE:
            return {ParticipantColumn.NAME: (sp.author_name or "").casefold(),
                    ParticipantColumn.ROLE: sp.functional_role or "",
                    ParticipantColumn.AUTHOR_ID: sp.author_id or "",
                    ParticipantColumn.MESSAGES: sp.messages, ParticipantColumn.TOKENS: sp.tokens}[col]
        if role == ID_ROLE:
            return sp.key
        if role == RECORD_ROLE:
            return sp
        return None


class AnomalyColumn(IntEnum):
    """Columns of the anomalies table."""

    PROBLEM = 0
    MESSAGE = 1


ANOMALY_HEADERS = {AnomalyColumn.PROBLEM: "Problem", AnomalyColumn.MESSAGE: "Message"}
KIND_TITLES = {
    "several_names": "One author_id, several names",
    "several_roles": "One speaker, several roles",
    "tag_in_non_user_message": "Tag outside a user message",
    "unterminated_tag": "Unterminated tag",
    "malformed_tag": "Malformed tag",
    "missing_attributes": "Missing attributes",
    "several_speakers_in_message": "Several speakers in one message",
}


class AnomalyModel(TableModel):
    """The anomalies of a SpeakerReport: a problem sentence and the message concerned."""

    COLUMNS = AnomalyColumn
    HEADERS = ANOMALY_HEADERS

    def __init__(self, parent=None):
        super().__init__(parent)
        self._anomalies: list[Anomaly] = []

    def set_report(self, report: SpeakerReport | None) -> None:
        """Show REPORT's anomalies (None: none)."""
        self.beginResetModel()
        self._anomalies = list(report.anomalies) if report is not None else []
        self.endResetModel()

    def anomaly(self, row: int) -> Anomaly | None:
        """Return the Anomaly at ROW, or None."""
        return self._anomalies[row] if 0 <= row < len(self._anomalies) else None

    def rowCount(self, parent=QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self._anomalies)

    def data(self, index: QModelIndex | QPersistentModelIndex, role=Qt.ItemDataRole.DisplayRole):
        if not index.isValid() or not 0 <= index.row() < len(self._anomalies):
            return None
        a = self._anomalies[index.row()]
        col = AnomalyColumn(index.column())
        if role == Qt.ItemDataRole.DisplayRole:
            if col == AnomalyColumn.PROBLEM:
                return f"{KIND_TITLES.get(a.kind, a.kind)}: {a.text}"
            return a.message_id or ""
        if role == Qt.ItemDataRole.ToolTipRole:
            return fmt.plain_tooltip(f"{a.text}\nmessage {a.message_id or '(none)'}")
        if role == ID_ROLE:
            return a.message_id
        if role == RECORD_ROLE:
            return a
        return None
