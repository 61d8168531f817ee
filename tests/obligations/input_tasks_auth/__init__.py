"""Questions put to hosts, tasks and authorization (S-INPUT, S-MRTR, S-TASK, S-TASKX,
S-AUTH).

A package of its own, like every group under ``tests/obligations/``: its module-scoped
fixtures start and stop with the module.
"""
