"""Hand-ins: a student hands in the explanation with the live state it refers to; the teacher
sees the whole class at /teacher (docs/architecture.md, "Hand-ins").

    model.py        a hand-in's fields, their caps and validation; the per-session rate limit
    storage.py      the store every server process on every machine writes to (KVVIZ_DB: a
                    SQLite file, or PostgreSQL), one SQLAlchemy Core code path for both
    schema.py       its two tables (handins, meta)
    database.py     KVVIZ_DB read, and the engine for a file or a postgresql:// URL
    key.py          the teacher's passphrase (KVVIZ_TEACHER_KEY, else generated once and stored
                    in the database); `python -m kvviz.handin.key` prints it
    collect.py      a hand-in read from one session's lesson states
    report.py       the class summary per question and the CSV export
    teacher_html.py the teacher page's HTML (every field escaped)
    session.py      one session's hand-in controller (name, student id, rate limit, last status),
                    shared by every hand-in box of the page (param, no Panel)
    view.py         the student's hand-in boxes (Panel): Explain it back's, and the compact one
                    under each node's resolved prediction; the browser's student id
    teacher_view.py the teacher page (Panel), served by teacher.py at /teacher

model uses the standard library only; storage, schema and database add SQLAlchemy (and psycopg
for PostgreSQL).
"""
