"""``tamesu playbooks``: the red-team playbooks, with their attacks, tactics and detectors."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from tamesu.commands import EXIT_OK
from tamesu.untrusted import paint

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("names", nargs="*", metavar="NAME", help="only these playbooks (default: all)")
    parser.add_argument("--json", action="store_true", help="print the playbooks as JSON")


_KINDS = {
    "Canary": "canary",
    "Pattern": "forbidden_text",
    "ToolUse": "forbidden_tool",
    "Decoded": "decoded",
    "PackCheck": "pack",
    "Rubric": "judge",
}


def _detector(detector: Any) -> dict[str, Any]:
    from dataclasses import asdict

    data = {"kind": _KINDS.get(type(detector).__name__, type(detector).__name__), "label": detector.label}
    data.update({k: v for k, v in asdict(detector).items() if k not in ("label", "inner")})
    if hasattr(detector, "inner"):
        data["inner"] = [_detector(d) for d in detector.inner]
    return data


def _move(move: Any) -> dict[str, Any]:
    data = {"say": move.say, "tactic": move.tactic}
    if move.dtmf:
        data["dtmf"] = move.dtmf
    if move.speech_level_db:
        data["speech_level_db"] = move.speech_level_db
    return data


def playbook_data(name: str) -> dict[str, Any]:
    """A playbook as plain data: what ``--json`` prints."""
    from tamesu.playbooks.catalogue import get_playbook

    book = get_playbook(name)
    return {
        "name": book.name,
        "description": book.description,
        "requires": book.requires,
        "tactics": list(book.tactics),
        "detectors": [_detector(d) for d in book.detectors],
        "attacks": [
            {
                "name": a.name,
                "rule": book.rule(a),
                "description": a.description,
                "severity": a.severity,
                "requires": a.requires,
                "goal": a.goal,
                "opening": [_move(m) for m in a.opening],
                "detectors": [_detector(d) for d in a.detectors],
                **({"behaviors": a.behaviors} if a.behaviors else {}),
            }
            for a in book.attacks
        ],
    }


def run(args: argparse.Namespace) -> int:
    from tamesu.errors import UsageError
    from tamesu.playbooks.catalogue import playbook_names, unknown_names

    color = bool(getattr(args, "use_color", False))
    unknown = unknown_names(args.names)
    if unknown:
        from tamesu.config.errors_map import did_you_mean

        known = playbook_names()
        hint = did_you_mean(unknown[0], known) or f"playbooks: {', '.join(known)}"
        raise UsageError(f"unknown playbook {unknown[0]!r} ({hint})")
    books = [playbook_data(name) for name in (args.names or playbook_names())]
    if args.json:
        json.dump(books, sys.stdout, indent=2, ensure_ascii=False)
        sys.stdout.write("\n")
        return EXIT_OK
    for book in books:
        needs = f" [{book['requires']} targets only]" if book["requires"] else ""
        print(paint(book["name"], "bold", color) + f"  {book['description']}{needs}")
        print(f"  tactics: {', '.join(book['tactics'])}")
        if book["detectors"]:
            print(f"  detectors: {', '.join(d['label'] for d in book['detectors'])}")
        for attack in book["attacks"]:
            own = ", ".join(d["label"] for d in attack["detectors"])
            needs = f" [{attack['requires']}]" if attack["requires"] and not book["requires"] else ""
            line = f"  - {attack['name']} ({attack['severity']}){needs}: {attack['description']}"
            print(line + (f" + {own}" if own else ""))
        print()
    n = len(books)
    attacks = sum(len(b["attacks"]) for b in books)
    print(paint(f"{n} playbook{'s' * (n != 1)}, {attacks} attacks", "dim", color))
    return EXIT_OK
