"""``tamesu init``: a tamesu.yaml and an example suite that validates, to start from."""

from __future__ import annotations

import argparse
from pathlib import Path

from tamesu.commands import EXIT_CONFIG, EXIT_OK

__all__ = ["EXAMPLE_SUITE", "PROJECT_YAML", "add_arguments", "run"]

PROJECT_YAML = """\
# yaml-language-server: $schema={schema}
# Settings every suite of this project shares. tamesu validate checks this file too.
suites: ["suites/**/*.yaml"]
models:
  default: googleai/gemini-2.5-flash
defaults:
  timeout: 3m
  retries: 1
vars:
  shop: Mochi Shoes
secrets:
  AGENT_TOKEN: env:AGENT_TOKEN
"""

EXAMPLE_SUITE = """\
# yaml-language-server: $schema={schema}
# An example suite: one REST agent, a scripted test that needs no model and one a model plays.
# Check it with `tamesu validate`, list its tests with `tamesu list`.
suite: example
tags: [example]
targets:
  api:
    type: rest
    url: "${{AGENT_URL:-http://localhost:8080}}/chat"
    headers: {{ Authorization: "Bearer {{{{secrets.AGENT_TOKEN}}}}" }}
    request:
      body: {{ session_id: "{{{{session}}}}", message: "{{{{message}}}}" }}
    response:
      text: $.reply
tests:
  - name: greeting
    target: api
    scenario:
      script:
        - say: "Hello, is this the {{{{vars.shop}}}} support?"
    assert:
      - regex: "(?i)(hello|hi|welcome)"
      - {{ turns: {{ lte: 1 }} }}
  - name: return policy
    target: api
    persona: {{ name: Marta, style: polite, language: en }}
    scenario:
      goal: "Find out whether shoes bought 40 days ago can be returned"
      max_turns: 4
    assert:
      - judge: "The agent states the return policy and promises no exception"
      - not_contains: "90 days"
"""


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("dir", nargs="?", default=".", metavar="DIR", help="the project folder (default: .)")
    parser.add_argument(
        "--local-schema",
        action="store_true",
        help="write the JSON Schemas into DIR/.tamesu/ and point the files at them instead of the published URL",
    )


def run(args: argparse.Namespace) -> int:
    from tamesu.config.schema import SCHEMA_BASE_URI, SCHEMA_FILES

    root = Path(args.dir)
    project_file = root / "tamesu.yaml"
    suite_file = root / "suites" / "example.yaml"
    existing = [p for p in (project_file, suite_file) if p.exists()]
    if existing:
        for p in existing:
            print(f"tamesu init: {p} already exists; nothing was written")
        return EXIT_CONFIG
    suite_schema = SCHEMA_BASE_URI + SCHEMA_FILES["suite"]
    project_schema = SCHEMA_BASE_URI + SCHEMA_FILES["project"]
    if args.local_schema:
        from tamesu.config.schema import dump_schema

        folder = root / ".tamesu"
        folder.mkdir(parents=True, exist_ok=True)
        for kind in ("suite", "project"):
            (folder / SCHEMA_FILES[kind]).write_text(dump_schema(kind), encoding="utf-8")  # type: ignore[arg-type]
        suite_schema = f"../.tamesu/{SCHEMA_FILES['suite']}"
        project_schema = f".tamesu/{SCHEMA_FILES['project']}"
    suite_file.parent.mkdir(parents=True, exist_ok=True)
    project_file.write_text(PROJECT_YAML.format(schema=project_schema), encoding="utf-8")
    suite_file.write_text(EXAMPLE_SUITE.format(schema=suite_schema), encoding="utf-8")
    print(f"wrote {project_file} and {suite_file}")
    print(f"next: tamesu validate {root}")
    return EXIT_OK
