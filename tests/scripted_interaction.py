"""A scripted `Interaction` for tests: the write protocol's questions answered from a script, every question kept.

    told = ScriptedInteraction(wait_or_force=["cancel", "force"], overtaken="repair")
    dialog.interaction = told          # a write dialog's questions (studio.ui.widgets.write_dialog …)
    …
    assert told.asked[0][0] == "wait_or_force" and "quiet period 30 s" in told.asked[0][1]

Each answer is a value given every time, or a list given one per question in turn (the last one
repeats). `asked` lists (kind, text) in order: "confirm", "wait_or_force", "overtaken", "inform".
"""

from __future__ import annotations

from studio.app.write_protocol import Interaction


class ScriptedInteraction(Interaction):
    """Answer CONFIRM (bool), WAIT_OR_FORCE ("wait" / "force" / "cancel") and OVERTAKEN ("repair" / "revert" /
    "leave") from the script; record every question in `asked`."""

    def __init__(self, *, confirm=True, wait_or_force="cancel", overtaken="leave"):
        self._script = {"confirm": confirm, "wait_or_force": wait_or_force, "overtaken": overtaken}
        self.asked: list[tuple[str, str]] = []
        self.titles: list[str] = []   # the confirmations' titles, in order

    def _answer(self, kind: str, text: str):
        self.asked.append((kind, text))
        answer = self._script[kind]
        if isinstance(answer, list):
            return answer.pop(0) if len(answer) > 1 else answer[0]
        return answer

    def texts(self, kind: str) -> list[str]:
        """The texts of the questions of KIND asked so far."""
        return [text for asked, text in self.asked if asked == kind]

    def confirm(self, title: str, text: str) -> bool:
        self.titles.append(title)
        return self._answer("confirm", text)

    def ask_wait_or_force(self, text: str) -> str:
        return self._answer("wait_or_force", text)

    def report_overtaken(self, findings, text: str) -> str:
        return self._answer("overtaken", text)

    def inform(self, text: str) -> None:
        self.asked.append(("inform", text))
