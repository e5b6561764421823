"""``tamesu``: a thin argparse dispatcher over ``tamesu.commands.<name>``.

Only the chosen command's module is imported, and commands import anything heavy inside ``run``,
so ``tamesu --help`` and ``tamesu validate`` start fast. Every option can also be given as a
``TAMESU_<OPTION>`` environment variable (``--exclude-tags`` -> ``TAMESU_EXCLUDE_TAGS``); the
command line wins over the environment.
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Mapping, Sequence

from tamesu.commands import (
    COMMAND_MODULES,
    COMMANDS,
    EXIT_BUDGET,
    EXIT_CONFIG,
    EXIT_INFRA,
    EXIT_NO_TESTS,
    print_config_errors,
    use_color,
)
from tamesu.errors import (
    BudgetExceeded,
    ConfigError,
    ConfigErrors,
    MissingExtraError,
    NoTestSelected,
    TamesuError,
    UsageError,
)
from tamesu.untrusted import printable
from tamesu.version import __version__

__all__ = ["build_parser", "console_main", "main"]

_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"0", "false", "no", "off", ""}


def _env_name(action: argparse.Action) -> str | None:
    longs = [o for o in action.option_strings if o.startswith("--")]
    if not longs or longs[0] in ("--help", "--version"):
        return None
    return "TAMESU_" + longs[0][2:].upper().replace("-", "_")


def _from_env(action: argparse.Action, name: str, raw: str) -> object:
    """An environment value converted the way argparse would convert the option's argument."""
    if isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction)):
        value = raw.strip().lower()
        if value not in _TRUE | _FALSE:
            raise UsageError(f"{name}={raw!r}: expected true or false")
        on = value in _TRUE
        return on if isinstance(action, argparse._StoreTrueAction) else not on
    if isinstance(action, argparse._CountAction):
        try:
            return int(raw)
        except ValueError:
            raise UsageError(f"{name}={raw!r}: expected a number") from None
    if action.nargs in ("*", "+") or isinstance(action, argparse._AppendAction):
        values = [v.strip() for v in raw.split(",") if v.strip()]
        items = [_convert(action, name, v) for v in values]
        return items
    return _convert(action, name, raw)


def _convert(action: argparse.Action, name: str, raw: str) -> object:
    value: object = raw
    if callable(action.type):
        try:
            value = action.type(raw)
        except (TypeError, ValueError, argparse.ArgumentTypeError) as exc:
            raise UsageError(f"{name}={raw!r}: {exc}") from None
    if action.choices is not None and value not in action.choices:
        raise UsageError(f"{name}={raw!r}: expected one of {', '.join(map(str, action.choices))}")
    return value


def apply_env_defaults(parser: argparse.ArgumentParser, environ: Mapping[str, str]) -> None:
    """Make ``TAMESU_<OPTION>`` the default of each option of ``parser``."""
    for action in parser._actions:
        name = _env_name(action)
        if name and name in environ and action.default is not argparse.SUPPRESS:
            action.default = _from_env(action, name, environ[name])
            action.required = False


def _color_parent(default: object) -> argparse.ArgumentParser:
    parent = argparse.ArgumentParser(add_help=False)
    parent.add_argument(
        "--color",
        choices=("auto", "always", "never"),
        default=default,
        help="colour output: auto (a terminal without NO_COLOR), always or never",
    )
    return parent


def _selected(argv: Sequence[str]) -> str | None:
    """The command named on the command line, found without importing any command."""
    skip = False
    for token in argv:
        if skip:
            skip = False
        elif token == "--color":
            skip = True
        elif token in COMMANDS:
            return token
        elif not token.startswith("-"):
            return None
    return None


def build_parser(command: str | None, environ: Mapping[str, str] | None = None) -> argparse.ArgumentParser:
    """The parser with every command listed and only ``command``'s arguments loaded."""
    environ = os.environ if environ is None else environ
    parser = argparse.ArgumentParser(
        prog="tamesu",
        description="Test conversational and voice AI agents the way users would.",
        parents=[_color_parent("auto")],
        epilog="Every option can also be set as TAMESU_<OPTION> (for example TAMESU_COLOR=never).",
    )
    parser.add_argument("--version", action="version", version=f"tamesu {__version__}")
    apply_env_defaults(parser, environ)
    subs = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, help_text in COMMANDS.items():
        if name != command:
            subs.add_parser(name, help=help_text, add_help=False)
            continue
        sub = subs.add_parser(
            name, help=help_text, description=help_text, parents=[_color_parent(argparse.SUPPRESS)]
        )
        _command_module(name).add_arguments(sub)
        apply_env_defaults(sub, environ)
    return parser


def _command_module(name: str):  # type: ignore[no-untyped-def]
    module = f"tamesu.commands.{COMMAND_MODULES.get(name, name)}"
    try:
        return importlib.import_module(module)
    except ModuleNotFoundError as exc:
        if exc.name == module:
            raise UsageError(f"the {name} command is not available in this installation") from None
        raise


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit code (0 passed, 1 failed, 2 usage/config, 3 infra, 4 budget,
    5 no test selected)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        parser = build_parser(_selected(argv))
        args = parser.parse_args(argv)
        args.use_color = use_color(args.color)
        if not args.command:
            parser.print_help()
            return EXIT_CONFIG
        return int(_command_module(args.command).run(args) or 0)
    except SystemExit as exc:  # argparse: --help, --version, usage errors
        return exc.code if isinstance(exc.code, int) else (0 if exc.code is None else EXIT_CONFIG)
    except BrokenPipeError:  # the reader went away (tamesu validate | head)
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 141
    except KeyboardInterrupt:
        print("tamesu: interrupted", file=sys.stderr)
        return 130
    except (ConfigErrors, ConfigError) as exc:
        errors = exc.errors if isinstance(exc, ConfigErrors) else [exc]
        print_config_errors(errors, color=use_color(None, sys.stderr), stream=sys.stderr)
        return EXIT_CONFIG
    except NoTestSelected as exc:
        print(f"tamesu: {exc}", file=sys.stderr)
        return EXIT_NO_TESTS
    except UsageError as exc:
        print(f"tamesu: error: {printable(str(exc))}", file=sys.stderr)
        return EXIT_CONFIG
    except BudgetExceeded as exc:
        print(f"tamesu: budget exceeded: {printable(str(exc))}", file=sys.stderr)
        return EXIT_BUDGET
    except (MissingExtraError, TamesuError) as exc:
        print(f"tamesu: {printable(str(exc))}", file=sys.stderr)
        return EXIT_INFRA
    except Exception as exc:
        if os.environ.get("TAMESU_DEBUG"):
            raise
        print(
            f"tamesu: internal error: {type(exc).__name__}: {printable(str(exc))} (set TAMESU_DEBUG=1 for the traceback)",
            file=sys.stderr,
        )
        return EXIT_INFRA


def console_main() -> int:
    """``tamesu`` and ``python -m tamesu``: ``main``, then the process ends."""
    from tamesu.cycle_collector import before_exit, one_command_process

    one_command_process()
    code = main()
    before_exit()
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(console_main())
