"""Batch memory, in one place (#72): what a batch's leaves need and where they live.

- :mod:`~episode_warehouse.batches.buffers`: a leaf's :class:`~episode_warehouse.batches.
  buffers.Buffer` (shape, dtype, channels-last, a view of another leaf's rows), a batch's
  buffers laid out in one block, the leaves made of it.
- :mod:`~episode_warehouse.batches.reuse`: each process's reused blocks of memory (a block
  dropped by its last holder is handed out again; none outlives a fork).
- :mod:`~episode_warehouse.batches.slots`: a DataLoader worker's shared-memory slots. The
  process protocol: a worker writes a batch into a slot it owns (``fill_batch``,
  ``stack_into_slot``), sends the slot's name and the batch's layout instead of pickling the
  tensors, and the trainer maps each slot once; the trainer marks a slot free when the batch
  (and every view of it) is dropped, and the worker reuses a free slot before it makes
  another (at most ``MAX_SLOTS``); a dead worker's segments are swept. Details and the
  fallbacks (small ``/dev/shm``, spawn) in that module's docstring.
- :mod:`~episode_warehouse.batches.refs`: references to rows (:class:`~episode_warehouse.
  batches.refs.RowsRef`: which rows; its class reads a batch of them at once) and
  ``stack_slices`` for slices already read.
- :mod:`~episode_warehouse.batches.schema`: the one check that a batch's slices share a schema.

Every consumer writes its batches through these: the loaders (``loading/``), the VLA mix
(``standardized/vla_batch.py``) and the replay buffer's storage (``loading/ted_storage.py``).
"""
