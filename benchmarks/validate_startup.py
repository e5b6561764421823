"""How much CPU ``tamesu validate`` of a 50-test suite that uses judges costs beside
``import pydantic, yaml``.

Both sides pay Python's own start-up, so the difference is what tamesu adds: its imports (the
models of every registered target type and assertion kind, never the model router or an adapter),
loading, validating and checking the suite. The commands take turns and the figures are medians of
CPU time (user + system), which a busy machine disturbs far less than wall time; the ratio of wall
times is kept beside them. ``phases_cpu_s_median`` splits validate's work into its phases (each
measured in a process of its own that does them in order), to show where the time goes.

Where valgrind is installed, ``instructions`` counts the instructions (callgrind) each command
executes, once each: a figure the machine's load does not move. It adds the floor no pydantic
program gets under: Python's start-up, and ``import pydantic, yaml`` followed by one model class
validating one value (``import pydantic`` alone defers pydantic's machinery to the first model).

    python benchmarks/validate_startup.py [--runs 15] [--tests 50]

Writes benchmarks/results/validate_startup.json.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent

_HEAD = """\
suite: startup-benchmark
tags: [bench]
vars: { shop: Mochi Shoes, base_url: "http://127.0.0.1:8080" }
secrets: { API_TOKEN: env:API_TOKEN }
defaults: { timeout: 2m, retries: 1 }
models: { default: ollama/llama3.2 }
targets:
  api:
    type: rest
    url: "${BENCH_URL:-http://127.0.0.1:8080}/chat"
    headers: { Authorization: "Bearer {{secrets.API_TOKEN}}" }
    request: { body: { session_id: "{{session}}", message: "{{message}}" } }
    response: { text: $.reply, tool_calls: "$.tool_calls[*]", done: $.end_session }
tests:
"""

_TEST = """\
  - name: test {i}
    target: api
    tags: [t{mod}]
    vars: {{ days: "{i}" }}
    persona: {{ name: Marta, style: polite, language: en }}
    capture: [ {{ name: order_id, regex: "(ORD-[0-9]+)" }} ]
    scenario:
      goal: "Ask whether shoes bought {{{{vars.days}}}} days ago can be returned at {{{{vars.shop}}}}"
      max_turns: 4
      script: [ {{ say: "Hello, I have a question about order {{{{captured.order_id}}}}" }} ]
    assert:
      - judge: {{ rubric: "The agent states the 30-day policy", scale: "1-5", min: 4 }}
      - contains: "30 days"
      - tool_called: {{ name: lookup_policy, args: {{ topic: returns }} }}
      - {{ contains: "goodbye", on_turn: last }}
      - metric: {{ name: turn_latency_ms_p95, lt: 3000 }}
"""


_PHASES = """\
import gc, json, sys, time
gc.disable()
clock, out = time.process_time, {}
last = clock()
def phase(name):
    global last
    now = clock()
    out[name] = now - last
    last = now
import pydantic, yaml; phase("import pydantic, yaml")
import tamesu.cli, tamesu.commands.validate, tamesu.config.loader; phase("tamesu.cli and the loader")
from pydantic import BaseModel
class First(BaseModel):
    a: int = 1
phase("pydantic's model machinery (the first model class)")
from tamesu.config.kinds import assertion_kinds, target_kinds
from tamesu.plugins import load_group
load_group("tamesu.none"); phase("entry points (plugins)")
target_kinds.load(); assertion_kinds.load(); phase("target type and assertion kind config modules")
import tamesu.config.suite, tamesu.config.project; phase("suite and tamesu.yaml models (classes)")
from tamesu.config import Suite
Suite.model_rebuild(); phase("the Suite model's validator (built at first validate)")
from tamesu.config.loader import validate_paths
validate_paths([sys.argv[1]]); phase("validate_paths: YAML with positions, validation, checks")
print(json.dumps(out))
"""
"""Where validate's CPU goes, phase by phase, in a process that then does it all in order; the
collector is off, as ``tamesu validate`` has it while it loads."""


def breakdown(suite: Path, runs: int, env: dict[str, str], cwd: Path) -> dict[str, float]:
    """The median CPU seconds of each phase of ``_PHASES`` over ``runs`` processes."""
    seen: dict[str, list[float]] = {}
    for _ in range(runs):
        proc = subprocess.run(
            [sys.executable, "-c", _PHASES, str(suite)], env=env, cwd=cwd, capture_output=True, text=True
        )
        if proc.returncode != 0:
            raise SystemExit(f"the phase breakdown failed:\n{proc.stderr}")
        for name, value in json.loads(proc.stdout).items():
            seen.setdefault(name, []).append(value)
    return {name: round(statistics.median(values), 4) for name, values in seen.items()}


def make_suite(folder: Path, tests: int) -> Path:
    path = folder / "bench.yaml"
    path.write_text(_HEAD + "".join(_TEST.format(i=i, mod=i % 5) for i in range(tests)), encoding="utf-8")
    return path


def run_once(cmd: list[str], env: dict[str, str], cwd: Path) -> tuple[float, float]:
    """Wall-clock time and CPU time (user + system) of one run of ``cmd``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(cmd, env=env, cwd=cwd, capture_output=True, text=True, check=False)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)} failed ({proc.returncode}):\n{proc.stdout}{proc.stderr}")
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_FIRST_MODEL = """\
import pydantic, yaml
from pydantic import BaseModel
class First(BaseModel):
    a: int = 1
First(a=2)
"""


def instructions(cmds: dict[str, list[str]], env: dict[str, str], cwd: Path) -> dict[str, int] | None:
    """Instructions each command executes under callgrind; None without valgrind."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        return None
    out: dict[str, int] = {}
    for name, cmd in cmds.items():
        proc = subprocess.run(
            ["valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", *cmd],
            env=env,
            cwd=cwd,
            capture_output=True,
            text=True,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", proc.stderr)
        if proc.returncode != 0 or found is None:
            raise SystemExit(f"callgrind of {name} failed:\n{proc.stderr[-2000:]}")
        out[name] = int(found.group(1).replace(",", ""))
    return out


def medians(
    cmds: dict[str, list[str]], runs: int, env: dict[str, str], cwd: Path
) -> dict[str, tuple[float, float]]:
    """Per command, the median wall-clock time and the median CPU time of ``runs`` runs.

    The commands take turns, run after run, so a burst of load on a shared machine slows all of
    them alike rather than one.
    """
    walls: dict[str, list[float]] = {name: [] for name in cmds}
    cpus: dict[str, list[float]] = {name: [] for name in cmds}
    for _ in range(runs):
        for name, cmd in cmds.items():
            wall, cpu = run_once(cmd, env, cwd)
            walls[name].append(wall)
            cpus[name].append(cpu)
    return {name: (statistics.median(walls[name]), statistics.median(cpus[name])) for name in cmds}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    parser.add_argument("--tests", type=int, default=50)
    parser.add_argument("--out", type=Path, default=HERE / "results" / "validate_startup.json")
    args = parser.parse_args()

    # Installed packages have their bytecode cached; measure that, not recompiling every module.
    env = {
        k: v for k, v in os.environ.items() if not k.startswith("TAMESU_") and k != "PYTHONDONTWRITEBYTECODE"
    }
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        suite = make_suite(folder, args.tests)
        cmds = {
            "validate": [sys.executable, "-m", "tamesu", "validate", str(suite)],
            "baseline": [sys.executable, "-c", "import pydantic, yaml"],
        }
        medians(cmds, 2, env, folder)  # warm the bytecode caches
        figures = medians(cmds, args.runs, env, folder)
        phases = breakdown(suite, args.runs, env, folder)
        counted = instructions(
            {
                **cmds,
                "python start-up": [sys.executable, "-c", "pass"],
                "import pydantic, yaml and a first model": [sys.executable, "-c", _FIRST_MODEL],
            },
            env,
            folder,
        )
    (t_validate, cpu_validate), (t_baseline, cpu_baseline) = figures["validate"], figures["baseline"]
    result = {
        "benchmark": "validate_startup",
        "tests_in_suite": args.tests,
        "runs": args.runs,
        "statistic": "median",
        "validate_cpu_s": round(cpu_validate, 4),
        "import_pydantic_yaml_cpu_s": round(cpu_baseline, 4),
        "added_cpu_s": round(cpu_validate - cpu_baseline, 4),
        "cpu_ratio": round(cpu_validate / cpu_baseline, 3),
        "validate_s": round(t_validate, 4),
        "import_pydantic_yaml_s": round(t_baseline, 4),
        "ratio": round(t_validate / t_baseline, 3),
        "phases_cpu_s_median": phases,
        "instructions": counted,
        "instruction_ratio": round(counted["validate"] / counted["baseline"], 3) if counted else None,
        "python": platform.python_version(),
        "machine": f"{platform.machine()}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}",
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2) + "\n", encoding="utf-8")
    print(
        f"tamesu validate ({args.tests} tests): {cpu_validate * 1000:.0f} ms of CPU; "
        f"import pydantic, yaml: {cpu_baseline * 1000:.0f} ms; tamesu adds {result['added_cpu_s'] * 1000:.0f} ms "
        f"(CPU ratio {result['cpu_ratio']:.2f}; wall {t_validate * 1000:.0f} ms, ratio {result['ratio']:.2f})"
    )
    for name, seconds in phases.items():
        print(f"  {seconds * 1000:6.1f} ms  {name}")
    for name, count in (counted or {}).items():
        print(f"  {count / 1e6:8.1f} M instructions  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
