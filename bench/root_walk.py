"""Measure: the walk a warehouse root takes when a trainer opens a TED (``open_ted``).

Every call inside ``episode_warehouse`` between entering ``open_ted`` and its return is traced
(``sys.setprofile``). A *stop* is a distinct function the root reaches: one called with an
argument that is the root's setting or a path under it, or an object that carries it (a
layout, a root, settings, an artifact). A *climb back up* is a call from a lower layer of
``[tool.importlinter]``'s layers contract into a higher one that the caller's module imports
(a late import; calling a class it was handed is no dependency).
Run it in any revision: it reads that revision's own contract.

    python -m bench.root_walk [ROOT]   # default: the TED bench.loading builds (bench/data)
    python -m bench.root_walk --compare PROJECT...  # each project (a checkout of another
        # revision) walks the same folder root and the same gs:// root on one GCS emulator
"""

from __future__ import annotations

import json
import os
import sys
import tomllib
from pathlib import Path

PROJECT = Path(__file__).resolve().parents[1]


def default_root() -> Path:
    """bench.loading's warehouse root (built if missing)."""
    from bench.loading import prepared

    return prepared() / "root"


def _layers() -> list[set[str]]:
    config = tomllib.loads((PROJECT / "pyproject.toml").read_text())["tool"]["importlinter"]
    for contract in config["contracts"]:
        if contract.get("containers") == ["episode_warehouse"]:
            return [{n.strip() for n in layer.split("|")} for layer in contract["layers"]]
    raise SystemExit("no layers contract over episode_warehouse")


def _layer_of(module: str, layers: list[set[str]]) -> int | None:
    parts = module.split(".")
    if parts[0] != "episode_warehouse" or len(parts) < 2:
        return None
    return next((i for i, names in enumerate(layers) if parts[1] in names), None)


def _carries(value, root: str) -> bool:
    """Whether ``value`` is the root's setting, a path under it, or an object holding one."""
    if isinstance(value, str | os.PathLike):
        return os.fspath(value).startswith(root)
    for name in ("url", "folder", "root", "root_folder", "copy"):
        try:
            held = getattr(value, name, None) if not isinstance(value, type) else None
        except Exception:  # noqa: BLE001 - a property that refuses (a reader's folder)
            held = None
        if isinstance(held, str | os.PathLike) and os.fspath(held).startswith(root):
            return True
        nested = held is not None and held is not value
        if nested and not isinstance(held, str | os.PathLike) and _carries(held, root):
            return True
    return False


def _imports(frame, module: str) -> bool:
    """Whether the calling module's code imports ``module`` (a late import: a dependency that
    climbs), as opposed to calling a class or function it was handed (no dependency)."""
    path = frame.f_globals.get("__file__")
    if not path:
        return False
    text = Path(path).read_text()
    return f"from {module} import" in text or f"import {module}" in text


def walk(root: str, source: str = "atari", partition: str = "Pong/1") -> dict:
    from episode_warehouse.ted.open import open_ted

    layers = _layers()
    forms = {str(root), str(Path(root).absolute()), str(Path(root).resolve())}
    stops: set[str] = set()
    climbs: set[str] = set()

    def profile(frame, event, arg):
        if event != "call":
            return
        module = frame.f_globals.get("__name__", "")
        if not module.startswith("episode_warehouse"):
            return
        code = frame.f_code
        count = code.co_argcount + code.co_kwonlyargcount
        arguments = [frame.f_locals.get(n) for n in code.co_varnames[:count]]
        if any(_carries(a, form) for a in arguments for form in forms):
            stops.add(f"{module}.{code.co_name}")
        caller = frame.f_back
        while caller is not None and not caller.f_globals.get("__name__", "").startswith(
            "episode_warehouse"
        ):
            caller = caller.f_back
        if caller is None:
            return
        here, there = _layer_of(caller.f_globals["__name__"], layers), _layer_of(module, layers)
        if here is not None and there is not None and there < here and _imports(caller, module):
            climbs.add(f"{caller.f_globals['__name__']} -> {module}.{frame.f_code.co_name}")

    open_ted(source, partition, root=root)  # imports and caches warmed, as a trainer's second
    sys.setprofile(profile)
    try:
        open_ted(source, partition, root=root)
    finally:
        sys.setprofile(None)
    return {
        "stops": len(stops),
        "climbs_back_up": len(climbs),
        "stopped_at": sorted(stops),
        "climbs": sorted(climbs),
    }


def _bucket_root(endpoint: str, tmp: Path) -> str:
    """The bench TED published in a new bucket root on the emulator at ``endpoint``."""
    import shutil

    from episode_warehouse.gcs import gcs_client
    from episode_warehouse.incremental import build_if_changed
    from episode_warehouse.settings import Settings
    from episode_warehouse.storage import parse_root

    gcs_client(endpoint).create_bucket("walk")
    url = "gs://walk/wh"
    settings = Settings.from_env(root=url, local_copy=tmp / "copy", gcs_endpoint=endpoint)
    root = parse_root(None, settings, writer=True)
    ted = default_root() / "ted" / "atari" / "Pong" / "1"

    def build(staging: Path) -> None:
        shutil.copytree(ted, staging, dirs_exist_ok=True, symlinks=False)

    build_if_changed(root, root.folder / "ted/atari/Pong/1", {"bench": "root_walk"}, build)
    return url


def compare(projects: list[str]) -> dict:
    import os
    import subprocess
    import tempfile

    from warehouse_fixtures.gcs_emulator import running_emulator

    report: dict = {}
    with running_emulator() as endpoint, tempfile.TemporaryDirectory() as tmp:
        url = _bucket_root(endpoint, Path(tmp))
        for project in projects:
            for kind, root in (("folder", str(default_root())), ("bucket", url)):
                name = Path(project).name
                env = {**os.environ, "PYTHONPATH": project, "STORAGE_EMULATOR_HOST": endpoint,
                       "EPISODE_WAREHOUSE_CACHE": f"{tmp}/{name}-cache",
                       "EPISODE_WAREHOUSE_LOCAL_COPY": f"{tmp}/{name}-copy"}  # fmt: skip
                done = subprocess.run(
                    [sys.executable, "-m", "bench.root_walk", root],
                    cwd=project, env=env, capture_output=True, text=True,
                )  # fmt: skip
                if done.returncode:
                    raise SystemExit(f"{project} {root}:\n{done.stderr[-3000:]}")
                walked = json.loads(done.stdout)
                wrote = Path(env["EPISODE_WAREHOUSE_LOCAL_COPY"]).exists()
                report[f"{Path(project).name} {kind}"] = {
                    "stops": walked["stops"], "climbs_back_up": walked["climbs_back_up"],
                    "reader_wrote_local_copy": wrote,
                }  # fmt: skip
    return report


def main() -> None:
    if sys.argv[1:2] == ["--compare"]:
        print(json.dumps(compare(sys.argv[2:]), indent=1))
        return
    root = sys.argv[1] if len(sys.argv) > 1 else str(default_root())
    print(json.dumps(walk(root), indent=1))


if __name__ == "__main__":
    main()
