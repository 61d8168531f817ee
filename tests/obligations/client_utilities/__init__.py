"""What mcpx owes the upstreams it is a client of: pagination, progress, cancellation,
logging, caching and names (C-PAGE, C-PROG, C-CANC, C-LOG, C-CACHE, C-SEC).

A package of its own, like every group under ``tests/obligations/``: its module-scoped
fixtures start and stop with the module.
"""
