"""A ``gs://bucket/prefix`` warehouse root: artifacts published to object storage.

Every stage still builds in a local folder, the *local copy* of the root (under
``EPISODE_WAREHOUSE_LOCAL_COPY``): :mod:`~episode_warehouse.bucket.root` binds that folder to
its bucket, and the incremental rule (:mod:`episode_warehouse.incremental`) then reads each
artifact's record from the bucket, pulls the files it needs, and publishes what it built with
:mod:`~episode_warehouse.bucket.artifact` (data objects under a fresh ``.v/<token>/`` prefix,
then ``meta.json`` last with a generation precondition). Trainers read the bucket directly:
:mod:`~episode_warehouse.ted.remote_cache` downloads a TED once per version,
:mod:`~episode_warehouse.ted.remote_ranges` fetches the rows of selected episodes only.
"""
