"""Shapes of MCP messages across revisions (sans-IO)."""

from ._param_headers import (
    InvalidHeaderAnnotation,
    ParamHeader,
    param_header_values,
    param_headers,
)

__all__ = ["InvalidHeaderAnnotation", "ParamHeader", "param_header_values", "param_headers"]
