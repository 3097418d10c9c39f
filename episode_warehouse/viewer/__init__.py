"""The episode viewer (``warehouse view``): a local web app over any warehouse root.

- :mod:`.partition`: one partition's TED, read one episode at a time (memory-mapped on a local
  root, byte ranges on a ``gs://`` root).
- :mod:`.episode`: what the episode page shows, as JSON: cameras, plotted series with their
  names, done marks, the task per step, the Python that opens the episode.
- :mod:`.frames`: a TED frame as a lossless PNG (the frame request's answer).
- :mod:`.overview`: a partition's length and return histograms and action statistics.
- :mod:`.listing`: partitions and episodes from the catalog, through the SQL sandbox.
- :mod:`.app`: the HTTP routes (starlette) and the static page (``static/``: no CDN).
"""
