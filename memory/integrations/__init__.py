"""How agents reach Engram besides REST: Claude Code hooks (and their command client) and MCP."""
