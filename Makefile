.PHONY: run test lint format bench help

help:
	@echo "make run   - install (first time) and start Engram on http://127.0.0.1:8000"
	@echo "make test  - set up services and run lint, types and the whole test suite"

run:
	@bash scripts/run.sh

test:
	@bash scripts/test.sh

lint:
	.venv/bin/ruff check . && .venv/bin/ruff format --check . && .venv/bin/mypy engramsite lib memory exchange dialectic patterns

format:
	.venv/bin/ruff check --fix . && .venv/bin/ruff format .
