"""Settings read from the environment: database URLs and typed values."""

from __future__ import annotations

import pytest

from governance.kernel import env


def test_a_tcp_database_url():
    config = env.database_from_url("postgresql://gov:s%40cret@db.internal:6543/control?sslmode=require")
    assert config["NAME"] == "control"
    assert config["USER"] == "gov"
    assert config["PASSWORD"] == "s@cret"
    assert config["HOST"] == "db.internal"
    assert config["PORT"] == "6543"
    assert config["OPTIONS"] == {"sslmode": "require"}


def test_a_socket_database_url():
    config = env.database_from_url("postgresql://postgres@/governance?host=/var/run/pg&port=5433")
    assert config["HOST"] == "/var/run/pg"
    assert config["PORT"] == "5433"
    assert config["OPTIONS"] == {}


def test_other_databases_are_refused():
    with pytest.raises(env.ConfigError, match="PostgreSQL only"):
        env.database_from_url("sqlite:///db.sqlite3")


@pytest.mark.parametrize(("raw", "expected"), [("1", True), ("yes", True), ("off", False), ("0", False)])
def test_booleans(monkeypatch, raw, expected):
    monkeypatch.setenv("SOME_FLAG", raw)
    assert env.boolean("SOME_FLAG") is expected


def test_a_bad_boolean_is_reported_with_its_name(monkeypatch):
    monkeypatch.setenv("SOME_FLAG", "maybe")
    with pytest.raises(env.ConfigError, match="SOME_FLAG"):
        env.boolean("SOME_FLAG")


def test_secrets_can_come_from_files(monkeypatch, tmp_path):
    secret = tmp_path / "secret"
    secret.write_text("from-a-file\n")
    monkeypatch.setenv("SOME_SECRET_FILE", str(secret))
    assert env.string("SOME_SECRET") == "from-a-file"


def test_redis_detection_answers_false_on_a_closed_port():
    assert env.redis_answers(port=1) is False


def test_dotenv_fills_gaps_but_the_environment_wins(monkeypatch, tmp_path):
    dotenv = tmp_path / ".env"
    dotenv.write_text("# comment\nDOTENV_ONLY='from file'\nexport DOTENV_BOTH=file\n\n")
    monkeypatch.setenv("DOTENV_BOTH", "environment")
    monkeypatch.delenv("DOTENV_ONLY", raising=False)

    env.load_dotenv(dotenv)

    assert env.string("DOTENV_ONLY") == "from file"
    assert env.string("DOTENV_BOTH") == "environment"
    monkeypatch.delenv("DOTENV_ONLY")


@pytest.mark.parametrize("raw", ["0", "95", "-0.5", "high"])
def test_a_fraction_outside_zero_to_one_stops_the_start_with_its_name(monkeypatch, raw):
    monkeypatch.setenv("SOME_TARGET", raw)
    with pytest.raises(env.ConfigError, match="SOME_TARGET"):
        env.fraction("SOME_TARGET", 0.95)


def test_a_fraction_reads_a_share(monkeypatch):
    monkeypatch.setenv("SOME_TARGET", "0.9")
    assert env.fraction("SOME_TARGET", 0.95) == 0.9
    monkeypatch.delenv("SOME_TARGET")
    assert env.fraction("SOME_TARGET", 0.95) == 0.95


@pytest.mark.parametrize("raw", ["4096", "4 GB", "4gb", "0MB", "4GB\nfsync = off", "-1MB"])
def test_a_memory_size_postgresql_would_misread_stops_the_start_with_its_name(monkeypatch, raw):
    monkeypatch.setenv("SOME_BUFFERS", raw)
    with pytest.raises(env.ConfigError, match="SOME_BUFFERS"):
        env.memory_size("SOME_BUFFERS", "128MB")


def test_a_memory_size_reads_the_setting_or_its_default(monkeypatch):
    monkeypatch.setenv("SOME_BUFFERS", "512MB")
    assert env.memory_size("SOME_BUFFERS", "128MB") == "512MB"
    monkeypatch.delenv("SOME_BUFFERS")
    assert env.memory_size("SOME_BUFFERS", "6144MB") == "6144MB"
    assert env.memory_size("SOME_BUFFERS") == ""  # unset, no default: the caller works one out


def test_a_json_document_is_read_or_its_default_and_bad_json_stops_the_start(monkeypatch):
    monkeypatch.setenv("SOME_COMMANDS", '{"a": {"argv": ["x"]}}')
    assert env.json_document("SOME_COMMANDS", {}) == {"a": {"argv": ["x"]}}
    monkeypatch.setenv("SOME_COMMANDS", "{'a': 1}")
    with pytest.raises(env.ConfigError, match="SOME_COMMANDS is not valid JSON"):
        env.json_document("SOME_COMMANDS", {})
    monkeypatch.delenv("SOME_COMMANDS")
    assert env.json_document("SOME_COMMANDS", {}) == {}
