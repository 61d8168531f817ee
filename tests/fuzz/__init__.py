"""Property-based fuzzing of mcpx's edges, each against one real daemon.

- ``test_mcp_frames``: /mcp fed generated frames and headers of every revision (legacy
  sessions, 2026-07-28, no session, a stale one; 2025-03-26 batches); a documented
  status, every frame sent valid under its revision. (Out of the suite for a while: it
  failed once in a fresh-clone CI run, with an invalid frame at teardown, and in no run
  here; back with the defects of issue 27 fixed, one of which traced invalid frames from
  the inputs it generates: a 2025-03-26 batch element with an id of no allowed type.)
- ``test_serve_stdin``: ``mcpx serve`` fed generated lines (frames, garbage, partial JSON,
  huge ids, wrong types); no crash, every line out a valid frame, a last request answered.
- ``test_upstream_frames``: an upstream (``tests/fixtures/fuzz_upstream.py``) answering
  with generated frames; the host gets a valid result or a clear error.
- ``test_v1_bodies``: /v1 POST bodies where schemathesis (tests/security) does not go:
  no JSON object, keys given twice, large and nested values, over the body limit.
- ``test_known_defects``: what the fuzzing found, one minimal case each (a strict xfail
  while a defect stands; those of issue 27 are fixed). ``test_unsendable``: the same
  defects on the ways the generated tests do not take (pass-through, event streams,
  batches, ndjson) and the pieces that answer them.

Every property also holds the daemon to: nothing logged as an error, ``/health`` answering
``{"ok": true}`` after each example, and a plain call still working after the run.

Bounds. Each test runs a fixed number of examples, sized so that the whole package takes
well under two minutes on a 2-CPU machine (measured: 33-55 s; 50-91 s beside a CPU hog):
/v1 120, upstream frames 50 (and one explicit example that waits out a call's
3 s timeout), ``mcpx serve`` 20 (a process each), /mcp 150, malformed upstream
results 30.

No example database is written; a failure prints the example and a ``@reproduce_failure``
blob. By default the examples are derandomized: the same on every run (CI).

``MCPX_FUZZ_EXAMPLES=N`` is the longer run, opt-in: every test runs N examples instead,
new ones each run (a failure prints the seed; ``--hypothesis-seed=S`` runs them again),
e.g. ``MCPX_FUZZ_EXAMPLES=2000 pytest -p no:cacheprovider tests/fuzz``. (At 80 it found
the batch defect of ``test_known_defects`` through ``mcpx serve``, fixed since.)
``--hypothesis-show-statistics`` says how many examples ran and what they came to.
"""
