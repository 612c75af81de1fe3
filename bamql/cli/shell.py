"""``bamql shell``: an interactive SQL prompt with history and dot-commands."""

from __future__ import annotations

import os
import sys
import time
import traceback
from collections.abc import Callable
from pathlib import Path
from typing import TextIO

from bamql.api.session import Session
from bamql.cli.completion import completions, word_before
from bamql.cli.output import FORMATS, render
from bamql.config import Config, Device
from bamql.errors import BamqlError
from bamql.exec.result import format_table

HELP = """\
Enter SQL ending with ';' (it may span lines). EXPLAIN [ANALYZE] <query>; shows the plan.
  .tables            list tables
  .open DIR          query the tables under DIR instead (the same device)
  .schema [TABLE]    columns, logical and storage types
  .read FILE         run the SQL statements (and dot-commands) of a file
  .output [FILE]     write results to FILE; without FILE, to the terminal again
  .mode table|box|markdown|line|csv|json
  .maxrows N         rows a table shows before the rest are counted (default 50)
  .explain on|off    print each query's plan before its result
  .timer on|off      print query time
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


def is_complete(text: str) -> bool:
    """Whether ``text`` is ready to run: a dot-command, blank, or SQL whose last token is
    ``;``. The line editor's Enter inserts a new line until it is."""
    s = text.strip()
    return not s or s.startswith(".") or split_statements(text) is not None


#: how deep ``.read`` files may read further files (a file that reads itself stops there)
MAX_READ_DEPTH = 16
#: the one value ``.maxrows`` takes for "every row"
ALL_ROWS = 0


def _line_editor(shell: Shell) -> Callable[[str], str] | None:
    """A prompt_toolkit prompt (history, multi-line input ending at ``;``, Tab completion)
    when that optional package is installed and the shell talks to a terminal that moves
    its cursor; None otherwise (a pipe, a file, a dumb terminal such as Emacs' shell), and
    the shell reads with ``input()``."""
    if shell.out is not sys.stdout or not (sys.stdin.isatty() and sys.stdout.isatty()):
        return None
    try:
        from prompt_toolkit import PromptSession
        from prompt_toolkit.completion import Completer, Completion
        from prompt_toolkit.filters import Condition
        from prompt_toolkit.history import FileHistory, InMemoryHistory
        from prompt_toolkit.utils import is_dumb_terminal
    except ImportError:
        return None
    if is_dumb_terminal():
        return None

    class SqlCompleter(Completer):
        def get_completions(self, document, complete_event):
            before = document.text_before_cursor
            start = -len(word_before(before))
            for c in completions(before, shell.s, document.text_after_cursor):
                yield Completion(c, start_position=start)

    try:
        shell.config.history.parent.mkdir(parents=True, exist_ok=True)
        history = FileHistory(str(shell.config.history))
    except OSError:  # an unwritable history directory: history for this run only
        history = InMemoryHistory()
    ps: PromptSession = PromptSession(
        history=history, completer=SqlCompleter(), complete_while_typing=False,
        multiline=Condition(lambda: not is_complete(ps.default_buffer.text)),
        prompt_continuation=lambda width, line_number, soft_wrap: "   ...> ".rjust(width))
    return ps.prompt


class Shell:
    """A read-eval-print loop over one session.

    A statement or dot-command that fails, from a user's mistake or a bug, is reported in
    one line and the prompt comes back; Ctrl-C cancels the running statement (or the lines
    typed so far) and the prompt comes back. Ctrl-D or ``.quit`` leaves.

    Results (with ``.explain on``, each query's plan before its result) go to ``out``, or to
    the file that ``.output FILE`` names; errors, messages and timings go to ``out``.
    """

    def __init__(self, session: Session, out: TextIO | None = None, debug: bool | None = None,
                 config: Config | None = None, interactive: bool = True) -> None:
        self.s = session
        self.out = out or sys.stdout
        self.timer = False
        self.explain = False
        self.mode = "table"
        self.max_rows = 50
        #: where results go (``.output``): None for ``out``
        self.output: TextIO | None = None
        self.output_name = ""
        #: ``debug`` and the history file (default: the ``BAMQL_*`` variables, read now)
        self.config = config or Config.from_env()
        self.debug = self.config.debug if debug is None else debug
        #: the lines of a statement typed so far
        self._buf: list[str] = []
        self._depth = 0  # files being read by .read, one inside another
        #: whether a statement or command failed; whether input comes from a pipe or a file
        self.failed = False
        self.piped = not interactive

    def say(self, text: str) -> None:
        print(text, file=self.out, flush=True)

    def error(self, text: str) -> None:
        """Report a failed statement or command: to ``out``, or to stderr when the input is
        a pipe or a file (``loop``), whose exit code then says that something failed."""
        self.failed = True
        print(text, file=sys.stderr if self.piped else self.out, flush=True)

    def emit(self, text: str) -> None:
        """Write a result to the ``.output`` file, or to ``out``."""
        print(text, file=self.output or self.out, flush=True)

    def command(self, line: str) -> bool:
        """Run a dot-command; False means quit."""
        parts = line.split()
        cmd, args = parts[0].lower(), parts[1:]
        if cmd in (".quit", ".exit"):
            return False
        if cmd == ".help":
            self.say(HELP)
        elif cmd == ".open":
            if len(args) != 1:
                self.say("usage: .open DIR (a table directory or a directory of tables)")
            else:
                gpu = self.s.device == Device.GPU
                try:
                    new = Session(args[0], device=self.s.device.value,
                                  backend=self.s.backend.value if gpu else None)
                except BamqlError as e:
                    self.error(f"error: {e}")
                else:
                    old, self.s = self.s, new
                    old.close()
                    self.say(f"opened {args[0]}: {', '.join(new.tables()) or 'no tables'}")
        elif cmd == ".tables":
            self.say("\n".join(self.s.tables()))
        elif cmd == ".schema":
            names = args or self.s.tables()
            for n in names:
                try:
                    sch = self.s.schema(n)
                except BamqlError as e:
                    self.error(f"error: {e}")
                    continue
                st = self.s.store(n)
                self.say(f"{n}: {st.rows:,} rows, {st.page_size} B pages")
                for f in sch:
                    how = f.metadata[b"storage"].decode()
                    if b"scale" in f.metadata:  # a decimal float as a scaled integer
                        how += f" / 10^{f.metadata[b'scale'].decode()}"
                    if b"bits" in f.metadata:  # bit-packed pages (ingest --pack)
                        how += f", packed to {f.metadata[b'bits'].decode()} bits"
                    if b"value_sets" in f.metadata:  # IN / = prune pages holding none
                        how += ", page value sets"
                    self.say(f"  {f.name:<24} {str(f.type):<14} stored as {how}")
        elif cmd in (".timer", ".explain"):
            if args not in (["on"], ["off"]):
                self.say(f"usage: {cmd} on|off")
            else:
                setattr(self, cmd[1:], args[0] == "on")
        elif cmd == ".mode":
            if len(args) != 1 or args[0] not in FORMATS:
                self.say("usage: .mode " + "|".join(FORMATS))
            else:
                self.mode = args[0]
        elif cmd == ".maxrows":
            if not args:
                self.say(f"maxrows {self.max_rows or 'all'}")
            elif len(args) != 1 or not args[0].isdigit():
                self.say("usage: .maxrows N (0: every row)")
            else:
                self.max_rows = int(args[0])
        elif cmd == ".output":
            self.set_output(line.strip()[len(parts[0]):].strip())
        elif cmd == ".read":
            path = line.strip()[len(parts[0]):].strip()
            if not path:
                self.say("usage: .read FILE")
            else:
                return self.read(path)
        else:
            self.error(f"error: unknown command {cmd} (try .help)")
        return True

    def set_output(self, path: str) -> None:
        """Send results to the file ``path`` (created or emptied), or with ``""`` to ``out``
        again; a file that cannot be opened is reported and results stay where they go."""
        if path:
            try:
                f = open(os.path.expanduser(path), "w", encoding="utf-8")  # noqa: SIM115 - kept open
            except OSError as e:
                self.error(f"error: cannot write to {path!r}: {e.strerror or e}")
                return
        self.close_output()
        if path:
            self.output, self.output_name = f, path

    def close_output(self) -> None:
        if self.output is not None:
            self.output.close()
        self.output, self.output_name = None, ""

    def read(self, path: str) -> bool:
        """Run the statements and dot-commands of the file ``path``, each as if typed; a
        failing one is reported and the next runs. A statement without its final ``;`` at
        the end of the file runs too. False: the file said ``.quit``."""
        if self._depth >= MAX_READ_DEPTH:
            self.error(f"error: .read {path}: files read each other more than {MAX_READ_DEPTH} deep")
            return True
        try:
            text = Path(os.path.expanduser(path)).read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError) as e:
            why = e.strerror if isinstance(e, OSError) and e.strerror else str(e).splitlines()[0]
            self.error(f"error: cannot read {path!r}: {why}")
            return True
        saved, self._buf = self._buf, []
        self._depth += 1
        try:
            for line in text.splitlines():
                if not self.feed(line):
                    return False
            rest = "\n".join(self._buf)
            if rest.strip():
                stmts = split_statements(rest + "\n;")
                if stmts is None:
                    self.error(f"error: {path}: the file ends inside a string, quoted name or comment")
                else:
                    for stmt in stmts:
                        self.run_sql(stmt)
            return True
        finally:
            self._buf = saved
            self._depth -= 1

    def guarded(self, fn: Callable[..., object], *args) -> object:
        """``fn(*args)``, with a failure reported in one line (a traceback too when
        debugging); None then. Ctrl-C (KeyboardInterrupt) passes through to the loop."""
        try:
            return fn(*args)
        except BamqlError as e:
            self.error(f"error: {e}")
        except Exception as e:  # a bug: one line, and the shell stays open
            if self.debug:
                traceback.print_exc(file=self.out)
            first = str(e).strip().splitlines()[0] if str(e).strip() else ""
            self.error(f"internal error: {type(e).__name__}: {first} "
                     f"(BAMQL_DEBUG=1 shows a traceback)")
        return None

    def run_sql(self, sql: str) -> None:
        """Run one statement and print its result (or the error, in one line)."""
        self.guarded(self._run_sql, sql)

    def _run_sql(self, sql: str) -> None:
        t0 = time.perf_counter()
        plan = self.s.explain(sql) if self.explain and not _is_explain(sql) else None
        res = self.s.sql(sql)
        if plan is not None:
            self.emit(plan)
        if res.is_explain:
            self.emit("\n".join(res.table["explain"].to_pylist()))
        elif self.mode == "table":
            self.emit(format_table(res.table, max_rows=self.max_rows or res.table.num_rows))
        else:
            self.emit(render(res.table, self.mode))
        if self.timer:
            st = res.stats
            extra = f", read {st.bytes_read:,} B" if st else ""
            self.say(f"Run Time: {(time.perf_counter() - t0) * 1e3:.1f} ms{extra}")

    def feed(self, line: str) -> bool:
        """Take one line (or, from the line editor, one complete entry): a dot-command runs
        at once, SQL runs when its statement ends with ``;``. False means quit."""
        if not self._buf and line.strip().startswith("."):
            return self.guarded(self.command, line.strip()) is not False
        if not line.strip() and not self._buf:
            return True
        self._buf.append(line)
        stmts = split_statements("\n".join(self._buf))
        if stmts is not None:  # complete: every statement runs, in order
            self._buf = []
            for stmt in stmts:
                self.run_sql(stmt)
        return True

    def loop(self) -> int:
        """Read statements until the input ends; the exit code: 0, or, when the input is
        not interactive (a pipe or a file: no banner, no prompts, errors on stderr), 1 where
        a statement failed."""
        if self.piped:  # no banner, no prompts: the output is the results alone
            return self._read_piped()
        prompt = _line_editor(self)
        readline, hist = None, None
        if prompt is None:
            prompt = input
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
        self._buf = []
        try:
            while True:
                try:
                    line = prompt("bamql> " if not self._buf else "   ...> ")
                except EOFError:
                    self.say("")
                    break
                except KeyboardInterrupt:
                    self.say("^C")
                    self._buf = []
                    continue
                try:
                    if not self.feed(line):
                        break
                except KeyboardInterrupt:  # cancels the running statement and those after it
                    self.say("^C cancelled")
                    self._buf = []
        finally:
            self.close_output()
            if readline is not None and hist is not None:
                try:
                    hist.parent.mkdir(parents=True, exist_ok=True)
                    readline.write_history_file(hist)
                except OSError:
                    pass
        return 0

    def _read_piped(self) -> int:
        """Run the statements of a pipe or a file on stdin (``loop`` without prompts)."""
        self._buf = []
        try:
            for line in sys.stdin:
                if not self.feed(line.rstrip("\n")):
                    break
            if self._buf and "".join(self._buf).strip():  # a last statement without ';'
                self.feed(";")
        finally:
            self.close_output()
        return 1 if self.failed else 0


def _is_explain(sql: str) -> bool:
    return sql.lstrip().upper().startswith("EXPLAIN")
