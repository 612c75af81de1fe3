"""The benchmark and test queries, one ``.sql`` file each (taxi Q1-Q6 of the BaM paper first)."""

from __future__ import annotations

from importlib import resources

#: The BaM taxi queries: Williamsburg pickups, one more dependent column per query.
TAXI_QUERIES = ("q01", "q02", "q03", "q04", "q05", "q06")
#: The queries that return rows (ORDER BY ... LIMIT), not groups.
ROW_QUERIES = ("k01",)
#: The queries that run through the plan tree (operators above fused kernels).
TREE_QUERIES = ("a01", "a02", "j01", "r01", "w01")


def load(name: str) -> str:
    """The SQL text of query ``name`` (e.g. ``"q01"``)."""
    return (resources.files("bamql.queries") / f"{name}.sql").read_text().strip()


def names() -> list[str]:
    """All query names, in order."""
    return sorted(p.name[:-4] for p in resources.files("bamql.queries").iterdir()
                  if p.name.endswith(".sql"))


def all_queries() -> dict[str, str]:
    """Every query, by name."""
    return {n: load(n) for n in names()}
