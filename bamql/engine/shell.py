"""``bamql shell``: an interactive SQL prompt with history and dot-commands."""

from __future__ import annotations

import sys
import time
import traceback
from collections.abc import Callable

from bamql.config import Config
from bamql.engine.output import FORMATS, render
from bamql.engine.session import Session
from bamql.errors import BamqlError

HELP = """\
Enter SQL ending with ';' (it may span lines). EXPLAIN [ANALYZE] <query>; shows the plan.
  .tables            list tables
  .schema [TABLE]    columns, logical and storage types
  .timer on|off      print query time
  .mode table|csv|json
  .help              this text
  .quit              leave (also Ctrl-D)"""


def split_statements(text: str) -> list[str] | None:
    """The SQL statements of ``text`` when it ends one (its last token is ``;``), else None:
    more lines are to come.

    Statements are split on the ``;`` tokens of sqlglot's tokenizer (the duckdb dialect the
    planner reads), so a ``;`` inside a string literal, a quoted name or a comment stays
    where it is; an unterminated string or comment asks for more lines. Text of comments
    and whitespace only holds no statement (``[]``).

    Parameters
    ----------
    text
        The lines typed so far, joined.

    Returns
    -------
    list[str] | None
        Each statement's text without its ``;``, in order; None while incomplete.
    """
    import sqlglot
    from sqlglot.errors import TokenError
    from sqlglot.tokens import TokenType

    try:
        tokens = sqlglot.tokenize(text, read="duckdb")
    except TokenError:  # an unterminated string, quoted name or comment
        return None
    if not tokens:
        return []
    if tokens[-1].token_type != TokenType.SEMICOLON:
        return None
    out: list[str] = []
    first = None  # where the current statement's first token starts
    for t in tokens:
        if t.token_type == TokenType.SEMICOLON:
            if first is not None:
                out.append(text[first:t.start].strip())
            first = None
        elif first is None:
            first = t.start
    return out


class Shell:
    """A read-eval-print loop over one session.

    A statement or dot-command that fails, from a user's mistake or a bug, is reported in
    one line and the prompt comes back; Ctrl-C cancels the running statement (or the lines
    typed so far) and the prompt comes back. Ctrl-D or ``.quit`` leaves.
    """

    def __init__(self, session: Session, out=None, debug: bool | None = None,
                 config: Config | None = None) -> None:
        self.s = session
        self.out = out or sys.stdout
        self.timer = False
        self.mode = "table"
        #: ``debug`` and the history file (default: the ``BAMQL_*`` variables, read now)
        self.config = config or Config.from_env()
        self.debug = self.config.debug if debug is None else debug

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def command(self, line: str) -> bool:
        """Run a dot-command; False means quit."""
        parts = line.split()
        cmd, args = parts[0].lower(), parts[1:]
        if cmd in (".quit", ".exit"):
            return False
        if cmd == ".help":
            self.say(HELP)
        elif cmd == ".tables":
            self.say("\n".join(self.s.tables()))
        elif cmd == ".schema":
            names = args or self.s.tables()
            for n in names:
                try:
                    sch = self.s.schema(n)
                except BamqlError as e:
                    self.say(f"error: {e}")
                    continue
                st = self.s.store(n)
                self.say(f"{n}: {st.rows:,} rows, {st.page_size} B pages")
                for f in sch:
                    how = f.metadata[b"storage"].decode()
                    if b"scale" in f.metadata:  # a decimal float as a scaled integer
                        how += f" / 10^{f.metadata[b'scale'].decode()}"
                    if b"value_sets" in f.metadata:  # IN / = prune pages holding none
                        how += ", page value sets"
                    self.say(f"  {f.name:<24} {str(f.type):<14} stored as {how}")
        elif cmd == ".timer":
            if args[:1] not in (["on"], ["off"]):
                self.say("usage: .timer on|off")
            else:
                self.timer = args[0] == "on"
        elif cmd == ".mode":
            if len(args) != 1 or args[0] not in FORMATS:
                self.say("usage: .mode table|csv|json")
            else:
                self.mode = args[0]
        else:
            self.say(f"error: unknown command {cmd} (try .help)")
        return True

    def guarded(self, fn: Callable[..., object], *args) -> object:
        """``fn(*args)``, with a failure reported in one line (a traceback too when
        debugging); None then. Ctrl-C (KeyboardInterrupt) passes through to the loop."""
        try:
            return fn(*args)
        except BamqlError as e:
            self.say(f"error: {e}")
        except Exception as e:  # a bug: one line, and the shell stays open
            if self.debug:
                traceback.print_exc(file=self.out)
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            self.say(f"internal error: {type(e).__name__}: {first} "
                     f"(BAMQL_DEBUG=1 shows a traceback)")
        return None

    def run_sql(self, sql: str) -> None:
        """Run one statement and print its result (or the error, in one line)."""
        self.guarded(self._run_sql, sql)

    def _run_sql(self, sql: str) -> None:
        t0 = time.perf_counter()
        res = self.s.sql(sql)
        if res.is_explain:
            self.say("\n".join(res.table["explain"].to_pylist()))
        else:
            self.say(render(res.table, self.mode))
        if self.timer:
            st = res.stats
            extra = f", read {st.bytes_read:,} B" if st else ""
            self.say(f"Run Time: {(time.perf_counter() - t0) * 1e3:.1f} ms{extra}")

    def loop(self) -> int:
        try:
            import readline

            hist = self.config.history
            try:
                readline.read_history_file(hist)
            except OSError:
                pass
        except ImportError:  # pragma: no cover - readline is missing on some platforms
            readline, hist = None, None
        on = self.s.path if self.s.path is not None else "files (FROM 'x.parquet')"
        self.say(f"bamql shell on {on} ({self.s.device}); .help for help, .quit to leave")
        if self.s.note:
            self.say(self.s.note)
        buf: list[str] = []
        try:
            while True:
                try:
                    line = input("bamql> " if not buf else "   ...> ")
                except EOFError:
                    self.say("")
                    break
                except KeyboardInterrupt:
                    self.say("^C")
                    buf = []
                    continue
                try:
                    if not buf and line.strip().startswith("."):
                        if self.guarded(self.command, line.strip()) is False:
                            break
                        continue
                    if not line.strip() and not buf:
                        continue
                    buf.append(line)
                    stmts = split_statements("\n".join(buf))
                    if stmts is not None:  # complete: every statement runs, in order
                        buf = []
                        for stmt in stmts:
                            self.run_sql(stmt)
                except KeyboardInterrupt:  # cancels the running statement and those after it
                    self.say("^C cancelled")
                    buf = []
        finally:
            if readline is not None and hist is not None:
                try:
                    readline.write_history_file(hist)
                except OSError:
                    pass
        return 0
