"""The class server's addresses and ports: the websocket origins given, the ports it checks and
waits for, and the addresses students open. Used by class_server.py.

Standard library only, like class_server.py.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess


def split_origins(allow: str) -> list[str]:
    """ALLOW as given to make: origins separated by commas or spaces ('*' allows any)."""
    return [o for o in allow.replace(",", " ").split() if o]

def free_loopback_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def port_open(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex((host, port)) == 0


def port_free(port: int, address: str = "127.0.0.1") -> bool:
    family = socket.AF_INET6 if ":" in address else socket.AF_INET
    with socket.socket(family) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind((address if address not in ("localhost",) else "127.0.0.1", port))
        except OSError:
            return False
    return True


def lan_addresses() -> list[str]:
    """This machine's IPv4 addresses other than loopback, best first."""
    found: list[str] = []
    with contextlib.suppress(OSError), socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.connect(("10.255.255.255", 1))  # no packet is sent: this picks the default route's address
        found.append(s.getsockname()[0])
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run(["hostname", "-I"], capture_output=True, text=True, timeout=5).stdout
        found += out.split()
    return [a for a in dict.fromkeys(found) if "." in a and not a.startswith("127.")]


def student_urls(address: str, port: int, page: str = "") -> list[str]:
    wildcard = address in ("0.0.0.0", "::", "")
    hosts = (lan_addresses() or ["localhost"]) if wildcard else [address]
    return [f"http://{h}:{port}/{page}" for h in hosts]
