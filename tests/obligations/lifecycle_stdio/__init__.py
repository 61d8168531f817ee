"""Lifecycle, stdio framing and 2026-07-28 statelessness of the server side (S-LIFE,
S-STDIO).

A package of its own, like every group under ``tests/obligations/``: its module-scoped
fixtures start and stop with the module.
"""
