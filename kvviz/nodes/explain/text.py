"""Explain it back's prose and question (static: no user text goes through these strings)."""

TITLE = "Explain it back"

PROSE = """
### Explain it back

Write the answer in your own words, as if to a classmate. The panel below reads the live state
of the three nodes above: change them and the facts, and the right answers, change too.
"""

QUESTION = (
    "Each of the two techniques you just watched takes a trick from how an operating system "
    "manages memory. For PagedAttention and for RadixAttention: which trick, what waste or "
    "repeated work does it remove, and where do the two differ?"
)
