"""The code location loads without the data plane's heavy dependencies: the webserver and the
daemon each run a code server of it (the daemon replaces its own every minute), and each one
that imported torch held ~770 MB (bench.droid_scale, #59)."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
pytestmark = pytest.mark.integration
HEAVY = ("torch", "tensordict", "torchrl", "lerobot", "cv2", "torchcodec", "PIL", "datasets")


def test_loading_the_definitions_imports_no_heavy_module():
    code = (
        "import json, sys; import definitions; "
        "definitions.defs.get_repository_def().get_all_jobs(); "  # what a code server resolves
        f"print(json.dumps([m for m in {HEAVY!r} if m in sys.modules]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True
    )
    assert json.loads(out.stdout.strip().splitlines()[-1]) == []
