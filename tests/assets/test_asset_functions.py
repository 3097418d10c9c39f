"""Dagster's first test tier: asset functions called directly, with resources built in the test.

Each asset is partition key -> resource -> one domain call -> MaterializeResult whose data
version is the incremental rule's version of the files it published.
"""

import dagster as dg
import pytest

from assets.graph import stage_asset
from assets.retries import only_transient_retries
from assets.sources.atari import ASSETS as ATARI
from assets.sources.atari import AtariReplaySource
from episode_warehouse.errors import SourceUnreachableError
from episode_warehouse.incremental import published
from resources import RunSettings, WarehouseStorage
from warehouse_fixtures.demo import DEMO_BUCKET

atari_replay_files, atari_episodes = ATARI.raw, ATARI.decoded


@pytest.fixture
def resources(tmp_path, gcs_endpoint):
    return {
        "atari_replay": AtariReplaySource(
            url=f"gs://{DEMO_BUCKET}/dqn", emulator_host=gcs_endpoint
        ),
        "warehouse": WarehouseStorage(root=str(tmp_path / "wh")),
        "run_settings": RunSettings(),
    }


def _call(asset, key, **resources):
    with dg.build_asset_context(partition_key=key) as context:
        return asset(context=context, **resources)


def test_raw_decoded_and_ted_assets_report_the_files_versions(resources, tmp_path):
    raw = _call(atari_replay_files, "Pong/5", **resources)
    layout = resources["warehouse"].layout()
    record = published(layout.root, layout.raw_dir("atari", "Pong/5"))
    assert raw.data_version == dg.DataVersion(record.version)
    assert raw.metadata["files"] == 24 and raw.metadata["rebuilt"] is True
    assert raw.metadata["suffixes"].value == [0, 1, 2, 3]
    again = _call(atari_replay_files, "Pong/5", **resources)
    assert again.data_version == raw.data_version and again.metadata["rebuilt"] is False
    assert again.metadata["downloaded"] == 0

    decoded = _call(atari_episodes, "Pong/5", **resources)
    assert decoded.metadata["frames"] == 3088 and decoded.metadata["episodes"] == 12
    assert (
        published(layout.root, layout.decoded_dir("atari", "Pong/5")).inputs["raw"]
        == record.version
    )
    ted = _call(
        stage_asset("atari", "ted"), "Pong/5", warehouse=resources["warehouse"],
        run_settings=resources["run_settings"],
    )  # fmt: skip
    ted_version = published(layout.root, layout.ted_dir("atari", "Pong/5")).version
    assert ted.data_version == dg.DataVersion(ted_version)


def test_terminal_failures_are_not_retried_and_transient_ones_are(resources):
    bad = {**resources, "atari_replay": AtariReplaySource(url="s3://nope/dqn")}
    with pytest.raises(dg.Failure) as err:
        _call(atari_replay_files, "Pong/5", **bad)
    assert err.value.allow_retries is False and "unsupported URL scheme 's3'" in str(err.value)

    with (
        dg.build_asset_context(partition_key="Pong/5") as context,
        pytest.raises(SourceUnreachableError),
        only_transient_retries(context),
    ):
        raise SourceUnreachableError("reset", subject="gs://b")  # left for the RetryPolicy
    assert atari_replay_files.op.retry_policy.max_retries == 3


def test_a_run_that_failed_on_bad_input_is_tagged_so_run_retries_skip_it(resources, tmp_path):
    """The cluster retries runs whose steps failed (a step can fail outside its body when the
    database restarts); a step that failed on bad data tags its run so it is not retried, and
    the instance's retry rule reads that tag."""
    from dagster._core.events import RunFailureReason
    from dagster._core.execution.retries import auto_reexecution_should_retry_run

    from assets.retries import RUN_RETRY_ON_STEP_FAILURE_TAG

    retries = {"enabled": True, "max_retries": 2, "retry_on_asset_or_op_failure": True}
    bad = {**resources, "atari_replay": AtariReplaySource(url="s3://nope/dqn")}
    with dg.instance_for_test(overrides={"run_retries": retries}) as instance:
        for key, source in (("Pong/5", bad), ("Pong/1", resources)):
            result = dg.materialize(
                [atari_replay_files], partition_key=key, resources=source, instance=instance,
                raise_on_error=False,
            )  # fmt: skip
            run = instance.get_run_by_id(result.run_id)
            if key == "Pong/5":
                assert not result.success
                assert run.tags[RUN_RETRY_ON_STEP_FAILURE_TAG] == "false"
                failures = instance.get_records_for_run(
                    run.run_id, of_type=dg.DagsterEventType.STEP_FAILURE
                )
                assert failures.records  # the failure is a step failure
                step_failure = RunFailureReason.STEP_FAILURE
                assert auto_reexecution_should_retry_run(instance, run, step_failure) is False
                untagged = run.with_tags(
                    {k: v for k, v in run.tags.items() if k != RUN_RETRY_ON_STEP_FAILURE_TAG}
                )
                assert auto_reexecution_should_retry_run(instance, untagged, step_failure)
            else:
                assert result.success and RUN_RETRY_ON_STEP_FAILURE_TAG not in run.tags


def test_decoded_results_show_the_nonfinite_values_kept():
    """#42: NaN/inf kept in keys EPISODE_WAREHOUSE_ALLOW_NONFINITE names are shown, by key."""
    from assets.results import decoded_result
    from episode_warehouse.decoded.record import DecodedRecord
    from episode_warehouse.incremental import Built

    fields = {**DecodedRecord.current(), "version": "v", "inputs": {}, "rows": 4, "episodes": 1}
    kept = DecodedRecord.from_json(
        {**fields, "arrays": {}, "nonfinite": {"discount": 2}}, subject="t"
    )
    shown = decoded_result(Built(kept, True), "/x").metadata
    assert shown["nonfinite_values"].data == {"discount": 2}
    plain = DecodedRecord.from_json({**fields, "arrays": {}}, subject="t")
    assert "nonfinite_values" not in decoded_result(Built(plain, True), "/x").metadata
