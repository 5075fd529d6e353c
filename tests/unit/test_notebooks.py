"""The inspection notebooks run top to bottom (their code cells, in order, in one namespace)."""

import os
from pathlib import Path

import pytest

from tests.conftest import ROOT, execute_notebook

NOTEBOOKS = sorted((ROOT / "notebooks").glob("*.ipynb"))


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.name)
def test_notebook_runs(path, monkeypatch, tmp_path):
    monkeypatch.delenv("DAEDALUS_KNOWLEDGE", raising=False)
    execute_notebook(path, monkeypatch, tmp_path)


def test_knowledge_notebook_reads_the_store_it_is_given(tmp_path, monkeypatch):
    monkeypatch.delenv("DAEDALUS_KNOWLEDGE", raising=False)
    built = execute_notebook(
        ROOT / "notebooks" / "knowledge.ipynb", monkeypatch, tmp_path
    )  # no path: builds its own store
    given = tmp_path / "given.sqlite"
    given.write_bytes(Path(built["KNOWLEDGE"]).read_bytes())
    monkeypatch.setenv("DAEDALUS_KNOWLEDGE", str(given))
    read = execute_notebook(ROOT / "notebooks" / "knowledge.ipynb", monkeypatch, tmp_path)
    assert read["KNOWLEDGE"] == str(given) and read["report"].to_json() == built["report"].to_json()
    refused = [d for d in read["report"].decisions.rescales if d.actuation.outcome == "refused"]
    assert len(refused) == 1 and read["report"].capacity is not None


def test_there_are_notebooks():
    assert NOTEBOOKS and os.path.isdir(ROOT / "notebooks")
