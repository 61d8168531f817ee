"""``python -m mcpx.demo``: run the demo MCP server on stdin/stdout."""

from mcpx.demo import main

main()
