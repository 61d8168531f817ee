"""Where the official schemas come from when ../shared is not beside the project.

Pins only (a commit and a sha256 per file); the schemas themselves are never
copied into the project.
"""

from __future__ import annotations

SPEC_COMMIT = "b0f60ba5409db7a6582440a7b473cc0398890f15"
EXT_TASKS_COMMIT = "e4345978be1f602f1fc48d89051e8559dd5302a6"

_SPEC = f"https://raw.githubusercontent.com/modelcontextprotocol/modelcontextprotocol/{SPEC_COMMIT}"
_EXT = f"https://raw.githubusercontent.com/modelcontextprotocol/ext-tasks/{EXT_TASKS_COMMIT}"

SCHEMAS: dict[str, tuple[str, str]] = {
    f"{rev}/schema.json": (f"{_SPEC}/schema/{rev}/schema.json", digest)
    for rev, digest in {
        "2024-11-05": "61cea2392d4f284092d09bc84b9ac488c0d5618ac2b38a56942fc5b99fd960ce",
        "2025-03-26": "e720669548c8100a4282c49e580efd6ddf7f28899ea786fc8db251dbdb356131",
        "2025-06-18": "af845e7e5b9d27107d1690f0936022546177a1403e63ffb11470135b296a2e01",
        "2025-11-25": "268a5f82ba70fd7e4b6dc4aa1e64f116f74b4d0edcb69dc046829c79dd4e97e7",
        "2026-07-28": "ef70b61f99b6d2e5e3b46863822eab08dff6a45bedc7a08914e0e5b133f40203",
    }.items()
}
EXT_TASKS = (
    f"{_EXT}/schema/draft/schema.json",
    "10933a5003097bbccb03d964e6a5f7a2819cc4d7a1d07e27c6765cbf5da35c5c",
)
