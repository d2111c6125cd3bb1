"""Dashboard forms of the exchange pages: shape checks only; rules live in the services."""

from __future__ import annotations

from typing import Any

from django import forms

from exchange import packet as packet_format
from memory.errors import DomainError
from memory.models import Engram
from memory.validation import check_text

MAX_SOURCES = 50


def _scanned(value: str) -> str:
    """Refuse, next to its field, text the write path would refuse (secret, injection)."""
    try:
        check_text(value)
    except DomainError as exc:
        raise forms.ValidationError(str(exc)) from None
    return value


class PacketUploadForm(forms.Form):
    packet = forms.FileField(
        help_text="An engram-exchange/1 packet (.json) from a peer, at most 1 MiB.",
        error_messages={"required": "Choose a packet file to upload."},
    )

    def clean_packet(self) -> bytes:
        upload = self.cleaned_data["packet"]
        limit = packet_format.MAX_PACKET_BYTES
        if upload.size > limit:
            raise forms.ValidationError(
                "The file is %(size)d bytes; packets are at most %(limit)d bytes (1 MiB).",
                params={"size": upload.size, "limit": limit},
            )
        data: bytes = upload.read(limit + 1)
        if not data.strip():
            raise forms.ValidationError("The file is empty.")
        return data


class ExportForm(forms.Form):
    ids = forms.MultipleChoiceField(
        choices=(),
        error_messages={
            "required": "Select at least one abstract to export.",
            "invalid_choice": "%(value)s is not an exportable abstract.",
        },
    )

    def __init__(self, *args: Any, eligible: list[str], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["ids"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [(engram_id, engram_id) for engram_id in eligible]


class AbstractForm(forms.Form):
    sources = forms.MultipleChoiceField(
        choices=(),
        error_messages={
            "required": "Select the concrete engrams this abstract generalises.",
            "invalid_choice": "%(value)s is not one of your concrete engrams.",
        },
    )
    statement = forms.CharField(
        max_length=4000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The general lesson, free of project specifics.",
    )
    structure = forms.CharField(
        max_length=8000,
        widget=forms.Textarea(attrs={"rows": 3}),
        help_text="The shape of the lesson: the pattern the concrete cases share.",
    )
    applies_when = forms.CharField(
        max_length=8000,
        widget=forms.Textarea(attrs={"rows": 2}),
        help_text="When the lesson applies (and so when a peer should use it).",
    )
    visibility = forms.ChoiceField(
        choices=Engram.Visibility.choices,
        initial=Engram.Visibility.PRIVATE,
        help_text="Only public or template abstracts can be exported.",
    )

    def __init__(self, *args: Any, sources: list[Engram], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        field = self.fields["sources"]
        assert isinstance(field, forms.MultipleChoiceField)
        field.choices = [
            (engram.engram_id, f"{engram.engram_id}: {engram.statement[:80]}") for engram in sources
        ]

    def clean_statement(self) -> str:
        return _scanned(self.cleaned_data["statement"])

    def clean_structure(self) -> str:
        return _scanned(self.cleaned_data["structure"])

    def clean_applies_when(self) -> str:
        return _scanned(self.cleaned_data["applies_when"])

    def clean_sources(self) -> list[str]:
        chosen: list[str] = self.cleaned_data["sources"]
        if len(chosen) > MAX_SOURCES:
            raise forms.ValidationError(f"Select at most {MAX_SOURCES} engrams.")
        return chosen


class PeerForm(forms.Form):
    public_key = forms.CharField(
        max_length=100,
        help_text="The peer's public key (base64), as its exchange page shows it.",
    )
    name = forms.CharField(max_length=200, required=False, help_text="A name for your own list.")


class IdentityForm(forms.Form):
    name = forms.CharField(max_length=200, help_text="The sender name your packets carry.")

    def clean_name(self) -> str:
        return _scanned(self.cleaned_data["name"])
