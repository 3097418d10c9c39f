"""A toy source, added the way a fourth source would be: a domain part (``source.py``, what
``episode_warehouse/sources/<name>/`` would hold) and a wiring part (``wiring.py``, what
``assets/sources/<name>.py`` would hold), registered with one line each. Nothing else in the
project knows it; ``tests/assets/test_toy_source.py`` runs it through every generated stage."""
