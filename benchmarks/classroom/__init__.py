"""The class benchmarks, one module per job (docs/benchmarks.md, "The class harness"):
`python -m benchmarks.classroom` (__main__.py: server.py, clients.py, probes.py, report.py) and
`python -m benchmarks.classroom.teacher`; tools/loopback_class.py below both and the tests."""
