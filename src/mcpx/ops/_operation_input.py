"""An operation's input checked against its own input schema: the one check, whichever
surface the input came in by (``/v1``, the gateway's MCP tools).

Invariants:

- Valid input passes the quick check (``plain_check``) alone; jsonschema is asked only
  when there is an error to word, and its first problem by path is the one reported.
- The MCP tools made from an operation have no HTTP headers, so their input is checked
  against the schema without the header parameters (``headers=False``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema

from ._errors import OpError
from ._plain_schema import QuickCheck, plain_check
from ._table import Operation
from ._tool_input import TOO_DEEP, too_deep

__all__ = ["check_input", "input_problem"]


def input_problem(
    op: Operation, given: Mapping[str, Any], *, headers: bool = True
) -> tuple[str, str] | None:
    """Where ``given`` first fails ``op``'s input schema (a dotted path, "" for the
    whole input) and why; None when it is valid."""
    validator, quick = _checks(op, headers)
    if quick is not None and quick(given):
        return None
    # jsonschema's messages repr the value: one nested deep enough runs out of stack.
    deep = next((name for name, value in given.items() if too_deep(value)), None)
    if deep is not None:
        return deep, TOO_DEEP
    problems = sorted(validator.iter_errors(given), key=lambda e: list(e.absolute_path))
    if not problems:
        return None
    first = problems[0]
    return ".".join(map(str, first.absolute_path)), first.message


def check_input(op: Operation, given: Mapping[str, Any]) -> None:
    """Refuse input that fails ``op``'s input schema.

    Raises:
        OpError: 400 ``invalid_input``, naming the field and what is wrong with it.
    """
    problem = input_problem(op, given)
    if problem is not None:
        where = problem[0] or "(input)"
        message = f"{op.name}: {where}: {problem[1]}"
        raise OpError(400, "invalid_input", message, {"field": where})


# (operation name, with headers) -> its compiled checks: compiling is most of the cost.
_CHECKS: dict[tuple[str, bool], tuple[Any, QuickCheck | None]] = {}


def _checks(op: Operation, headers: bool) -> tuple[Any, QuickCheck | None]:
    checks = _CHECKS.get((op.name, headers))
    if checks is None:
        schema = op.input_schema(headers=headers)
        checks = jsonschema.Draft202012Validator(schema), plain_check(schema)
        _CHECKS[op.name, headers] = checks
    return checks
