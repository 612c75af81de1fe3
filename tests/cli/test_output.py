"""The shell's and the CLI's output modes."""

from __future__ import annotations

import pyarrow as pa

from bamql.cli.output import FORMATS, render

T = pa.table({"a": [1, None], "bb": ["x", "yy"]})


def test_markdown_is_a_pipe_table():
    assert render(T, "markdown").splitlines() == [
        "| a    | bb |", "|------|----|", "| 1    | x  |", "| NULL | yy |"]


def test_line_puts_each_value_on_its_own_line():
    assert render(T, "line") == " a = 1\nbb = x\n\n a = NULL\nbb = yy"


def test_box_draws_the_table():
    lines = render(T, "box").splitlines()
    assert lines[0] == "┌──────┬────┐" and lines[1] == "│ a    │ bb │" and lines[-1] == "└──────┴────┘"
    assert len(lines) == 6


def test_every_mode_renders_an_empty_result():
    for fmt in FORMATS:
        assert isinstance(render(T.slice(0, 0), fmt), str)
