"""The per-statement cost of a build of bamql: four small queries over the built-in zones
table, 30 rounds, milliseconds per query. Used to compare the single statement path
(session 49) with the build before it, a process of each build taking turns::

    python bench/diag/statement_cost.py /path/to/source/tree
"""

from __future__ import annotations

import sys
import time

QUERIES = [
    "SELECT Borough, COUNT(*) FROM zones WHERE LocationID > 5 GROUP BY 1",
    "SELECT COUNT(*) FROM zones WHERE Borough = 'Queens'",
    "SELECT LocationID FROM zones WHERE LocationID < 10 ORDER BY 1 DESC LIMIT 3",
    "SELECT Borough, n FROM (SELECT Borough, COUNT(*) AS n FROM zones GROUP BY 1) ORDER BY 2 DESC",
]


def main(tree: str, rounds: int = 30) -> None:
    sys.path.insert(0, tree)
    import bamql

    print(bamql.__file__)
    con = bamql.connect(":memory:")
    for q in QUERIES:  # kernels compiled or loaded, plans made
        con.sql(q)
    t = time.perf_counter()
    for _ in range(rounds):
        for q in QUERIES:
            con.sql(q)
    print("ms per query", (time.perf_counter() - t) / (rounds * len(QUERIES)) * 1000)


if __name__ == "__main__":
    main(sys.argv[1])
