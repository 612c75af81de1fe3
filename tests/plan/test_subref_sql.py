"""A subquery's place in the plan tree (``plan.nodes.SubRef``) is written out as SQL even
where sqlglot's DuckDB generator was made before ``plan.nodes`` was imported (sqlglot
builds a generator class's dispatch table at its first instance): a query with a subquery,
the first of its process to reach the plan tree, answered with a ValueError."""

from __future__ import annotations

import subprocess
import sys

SCRIPT = """
import pyarrow as pa
import bamql
con = bamql.connect(":memory:")
con.register("t", pa.table({"x": [1, 2, 3]}))
print(con.sql("SELECT x FROM t WHERE x > (SELECT MIN(x) FROM t) ORDER BY x").rows())
print(con.sql("SELECT x FROM t WHERE x IN (SELECT x FROM t WHERE x < 3) ORDER BY x").rows())
"""


def test_a_subquery_answers_in_a_fresh_process():
    out = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True,
                         timeout=300)
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split("\n")[:2] == ["[(2,), (3,)]", "[(1,), (2,)]"]
