"""``server/discover``, the 2026-07-28 cache hints, and what ``/mcp`` does not serve (S-DISC,
S-CACHE, S-SSE, S-SEC).

A package of its own, like every group under ``tests/obligations/``: its module-scoped
fixtures start and stop with the module.
"""
