"""One guard per kind of outside input; every reader goes through these.

- :mod:`~episode_warehouse.guards.names`: names and paths (confined to their folder, normalized,
  length-bounded, no links in the warehouse's working folders, library-returned paths checked).
- :mod:`~episode_warehouse.guards.numbers`: values (finite where they are measurements,
  within the dtype and declared bounds).
- :mod:`~episode_warehouse.guards.shapes`: declared sizes and shapes, bounded before anything
  is allocated or inflated.
- :mod:`~episode_warehouse.guards.text`: text bound for Markdown or YAML (escaped), and
  identifiers (checked where they enter).
- :mod:`~episode_warehouse.guards.json_input`: JSON from outside (size- and depth-bounded).

docs/reliability.md's threat model lists each boundary and the guard it goes through.
"""
