"""The warm upstream pool: instances per (server, scope key), their budgets and reaping."""

from ._budget import call_budget, start_budget
from ._errors import PoolFull, UnknownServer
from ._instance import Instance
from ._oauth import AuthorizerFor, OAuthWiring
from ._pool import Pool, open_pool

__all__ = [
    "AuthorizerFor",
    "Instance",
    "OAuthWiring",
    "Pool",
    "PoolFull",
    "UnknownServer",
    "call_budget",
    "open_pool",
    "start_budget",
]
