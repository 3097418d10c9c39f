"""Dagster assets: thin wiring from partition keys through resources to one domain call.

An asset imports its stage function inside its body: the code location (the process the
webserver and the daemon each start to load it, reloaded every minute by the daemon) then
loads in ~1 s and ~130 MB without torch, tensordict or lerobot, which the run imports when it
needs them (a code server was ~770 MB; tests/packaging/test_code_location_weight.py).
"""
