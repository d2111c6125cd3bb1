"""The `engram` command: run the server, connect Claude Code, check and import.

`run`, `setup claude-code`, `mcp` and `manage` load Django and call the management commands
(the same code as `manage.py`); `doctor`, `status` and `import-history` are clients of a
running server over REST (ENGRAM_URL, ENGRAM_TOKEN, like `engram-hook`) and start without
Django.
"""
