"""Start Memory Studio: the QApplication, an explicit AppContext, the main window, and screenshot mode."""

from __future__ import annotations

import os
import sys
from pathlib import Path

from PySide6.QtCore import QSettings, Qt, QtMsgType, qInstallMessageHandler
from PySide6.QtGui import QIcon
from PySide6.QtWidgets import QApplication

from studio.app.failures import EXIT_BAD_INPUT, EXIT_FAILURE, EXIT_IO, EXIT_OK
from studio.paths import ICONS, SAMPLE_DATABASE
from studio.ui.context import AppContext
from studio.ui.gc_collector import collect_garbage_on_gui_thread

ORGANIZATION = "Memory Studio"
APPLICATION = "Memory Studio"
#: The interpreter's thread switch interval in the studio (s; Python's default is 0.005). A worker
#: thread running Python holds the GIL up to this long each time the GUI thread needs it (every
#: paint calls into the models), so a shorter interval keeps the window responsive while work runs.
GUI_SWITCH_INTERVAL_S = 0.001


#: Qt warnings that say nothing to a user (the offscreen platform cannot size native windows).
_QUIET_QT_MESSAGES = ("This plugin does not support propagateSizeHints()",)


def _qt_message(kind: QtMsgType, _context, message: str) -> None:
    """Print Qt's messages to stderr, except the known-harmless ones."""
    if kind == QtMsgType.QtWarningMsg and message in _QUIET_QT_MESSAGES:
        return
    print(message, file=sys.stderr)


def application() -> QApplication:
    """Return the QApplication, creating it (Fusion style, studio names) if needed."""
    app = QApplication.instance()
    if app is None:
        qInstallMessageHandler(_qt_message)
        app = QApplication([sys.argv[0] if sys.argv else "memory-studio"])
    if sys.getswitchinterval() > GUI_SWITCH_INTERVAL_S:
        sys.setswitchinterval(GUI_SWITCH_INTERVAL_S)
    app.setOrganizationName(ORGANIZATION)
    app.setApplicationName(APPLICATION)
    if app.style().name().lower() != "fusion":
        app.setStyle("Fusion")
    if app.windowIcon().isNull():
        app.setWindowIcon(studio_icon())
    app.setDesktopFileName(DESKTOP_FILE)
    collect_garbage_on_gui_thread(app)
    return app


#: The desktop entry's name (packaging/memory-studio.desktop): Wayland compositors find the icon through it.
DESKTOP_FILE = "memory-studio"


def studio_icon() -> QIcon:
    """Return the studio's icon: every bundled PNG size of resources/icons (an empty icon if none is found)."""
    icon = QIcon()
    for png in sorted(ICONS.glob("memory-studio-*.png")):
        icon.addFile(str(png))
    return icon


def parse_size(text: str) -> tuple[int, int]:
    """Parse "1400x900" into (1400, 900) (pixels); raise ValueError otherwise (as
    studio.ui.arguments.parse_window_size)."""
    from studio.app.failures import BadInput
    from studio.ui.arguments import parse_window_size

    try:
        return parse_window_size(text)
    except BadInput as exc:
        raise ValueError(str(exc)) from None


def display_problem(screenshot: bool) -> str | None:
    """Return why no window can be shown (Linux without a display), or None; screenshots go offscreen.

    Qt itself aborts the process when it finds no platform; a clear sentence is kinder. An
    explicit QT_QPA_PLATFORM is always respected.
    """
    if os.environ.get("QT_QPA_PLATFORM") or not sys.platform.startswith("linux"):
        return None
    if os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return None
    if screenshot:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"
        return None
    return ("no display found (DISPLAY and WAYLAND_DISPLAY are unset). Run Memory Studio in a desktop "
            "session, or render a picture with --screenshot OUT.png, or use the JSON subcommands "
            "(memory-studio inspect PATH --json).")


def warm_tokenizer() -> None:
    """Build the o200k_base tokenizer (Mastra's observational-memory token counter) before the window shows.

    tiktoken builds its encoder in native code that holds Python's interpreter lock for the whole build
    (~0.15–0.2 CPU-s): built lazily by the first status a worker computes, it froze the shown window
    for that long (0.5–0.6 s at load 7: `benchmarks/locked_store_benchmark.py`, right after a writer
    let go of a locked file, or on any first open). Built here, the same time goes before the first
    paint instead, where no window waits on it. Raises nothing: a tokenizer that cannot be built is
    reported by the first count that needs it.
    """
    import contextlib

    from studio.engine.exact_counts import tiktoken_encoding

    with contextlib.suppress(ValueError, OSError):
        tiktoken_encoding("o200k_base")   # the key `exact_tokens` asks its cache for


def run_studio(args) -> int:
    """Run the studio for the parsed command line ARGS (path, screenshot, thread, tab, size); return an exit code."""
    from studio.ui.widgets.main_window import MainWindow

    problem = display_problem(bool(getattr(args, "screenshot", None)))
    if problem is None and QApplication.instance() is None:
        # Before Qt loads its xcb plugin: Qt itself would abort (exit 134) naming the wrong library.
        from studio.ui.platform_check import xcb_problem

        problem = xcb_problem()
    if problem:
        print(f"memory-studio: {problem}", file=sys.stderr)
        return EXIT_FAILURE
    app = application()
    warm_tokenizer()
    path = str(args.path) if getattr(args, "path", None) else str(SAMPLE_DATABASE)
    screenshot = getattr(args, "screenshot", None)
    ctx = AppContext(settings=QSettings(ORGANIZATION, APPLICATION), interactive=not screenshot)
    window = MainWindow(ctx)
    if screenshot:
        return _screenshot(window, ctx, path, args)
    window.show()
    window.open_database(path, thread_id=getattr(args, "thread", None), tab=getattr(args, "tab", None))
    code = app.exec()
    ctx.runner.shutdown()
    return code


def _screenshot(window, ctx: AppContext, path: str, args) -> int:
    """Open PATH, select the thread and tab, wait for every task, save the window as a PNG.

    Return the command line's codes (`studio.app.failures`): EXIT_OK; for a database that cannot be
    opened, the code of its error (EXIT_BAD_INPUT, EXIT_REFUSED for a lock, EXIT_IO for permission
    denied); EXIT_BAD_INPUT for no such thread or a bad size; the code of any read behind the window
    that failed (a tab showing an error); EXIT_IO when the PNG cannot be written. Nothing is written then.
    """
    try:
        size = parse_size(getattr(args, "size", None) or "1400x900")
    except ValueError as exc:
        print(f"memory-studio: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    failures: list[str] = []
    window.database_failed.connect(failures.append)
    # any read that failed (a tab that could not load): the picture would lie
    task_errors: list[tuple[str, Exception]] = []
    ctx.runner.failure_delivered.connect(lambda key, exc: task_errors.append((key, exc)))
    window.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    window.resize(*size)
    window.show()
    try:
        window.open_database(path)
        ctx.runner.wait_idle()
        if failures or window.database_path is None:
            print(f"memory-studio: {failures[0] if failures else 'cannot open ' + path}", file=sys.stderr)
            # the command line's code for the open's error (permission denied: 4, as `inspect` gives)
            return _failed_reads(task_errors)[1] if task_errors else EXIT_BAD_INPUT
        thread_id = getattr(args, "thread", None) or window.first_thread_with_om()
        if thread_id and not window.select_thread(thread_id):
            print(f"memory-studio: No thread {thread_id!r} in {window.database_path}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if getattr(args, "tab", None):
            window.thread_view.set_tab(args.tab)
        ctx.runner.wait_idle()
        _wait_for_health_scan(ctx.runner, window)   # the badges are part of the picture
        window.settle()
        if task_errors:
            message, code = _failed_reads(task_errors)
            print(f"memory-studio: {message}; no screenshot written", file=sys.stderr)
            return code
        out = Path(args.screenshot)
        from studio.app.failures import BadInput
        from studio.ui.arguments import screenshot_format

        try:
            image_format = screenshot_format(str(out))   # the suffix's format; no folder is created
        except BadInput as exc:
            print(f"memory-studio: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
        if not window.grab().save(str(out), image_format):
            # Qt says no more than that: the file system refused it (a read-only folder or file, a full disk)
            why = "permission denied" if not os.access(out.parent, os.W_OK) or (out.exists() and not os.access(
                out, os.W_OK)) else "the disk refused it"
            print(f"memory-studio: cannot write {out}: {why}; no screenshot written", file=sys.stderr)
            return EXIT_IO
        return EXIT_OK
    finally:
        ctx.runner.shutdown()
        window.close()
        window.deleteLater()


#: The window's reads by task key, as `_failed_reads` names them.
READ_NAMES = {"messages": "the messages", "participants": "the speakers", "doctor-scan": "the health scan",
              "health-thread": "the thread's health check", "turn-context": "the turn context",
              "working-memory": "the working memory", "timeline": "the timeline", "detail": "the thread",
              "statuses": "the threshold bars", "overview-statuses": "the overview", "listing": "the thread list",
              "trace": "the trace", "diff": "the history diff", "whatif": "the what-if replay",
              "message-position": "the message asked for", "thread-metadata": "the thread metadata"}


def _listed(names: list[str]) -> str:
    """Return NAMES as words: "a", "a and b", "a, b and c"."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def _failed_reads(errors: list[tuple[str, Exception]]) -> tuple[str, int]:
    """Return (one sentence, exit code) for the reads of a screenshot that failed: ERRORS as (task key, exception).

    Reads that fail for one cause (a damaged file fails every read of its damaged part) share one
    sentence: each distinct message once, then which parts of the window it kept out. The exit code
    is the command line's for that error (`studio.app.failures.exit_code_for`: a store error 2, a lock 3, I/O 4,
    a bug 1); errors of different codes give 1.
    """
    from studio.app.failures import exit_code_for

    messages: dict[str, list[str]] = {}
    for key, exc in errors:
        parts = messages.setdefault(str(exc) or exc.__class__.__name__, [])
        name = READ_NAMES.get(key, key or "a read")
        if name not in parts:
            parts.append(name)
    codes = {exit_code_for(exc) for _key, exc in errors}
    said = "; ".join(f"{message.rstrip('.')} ({_listed(parts)} could not be read)"
                     for message, parts in messages.items())
    return said, codes.pop() if len(codes) == 1 else EXIT_FAILURE


def _wait_for_health_scan(runner, window, timeout_s: float = 120.0) -> None:
    """Let WINDOW's health scan finish (it yields between batches), at most TIMEOUT_S."""
    import time

    scan = window.health.scan
    end = time.monotonic() + timeout_s
    while scan.running and time.monotonic() < end:
        QApplication.processEvents()
        runner.wait_idle(max(0.1, end - time.monotonic()))
        time.sleep(0.01)
