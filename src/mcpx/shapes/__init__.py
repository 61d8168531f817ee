"""Shapes of MCP messages across revisions (sans-IO)."""

from ._capabilities import capabilities_for, server_capabilities
from ._cow import MissingRow
from ._downgrade import RESULT_DEFINITIONS, downgrade, downgrade_notification
from ._envelope import CACHE_SCOPES, envelope
from ._param_headers import (
    InvalidHeaderAnnotation,
    ParamHeader,
    param_header_values,
    param_headers,
)
from ._pending import PENDING_ROWS

__all__ = [
    "CACHE_SCOPES",
    "PENDING_ROWS",
    "RESULT_DEFINITIONS",
    "InvalidHeaderAnnotation",
    "MissingRow",
    "ParamHeader",
    "capabilities_for",
    "downgrade",
    "downgrade_notification",
    "envelope",
    "param_header_values",
    "param_headers",
    "server_capabilities",
]
