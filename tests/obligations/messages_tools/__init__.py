"""Messages, errors, tools and pagination of the server side (S-MSG, S-ERR, S-TOOL, S-PAGE).

A package of its own, like every group under ``tests/obligations/``: its module-scoped
fixtures start and stop with the module.
"""
