"""A ``gs://bucket/prefix`` warehouse root (imported only by :mod:`episode_warehouse.storage`).

- :mod:`.objects`: the bucket, prefix, endpoint and reader cache of a root.
- :mod:`.bucket_root`: :class:`~.bucket_root.BucketRoot`, the :class:`Root` of a bucket (a
  writer's local copy, bound to it; a reader's, none).
- :mod:`.artifact`: one artifact's record and objects: publishing meta-last, pulling, ranges.
- :mod:`.cache`: whole artifacts fetched for readers, one folder per version, checked.
- :mod:`.duckdb_files`: the filesystem DuckDB reads the bucket with.
"""
