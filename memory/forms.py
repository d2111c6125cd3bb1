from __future__ import annotations

import re
from datetime import datetime, time, timedelta
from typing import Any

from django import forms
from django.conf import settings
from django.utils import timezone

from memory import validation as limits
from memory.models import Engram, OwnerSettings
from memory.selectors import (
    QUADRANT_NAMES,
    RELEVANCE,
    SORTS,
    WHO_CHOICES,
    EngramQuery,
    EpisodeQuery,
)
from memory.validation import SCOPE_RE

SCOPE_PATTERN = re.compile(r"^(\*|global|(project|agent|command|space):[\w.\-/*]+)$")
BAND_CHOICES = [
    ("active", "active"),
    ("fading", "fading"),
    ("dormant", "dormant"),
    ("retire", "retire"),
]


def _blank(choices: Any, label: str = "any") -> list[tuple[str, str]]:
    return [("", label), *[(str(v), str(n)) for v, n in choices]]


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


TIER_CHOICES = (
    ("A", "A: an explicit instruction"),
    ("B", "B: a correction"),
    ("C", "C: inferred"),
)


class EngramFilterForm(forms.Form):
    """The engram list's search box, filters and sort (GET); bad values are reported, not used."""

    q = forms.CharField(required=False, max_length=500, label="Search")
    who = forms.ChoiceField(required=False, choices=_blank(WHO_CHOICES), label="Said by")
    tier = forms.ChoiceField(required=False, choices=_blank(TIER_CHOICES))
    status = forms.ChoiceField(required=False, choices=_blank(Engram.Status.choices))
    type = forms.ChoiceField(required=False, choices=_blank(Engram.Type.choices))
    scope = forms.CharField(required=False, max_length=200)
    band = forms.ChoiceField(required=False, choices=_blank(BAND_CHOICES))
    quadrant = forms.ChoiceField(required=False, choices=_blank(QUADRANT_NAMES.items()))
    tag = forms.CharField(required=False, max_length=200)
    sort = forms.ChoiceField(
        required=False,
        choices=[(RELEVANCE, "Best match (with a search)")]
        + [(key, spec[3]) for key, spec in SORTS.items()],
    )

    def clean_scope(self) -> str:
        scope: str = self.cleaned_data.get("scope", "").strip()
        if scope and not SCOPE_RE.match(scope):
            raise forms.ValidationError(
                "Use global, or project:NAME (also agent:, command:, space:)."
            )
        return scope

    def query(self) -> EngramQuery:
        """The valid part of the filters (an invalid field is left out)."""
        data = getattr(self, "cleaned_data", {})
        return EngramQuery(
            q=(data.get("q") or "").strip(),
            who=data.get("who") or "",
            tier=data.get("tier") or "",
            status=data.get("status") or "",
            type=data.get("type") or "",
            scope=data.get("scope") or "",
            band=data.get("band") or "",
            quadrant=data.get("quadrant") or "",
            tag=(data.get("tag") or "").strip(),
            sort=data.get("sort") or (RELEVANCE if data.get("q") else "updated"),
        )


def _lines(raw: str) -> list[str]:
    return [line.strip() for line in raw.splitlines() if line.strip()]


class EngramEditForm(forms.Form):
    """The fields a person edits on the engram page; saved through engram_update."""

    statement = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 3}), max_length=limits.MAX_STATEMENT_CHARS
    )
    rationale = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=limits.MAX_TEXT_CHARS
    )
    tags = forms.CharField(required=False, help_text="Comma-separated.", max_length=2000)
    domain = forms.CharField(required=False, max_length=limits.MAX_SHORT_CHARS)
    contraindications = forms.CharField(
        required=False,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="When it does not apply, one per line.",
        max_length=8000,
    )
    type = forms.ChoiceField(choices=Engram.Type.choices)
    scope = forms.CharField(max_length=200)
    polarity = forms.ChoiceField(required=False, choices=_blank(Engram.Polarity.choices, "none"))
    visibility = forms.ChoiceField(choices=Engram.Visibility.choices)
    enforcement = forms.ChoiceField(choices=Engram.Enforcement.choices)
    emotional_weight = forms.FloatField(min_value=1, max_value=10)
    confidence = forms.FloatField(min_value=1, max_value=10)
    trigger_context = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 2}), max_length=limits.MAX_TEXT_CHARS
    )

    FIELDS = (
        "statement", "rationale", "tags", "domain", "contraindications", "type", "scope",
        "polarity", "visibility", "enforcement", "emotional_weight", "confidence",
        "trigger_context",
    )  # fmt: skip

    @classmethod
    def for_engram(cls, engram: Engram) -> EngramEditForm:
        return cls(
            initial={
                "statement": engram.statement,
                "rationale": engram.rationale,
                "tags": ", ".join(engram.tags or []),
                "domain": engram.domain,
                "contraindications": "\n".join(
                    c for c in engram.contraindications or [] if isinstance(c, str)
                ),
                "type": engram.type,
                "scope": engram.scope,
                "polarity": engram.polarity or "",
                "visibility": engram.visibility,
                "enforcement": engram.enforcement,
                "emotional_weight": engram.emotional_weight,
                "confidence": engram.confidence,
                "trigger_context": engram.trigger_context,
            }
        )

    def clean_statement(self) -> str:
        statement: str = self.cleaned_data["statement"].strip()
        if not statement:
            raise forms.ValidationError("An engram needs a statement.")
        return statement

    def clean_scope(self) -> str:
        scope: str = self.cleaned_data["scope"].strip()
        if not SCOPE_RE.match(scope):
            raise forms.ValidationError(
                "Use global, or project:NAME (also agent:, command:, space:)."
            )
        return scope

    def clean_tags(self) -> list[str]:
        tags = [t.strip() for t in self.cleaned_data.get("tags", "").split(",") if t.strip()]
        if len(tags) > 50:
            raise forms.ValidationError("At most 50 tags.")
        if any(len(t) > 200 for t in tags):
            raise forms.ValidationError("Tags are at most 200 characters each.")
        return list(dict.fromkeys(tags))

    def clean_contraindications(self) -> list[str]:
        items = _lines(self.cleaned_data.get("contraindications", ""))
        if len(items) > 50:
            raise forms.ValidationError("At most 50 lines.")
        if any(len(t) > 200 for t in items):
            raise forms.ValidationError("Each line is at most 200 characters.")
        return items

    def changes(self) -> dict[str, Any]:
        data = dict(self.cleaned_data)
        data["polarity"] = data.get("polarity") or None
        return {name: data[name] for name in self.FIELDS if name in data}


class ReviewDecisionForm(forms.Form):
    """One review decision; which fields matter depends on the action (checked by the service)."""

    action = forms.CharField(max_length=30)
    statement = forms.CharField(required=False, max_length=4000)
    structure = forms.CharField(required=False, max_length=8000)
    applies_when = forms.CharField(required=False, max_length=8000)
    visibility = forms.ChoiceField(
        required=False, choices=_blank(Engram.Visibility.choices, "private")
    )
    new_contraindication = forms.CharField(required=False, max_length=200)
    old_contraindication = forms.CharField(required=False, max_length=200)

    def edits(self, action: str) -> dict[str, Any]:
        data = self.cleaned_data
        names: tuple[str, ...] = ()
        if action == "edit":
            names = ("statement",)
        elif action == "write":
            names = ("statement", "structure", "applies_when", "visibility")
        elif action == "both_valid":
            names = ("new_contraindication", "old_contraindication")
        return {name: data.get(name) or "" for name in names if name in data}


class SettingsForm(forms.ModelForm):
    review_batch_size = forms.IntegerField(
        required=False,
        min_value=1,
        max_value=50,
        label="Review batch size",
        help_text="Items a day. Empty: 15 a day in your first two weeks, then 5.",
    )
    decay_base = forms.FloatField(
        required=False,
        min_value=0.001,
        max_value=0.5,
        label="Decay rate (λ per active day)",
        help_text="Empty: the server default (0.05). Higher forgets faster.",
    )
    inject_budget_tokens = forms.IntegerField(
        required=False,
        min_value=100,
        max_value=20000,
        label="Injection budget (tokens)",
        help_text="Most tokens handed to an agent per prompt. Empty: the server default (2,000).",
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # The defaults come from the environment, so the help says what they are here.
        self.fields[
            "decay_base"
        ].help_text = (
            f"Empty: the server default ({settings.ENGRAM_DECAY_BASE:g}). Higher forgets faster."
        )
        self.fields["inject_budget_tokens"].help_text = (
            "Most tokens handed to an agent per prompt. Empty: the server default "
            f"({settings.ENGRAM_INJECT_BUDGET_TOKENS:,})."
        )

    class Meta:
        model = OwnerSettings
        fields = (
            "review_batch_size",
            "auto_approve",
            "auto_defer",
            "decay_base",
            "inject_budget_tokens",
        )
        labels = {
            "auto_approve": "Approve inferred lessons automatically",
            "auto_defer": "Defer what I leave undecided in a day's review",
        }
        help_texts = {
            "auto_approve": "Off is safer: inferred lessons wait in review as candidates.",
            "auto_defer": "Undecided items skip a day instead of coming straight back.",
        }


class EpisodeFilterForm(forms.Form):
    since = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    until = forms.DateField(required=False, widget=forms.DateInput(attrs={"type": "date"}))
    agent = forms.CharField(required=False, max_length=100)
    channel = forms.CharField(required=False, max_length=100)
    q = forms.CharField(required=False, max_length=500, label="Text")

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        since, until = data.get("since"), data.get("until")
        if since and until and until < since:
            self.add_error("until", "Must not be before “since”.")
        return data

    def query(self) -> EpisodeQuery:
        data = getattr(self, "cleaned_data", {})
        tz = timezone.get_current_timezone()
        since = data.get("since")
        until = data.get("until")
        return EpisodeQuery(
            since=datetime.combine(since, time.min, tzinfo=tz) if since else None,
            # Whole days: "until 3 March" includes everything on 3 March.
            until=(
                datetime.combine(until + timedelta(days=1), time.min, tzinfo=tz)
                - timedelta(microseconds=1)
                if until
                else None
            ),
            agent=(data.get("agent") or "").strip(),
            channel=(data.get("channel") or "").strip(),
            q=(data.get("q") or "").strip(),
        )
