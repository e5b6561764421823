"""``tamesu import calls PATH... (--into SUITE | --out NEW.yaml) --target NAME``: recorded calls
become replay tests, one per call; a call that cannot be imported is one line of error and the
others are imported."""

from __future__ import annotations

import argparse
import asyncio
import sys
from pathlib import Path

from tamesu.commands import EXIT_CONFIG, EXIT_FAILED, EXIT_OK, fraction
from tamesu.untrusted import printable

__all__ = ["add_arguments", "run"]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("what", choices=["calls"], help="what to import (recorded calls)")
    parser.add_argument("paths", nargs="+", type=Path, metavar="PATH", help="recordings, or folders of them")
    where = parser.add_mutually_exclusive_group(required=True)
    where.add_argument(
        "--into", type=Path, metavar="SUITE", help="add the tests to this suite (it defines the target)"
    )
    where.add_argument("--out", type=Path, metavar="NEW.yaml", help="write a new suite with a target stub")
    parser.add_argument("--target", required=True, help="the target the tests call")
    parser.add_argument(
        "--caller",
        choices=["left", "right"],
        default="left",
        help="the caller's channel of a stereo recording (tamesu records it on the left)",
    )
    parser.add_argument(
        "--offsets",
        action="store_true",
        help="point into the original recordings instead of writing a clip per caller turn",
    )
    parser.add_argument(
        "--pause",
        type=float,
        default=1.0,
        help="caller speech closer than this many seconds is one turn (default 1.0)",
    )
    parser.add_argument("--language", default=None, help="the calls' language for the offline STT")
    parser.add_argument(
        "--stt-engine", default=None, help="the STT engine (default: the speech engines' default)"
    )
    parser.add_argument(
        "--min-similarity",
        type=fraction,
        default=0.8,
        help="the similar_to threshold of each recorded answer (default 0.8)",
    )
    parser.add_argument(
        "--no-judge", action="store_true", help="leave out the judge comparing with the recorded agent"
    )


def run(args: argparse.Namespace) -> int:
    from tamesu.calls import (
        CallImport,
        ImportOptions,
        append_tests,
        find_calls,
        import_call,
        new_suite_text,
        write_suite,
    )
    from tamesu.calls.importer import ImportedCall, test_name
    from tamesu.calls.suite_file import suite_target_type

    suite_path: Path = args.into or args.out
    if args.out is not None and args.out.exists():
        print(f"tamesu: {printable(str(args.out))} exists; use --into to add to it", file=sys.stderr)
        return EXIT_CONFIG
    target_type = "voice"
    text = ""
    taken: set[str] = set()
    if args.into is not None:
        if not args.into.is_file():
            print(f"tamesu: no suite {printable(str(args.into))}", file=sys.stderr)
            return EXIT_CONFIG
        text = args.into.read_text(encoding="utf-8")
        target_type, taken = suite_target_type(text, args.target, file=str(args.into))
    calls = find_calls(list(args.paths))
    if not calls:
        print("tamesu: no recorded calls found", file=sys.stderr)
        return EXIT_CONFIG
    options = ImportOptions(
        target=args.target, target_type=target_type, caller=args.caller, clips=not args.offsets, pause=args.pause,
        language=args.language, stt_engine=args.stt_engine, similar_min=args.min_similarity, judge=not args.no_judge,
    )  # fmt: skip
    job = CallImport(suite_dir=suite_path.resolve().parent, options=options)

    async def all_calls() -> list[ImportedCall]:
        out = []
        for call in calls:
            if test_name(call) in taken:
                out.append(
                    ImportedCall(call.name, error=f"the suite has a test named {test_name(call)!r} already")
                )
            else:
                out.append(await import_call(call, job))
        return out

    imported = asyncio.run(all_calls())
    tests = [c.test for c in imported if c.test is not None]
    for call in imported:
        if call.error is not None:
            print(f"error  {printable(call.name)}: {printable(call.error)}", file=sys.stderr)
        else:
            turns = len(call.test["scenario"]["replay"]["turns"]) if call.test else 0
            print(f"added  {printable(call.name)}: {turns} caller turn(s)")
    if tests:
        if args.into is not None:
            write_suite(args.into, append_tests(text, tests))
        else:
            write_suite(args.out, new_suite_text(args.out.stem, args.target, tests, judge=options.judge))
        print(f"{len(tests)} test(s) written to {printable(str(suite_path))}")
        needs = "models.embedder (local/minilm runs offline)" + (" and models.judge" if options.judge else "")
        print(
            f"the tests' similar_to{' and judge' if options.judge else ''} need {needs}, in the suite or tamesu.yaml"
        )
    else:
        for call in imported:
            for clip in call.clips:
                clip.unlink(missing_ok=True)
    failed = len(imported) - len(tests)
    return EXIT_OK if not failed else EXIT_FAILED
