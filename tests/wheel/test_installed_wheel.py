"""The shipped artefact: the sdist, the wheel built from it, and that wheel installed (not editable)
in a fresh virtual environment, where every module imports, every data file is found and a smoke
suite per target family passes against ``tamesu.testing`` peers.

The editable checkout every other test runs from hides what a wheel leaves out (a folder without
``__init__.py`` once cost the SIP stack). The fresh environment gets the wheel alone; its
dependencies are this environment's (a ``.pth`` line per site folder, after the wheel's own), so
the test takes minutes rather than a full install. Built once per session.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tarfile
import zipfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.wheel]

ROOT = Path(__file__).resolve().parents[2]
FOLDERS = {"tamesu": "tamesu", "actors": "tamesu/actors", "audio": "tamesu/audio", "schema": "tamesu/schema"}
"""Repository folder -> where its files sit in the installed package."""
NOT_IMPORTED = {"tamesu.__main__"}
"""Modules that do something when imported (``python -m tamesu``)."""


def tracked_package_files() -> dict[str, str]:
    """Repository path -> installed path of every tracked file of the package (no caches)."""
    listed = subprocess.run(
        ["git", "ls-files", "-z", *FOLDERS], cwd=ROOT, capture_output=True, check=True
    ).stdout.decode()
    files = {}
    for path in filter(None, listed.split("\0")):
        folder, _, rest = path.partition("/")
        if (ROOT / path).is_file():
            files[path] = f"{FOLDERS[folder]}/{rest}"
    return files


@dataclass(frozen=True)
class Installed:
    sdist: Path
    wheel: Path
    python: Path
    """The fresh environment's interpreter."""
    site: Path
    """Its site-packages, where the wheel went."""

    def run(self, *args: str, cwd: Path, timeout: float = 120) -> subprocess.CompletedProcess[str]:
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        env["NO_COLOR"] = "1"
        return subprocess.run(
            [str(self.python), *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout
        )


@pytest.fixture(scope="session")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Installed:
    pytest.importorskip("build", reason="pip install build (the dev extra)")
    if not (ROOT / ".git").exists():
        pytest.skip("the package's files are listed by git: run from a clone")
    # From a copy of the files git would commit: a build folder or egg-info left in the checkout
    # (whose SOURCES.txt names every file once built) must not fill in what pyproject.toml leaves out.
    source = tmp_path_factory.mktemp("source")
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout.decode()
    for path in filter(None, listed.split("\0")):
        if (ROOT / path).is_file():
            (source / path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(ROOT / path, source / path)
    dist = tmp_path_factory.mktemp("dist")
    # python -m build makes the sdist, then the wheel from the unpacked sdist: what a user's pip does
    built = subprocess.run(
        [sys.executable, "-m", "build", "--outdir", str(dist), str(source)],
        cwd=dist,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert built.returncode == 0, built.stdout[-3000:] + built.stderr[-3000:]
    [sdist] = dist.glob("tamesu-*.tar.gz")
    [wheel] = dist.glob("tamesu-*.whl")
    venv = tmp_path_factory.mktemp("venv")
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    python = venv / "bin" / "python"
    pip = [sys.executable, "-m", "pip", "--python", str(python), "install", "-q", "--no-deps", "--no-index"]
    subprocess.run([*pip, str(wheel)], check=True, timeout=300)
    site = Path(
        subprocess.run(
            [str(python), "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
    )
    ours = [p for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]
    (site / "zz_test_dependencies.pth").write_text("".join(f"{p}\n" for p in ours))
    return Installed(sdist, wheel, python, site)


def test_the_wheel_holds_every_tracked_file_of_the_package(installed: Installed) -> None:
    names = set(zipfile.ZipFile(installed.wheel).namelist())
    missing = sorted(path for path, inside in tracked_package_files().items() if inside not in names)
    assert missing == [], f"left out of the wheel: {missing}"


def test_the_sdist_holds_the_package_and_what_builds_it(installed: Installed) -> None:
    with tarfile.open(installed.sdist) as sdist:
        names = {name.partition("/")[2] for name in sdist.getnames()}
    expected = {*tracked_package_files(), "pyproject.toml", "README.md"}
    assert sorted(expected - names) == []


def test_every_module_imports_from_the_installed_wheel(installed: Installed, tmp_path: Path) -> None:
    modules = sorted(
        name.removesuffix(".py").removesuffix("/__init__").replace("/", ".")
        for name in zipfile.ZipFile(installed.wheel).namelist()
        if name.endswith(".py")
    )
    script = (
        "import importlib, json, sys, tamesu\n"
        f"failed = {{}}\nfor name in {[m for m in modules if m not in NOT_IMPORTED]!r}:\n"
        "    try:\n        importlib.import_module(name)\n"
        "    except Exception as exc:\n        failed[name] = f'{type(exc).__name__}: {exc}'\n"
        "print(json.dumps({'tamesu': tamesu.__file__, 'failed': failed}))\n"
    )
    done = installed.run("-c", script, cwd=tmp_path, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["tamesu"].startswith(str(installed.site)), "tamesu was imported from outside the wheel"
    assert found["failed"] == {}
    assert {"tamesu.sip.ua", "tamesu.actors.graph", "tamesu.audio.codec", "tamesu.schema"} <= set(modules)


def test_the_installed_package_finds_its_data_files(installed: Installed, tmp_path: Path) -> None:
    script = """
import json
from importlib import resources
import tamesu.schema
from tamesu.playbooks.catalogue import playbook_names
from tamesu.targets.browser.browser_a11y import axe_script
from tamesu.targets.grpc.grpc_stubs import agent_pb2
report = resources.files("tamesu").joinpath("data", "report")
print(json.dumps({
    "report": sorted(p.name for p in report.iterdir()),
    "schema": sorted(p.name for p in tamesu.schema.FOLDER.iterdir() if p.suffix in (".json", ".proto")),
    "schema_at": str(tamesu.schema.FOLDER),
    "typed": resources.files("tamesu").joinpath("py.typed").is_file(),
    "stubs": agent_pb2.DESCRIPTOR.name,
    "playbooks": len(playbook_names()),
    "axe": axe_script()[:20],
}))
"""
    done = installed.run("-c", script, cwd=tmp_path)
    assert done.returncode == 0, done.stderr[-3000:]
    found = json.loads(done.stdout.splitlines()[-1])
    assert found["report"] == ["report.css", "report.js"]
    assert found["schema"] == ["agent.proto", "tamesu-project.schema.json", "tamesu.schema.json"]
    assert found["schema_at"].startswith(str(installed.site))
    assert found["typed"] and found["stubs"] == "agent.proto" and found["playbooks"] > 10
    assert found["axe"].startswith("/*! axe v")
    printed = installed.run("-m", "tamesu", "schema", cwd=tmp_path)
    assert printed.stdout == (ROOT / "schema" / "tamesu.schema.json").read_text(encoding="utf-8")


SUITE = """\
suite: wheel-smoke
models: {{ default: scripted/main }}
targets:
  rest: {{ type: rest, url: "{rest}/chat", response: {{ text: $.reply }} }}
  a2a: {{ type: a2a, url: "{a2a}" }}
  grpc: {{ type: grpc, url: "{grpc}", turn_timeout: 20s }}
  mcp:
    type: mcp
    command: "{python}"
    args: ["-m", "mcp_server_time", "--local-timezone", "UTC"]
    system: "You tell the time."
  browser: {{ type: browser, url: "{shop}", browser: {{ recording: "off" }} }}
  voice:
    type: voice
    url: "{voice}/voice"
    idle: 1s
    transcript_source: stt
    messages:
      transcript: "$[?(@.type=='transcript')].text"
      done: "$[?(@.type=='end')].type"
  sip: {{ type: sip, to: "{sip}", idle: 1s, transcript_source: stt }}
tests:
  - name: rest
    target: rest
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: "echo: hello" }} ]
  - name: a2a
    target: a2a
    scenario: {{ script: [ {{ say: hello }} ] }}
    assert: [ {{ contains: "echo: hello" }} ]
  - name: grpc
    target: grpc
    scenario: {{ script: [ {{ say: "Can I return shoes I got 40 days ago?" }} ] }}
    assert: [ {{ contains: "30 days" }} ]
  - name: mcp
    target: mcp
    scenario: {{ script: [ {{ say: "What time is it?" }} ] }}
    assert:
      - tool_called: {{ name: get_current_time }}
      - contains: "noon"
  - name: browser
    target: browser
    steps:
      - action: {{ assert_text: "Mochi Shoes" }}
      - action: {{ a11y: {{ impact: critical, rules: [image-alt] }} }}
  - name: voice
    target: voice
    tags: [speech]
    persona: {{ voice: en-US-male }}
    scenario: {{ script: [ {{ say: "Hi! Can I return shoes I bought 40 days ago?" }} ] }}
    assert: [ {{ contains: "30 days" }} ]
  - name: sip
    target: sip
    tags: [speech]
    persona: {{ voice: en-US-male }}
    scenario:
      script:
        - wait_for: "press one for returns"
        - dtmf: "1"
        - wait_for: "you can return shoes within"
        - say: "Thank you, bye."
    assert: [ {{ contains: "30 days" }} ]
"""
FAMILIES = ("rest", "a2a", "grpc", "mcp", "browser", "voice", "sip")


def _speech_installed() -> bool:
    from tamesu.audio.engines import available

    engines = available()
    return bool(engines["tts"]["piper"]["installed"] and engines["stt"]["whisper"]["installed"])


class Peers:
    """Processes serving the suite's targets, each from the installed tamesu; stopped together."""

    def __init__(self, installed: Installed, cwd: Path) -> None:
        self.installed = installed
        self.cwd = cwd
        self.procs: list[subprocess.Popen[str]] = []

    def start(self, *args: str) -> str:
        """Start ``python ARGS`` and return its first line (where it listens)."""
        proc = subprocess.Popen(
            [str(self.installed.python), *args],
            cwd=self.cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.procs.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline().strip()  # empty when it exits before listening
        assert line, f"{args} did not start"
        return line

    def stop(self) -> None:
        for proc in self.procs:
            if proc.stdin is not None:
                proc.stdin.close()
            proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass(frozen=True)
class Smoke:
    verdicts: dict[str, dict[str, Any]]
    """Test id -> its verdict in the JSON report."""
    output: str
    cwd: Path


@pytest.fixture(scope="session")
def smoke(installed: Installed, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Smoke]:
    """The smoke suite run by the installed ``tamesu`` command."""
    if shutil.which("chromium") is None:
        pytest.skip("Chromium is not installed (apt-get install chromium)")
    cwd = tmp_path_factory.mktemp("smoke")
    peers = Peers(installed, cwd)
    try:
        urls = json.loads(peers.start(str(Path(__file__).with_name("peers.py"))))
        assert urls["tamesu"].startswith(str(installed.site)), "the peers ran from outside the wheel"
        grpc = peers.start(str(ROOT / "examples" / "grpc_agent" / "server.py"), "--port", "0")
        speech = _speech_installed()
        voice = sip = "ws://127.0.0.1:9"
        if speech:
            voice = peers.start(str(ROOT / "examples" / "voice_agent" / "agent.py"), "--port", "0")
            sip = peers.start("-m", "tamesu.testing.sip_agent", "--port", "0")
        (cwd / "tamesu.yaml").write_text(
            f'providers:\n  scripted: {{ base_url: "{urls["model"]}" }}\nhistory: {{ enabled: false }}\n'
        )
        suite = SUITE.format(
            python=installed.python,
            grpc=f"grpc://127.0.0.1:{grpc.removeprefix('listening ')}",  # it prints the port it bound
            voice=voice.removeprefix("listening on "),
            sip=sip.removeprefix("listening on "),
            **urls,
        )
        (cwd / "suite.yaml").write_text(suite)
        tamesu = installed.python.parent / "tamesu"
        args = [
            str(tamesu),
            "run",
            "suite.yaml",
            "--json",
            "out.json",
            *([] if speech else ["--exclude-tags", "speech"]),
        ]
        env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
        done = subprocess.run(
            args, cwd=cwd, env={**env, "NO_COLOR": "1"}, capture_output=True, text=True, timeout=600
        )
        assert (cwd / "out.json").is_file(), done.stdout[-3000:] + done.stderr[-3000:]
        report = json.loads((cwd / "out.json").read_text())
        verdicts = {t["test_id"]: t for t in report["tests"]}
        yield Smoke(verdicts, done.stdout + done.stderr, cwd)
    finally:
        peers.stop()


@pytest.mark.parametrize("family", FAMILIES)
def test_a_smoke_suite_per_target_family_passes_from_the_installed_wheel(smoke: Smoke, family: str) -> None:
    if family in ("voice", "sip") and not _speech_installed():
        pytest.skip("needs the voice extra (Piper and Whisper)")
    verdict = smoke.verdicts.get(family)
    assert verdict is not None, smoke.output[-3000:]
    assert verdict["verdict"] == "passed", json.dumps(verdict)[:3000]


def test_the_run_writes_its_html_report_with_the_installed_assets(smoke: Smoke) -> None:
    last = smoke.output.rstrip().splitlines()[-1]
    assert last.startswith("results in tamesu-runs/") and last.endswith("/report.html"), last
    page = (smoke.cwd / last.rpartition(", report ")[2]).read_text(encoding="utf-8")
    css = (ROOT / "tamesu" / "data" / "report" / "report.css").read_text(encoding="utf-8")
    assert css.strip().splitlines()[0] in page and "wheel-smoke" in page
