"""Code versions of the assets, in one place.

Rule: bump an asset's version when its output format or the logic that computes it changes
(anything that could change a byte of the artifact); leave it alone for refactors, logging and
metadata. Dagster then marks exactly that asset and everything downstream stale ("unsynced").
"""

ATARI_REPLAY_FILES = "2"  # 2: one record per raw folder (meta.json), RL Unplugged layout
ATARI_EPISODES = "4"  # 2: RL Unplugged decoding; source ids; 3: N rows = N steps, time limit;
# 4: the camera declared (images)
OPENX_SHARDS = "3"  # 2: meta.json record, verified while copying; 3: RLDS layout
OPENX_EPISODES = "5"  # 2: tar members read by name, every value checked; 3: null returns;
# 4: split, dataset_version, episode_metadata columns; 5: RLDS cameras declared (depth: float32)
LEROBOT_FILES = "1"
LEROBOT_EPISODES = "5"  # 2: tasks and lerobot_stats per episode; 3: no invented rewards;
# 4: the source's features and their names in the record; 5: the cameras declared (images)
TED = "6"  # 2: validated before publishing; 3: one Atari schema (no clipped_reward, no final);
# 4: fps recorded for every source, LeRobot feature names carried; 5: final observations (v4);
# 6: a CRC-32C per stored frame (<camera>.crc32c.npy)
CATALOG_ROWS = "8"  # 2: folder per partition, source ids; 3: fps, robot_type; 4: tasks, stats;
# 5: quality signals (idle_fraction, jerk, length_z, return_z); 6: fps a DOUBLE (1/dt);
# 7: the integrity audit (findings, defects) and duplicate signatures; 8: jerk over the action's
# float dimensions whatever else it holds
EPISODE_CATALOG = "1"
DUPLICATES = "1"
STANDARDIZED = "1"  # the transforms have their own version (TRANSFORMS_VERSION)
STATISTICS = "1"
LEROBOT_EXPORT = "4"  # 2: fps, robot type, nested keys of LeRobot sources; 3: rewards if any;
# 4: a LeRobot source's feature names kept, no next.done it did not have


def of(context) -> str:
    """The code version Dagster knows for the asset being materialized: the incremental rule
    records the same value, so a bump here rebuilds the files and changes the data version."""
    return context.assets_def.code_versions_by_key[context.asset_key] or ""
