"""A hot table's single-column CHECKs as domains, for the migrations that move them.

PostgreSQL 15 reads a table's CHECK constraints from their stored text and prepares them again
in every statement that writes a row of it (``ExecRelCheck``), all of them on every row, whatever
the statement changed; a domain's constraint is parsed once per backend (the type cache) and
checked only where a value is assigned to a column of that type. A claim and a complete each
write a ``todos`` row and a ``todo_attempts`` row, so the one-column bounds of those two tables
are domains and only the rules over several columns stay table CHECKs
(docs/decisions/0043-check-domains.md, with the figures).

The move rewrites no row: the column takes the domain while it has no constraint yet (a
relabel), then the domain's constraint is added, which validates the rows as they stand, and
the table's CHECK goes. The reverse puts the table's CHECK back before the column leaves the
domain.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Domain:
    """One column's type: ``name`` over ``base``, checking ``check`` (written over ``VALUE``),
    in place of the table CHECK ``replaces`` (the same condition over the column)."""

    column: str
    name: str
    base: str
    check: str
    replaces: str

    @property
    def table_check(self) -> str:
        return self.check.replace("VALUE", self.column)


def to_domains(table: str, domains: tuple[Domain, ...]) -> tuple[list[str], list[str]]:
    """The forward and reverse statements that move ``table``'s ``domains`` (a domain may type
    several columns: it is created, constrained and dropped once)."""
    types = list({d.name: d for d in domains}.values())
    forward = [
        *(f"CREATE DOMAIN {d.name} AS {d.base}" for d in types),
        f"ALTER TABLE {table} "
        + ", ".join(f"ALTER COLUMN {d.column} TYPE {d.name}" for d in domains),
        *(f"ALTER DOMAIN {d.name} ADD CONSTRAINT {d.name}_check CHECK ({d.check})" for d in types),
        f"ALTER TABLE {table} " + ", ".join(f"DROP CONSTRAINT {d.replaces}" for d in domains),
    ]
    reverse = [
        f"ALTER TABLE {table} "
        + ", ".join(f"ADD CONSTRAINT {d.replaces} CHECK ({d.table_check})" for d in domains),
        f"ALTER TABLE {table} "
        + ", ".join(f"ALTER COLUMN {d.column} TYPE {d.base}" for d in domains),
        *(f"DROP DOMAIN {d.name}" for d in types),
    ]
    return forward, reverse
