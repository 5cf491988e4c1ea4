"""`python -m cairn_mcp` / `cairn-mcp`: the stdio MCP server."""

from cairn_mcp.stdio import main

if __name__ == "__main__":
    main()
