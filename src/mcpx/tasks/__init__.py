"""Calls that outlive the request that started them, shared by /v1 and /mcp.

- ``_store``: the running and finished tasks, their caps and time to live.
- ``_records``: each task's outcome kept in ``<state>/tasks.db``, so a result can be
  collected after ``mcpx restart``.
"""

from ._records import TaskRecords
from ._store import Task, Tasks

__all__ = ["Task", "TaskRecords", "Tasks"]
