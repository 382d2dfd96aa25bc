"""The attention kernels against the reference: Triton (under TRITON_INTERPRET=1 on a CPU) and the C
decode and extend (kernels/).

Shared fixtures: tests/conftest.py; this room's own, here."""
