"""tools/coverage_floor.py: the coverage list only shrinks."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

import pytest

TOOL = Path(__file__).resolve().parents[2] / "tools" / "coverage_floor.py"


@pytest.fixture
def floor(tmp_path, monkeypatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("coverage_floor", TOOL)
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    monkeypatch.setattr(module, "REPORT", tmp_path / "coverage.json")
    monkeypatch.setattr(module, "FLOOR", tmp_path / "coverage-floor.txt")
    return module


def report(module: ModuleType, **files: tuple[float, int]) -> None:
    summaries = {
        path.replace("__", "/"): {"summary": {"percent_covered": p, "num_statements": n}}
        for path, (p, n) in files.items()
    }
    module.REPORT.write_text(json.dumps({"files": summaries}))


def test_a_listed_module_holds_its_figure_and_a_new_one_the_target(floor, capsys):
    report(floor, app__old=(50.0, 100), app__new=(95.0, 100))
    assert floor.main(["--regenerate"]) == 0
    assert floor.FLOOR.read_text().splitlines()[1:] == [" 50.0 app/old"]

    report(floor, app__old=(48.0, 100), app__new=(78.0, 100))  # within 3 statements' slack: holds
    assert floor.main([]) == 0

    report(floor, app__old=(46.0, 100), app__new=(95.0, 100), app__added=(70.0, 100))
    assert floor.main([]) == 1
    printed = capsys.readouterr().out
    assert "fallen: app/old: 46.0 % of 100 statements, below 50.0 %" in printed
    assert "fallen: app/added: 70.0 % of 100 statements, below 80.0 % (not listed" in printed


def test_the_list_only_shrinks(floor, capsys):
    report(floor, app__old=(50.0, 100), app__other=(60.0, 100))
    floor.main(["--regenerate"])

    report(floor, app__old=(85.0, 100), app__other=(65.0, 100))
    assert floor.main([]) == 0
    assert "now reach 80 %; shrink the list" in capsys.readouterr().out
    assert floor.main(["--shrink"]) == 0

    assert floor.FLOOR.read_text().splitlines()[1:] == [" 65.0 app/other"]
