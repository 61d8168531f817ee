"""Group E (client transport) obligation tests, split from test_E_client_transport.py.

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
