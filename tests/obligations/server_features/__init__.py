"""Server features over ``/mcp`` and ``mcpx serve``: resources, prompts, completion,
logging, progress, cancellation and subscriptions (S-RES, S-PROMPT, S-COMP, S-LOG, S-PROG,
S-CANC, S-SUB).

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
