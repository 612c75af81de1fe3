"""Which texts are catalog statements (SHOW TABLES, DESCRIBE ...) and what they name; the
answers are checked against DuckDB in tests/exec/test_describe.py."""

from __future__ import annotations

import pytest

from bamql.errors import PlanError
from bamql.sql.statements import CatalogQuery, Statement, catalog_query


@pytest.mark.parametrize("text, want", [
    ("SHOW TABLES", CatalogQuery(Statement.SHOW_TABLES)),
    ("  show tables ;", CatalogQuery(Statement.SHOW_TABLES)),
    ("DESCRIBE trips", CatalogQuery(Statement.DESCRIBE_TABLE, table="trips")),
    ("desc trips;", CatalogQuery(Statement.DESCRIBE_TABLE, table="trips")),
    ("SHOW trips", CatalogQuery(Statement.DESCRIBE_TABLE, table="trips")),
    ("SHOW COLUMNS FROM trips", CatalogQuery(Statement.DESCRIBE_TABLE, table="trips")),
    ("show all  tables;", CatalogQuery(Statement.SHOW_ALL_TABLES)),
    ('DESCRIBE "my ""t"""', CatalogQuery(Statement.DESCRIBE_TABLE, table='my "t"')),
    ("DESCRIBE SELECT COUNT(*) FROM trips", CatalogQuery(Statement.DESCRIBE_QUERY,
                                                         query="SELECT COUNT(*) FROM trips")),
    ("describe with x AS (SELECT 1) SELECT 1", CatalogQuery(
        Statement.DESCRIBE_QUERY, query="with x AS (SELECT 1) SELECT 1")),
])
def test_catalog_statements(text, want):
    assert catalog_query(text) == want


@pytest.mark.parametrize("text", ["SELECT COUNT(*) FROM trips", "EXPLAIN SELECT 1",
                                  "-- DESCRIBE trips\nSELECT 1", "showtables"])
def test_queries_are_not_catalog_statements(text):
    assert catalog_query(text) is None


@pytest.mark.parametrize("text", ["SHOW ALL TABLES x", "SHOW DATABASES x", "DESCRIBE", "SHOW",
                                  "DESCRIBE a b"])
def test_other_describe_and_show_forms_are_refused_with_one_line(text):
    with pytest.raises(PlanError) as e:
        catalog_query(text)
    assert "not supported" in str(e.value) and "\n" not in str(e.value)
