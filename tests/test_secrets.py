from __future__ import annotations

from pathlib import Path

import pytest

from tamesu.errors import SecretError
from tamesu.secrets import Redactor, SecretStore, secret_backend

pytestmark = pytest.mark.unit


def test_env_file_exec_refs_resolve_and_register(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TOK", "env-secret-1")
    (tmp_path / "key.txt").write_text("file-secret-2\n")
    red = Redactor()
    store = SecretStore(
        {"A": "env:TOK", "B": "file:key.txt", "C": "exec:printf 'exec-secret-3\\nmore'"},
        redactor=red,
        base_dir=tmp_path,
    )
    assert [store.get(n) for n in "ABC"] == ["env-secret-1", "file-secret-2", "exec-secret-3"]
    assert red.redact("x env-secret-1 file-secret-2 exec-secret-3") == "x *** *** ***"


def test_errors_never_carry_values(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("MISSING_TOKEN", raising=False)
    store = SecretStore(
        {"A": "env:MISSING_TOKEN", "B": "vault:x", "C": "exec:exit 3"}, redactor=Redactor(), base_dir=tmp_path
    )
    with pytest.raises(SecretError, match="MISSING_TOKEN is not set"):
        store.get("A")
    with pytest.raises(SecretError, match="unknown ref 'vault'"):
        store.get("B")
    with pytest.raises(SecretError, match="exited 3"):
        store.get("C")
    with pytest.raises(SecretError, match="not declared"):
        store.get("D")


def test_ref_expands_vars_then_env(tmp_path: Path) -> None:
    (tmp_path / "prod.txt").write_text("p-secret")
    store = SecretStore(
        {"A": "file:${stage}.txt"}, redactor=Redactor(), base_dir=tmp_path, vars={"stage": "prod"}
    )
    assert store.get("A") == "p-secret"


def test_plugin_backend() -> None:
    @secret_backend("test-mem")
    def mem(key: str, base: Path) -> str:
        return {"k": "from-plugin"}[key]

    assert SecretStore({"X": "test-mem:k"}, redactor=Redactor()).get("X") == "from-plugin"


def test_redactor_nested_longest_first_and_short_values_ignored() -> None:
    red = Redactor()
    red.add("abc")  # too short to redact safely
    red.add("secret")
    red.add("secret-long")
    assert red.redact("secret-long secret abc") == "*** *** abc"
    assert red.redact_obj({"h": ["Bearer secret"], "secret": 1}) == {"h": ["Bearer ***"], "***": 1}


def test_found_in_json_rules_out_only_what_it_can_see() -> None:
    import msgspec

    redactor = Redactor()
    assert not redactor.found_in_json(b'{"a": "anything"}'), "no secrets: nothing to find"
    redactor.add("sk-live-0123456789")
    assert redactor.found_in_json(msgspec.json.encode({"turns": ["key sk-live-0123456789 here"]}))
    assert redactor.found_in_json(msgspec.json.encode({"sk-live-0123456789": 1})), "keys count too"
    assert not redactor.found_in_json(msgspec.json.encode({"turns": ["sk-live-01234 is not it"]}))
    assert redactor.found_in_json(msgspec.json.encode({"turns": ["sk-live-01234"]})), "perhaps a split value"
    redactor.add('pa"ss\\word')
    assert redactor.found_in_json(b"{}"), "a value JSON escapes cannot be ruled out by a text search"


def test_base64_and_url_encoded_forms_are_redacted() -> None:
    import base64
    from urllib.parse import quote, quote_plus

    secret = "p@ss/w0rd+key 9"
    red = Redactor()
    red.add(secret)
    for prefix in (b"", b"u", b"us", b"user:"):  # every byte offset inside a longer encoded text
        encoded = base64.b64encode(prefix + secret.encode() + b" tail").decode()
        assert "***" in red.redact(encoded), prefix
        urlsafe = base64.urlsafe_b64encode(prefix + secret.encode()).decode()
        assert "***" in red.redact(urlsafe), prefix
    for form in (quote(secret, safe=""), quote(secret), quote_plus(secret), quote(secret, safe="").lower()):
        assert red.redact(f"https://x.example/?t={form}&n=1") == "https://x.example/?t=***&n=1", form
    assert red.redact("aGVsbG8gd29ybGQ=") == "aGVsbG8gd29ybGQ=", "other base64 is left alone"


def test_a_value_split_across_strings_is_redacted_in_each_piece() -> None:
    red = Redactor()
    red.add("sk-live-0123456789")
    chunks = [
        {"type": "delta", "id": "e1", "text": "key: s"},  # a one-character first piece
        {"type": "delta", "id": "e2", "text": "k-live-"},
        {"type": "delta", "id": "e3", "text": "0123"},
        {"type": "delta", "id": "e4", "text": "456789 ok"},
    ]
    turn = {"text": "key: sk-live-0123456789 ok", "raw": chunks}
    assert red.redact_obj(turn) == {
        "text": "key: *** ok",
        "raw": [
            {"type": "delta", "id": "e1", "text": "key: ***"},
            {"type": "delta", "id": "e2", "text": "***"},
            {"type": "delta", "id": "e3", "text": "***"},
            {"type": "delta", "id": "e4", "text": "*** ok"},
        ],
    }
    unrelated = {"raw": [{"text": "ask"}, {"text": "k-live-later"}, {"text": "0123"}]}
    assert red.redact_obj(unrelated) == unrelated, "pieces that never make up the value stay"


def test_found_in_json_sees_the_start_of_a_split_value_and_a_false_is_still_certain() -> None:
    import msgspec

    red = Redactor()
    red.add("sk-live-0123456789")
    assert red.found_in_json(msgspec.json.encode({"raw": [{"text": "key sk-l"}, {"text": "ive-0123456789"}]}))
    assert red.found_in_json(msgspec.json.encode({"x": "c2stbGl2ZS0wMTIzNDU2Nzg5"})), "base64 counts"
    samples = [
        {"raw": [{"text": "ask"}, {"text": "k-live-0123"}]},
        {"turns": [{"text": "nothing here", "raw": ["sk", "-"]}]},
        {"a": "sk-live-012345678"},
    ]
    for data in samples:
        if not red.found_in_json(msgspec.json.encode(data)):
            assert red.redact_obj(data) == data
