"""``bamql shell``: an interactive SQL prompt with history and dot-commands."""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

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


class Shell:
    """A read-eval-print loop over one session."""

    def __init__(self, session: Session, out=None) -> None:
        self.s = session
        self.out = out or sys.stdout
        self.timer = False
        self.mode = "table"

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

    def run_sql(self, sql: str) -> None:
        t0 = time.perf_counter()
        try:
            res = self.s.sql(sql)
        except BamqlError as e:
            self.say(f"error: {e}")
            return
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

            hist = Path(os.environ.get("BAMQL_HISTORY", Path.home() / ".bamql_history"))
            try:
                readline.read_history_file(hist)
            except OSError:
                pass
        except ImportError:  # pragma: no cover - readline is missing on some platforms
            readline, hist = None, None
        self.say(f"bamql shell on {self.s.path} ({self.s.device}); .help for help, .quit to leave")
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
                if not buf and line.strip().startswith("."):
                    if not self.command(line.strip()):
                        break
                    continue
                if not line.strip() and not buf:
                    continue
                buf.append(line)
                text = "\n".join(buf).strip()
                if text.endswith(";"):
                    buf = []
                    for stmt in (s.strip() for s in text.split(";")):
                        if stmt:
                            self.run_sql(stmt)
        finally:
            if readline is not None and hist is not None:
                try:
                    readline.write_history_file(hist)
                except OSError:
                    pass
        return 0
