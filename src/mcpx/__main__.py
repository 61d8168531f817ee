from mcpx.cli import main

main()
