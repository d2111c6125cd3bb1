from __future__ import annotations

import re

from django import forms

SCOPE_PATTERN = re.compile(r"^(\*|global|(project|agent|command|space):[\w.\-/*]+)$")


class TokenForm(forms.Form):
    name = forms.CharField(max_length=100, help_text="Where this token is used, e.g. “laptop”.")
    scopes = forms.CharField(
        required=False,
        initial="*",
        help_text="Comma-separated engram scopes this token may use; * for all.",
    )

    def clean_name(self) -> str:
        name: str = self.cleaned_data["name"].strip()
        if not name:
            raise forms.ValidationError("Give the token a name.")
        return name

    def clean_scopes(self) -> list[str]:
        raw: str = self.cleaned_data.get("scopes") or "*"
        scopes = [s.strip() for s in raw.split(",") if s.strip()]
        bad = [s for s in scopes if not SCOPE_PATTERN.match(s)]
        if bad:
            raise forms.ValidationError(
                "Not a scope: %(bad)s. Use *, global, or project:NAME (also agent:, command:, "
                "space:).",
                params={"bad": ", ".join(bad)},
            )
        return scopes or ["*"]
