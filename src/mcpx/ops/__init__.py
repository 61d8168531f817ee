"""The operations table: every /v1 operation declared once, and what is made from it.

The table and the OpenAPI document import nothing heavy (the CLI builds its
commands from them at every start); the catalogue and the handler context,
which bring in the pool and the upstream client, load on first use.
"""

from typing import TYPE_CHECKING, Any

from ._errors import ERROR_SCHEMA, OpError
from ._openapi import openapi
from ._operations import OPERATIONS, TRACE_KEYS, by_name, request_for_caller
from ._plain_schema import QuickCheck, plain_check
from ._relay import LEVELS, HostAsker, Notify, Relay, more_verbose
from ._search import rank_tools
from ._table import Cli, Operation, Param, Status

if TYPE_CHECKING:
    from ._catalogue import Catalogue
    from ._context import OpContext

__all__ = [
    "ERROR_SCHEMA",
    "LEVELS",
    "OPERATIONS",
    "TRACE_KEYS",
    "Catalogue",
    "Cli",
    "HostAsker",
    "Notify",
    "OpContext",
    "OpError",
    "Operation",
    "Param",
    "QuickCheck",
    "Relay",
    "Status",
    "by_name",
    "more_verbose",
    "openapi",
    "plain_check",
    "rank_tools",
    "request_for_caller",
]


def __getattr__(name: str) -> Any:
    if name == "Catalogue":
        from ._catalogue import Catalogue

        return Catalogue
    if name == "OpContext":
        from ._context import OpContext

        return OpContext
    raise AttributeError(name)
