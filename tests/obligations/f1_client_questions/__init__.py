"""Group F1 (client questions) obligation tests, split from test_F1_client_questions.py.

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
