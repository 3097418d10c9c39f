"""Curation: what a team needs to choose the episodes worth training on, computed next to the
data and kept as catalog columns (docs/curation.md).

- :mod:`.partition_arrays`: a partition's TED files as arrays (what every check reads);
- :mod:`.audit`: integrity findings per episode (frames, timestamps, values, lengths);
- :mod:`.signatures`: a content hash and a near-duplicate signature per episode;
- :mod:`.duplicates`: groups of exact and near duplicates over the whole catalog;
- :mod:`.scores`: the score hook (a user's function -> a catalog column) and two built-ins.

Croissant metadata is the export's (:mod:`episode_warehouse.export.croissant`).
"""
