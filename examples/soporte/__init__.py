"""A contract-compliant example MCP server for a support desk (see README.md)."""
