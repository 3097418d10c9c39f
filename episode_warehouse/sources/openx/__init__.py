"""OpenX-Embodiment: WebDataset tar shards of pickled episodes -> decoded episodes."""
