"""LeRobot v3.0 datasets as a source: metadata checks (``dataset.py``) and frames into a
decoded-episodes folder (``decode.py``), from which the TED, catalog rows and exports follow."""
