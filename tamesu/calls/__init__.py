"""Recorded calls made regression tests (``tamesu import calls``): which files make a call, how a
call becomes a replay test, and how the tests are written into a suite."""

from tamesu.calls.importer import CallImport, ImportedCall, ImportOptions, import_call
from tamesu.calls.sources import CallFiles, find_calls, read_transcript
from tamesu.calls.suite_file import append_tests, new_suite_text, write_suite

__all__ = [
    "CallFiles",
    "CallImport",
    "ImportOptions",
    "ImportedCall",
    "append_tests",
    "find_calls",
    "import_call",
    "new_suite_text",
    "read_transcript",
    "write_suite",
]
