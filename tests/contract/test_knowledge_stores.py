"""Contract: every knowledge store returns what was saved, appends history, and refuses what it cannot read."""

import pytest

from daedalus_spark.config import Config
from daedalus_spark.knowledge.sqlite_store import SqliteKnowledgeStore
from daedalus_spark.knowledge.state import (
    FORMAT_VERSION,
    IncompatibleKnowledge,
    InMemoryKnowledgeStore,
    Snapshot,
    restore,
)


@pytest.fixture(params=["memory", "sqlite"])
def store(request, tmp_path):
    return InMemoryKnowledgeStore() if request.param == "memory" else SqliteKnowledgeStore(tmp_path / "k.sqlite")


def snap(decisions=('{"a": 1}',), version=FORMAT_VERSION, model=b"\x00model"):
    return Snapshot(version, {"capacity": "{}", "recovery": "{}", "controller": "{}"}, model, tuple(decisions), ())


def test_empty_store_loads_nothing(store):
    assert store.load() is None


def test_save_then_load_returns_the_snapshot(store):
    store.save(snap())
    assert store.load() == snap()


def test_later_saves_replace_state_and_keep_history_in_order(store):
    store.save(snap(decisions=['{"t": 1}'], model=b"old"))
    store.save(snap(decisions=['{"t": 1}', '{"t": 2}'], model=b"new"))
    loaded = store.load()
    assert loaded.forecaster == b"new"
    assert loaded.decisions == ('{"t": 1}', '{"t": 2}')


def test_newer_format_is_refused_with_a_clear_error(store):
    store.save(snap(version=FORMAT_VERSION + 1))
    with pytest.raises(IncompatibleKnowledge, match="newer than this version"):
        restore(store.load(), Config())


def test_sqlite_refuses_a_file_that_is_not_knowledge(tmp_path):
    path = tmp_path / "junk.sqlite"
    path.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(IncompatibleKnowledge, match="not a daedalus-spark knowledge file"):
        SqliteKnowledgeStore(path).load()


def test_damaged_components_are_refused_with_a_clear_error():
    broken = Snapshot(FORMAT_VERSION, {"capacity": "{}", "recovery": "{}", "controller": "{}"}, b"", (), ())
    with pytest.raises(IncompatibleKnowledge, match="damaged"):
        restore(broken, Config())


def test_a_forecaster_that_cannot_be_restored_is_relearned_and_the_rest_kept():
    from daedalus_spark.controller import Controller
    from daedalus_spark.knowledge.state import snapshot
    from tests.conftest import observation

    controller = Controller(Config())
    controller.tick(observation(time_s=60.0), 60.0)
    saved = snapshot(controller.knowledge)
    other = Config.model_validate({"forecast": {"resolution_s": 30}})
    restored = restore(saved, other)
    assert restored.capacity.regressions == controller.knowledge.capacity.regressions
    assert restored.forecaster.history_steps == 0
