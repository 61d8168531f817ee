"""Shapes of MCP messages across revisions (sans-IO)."""

from ._capabilities import capabilities_for, server_capabilities
from ._copy_on_write import MissingRow
from ._downgrade import RESULT_DEFINITIONS, downgrade, downgrade_notification
from ._envelope import CACHE_SCOPES, envelope, unrelated
from ._items import call_result_problem, without_nulls
from ._matrix_gaps import PENDING_ROWS
from ._param_headers import (
    InvalidHeaderAnnotation,
    ParamHeader,
    param_header_values,
    param_headers,
)

__all__ = [
    "CACHE_SCOPES",
    "PENDING_ROWS",
    "RESULT_DEFINITIONS",
    "InvalidHeaderAnnotation",
    "MissingRow",
    "ParamHeader",
    "call_result_problem",
    "capabilities_for",
    "downgrade",
    "downgrade_notification",
    "envelope",
    "param_header_values",
    "param_headers",
    "server_capabilities",
    "unrelated",
    "without_nulls",
]
