"""Multi-row writes and reads that views, API endpoints, MCP tools, tasks and commands share."""
