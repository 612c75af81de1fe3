"""The hostile random-query generator (``tests.sql.fuzz``) in the default run: a few seeded
worlds of every mode (stores, registered Arrow tables and frames, Parquet and CSV files in
place) with their queries, on the CPU engine against DuckDB: no wrong answer, no traceback.
``python -m tests.sql.fuzz --queries 2000`` runs the long version."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.sql.fuzz import MODES, Outcome, compare, run_world

#: (mode, world seed): one world per mode, its seed chosen once
WORLDS = [(mode, 4100 + j) for j, mode in enumerate(MODES)]


@pytest.mark.parametrize(("mode", "seed"), WORLDS, ids=[m for m, _ in WORLDS])
def test_random_hostile_queries_answer_as_duckdb(mode: str, seed: int, tmp_path: Path):
    out: list[Outcome] = run_world(seed, 5, tmp_path, mode=mode)
    bad = [o.line() for o in out if o.status in ("wrong", "error", "hang")]
    assert not bad, "\n".join(bad)


def test_comparison_is_exact_for_decimals_and_aware_of_kinds():
    from decimal import Decimal

    big = Decimal("12345678901234.5677")
    assert compare([(big,)], [(big,)], False) == "ok"
    assert compare([(float(big),)], [(big,)], False) == "typed"  # a double for a DECIMAL
    assert compare([(Decimal("12345678901234.5678"),)], [(big,)], False) == "wrong"
    assert compare([(1,)], [(True,)], False) == "typed"  # BIGINT for BOOLEAN
    assert compare([(-0.0,), (float("nan"),)], [(float("nan"),), (0.0,)], False) == "ok"
    assert compare([(1,), (2,)], [(2,), (1,)], True) == "wrong"
