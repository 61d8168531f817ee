"""Streamable HTTP obligations (S-HTTP) of the daemon's ``/mcp`` endpoint.

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
