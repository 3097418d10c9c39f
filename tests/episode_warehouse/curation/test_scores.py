"""Scores as catalog columns (#60): the built-ins against their definitions computed here from
the written episodes and the catalog's own columns, a user's score, lineage (recomputed only
when its inputs change), and a score used in select_episodes and as mixture weights."""

from __future__ import annotations

import numpy as np
import pytest

from episode_warehouse.catalog import run_query
from episode_warehouse.curation.scores import BUILT_IN, Score, load_scores
from episode_warehouse.errors import ConfigError
from episode_warehouse.loading.selection import select_episodes
from episode_warehouse.paths import WarehouseLayout
from episode_warehouse.stages.curation import publish_episode_scores
from tests.helpers import build_openx
from warehouse_fixtures.openx_writer import DatasetSpec

SPEC = DatasetSpec("scored_robot", image_size=16)
QUALITY, SUCCESS = BUILT_IN


def _columns(layout, sql):
    columns, rows = run_query(layout.root, sql)
    return [dict(zip(columns, r, strict=True)) for r in rows]


@pytest.mark.integration  # the catalog's query runs in a sandboxed child
def test_built_in_scores_are_their_definitions_and_select_and_weigh(tmp_path):
    layout = WarehouseLayout.local(tmp_path / "wh")
    written = build_openx(layout, SPEC, [[12, 7, 30, 9], [15, 3, 22]], seed=5)
    for score in BUILT_IN:
        built = publish_episode_scores(layout, score, "openx", SPEC.name)
        assert built.rebuilt and built.meta.episodes == 7
    rows = _columns(
        layout,
        "SELECT episode, idle_fraction, jerk, score_quality, score_success_progress "
        "FROM episodes ORDER BY episode",
    )
    jerks = np.array([r["jerk"] for r in rows])
    median = np.median(jerks)
    for r in rows:
        assert r["score_quality"] == pytest.approx(
            (1 - r["idle_fraction"]) / (1 + r["jerk"] / median)
        )
    # success: the fixture's sparse reward (1 on the last step of a terminal episode)
    success = [bool(ep["steps"][-1]["reward"] == 1.0) for ep in written]
    assert 0 < sum(success) < len(success)
    returns = [sum(float(s["reward"]) for s in ep["steps"]) for ep in written]
    best = max(returns)
    want = [1.0 if ok else 0.5 * min(max(ret / best, 0), 1) for ok, ret in
            zip(success, returns, strict=True)]  # fmt: skip
    assert [r["score_success_progress"] for r in rows] == pytest.approx(want)

    picked = select_episodes(
        "SELECT source, partition, episode, start, length FROM episodes "
        "WHERE score_success_progress = 1 ORDER BY episode",
        str(layout.root.folder),
    )
    assert list(picked.episode) == [i for i, ok in enumerate(success) if ok]
    weighted = select_episodes(
        "WITH scored AS (SELECT *, coalesce(score_quality, 0) AS q FROM episodes) "
        "SELECT source, partition, episode, start, length, q / sum(q) OVER () AS weight "
        "FROM scored ORDER BY episode",
        str(layout.root.folder),
    )
    q = np.array([r["score_quality"] for r in rows])
    np.testing.assert_allclose(weighted.weight, q / q.sum())

    assert not publish_episode_scores(layout, QUALITY, "openx", SPEC.name).rebuilt
    bumped = Score(QUALITY.name, "3", QUALITY.compute)
    assert publish_episode_scores(layout, bumped, "openx", SPEC.name).rebuilt


def _length_score(given):
    return given.column("length") / 10.0


USER = Score("length_tenths", "1", _length_score, "length / 10")


@pytest.mark.integration
def test_a_users_score_is_a_column_and_bad_values_are_refused(tmp_path, monkeypatch):
    layout = WarehouseLayout.local(tmp_path / "wh")
    build_openx(layout, SPEC, [[4, 6]], seed=1)
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "my_scores.py").write_text(
        "from tests.episode_warehouse.curation.test_scores import USER\nSCORES = [USER]\n"
    )
    (score,) = load_scores("my_scores")
    publish_episode_scores(layout, score, "openx", SPEC.name)
    rows = _columns(layout, "SELECT length, score_length_tenths FROM episodes ORDER BY episode")
    assert [(r["length"], r["score_length_tenths"]) for r in rows] == [(4, 0.4), (6, 0.6)]

    wrong = Score("short", "1", lambda given: [1.0])
    with pytest.raises(ConfigError, match=r"gave values of shape \(1,\) for 2 episodes"):
        publish_episode_scores(layout, wrong, "openx", SPEC.name)
    with pytest.raises(ConfigError, match="not column names|lower-case"):
        publish_episode_scores(layout, Score("Bad Name", "1", _length_score), "openx", SPEC.name)
    with pytest.raises(ConfigError, match="cannot be loaded"):
        load_scores("no_such_module:SCORES")


@pytest.mark.integration
def test_a_mixture_weighted_by_a_score(tmp_path):
    """Octo-style dataset weights from a score, in SQL (``WITH ... SELECT``): each dataset
    weighs its episodes' mean score, unbalanced, normalized to 1."""
    from episode_warehouse.standardized import mixture_weights
    from tests.helpers import build_oxe_standardized

    layout = WarehouseLayout.local(tmp_path / "wh")
    build_oxe_standardized(layout, "fractal20220817_data", (5, 4, 6))
    build_oxe_standardized(layout, "taco_play", (6, 3))
    for name in ("fractal20220817_data", "taco_play"):
        publish_episode_scores(layout, QUALITY, "openx", name)
    rows = _columns(layout, "SELECT partition, avg(score_quality) AS q FROM episodes GROUP BY 1")
    mean = {r["partition"]: r["q"] for r in rows}
    got = mixture_weights(
        "WITH scored AS (SELECT partition, avg(score_quality) AS q FROM episodes "
        "WHERE source = 'openx' GROUP BY partition) SELECT partition, q AS weight FROM scored",
        str(layout.root.folder),
        balance=False,
    )
    total = sum(mean.values())
    assert got == pytest.approx({p: q / total for p, q in mean.items()})
    assert min(mean.values()) > 0 and len(set(mean.values())) == 2


def _docs_score():
    """The custom score docs/curation.md shows, executed as written there."""
    from pathlib import Path

    doc = (Path(__file__).parents[3] / "docs" / "curation.md").read_text()
    code = doc.split("from episode_warehouse.curation.scores import Score", 1)[1]
    namespace: dict = {}
    exec("from episode_warehouse.curation.scores import Score" + code.split("```", 1)[0], namespace)
    (score,) = namespace["SCORES"]
    return score


@pytest.mark.integration  # the catalog's query runs in a sandboxed child
def test_scores_mean_the_same_on_a_dict_action_with_integer_leaves(tmp_path):
    """fractal's action is a dict with an int32 ``terminate_episode`` beside its float leaves
    (written from the TFDS authors' features.json): its jerk is the float dimensions' (it was
    NULL, roughly doubling score_quality for 6 of the 22 OXE schemas), and the docs' custom score
    runs on it (it raised KeyError: slice(0, 3, None)). #69 items 6 and 13."""
    from episode_warehouse.catalog.quality import JERK_QUANTILE
    from episode_warehouse.ted.open import open_ted_folder
    from tests.helpers import build_oxe_standardized

    layout = WarehouseLayout.local(tmp_path / "wh")
    build_oxe_standardized(layout, "fractal20220817_data", (5, 8, 6))
    td = open_ted_folder(layout.ted_dir("openx", "fractal20220817_data"))
    action = td["action"]
    kinds = {k: action.get(k).dtype.is_floating_point for k in action.keys(True, True)}
    assert not all(kinds.values()) and any(kinds.values())  # float and integer leaves
    floats = np.concatenate(
        [
            action.get(k).numpy().reshape(td.batch_size[0], -1)
            for k in sorted(kinds, key=str)
            if kinds[k]
        ],
        1,
    ).astype(np.float64)
    std = floats.std(0)
    scaled = floats[:, std > 0] / std[std > 0]
    rows = _columns(layout, "SELECT start, length, jerk FROM episodes ORDER BY episode")
    for r in rows:
        second = np.diff(scaled[r["start"] : r["start"] + r["length"]], n=2, axis=0)
        want = np.quantile(np.sqrt((second**2).mean(1)), JERK_QUANTILE)
        assert r["jerk"] == pytest.approx(want), r

    score = _docs_score()
    publish_episode_scores(layout, score, "openx", "fractal20220817_data")
    got = _columns(layout, "SELECT start, length, score_action_norm FROM episodes ORDER BY episode")
    every = np.concatenate([action.get(k).numpy().reshape(td.batch_size[0], -1).astype(np.float64)
                            for k in sorted(kinds, key=str)], 1)  # fmt: skip
    for r in got:
        want = float(np.abs(every[r["start"] : r["start"] + r["length"]]).mean())
        assert r["score_action_norm"] == pytest.approx(want)


def test_bad_values_of_a_users_score_are_refused_naming_it(tmp_path):
    """What a user's function may return wrongly (#69, smaller): a number past float64
    (OverflowError escaped), complex values (truncated), a 2-D array (flattened), infinity
    (silently NULL)."""
    import pyarrow as pa

    from episode_warehouse.curation.scores import ScoreInput

    given = ScoreInput(pa.table({"episode": [0, 1, 2, 3]}), tmp_path)
    for bad, said in (
        ([10**400, 1, 2, 3], "not real numbers"),
        ([1j, 1, 2, 3], "complex"),
        (np.ones((2, 2)), r"shape \(2, 2\)"),
        ([1.0, float("inf"), 2.0, 3.0], "gave inf for episode row 1"),
    ):
        with pytest.raises(ConfigError, match=said):
            Score("bad", "1", lambda _, bad=bad: bad).values(given)
    values, reason = Score("ok", "1", lambda _: [1, np.nan, 2, 3]).values(given)
    assert reason is None and np.isnan(values[1])


def test_a_score_name_that_cannot_be_a_column_is_refused_where_it_is_set(tmp_path, monkeypatch):
    monkeypatch.syspath_prepend(str(tmp_path))
    (tmp_path / "bad_scores.py").write_text(
        "from episode_warehouse.curation.scores import Score\n"
        "SCORES = [Score('Bad Name', '1', len)]\nTWICE = [Score('quality', '1', len)]\n"
    )
    with pytest.raises(ConfigError, match="EPISODE_WAREHOUSE_SCORES.*'Bad Name'"):
        load_scores("bad_scores:SCORES")
    with pytest.raises(ConfigError, match="'quality' a second time"):
        load_scores("bad_scores:TWICE")
