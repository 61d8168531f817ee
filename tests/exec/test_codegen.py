"""The generated client's source: schema -> type tables, names, untrusted text, determinism.

Generated packages are imported in a child Python (never into the test process), with
``_runtime.call`` replaced by a recorder, to see what each function would send.
"""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from mcpx.exec import generate_package
from mcpx.exec._pysource import docstring, identifier, unique_identifiers
from mcpx.exec._schema_types import TypeWriter

A = "_t.Any"

TYPES: list[tuple[str, Any, str]] = [
    ("string", {"type": "string"}, "str"),
    ("integer", {"type": "integer"}, "int"),
    ("number", {"type": "number"}, "float"),
    ("boolean", {"type": "boolean"}, "bool"),
    ("null", {"type": "null"}, "None"),
    ("type list nullable", {"type": ["string", "null"]}, "str | None"),
    ("null first", {"type": ["null", "integer"]}, "int | None"),
    ("anyOf nullable", {"anyOf": [{"type": "integer"}, {"type": "null"}]}, "int | None"),
    ("oneOf", {"oneOf": [{"type": "string"}, {"type": "integer"}]}, "str | int"),
    ("anyOf with any", {"anyOf": [{"type": "string"}, {}]}, A),
    ("openapi nullable", {"type": "string", "nullable": True}, "str | None"),
    ("enum", {"type": "string", "enum": ["a", "b"]}, "_t.Literal['a', 'b']"),
    ("enum with null", {"enum": ["a", None]}, "_t.Literal['a'] | None"),
    ("enum mixed", {"enum": [1, True, "x", 1]}, "_t.Literal[1, True, 'x']"),
    ("enum of floats", {"type": "number", "enum": [1.5, 2]}, "float"),
    ("const", {"const": "on"}, "_t.Literal['on']"),
    ("quote in enum", {"enum": ['it\'s "x"']}, "_t.Literal['it\\'s \"x\"']"),
    ("array", {"type": "array", "items": {"type": "string"}}, "list[str]"),
    ("bare array", {"type": "array"}, f"list[{A}]"),
    ("items implies array", {"items": {"type": "integer"}}, "list[int]"),
    ("map", {"type": "object", "additionalProperties": {"type": "integer"}}, "dict[str, int]"),
    ("bare object", {"type": "object"}, f"dict[str, {A}]"),
    ("allOf one", {"allOf": [{"type": "string"}]}, "str"),
    ("allOf many", {"allOf": [{"type": "string"}, {"minLength": 1}]}, A),
    ("empty", {}, A),
    ("true", True, A),
    ("unknown type", {"type": "decimal"}, A),
    ("not a schema", [1, 2], A),
    ("external ref", {"$ref": "https://example.com/s.json"}, A),
    ("broken ref", {"$ref": "#/$defs/Nope"}, A),
    ("def ref", {"$ref": "#/$defs/Id", "$defs": {"Id": {"type": "integer"}}}, "int"),
    (
        "definitions ref",
        {"$ref": "#/definitions/Ids", "definitions": {"Ids": {"type": "array", "items": {}}}},
        f"list[{A}]",
    ),
    ("self ref", {"type": "array", "items": {"$ref": "#"}}, f"list[list[{A}]]"),
]


@pytest.mark.parametrize(("schema", "expected"), [c[1:] for c in TYPES], ids=[c[0] for c in TYPES])
def test_type_of_schema(schema: Any, expected: str) -> None:
    writer = TypeWriter()
    assert writer.annotation(schema, hint="x") == expected
    assert writer.definitions == []


PREFIX: list[tuple[str, dict[str, Any], bool, str]] = [
    (
        "closed input",
        {"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        True,
        "tuple[int, str]",
    ),
    (
        "closed output",
        {"prefixItems": [{"type": "integer"}, {"type": "string"}], "items": False},
        False,
        "list[int | str]",
    ),
    (
        "open",
        {"type": "array", "prefixItems": [{"type": "integer"}], "items": {"type": "boolean"}},
        True,
        "list[int | bool]",
    ),
    (
        "draft-07 array items",
        {"type": "array", "items": [{"type": "integer"}], "maxItems": 1},
        True,
        "tuple[int]",
    ),
]


@pytest.mark.parametrize(
    ("schema", "for_input", "expected"), [c[1:] for c in PREFIX], ids=[c[0] for c in PREFIX]
)
def test_prefix_items(schema: dict[str, Any], for_input: bool, expected: str) -> None:
    assert TypeWriter().annotation(schema, hint="x", for_input=for_input) == expected


def test_object_is_a_typed_dict_written_once() -> None:
    point = {
        "type": "object",
        "properties": {"x": {"type": "number"}, "y-label": {"type": "string"}},
        "required": ["x"],
    }
    writer = TypeWriter(reserved={"EchoPoint"})
    first = writer.annotation(point, hint="echo point")
    again = writer.annotation(dict(point), hint="other place")
    assert first == again == "EchoPoint2"  # the reserved name is never taken
    assert writer.definitions == [
        "EchoPoint2 = _t.TypedDict('EchoPoint2', "
        "{'x': _t.Required[float], 'y-label': str}, total=False)"
    ]


def test_nested_typed_dicts_come_after_what_they_name() -> None:
    schema = {
        "type": "object",
        "properties": {"inner": {"type": "object", "properties": {"n": {"type": "integer"}}}},
    }
    writer = TypeWriter()
    assert writer.annotation(schema, hint="outer") == "Outer"
    assert [d.split(" = ")[0] for d in writer.definitions] == ["OuterInner", "Outer"]


def test_cycle_through_defs_is_any() -> None:
    schema = {
        "$ref": "#/$defs/Node",
        "$defs": {
            "Node": {
                "type": "object",
                "properties": {"kids": {"type": "array", "items": {"$ref": "#/$defs/Node"}}},
            }
        },
    }
    writer = TypeWriter()
    assert writer.annotation(schema, hint="tree") == "Node"
    assert writer.definitions == [
        f"Node = _t.TypedDict('Node', {{'kids': list[{A}]}}, total=False)"
    ]


def test_deep_schema_is_cut_to_any() -> None:
    schema: dict[str, Any] = {"type": "string"}
    for _ in range(200):
        schema = {"type": "array", "items": schema}
    found = TypeWriter().annotation(schema, hint="x")
    assert found.endswith(f"[{A}" + "]" * found.count("["))
    assert found.count("list[") < 30


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("fancy-name", "fancy_name"),
        ("1x", "_1x"),
        ("from", "from_"),
        ("None", "None_"),
        ("a.b/c d", "a_b_c_d"),
        ("héllo", "h_llo"),
        ("", "_"),
        ("ok_Name2", "ok_Name2"),
        ("__all__", "_all__"),
        ("__x", "_x"),
        ("___", "_"),
    ],
)
def test_identifier(name: str, expected: str) -> None:
    assert identifier(name) == expected
    assert identifier(name).isidentifier()


def test_collisions_are_resolved_in_sorted_order_whatever_the_input_order() -> None:
    names = ["a_b", "a.b", "a-b", "aio", "b"]
    expected = {"a-b": "a_b", "a.b": "a_b_2", "a_b": "a_b_3", "aio": "aio_", "b": "b"}
    assert unique_identifiers(names, {"aio"}) == expected
    assert unique_identifiers(reversed(names), {"aio"}) == expected


def test_docstring_cannot_be_closed_from_inside() -> None:
    text = 'a """ b \'\'\' c \\N \\x \\ "\r\nline\u2028two\x00\ud800"'
    source = f"def f():\n    {docstring(text, '    ')}\n"
    tree = ast.parse(source)
    assert len(tree.body) == 1
    said = ast.get_docstring(tree.body[0], clean=False)  # type: ignore[arg-type]
    assert said is not None
    assert 'a """ b \'\'\' c \\N \\x \\ "' in said
    assert "\n    line\u2028two\x00\ud800" in said  # the lines keep their place


def _tool(name: str, properties: dict[str, Any], required: list[str], **more: Any) -> Any:
    schema = {"type": "object", "properties": properties, "required": required}
    return {"name": name, "description": f"The {name} tool.", "inputSchema": schema, **more}


def _recorded(tmp_path: Path, files: dict[str, str], script: str) -> Any:
    """What ``script`` prints (JSON) with the package importable and every call recorded
    (``CALLS``) instead of sent."""
    for rel, text in files.items():
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    prelude = (
        "import json, mcpx_tools._runtime as r\n"
        "CALLS = []\n"
        "r.call = lambda s, t, a: CALLS.append([s, t, {k: v for k, v in a.items() "
        "if v is not r.UNSET}])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", prelude + script + "\nprint(json.dumps(CALLS))"],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.splitlines()[-1])


def test_calls_send_the_original_names(tmp_path: Path) -> None:
    tools = {
        "My-Server": [
            _tool("fancy-name", {"from": {"type": "string"}, "a-b": {"type": "integer"}}, ["from"]),
            _tool("fancy.name", {}, []),
            _tool("class", {"list": {"type": "string"}}, []),
            _tool("__all__", {}, []),
        ],
        "my_server": [_tool("x", {}, [])],
    }
    files = generate_package(tools)
    assert {"mcpx_tools/my_server.py", "mcpx_tools/my_server_2.py"} <= set(files)
    calls = _recorded(
        tmp_path,
        files,
        "from mcpx_tools import my_server, my_server_2\n"
        "my_server.fancy_name(from_='x', a_b=3)\n"
        "my_server.fancy_name(from_='y')\n"
        "my_server.fancy_name_2()\n"
        "my_server.class_(list_='l')\n"
        "my_server_2.x()\n"
        "my_server._all__()\n"
        "import asyncio; asyncio.run(my_server.aio.fancy_name(from_='z'))\n"
        "assert 'fancy_name' in my_server.__all__\n",
    )
    assert calls == [
        ["My-Server", "fancy-name", {"from": "x", "a-b": 3}],
        ["My-Server", "fancy-name", {"from": "y"}],
        ["My-Server", "fancy.name", {}],
        ["My-Server", "class", {"list": "l"}],
        ["my_server", "x", {}],
        ["My-Server", "__all__", {}],
        ["My-Server", "fancy-name", {"from": "z"}],
    ]


EVIL = '"""; import os; open("pwned", "w") #\\N{x} \\x \'\'\' \r\n\x00 "'


def test_untrusted_text_is_inert(tmp_path: Path) -> None:
    hostile = {
        "type": "object",
        "description": EVIL,
        "properties": {
            '"); open("pwned", "w") #': {"type": "string", "description": EVIL, "default": EVIL},
            "choice": {"enum": [EVIL, "b"]},
        },
        "required": [],
    }
    tools = {
        'srv"; open("pwned", "w") #': [
            {
                "name": '__import__("os").system("touch pwned")',
                "description": EVIL,
                "inputSchema": hostile,
                "outputSchema": hostile,
            },
        ]
    }
    files = generate_package(tools)
    for rel, text in files.items():
        if rel.endswith(".py") and not rel.endswith("_runtime.py"):  # that one: verbatim
            _only_definitions(ast.parse(text), rel)
    module = next(r for r in files if r.endswith(".py") and "/srv" in r)
    tree = ast.parse(files[module])
    function = next(n for n in tree.body if isinstance(n, ast.FunctionDef))
    said = ast.get_docstring(function, clean=False) or ""
    assert '"""; import os; open("pwned", "w") #\\N{x} \\x \'\'\'' in said
    calls = _recorded(
        tmp_path,
        files,
        f"import mcpx_tools, mcpx_tools.{Path(module).stem} as m\n"
        f"getattr(m, {function.name!r})(choice={EVIL!r})\n",
    )
    assert calls == [[next(iter(tools)), tools[next(iter(tools))][0]["name"], {"choice": EVIL}]]
    assert not (tmp_path / "pwned").exists()


_HARMLESS = (ast.ImportFrom, ast.Import, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)


def _only_definitions(tree: ast.Module, rel: str) -> None:
    """A module's statements are its docstring, imports, ``__all__``, TypedDicts and
    definitions: nothing that runs anything else."""
    for i, node in enumerate(tree.body):
        if i == 0 and isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant):
            continue
        if isinstance(node, ast.Assign):
            value = node.value
            if isinstance(value, ast.List) or (
                isinstance(value, ast.Call)
                and isinstance(value.func, ast.Attribute)
                and value.func.attr == "TypedDict"
            ):
                continue
        if _getattr_guard(node):
            continue
        assert isinstance(node, _HARMLESS), f"{rel}: unexpected {ast.dump(node)[:200]}"


def _getattr_guard(node: ast.stmt) -> bool:
    """``if not _t.TYPE_CHECKING: def __getattr__...``: the module's unknown-tool message,
    a definition only."""
    return (
        isinstance(node, ast.If)
        and ast.unparse(node.test) == "not _t.TYPE_CHECKING"
        and not node.orelse
        and len(node.body) == 1
        and isinstance(node.body[0], ast.FunctionDef)
        and node.body[0].name == "__getattr__"
    )


def test_output_is_deterministic() -> None:
    tools = {
        "b": [
            _tool("z", {"p": {"type": "object", "properties": {"q": {}}}}, []),
            _tool("a", {}, []),
        ],
        "a": [_tool("x", {}, [])],
    }
    shuffled = {"a": tools["a"], "b": list(reversed(tools["b"]))}
    assert generate_package(tools) == generate_package(shuffled)
    first = generate_package(tools)
    assert list(first) == list(generate_package(tools))


def test_runtime_is_copied_verbatim_and_package_is_typed() -> None:
    files = generate_package({})
    runtime = Path(__file__).parents[2] / "src" / "mcpx" / "exec" / "_runtime.py"
    assert files["mcpx_tools/_runtime.py"] == runtime.read_text(encoding="utf-8")
    assert files["mcpx_tools/py.typed"] == ""
    assert "run_id" in files["mcpx_tools/__init__.py"]
