"""The operations table: every /v1 operation declared once, and what is made from it."""

from ._catalogue import Catalogue, rank_tools
from ._context import OpContext
from ._errors import ERROR_SCHEMA, OpError
from ._openapi import openapi
from ._operations import OPERATIONS, by_name
from ._table import Cli, Operation, Param

__all__ = [
    "ERROR_SCHEMA",
    "OPERATIONS",
    "Catalogue",
    "Cli",
    "OpContext",
    "OpError",
    "Operation",
    "Param",
    "by_name",
    "openapi",
    "rank_tools",
]
