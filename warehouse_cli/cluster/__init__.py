"""The local cluster: Dagster on PostgreSQL with a run queue, Celery workers over Redis.

``warehouse cluster up`` starts every service on this machine as its own process (the embedded
default of the scale-out path, and what the tests use); ``deploy/`` holds the same setup for
Docker Compose and Kubernetes. docs/cluster.md explains the pieces.
"""
