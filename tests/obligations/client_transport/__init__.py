"""The upstream client's transports and handshake: stdio, Streamable HTTP, the era probe
(C-STDIO, C-HTTP, C-LC, C-MSG, C-ERR, C-PAGE).

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
