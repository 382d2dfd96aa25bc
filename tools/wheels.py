"""Which wheels PyPI has for the lesson's requirements on each platform it supports: the record that
tests/deploy/test_requirements.py checks the requirement files against, with no network.

    python -m tools.wheels          # pip download, per platform; writes tests/fixtures/wheels.json

For each platform of PLATFORMS (CPython 3.11), every requirement of requirements.txt and
requirements-gpu.txt is downloaded alone, as a wheel only (`pip download --only-binary=:all:
--no-deps --platform ...`), its marker ignored: the record says where a wheel exists and where
none does (Triton on macOS and Windows), and the test checks that each file's markers keep a
requirement only where one does. With --no-deps pip skips an extra's packages, so those are read
from the downloaded wheel's own metadata and downloaded too (`psycopg[binary]` asks for
psycopg-binary). pip evaluates markers for the machine it runs on, not for --platform: markers
are evaluated here, with `packaging`, in each platform's environment (PLATFORMS).

Only `packaging` and the standard library: this runs with any Python that has pip.
"""

from __future__ import annotations

import argparse
import datetime
import json
import subprocess
import sys
import tempfile
import zipfile
from email.parser import Parser
from pathlib import Path
from typing import Any

from packaging import tags
from packaging.requirements import Requirement

ROOT = Path(__file__).resolve().parents[1]
RECORD = ROOT / "tests" / "fixtures" / "wheels.json"
LESSON = ROOT / "requirements.txt"
GPU = ROOT / "requirements-gpu.txt"
TEST = ROOT / "requirements-test.txt"
PYTHON = (3, 11)

_COMMON = {"implementation_name": "cpython", "platform_python_implementation": "CPython",
           "implementation_version": "3.11.9", "python_version": "3.11", "python_full_version": "3.11.9",
           "platform_release": "", "platform_version": ""}
_LINUX = [f"manylinux_2_{minor}_x86_64" for minor in range(28, 16, -1)] + ["manylinux2014_x86_64"]

# name -> the marker environment (PEP 508) and the wheel platform tags it installs, newest first.
# macOS: Apple silicon, macOS 14 or later (torch 2.13's Mac wheel is macosx_14_0_arm64); Intel
# Macs have no torch wheel since torch 2.3. Linux: glibc 2.28 or later (torch's manylinux_2_28).
PLATFORMS: dict[str, dict[str, Any]] = {
    "macOS arm64": {
        "environment": {**_COMMON, "os_name": "posix", "sys_platform": "darwin", "platform_system": "Darwin",
                        "platform_machine": "arm64"},
        "platforms": list(tags.mac_platforms((14, 0), "arm64")),
    },
    "Windows x86-64": {
        "environment": {**_COMMON, "os_name": "nt", "sys_platform": "win32", "platform_system": "Windows",
                        "platform_machine": "AMD64"},
        "platforms": ["win_amd64"],
    },
    "Linux x86-64": {
        "environment": {**_COMMON, "os_name": "posix", "sys_platform": "linux", "platform_system": "Linux",
                        "platform_machine": "x86_64"},
        "platforms": _LINUX,
    },
}


def read_requirements(path: Path) -> list[Requirement]:
    """A pip requirements file's requirements, its `-r FILE` lines followed (relative to it)."""
    out: list[Requirement] = []
    for raw in path.read_text().splitlines():
        line = raw.split(" #")[0].strip() if not raw.lstrip().startswith("#") else ""
        if not line:
            continue
        if line.startswith(("-r ", "--requirement ")):
            out += read_requirements(path.parent / line.split(maxsplit=1)[1])
        elif line.startswith("-"):
            raise ValueError(f"{path.name}: option lines other than -r are not expected here: {line!r}")
        else:
            out.append(Requirement(line))
    return out


def kept(requirement: Requirement, platform: str, extra: str = "") -> bool:
    """Whether the requirement's marker keeps it on this platform."""
    env = {**PLATFORMS[platform]["environment"], "extra": extra}
    return requirement.marker is None or requirement.marker.evaluate(env)


def for_platform(requirements: list[Requirement], platform: str) -> list[Requirement]:
    return [r for r in requirements if kept(r, platform)]


def supported_tags(platform: str) -> set[tags.Tag]:
    """The wheel tags CPython 3.11 installs on this platform."""
    platforms = PLATFORMS[platform]["platforms"]
    return {*tags.cpython_tags(PYTHON, platforms=platforms),
            *tags.compatible_tags(PYTHON, "cp311", platforms)}


def key(requirement: Requirement) -> str:
    """A requirement as the record names it: without its marker."""
    return str(Requirement(str(requirement).split(";")[0]))


def _download(spec: str, platform: str, dest: Path) -> tuple[str | None, str]:
    """(the wheel's file name, or None; pip's last error line)."""
    before = set(dest.iterdir())
    cmd = [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps", "--only-binary=:all:",
           "--python-version", "3.11", "-d", str(dest),
           *(f"--platform={p}" for p in PLATFORMS[platform]["platforms"]), spec]
    done = subprocess.run(cmd, capture_output=True, text=True)
    new = sorted(p.name for p in set(dest.iterdir()) - before if p.suffix == ".whl")
    errors = [line for line in done.stderr.splitlines() if line.startswith("ERROR")]
    return (new[0] if done.returncode == 0 and new else None), (errors[-1] if errors else "")


def _extra_requirements(wheel: Path, requirement: Requirement, platform: str) -> list[Requirement]:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        metadata = Parser().parsestr(z.read(name).decode())
    out = []
    for line in metadata.get_all("Requires-Dist") or []:
        dep = Requirement(line)
        if dep.marker is not None and any(kept(dep, platform, extra) for extra in requirement.extras) \
                and not kept(dep, platform):
            out.append(Requirement(str(dep).split(";")[0]))
    return out


def record() -> dict[str, Any]:
    requirements = read_requirements(LESSON) + read_requirements(GPU)
    pip = subprocess.run([sys.executable, "-m", "pip", "--version"], capture_output=True,
                         text=True).stdout.split()
    out: dict[str, Any] = {"made": datetime.datetime.now(datetime.UTC).strftime("%Y-%m-%d %H:%M UTC"),
                           "by": f"python -m tools.wheels (pip {pip[1] if len(pip) > 1 else '?'}, CPython "
                                 "3.11 wheels)",
                           "requirements": sorted(key(r) for r in requirements), "platforms": {}}
    for platform in PLATFORMS:
        found: dict[str, Any] = {}
        with tempfile.TemporaryDirectory() as tmp:
            dest = Path(tmp)
            for requirement in requirements:
                wheel, error = _download(key(requirement), platform, dest)
                wheels = [wheel] if wheel else []
                if wheel and requirement.extras:
                    for dep in _extra_requirements(dest / wheel, requirement, platform):
                        extra_wheel, error = _download(str(dep), platform, dest)
                        wheels.append(extra_wheel or f"none: {dep}")
                found[key(requirement)] = wheels or f"none: {error}"
                print(f"{platform:15} {key(requirement):32} {', '.join(wheels) or 'NO WHEEL: ' + error}",
                      flush=True)
        out["platforms"][platform] = found
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tools.wheels", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=RECORD,
                        help=f"the record to write (default {RECORD.relative_to(ROOT)})")
    args = parser.parse_args(argv)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(record(), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
