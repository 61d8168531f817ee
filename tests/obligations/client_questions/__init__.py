"""Questions upstreams ask, as mcpx the client answers them: roots, sampling, elicitation,
``input_required`` rounds and subscriptions (C-ROOTS, C-SAMP, C-ELIC, C-SREQ, C-MRTR, C-SUB).

A package, so that the package-scoped fixtures in ``conftest.py`` start once for the files
here and stop after the last of them (without this file pytest keeps them to the end of
the session).
"""
