"""Explain it back's prose and question (static: no user text goes through these strings)."""

TITLE = "Explain it back"

PROSE = """
## Explain it back

Write the answer in your own words, as if to a classmate. Below it: the live state of this
session's nodes 01, 02 and 03, and self-checks that ask what the engine *would* do. Answer
first; the engine then runs it on a copy of that node and shows its answer beside yours.
"""

QUESTION = (
    "Each of the two techniques you just watched takes a trick from how an operating system "
    "manages memory. For PagedAttention and for RadixAttention: which trick, what waste or "
    "repeated work does it remove, and where do the two differ?"
)

CHECKS_HEADING = "### Predict, then check against the engine"
PREDICTIONS_TITLE = "Your predictions so far"
