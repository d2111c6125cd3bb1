"""Create, list and revoke API tokens from the command line."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from memory.forms import TokenForm
from memory.management.owner import resolve_owner
from memory.models import ApiToken


class Command(BaseCommand):
    help = "Manage API tokens: create, list, revoke."

    def add_arguments(self, parser: CommandParser) -> None:
        sub = parser.add_subparsers(dest="action", required=True)
        create = sub.add_parser("create", help="Create a token and print it once.")
        create.add_argument("--user", help="Owner username (default: the only/first superuser).")
        create.add_argument("--name", default="cli", help="A name for the token.")
        create.add_argument(
            "--scopes", default="*", help="Comma-separated engram scopes (default: *)."
        )
        listing = sub.add_parser("list", help="List tokens (never their secrets).")
        listing.add_argument("--user", help="Only this owner's tokens.")
        revoke = sub.add_parser("revoke", help="Revoke a token by id or by its first characters.")
        revoke.add_argument(
            "token", help="Token id (from list) or the token's starting characters."
        )

    def handle(self, *args: Any, **options: Any) -> None:
        action = options["action"]
        if action == "create":
            self._create(options)
        elif action == "list":
            self._list(options)
        else:
            self._revoke(options["token"])

    def _create(self, options: dict[str, Any]) -> None:
        form = TokenForm({"name": options["name"], "scopes": options["scopes"]})
        if not form.is_valid():
            errors = "; ".join(
                f"{k}: {' '.join(str(e) for e in v)}" for k, v in form.errors.items()
            )
            raise CommandError(errors)
        owner = resolve_owner(options.get("user"))
        token, raw = ApiToken.issue(
            owner=owner, name=form.cleaned_data["name"], scopes=form.cleaned_data["scopes"]
        )
        self.stderr.write(
            f"Created token {token.pk} “{token.name}” for {owner.get_username()} "
            f"(scopes: {', '.join(token.scopes)}). It is shown once:"
        )
        self.stdout.write(raw)

    def _list(self, options: dict[str, Any]) -> None:
        tokens = ApiToken.objects.select_related("owner").order_by("pk")
        if options.get("user"):
            tokens = tokens.filter(owner__username=options["user"])
        if not tokens:
            self.stdout.write("No tokens. Create one with `manage.py engram_token create`.")
            return
        self.stdout.write(
            f"{'id':>4}  {'owner':<12} {'name':<20} {'starts':<14} {'scopes':<16} state"
        )
        for t in tokens:
            state = f"revoked {t.revoked_at:%Y-%m-%d}" if t.revoked_at else "active"
            used = f", used {t.last_used_at:%Y-%m-%d %H:%M}" if t.last_used_at else ""
            self.stdout.write(
                f"{t.pk:>4}  {t.owner.get_username():<12} {t.name:<20} {t.lookup + '…':<14} "
                f"{','.join(t.scopes):<16} {state}{used}"
            )

    def _revoke(self, ref: str) -> None:
        qs = ApiToken.objects.all()
        matches = list(qs.filter(pk=int(ref))) if ref.isdigit() else []
        if not matches:
            matches = [
                t
                for t in qs.filter(lookup__startswith=ref[:12])
                if ref.startswith(t.lookup) or t.lookup.startswith(ref)
            ]
        if not matches:
            raise CommandError(f"No token matches {ref!r}.")
        if len(matches) > 1:
            raise CommandError(f"{ref!r} matches {len(matches)} tokens; use the id from `list`.")
        token = matches[0]
        if token.revoke():
            self.stdout.write(f"Revoked token {token.pk} “{token.name}”.")
        else:
            self.stdout.write(f"Token {token.pk} “{token.name}” was already revoked.")
