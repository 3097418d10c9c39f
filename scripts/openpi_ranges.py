"""Run openpi's own DROID idle-filter script on a DROID folder, unchanged but for its two paths.

openpi (Physical-Intelligence/openpi) computes the steps its DROID training keeps with
``examples/droid/compute_droid_nonidle_ranges.py``: a script with two placeholder paths (the
DROID version folder, the JSON it writes) that reads the folder with TensorFlow Datasets. This
fills the placeholders and executes the script as it is, so the test that compares the
catalog's ``nonidle_ranges`` with openpi's output runs openpi's code, not a restatement. Run it
with an interpreter that has tensorflow, tensorflow-datasets and tqdm:

    /tmp/tfenv/bin/python scripts/openpi_ranges.py OPENPI_SCRIPT DROID_VERSION_FOLDER OUT.json

OUT.json: ``{"<recording_folderpath>--<file_path>": [[start, stop], ...]}``, openpi's format.
"""

from __future__ import annotations

import sys
from pathlib import Path

PLACEHOLDERS = ("<path_to_droid_dataset_tfds_files>", "<path_to_where_to_save_the_json>")


def main() -> None:
    script, folder, out = (Path(a) for a in sys.argv[1:4])
    text = script.read_text()
    missing = [p for p in PLACEHOLDERS if p not in text]
    if missing:
        raise SystemExit(f"{script}: no placeholder {missing[0]!r}; openpi's script changed")
    text = text.replace(PLACEHOLDERS[0], str(folder.resolve()))
    text = text.replace(PLACEHOLDERS[1], str(out.resolve()))
    exec(compile(text, str(script), "exec"), {"__name__": "__main__"})  # noqa: S102


if __name__ == "__main__":
    main()
