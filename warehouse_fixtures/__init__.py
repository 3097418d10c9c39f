"""Writers of small data in the exact formats of the real sources (demo and tests).

Kept out of the domain package: ``episode_warehouse`` never imports them (an import-linter
contract in pyproject.toml), so the reader of a format cannot lean on the fixture writer of the
same format. Each writer follows the format's spec and the code that wrote the real data.
"""
