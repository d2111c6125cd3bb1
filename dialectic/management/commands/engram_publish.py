"""Write the owner's delivered rules and skills into a project's `.claude/` (for HTTP-hook
users, whose hook cannot write files): the same rules as engram-hook's SessionStart sync."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from dialectic.selectors import delivery_list
from memory.errors import DomainError
from memory.integrations.artifact_sync import sync
from memory.integrations.claude_code import project_scope
from memory.management.owner import resolve_owner
from memory.validation import scope as validate_scope


class Command(BaseCommand):
    help = (
        "Sync published rules and skills into PATH/.claude/ (user-scope ones into "
        "~/.claude/): writes only files Engram owns, leaves files you edited alone and names "
        "them, removes retired ones."
    )

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--project", required=True, type=Path, help="The project directory.")
        parser.add_argument("--scope", help="The scope (default: project:<directory name>).")
        parser.add_argument("--home", type=Path, help="Where ~/.claude is (default: $HOME).")
        parser.add_argument("--user", help="Owner username (default: the first superuser).")

    def handle(self, *args: Any, **options: Any) -> None:
        project: Path = options["project"].expanduser().resolve()
        if not project.is_dir():
            raise CommandError(f"{project} is not a directory.")
        owner = resolve_owner(options.get("user"))
        try:
            scope = validate_scope(options["scope"]) if options.get("scope") else None
        except DomainError as exc:
            raise CommandError(str(exc)) from None
        scope = scope or project_scope(str(project))
        home = options.get("home")
        report = sync(delivery_list(owner, scope), str(project), str(home) if home else None)
        for label, paths in report.as_dict().items():
            for path in paths:
                self.stdout.write(f"{label:9} {path}")
        self.stdout.write(f"{scope}: {report.summary()}")
        if report.edited:
            self.stderr.write(
                "Files you edited were left alone; delete them to get Engram's version back."
            )
