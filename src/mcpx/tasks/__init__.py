"""Calls that outlive the request that started them, shared by /v1 and /mcp.

- ``_task``: one task: its status, outcome, and the questions it asks in-band.
- ``_store``: the daemon's tasks, their owners, caps, time to live, watchers and events.
- ``_records``: every task's row in ``<state>/tasks.db``, so a task is still listed, and
  its result collectable, after ``mcpx restart``.
"""

from ._records import TaskRecords
from ._store import ANY, Tasks
from ._task import CANCELLED, Task

__all__ = ["ANY", "CANCELLED", "Task", "TaskRecords", "Tasks"]
