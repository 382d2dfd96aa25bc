"""The class database's two tables, the same on SQLite and PostgreSQL (SQLAlchemy Core).

`handins`: one row per student (by the browser's student id); the lists and the metrics are
compact JSON text, `rev` the revision of the row's last write. `meta`: named text values, the
`revision` counter (bumped by every write; what the teacher page polls) and the generated
teacher passphrase. `roster`: the live roster (one row per student page that reported). The column names and
types of the first two are those of the first, SQLite-only version, so
an existing kvviz-class.db is used as it is.
"""

from __future__ import annotations

import sqlalchemy as sa

metadata = sa.MetaData()

handins = sa.Table(
    "handins", metadata,
    sa.Column("student_id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("answer", sa.Text, nullable=False),
    sa.Column("checks", sa.Text, nullable=False),
    sa.Column("predictions", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("metrics", sa.Text, nullable=False),
    sa.Column("created_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
    sa.Column("submissions", sa.Integer, nullable=False),
    sa.Column("rev", sa.BigInteger, nullable=False),
)

meta = sa.Table(
    "meta", metadata,
    sa.Column("name", sa.Text, primary_key=True),
    sa.Column("value", sa.Text, nullable=False),
)

# The live roster (kvviz/handin/roster.py): one row per student page that reported, where it is and
# on which nodes a prediction is made (comma-separated node keys), never what it predicted.
roster = sa.Table(
    "roster", metadata,
    sa.Column("student_id", sa.Text, primary_key=True),
    sa.Column("name", sa.Text, nullable=False),
    sa.Column("node", sa.Text, nullable=False),
    sa.Column("predicted", sa.Text, nullable=False),
    sa.Column("query", sa.Text, nullable=False),
    sa.Column("first_at", sa.Double, nullable=False),
    sa.Column("updated_at", sa.Double, nullable=False),
)

FIELDS = ("student_id", "name", "answer", "checks", "predictions", "query", "metrics", "created_at",
          "updated_at", "submissions")
REVISION = "revision"
SCHEMA_LOCK = 0x6B76_7669_7A00  # PostgreSQL advisory lock: one process creates the tables at a time
