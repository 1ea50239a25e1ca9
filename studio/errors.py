"""Named exceptions of Memory Studio, all under one base (`StudioError`)."""


def _rebuild(cls: type, args: tuple, state: dict) -> "StudioError":
    """Unpickle a StudioError without calling its __init__ (whose keyword-only fields pickle cannot pass)."""
    error = cls.__new__(cls)
    error.args = args
    error.__dict__.update(state)
    return error


class StudioError(Exception):
    """Base of every error Memory Studio raises on purpose; the message is meant for the user.

    Errors cross the helper process's pipe pickled: `__reduce__` keeps the args and every field set by a
    subclass's __init__ (Exception's default pickle calls __init__ with the args alone, which fails on
    `WriteRefused(reason, message)` and keyword-only fields such as `written`)."""

    def __reduce__(self):
        return _rebuild, (type(self), self.args, dict(self.__dict__))


#: What a StoreError says about a server the user connects to (`StoreError.kind`), set by the backends from the
#: driver's codes: "auth" (the server refused the password or token given), "no-secret" (it asks for one and none
#: was given), "unreachable" (no server answered, or the connection died), "no-database" (the server answered but
#: has no such database), "not-mastra" (connected, but no Mastra tables there), "login-refused" (the server refused
#: the user for another reason than a password: no such role, a role that may not log in, no pg_hba.conf rule),
#: "too-many-connections" (the server's, the role's or the database's connection slots are all taken).
STORE_ERROR_KINDS = frozenset({"auth", "no-secret", "unreachable", "no-database", "not-mastra", "login-refused",
                               "too-many-connections"})


class StoreError(StudioError):
    """The database could not be opened or read (missing, not SQLite, locked, unreadable).

    `kind`: one of STORE_ERROR_KINDS when the backend could tell from the driver's codes (psycopg's SQLSTATE and
    libpq's connection state, the libSQL server's HTTP status, pymongo's error codes and classes), else None.
    File ▸ Connect…'s test, exit 6 and the studio asking for a password sort by it (`store_error_kind`), never by
    the message's words. Raises ValueError for a KIND outside STORE_ERROR_KINDS.
    """

    kind: str | None = None

    def __init__(self, *args, kind: str | None = None):
        super().__init__(*args)
        if kind is not None:
            if kind not in STORE_ERROR_KINDS:
                raise ValueError(f"unknown StoreError kind {kind!r}")
            self.kind = kind


def store_error_kind(exc: BaseException | None) -> str | None:
    """The `kind` of EXC or, when it has none, of the first StoreError among its causes that has one (a write's
    StoreError wrapping the connect's); None when no StoreError in the chain has a kind."""
    for seen in cause_chain(exc, limit=8):
        kind = getattr(seen, "kind", None) if isinstance(seen, StoreError) else None
        if kind is not None:
            return kind
    return None


class StoreDamaged(StoreError):
    """A read met a damaged part of the database file (SQLite: "database disk image is malformed", or the
    driver failed on a stored value); reads that do not touch that part still work. Exit 2, as any StoreError."""


class SchemaError(StoreError):
    """The file is SQLite but not a Mastra memory database this studio understands."""

    kind = "not-mastra"


class ServerUnreachable(StoreError):
    """A server store could not be reached, or the connection to it died during the command ("dead server", exit 6).

    For a write, `outcome` says what became of it: "not-written" (the connection died before COMMIT was
    sent, or the server refused it: no backup is left) or "unknown" (COMMIT was sent, its answer never
    came, and the server could not be reached again to find out: the row backup is kept, `backup`, and
    `memory-studio undo` tells a write that happened from one that did not).
    """

    kind = "unreachable"

    def __init__(self, message: str, *, outcome: str = "not-written", backup: str | None = None):
        super().__init__(message)
        self.outcome = outcome
        self.backup = backup


class OutcomeFoundAfterReconnect(StoreError):
    """A write's COMMIT was sent but its answer was lost with the connection; re-reading the server after
    reconnecting found what happened (exit 5).

    `written`: True when the write is there (its row backup `backup` is kept and `undo` restores it),
    False when nothing of it is (no backup is left).
    """

    def __init__(self, message: str, *, written: bool, backup: str | None = None):
        super().__init__(message)
        self.written = written
        self.backup = backup

    @property
    def outcome(self) -> str:
        """"written" or "not-written"."""
        return "written" if self.written else "not-written"


def cause_chain(exc: BaseException | None, limit: int = 16) -> list[BaseException]:
    """EXC and its causes (`__cause__`, else `__context__`), each once, at most LIMIT of them.

    Safe on a chain that loops (an error made its own cause, or two that name each other): the walk
    stops at the first exception already seen.
    """
    out: list[BaseException] = []
    seen: set[int] = set()
    while exc is not None and id(exc) not in seen and len(out) < limit:
        seen.add(id(exc))
        out.append(exc)
        exc = exc.__cause__ or exc.__context__
    return out


class StoreNotice(UserWarning):
    """Something the user should know about how a store was opened (issued with `warnings.warn`).

    The CLI prints it on stderr as `memory-studio: warning: …`; the studio shows it in the status bar.
    Example: an auth token written in a libSQL URL.
    """


class WriteRefused(StoreError):
    """A write to the user's database was refused and nothing was written.

    `reason` is one of WRITE_REFUSED_REASONS:
    "generation-changed" (the latest generation or its observations changed since they were read; for
    an undo: the rows it would restore changed since the write),
    "reflecting" (isReflecting is set: live, or stale and not cleared), "not-found" (no such thread,
    record or generation), "busy" (another process holds the write lock, or is observing or buffering
    this record), "conflict" (the new id already exists), "invalid" (bad arguments), "unchanged" (the
    write would copy the current state: a reflection identical to the current generation).
    """

    def __init__(self, reason: str, message: str):
        if reason not in WRITE_REFUSED_REASONS:
            raise ValueError(f"unknown WriteRefused reason {reason!r}")
        super().__init__(message)
        self.reason = reason


WRITE_REFUSED_REASONS = frozenset({"generation-changed", "reflecting", "not-found", "busy", "conflict", "invalid",
                                   "unchanged"})


class EngineError(StudioError):
    """The OM engine could not compute a figure from the stored data."""


class ProviderError(StudioError):
    """An LLM provider call failed (network, HTTP status, malformed answer)."""


class UncountableMessage(EngineError):
    """Mastra's own token count throws on this message, so Mastra can give it no number (nor its thread).

    `reason` says what in the message makes the count throw (a sentence fragment, e.g. "its file part's
    URL has a bad % escape"), `mastra_error` the error Mastra's TokenCounter raises ("URIError: URI
    malformed"); `message_id` is the message's id when known (None while counting a bare message).
    `str()` is the sentence shown to the user (`uncountable_sentence`).
    """

    def __init__(self, reason: str, mastra_error: str, *, message_id: str | None = None):
        self.reason = reason
        self.mastra_error = mastra_error
        self.message_id = message_id
        super().__init__(self.sentence())

    def sentence(self) -> str:
        """One sentence for the user: which message, why, and what Mastra raises."""
        which = f"message {self.message_id}" if self.message_id else "this message"
        return (f"Mastra cannot count the tokens of {which}: {self.reason} "
                f"(Mastra's TokenCounter throws {self.mastra_error}), so no token figure reaches past it")

    def to_json(self) -> dict:
        """Return the error as documents carry it: {"message_id", "reason", "mastra_error", "sentence"}."""
        return {"message_id": self.message_id, "reason": self.reason, "mastra_error": self.mastra_error,
                "sentence": self.sentence()}

    def for_message(self, message_id: str | None) -> "UncountableMessage":
        """The same error naming MESSAGE_ID (a count of one message does not know its id)."""
        return UncountableMessage(self.reason, self.mastra_error, message_id=message_id)
