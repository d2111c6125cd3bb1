"""Dashboard forms of the pattern page: shape checks only; the rules live in the services."""

from __future__ import annotations

from django import forms

from patterns.services.store import ON_DUPLICATE


class LearnForm(forms.Form):
    task = forms.CharField(max_length=4000, widget=forms.Textarea(attrs={"rows": 2}))
    design = forms.CharField(
        required=False,
        max_length=20000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="How it was done, in words.",
    )
    code = forms.CharField(required=False, max_length=100000, widget=forms.Textarea({"rows": 4}))
    eval_score = forms.FloatField(
        min_value=0, max_value=10, label="Score (0-10)", help_text="How well the run went."
    )
    on_duplicate = forms.ChoiceField(
        choices=[(c, c.replace("_", " ")) for c in ON_DUPLICATE],
        initial="replace_with_better",
        help_text="When a stored task is nearly the same (cosine >= 0.92).",
    )


class RecallForm(forms.Form):
    task = forms.CharField(max_length=4000, label="Task")
    eval_weighted = forms.BooleanField(required=False, initial=True, label="Eval-weighted")
    recency_weight = forms.FloatField(
        required=False, min_value=0, max_value=1, initial=0, label="Recency weight (0-1)"
    )


class RefineForm(forms.Form):
    eval_score = forms.FloatField(min_value=0, max_value=10, label="Score (0-10)")


class ComposeForm(forms.Form):
    task = forms.CharField(max_length=4000)
    given = forms.CharField(
        required=False,
        max_length=2000,
        help_text="Values available before the first stage, comma-separated.",
    )

    def given_names(self) -> list[str]:
        raw = self.cleaned_data.get("given") or ""
        return [name.strip() for name in raw.split(",") if name.strip()]
