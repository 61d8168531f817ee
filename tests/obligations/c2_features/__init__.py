"""Group C2 obligation tests (split from ``test_C2_features.py``).

A package, so that the package-scoped ``daemon`` fixture in ``conftest.py`` is started once
for the files here and stopped after the last of them (without this file pytest would keep
it until the end of the session).
"""
