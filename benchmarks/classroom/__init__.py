"""The class benchmark's load-test harness, one module per job:

    __main__.py  the command line and the run: `python -m benchmarks.classroom --help`
    server.py    server control: the class server made ready as before a class; /proc meters
    clients.py   the HTTP clients: first visits, live questions, hand-ins, the flood
    probes.py    Chromium probes: a real student's page acting while the class arrives
    report.py    the figures summarised, the goals' table, the JSON
    teacher.py   the teacher's class: the roster, Pause and Follow me, the class's tree
                 (`python -m benchmarks.classroom.teacher --help`)

Shared with the tests, below both: tools/loopback_class.py (the class server started on
loopback, a student's HTTP from its own address 127.1.x.y).
"""
