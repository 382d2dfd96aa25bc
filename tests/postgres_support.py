"""A throwaway PostgreSQL server for the tests: Debian's server binaries (`make postgres`, run by
`make test`, installs them), a cluster made by `initdb` in a new temporary directory, started on
127.0.0.1 and 127.0.0.2 (two "machines" reaching one server) on a free port, and stopped and
removed when the test session ends. As root (as `make test` runs) the server runs as the user
`postgres` (`runuser`), since PostgreSQL refuses to run as root; otherwise as whoever runs the
tests. Each test gets its own database. The tests skip, saying so, only when the binaries are
missing; a server that is installed but does not start is a failure.
"""

from __future__ import annotations

import contextlib
import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import psycopg
import pytest

from tools.browser import free_port

SUPERUSER = "kvviz_test"
HOSTS = ("127.0.0.1", "127.0.0.2")


def via(class_db: str, machine: int) -> str:
    """The store as machine 0 or 1 reaches it (a SQLite file: the same file)."""
    return class_db.replace(f"@{HOSTS[0]}:", f"@{HOSTS[machine]}:") if "://" in class_db else class_db


def bindir() -> Path | None:
    """The newest installed PostgreSQL's server binaries (initdb, pg_ctl), or None."""
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"), key=lambda p: int(Path(p).parts[-3]))
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


class Cluster:
    """One PostgreSQL cluster in a temporary directory; `url(db)` reaches it."""

    def __init__(self, bin_dir: Path):
        self.bin = bin_dir
        self.dir = Path(tempfile.mkdtemp(prefix="kvviz-pg-"))
        self.data, self.log = self.dir / "data", self.dir / "server.log"
        self.port = free_port()
        self.as_root = os.geteuid() == 0
        if self.as_root:  # the server's files belong to postgres, which must reach them
            user = pwd.getpwnam("postgres")
            os.chown(self.dir, user.pw_uid, user.pw_gid)
        self.dir.chmod(0o700)

    def _run(self, *cmd: str, timeout: float = 120) -> str:
        full = ["runuser", "-u", "postgres", "--", *cmd] if self.as_root else list(cmd)
        out = subprocess.run(full, capture_output=True, text=True, timeout=timeout, cwd=self.dir)
        if out.returncode != 0:
            log = self.log.read_text(errors="replace")[-2000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(cmd)} failed ({out.returncode}):\n{out.stderr}{out.stdout}\n{log}")
        return out.stdout

    def init(self) -> Cluster:
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", SUPERUSER, "--auth=trust",
                  "--encoding=UTF8", "--no-locale")
        with (self.data / "pg_hba.conf").open("a") as hba:  # 127.0.0.2 is a second "machine"
            hba.write("host all all 127.0.0.0/8 trust\n")
        return self

    def start(self) -> None:
        options = (f"-c listen_addresses={','.join(HOSTS)} -c port={self.port} "
                   f"-c unix_socket_directories={self.dir} -c max_connections=200")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-o", options, "-w",
                  "-t", "120", "start")

    def crash(self) -> None:
        """Stop the server as a power cut would: no shutdown checkpoint (`-m immediate`)."""
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")

    def remove(self) -> None:
        with contextlib.suppress(RuntimeError):  # (not running)
            self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
        shutil.rmtree(self.dir, ignore_errors=True)

    def url(self, database: str = "postgres", host: str = HOSTS[0]) -> str:
        return f"postgresql://{SUPERUSER}@{host}:{self.port}/{database}"

    def _admin(self, sql: str) -> None:
        with psycopg.connect(self.url(), autocommit=True, connect_timeout=10) as conn:
            conn.execute(sql)

    def create_database(self) -> str:
        name = f"kvviz_{uuid.uuid4().hex[:12]}"
        self._admin(f"CREATE DATABASE {name}")
        return name

    def drop_database(self, name: str) -> None:
        self._admin(f"DROP DATABASE IF EXISTS {name} WITH (FORCE)")


def cluster() -> Cluster:
    """A new, started cluster; skips the test when PostgreSQL is not installed."""
    found = bindir()
    if found is None:
        pytest.skip("PostgreSQL's server (initdb, pg_ctl) is not installed: `make postgres` installs "
                    "Debian's postgresql (make test does), or: sudo apt-get install -y postgresql")
    if os.geteuid() == 0:
        try:
            pwd.getpwnam("postgres")
        except KeyError:
            pytest.skip("PostgreSQL is installed but there is no `postgres` user to run it as (it refuses "
                        "root)")
    made = Cluster(found).init()
    try:
        made.start()
    except BaseException:
        made.remove()
        raise
    return made
