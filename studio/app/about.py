"""What Help ▸ About says: the studio's version, the Mastra packages it mirrors, and where it keeps things (no Qt)."""

from __future__ import annotations

import platform

from studio import __version__
from studio.paths import RESOURCES

#: The Mastra packages whose behaviour the studio mirrors, at the versions its figures are checked against
#: (the corpus's pinned packages: ../shared/mastra-corpus/package.json).
MASTRA_PACKAGES = (("@mastra/memory", "1.31.0"), ("@mastra/core", "1.71.0"), ("@mastra/libsql", "1.23.1"),
                   ("@mastra/pg", "1.27.1"), ("@mastra/mongodb", "1.19.0"))


def about_facts(*, settings_path: str | None = None, toolkit: str | None = None) -> list[tuple[str, str]]:
    """Return [(label, value)] for the About box, in order: version, Python, TOOLKIT (the GUI's, e.g. "Qt 6.8"),
    each mirrored Mastra package, and the folders the studio reads or writes (SETTINGS_PATH: the GUI's settings
    file; backups and the own-writes journal under the data folder; the bundled resources).
    """
    from studio.store.write.own_writes import journal_path
    from studio.store.write.row_backup import backup_root

    facts = [("Memory Studio", __version__), ("Python", platform.python_version())]
    if toolkit:
        facts.append(("Toolkit", toolkit))
    facts += [(name, f"{version} (mirrored)") for name, version in MASTRA_PACKAGES]
    if settings_path:
        facts.append(("Settings", settings_path))
    facts += [("Row backups", str(backup_root())), ("Own-writes journal", journal_path()),
              ("Resources", str(RESOURCES))]
    return facts
