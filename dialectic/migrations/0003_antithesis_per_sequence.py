"""Antitheses are kept per thesis and distinct tool sequence (with counts, a recency-weighted
weight, the feature sets seen and the latest exemplars) instead of one row per observation.
Existing rows are folded; each folded observation's trace remembers the thesis it contradicts.

Self-contained: the key, the weight and the cap are copied here (never imported), so editing
live code cannot rewrite this migration.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter, defaultdict
from typing import Any

import django.db.models.deletion
import django.utils.timezone
from django.db import migrations, models

MAX_DISTINCT = 8  # distinct sequences kept per thesis; the rest fold into one "other" row
EXEMPLARS = 5
HALF_LIFE_DAYS = 14.0
OTHER = "other"


def sequence_key(sequence: list[str]) -> str:
    return hashlib.sha256(json.dumps(list(sequence), separators=(",", ":")).encode()).hexdigest()


def fold(apps: Any, schema_editor: Any) -> None:
    if schema_editor.connection.vendor == "postgresql":
        # Foreign keys are checked at once, so the constraint added after this step does not
        # meet pending trigger events in the same transaction.
        schema_editor.execute("SET CONSTRAINTS ALL IMMEDIATE")
    Antithesis = apps.get_model("dialectic", "Antithesis")
    Trace = apps.get_model("dialectic", "Trace")
    thesis_ids = list(Antithesis.objects.values_list("thesis_id", flat=True).distinct())
    against: dict[int, set[int]] = defaultdict(set)
    for thesis_id in thesis_ids:
        rows = list(
            Antithesis.objects.filter(thesis_id=thesis_id)
            .select_related("trace")
            .order_by("observed_at", "id")
        )
        groups: dict[str, list[Any]] = defaultdict(list)
        for row in rows:
            groups[sequence_key(list(row.trace.sequence))].append(row)
            against[row.trace_id].add(thesis_id)
        ranked = sorted(groups, key=lambda k: (-len(groups[k]), groups[k][0].observed_at))
        kept = {key: groups[key] for key in ranked[:MAX_DISTINCT]}
        rest = [row for key in ranked[MAX_DISTINCT:] for row in groups[key]]
        if rest:
            kept[OTHER] = sorted(rest, key=lambda r: (r.observed_at, r.id))
        new = []
        for key, members in kept.items():
            latest = members[-1]
            at = latest.observed_at
            weight = sum(
                0.5 ** (max(0.0, (at - m.observed_at).total_seconds()) / 86400.0 / HALF_LIFE_DAYS)
                for m in members
            )
            variants = Counter(
                tuple(sorted((str(k), str(v)) for k, v in m.trace.features)) for m in members
            )
            new.append(
                Antithesis(
                    thesis_id=thesis_id,
                    sequence=[] if key == OTHER else list(latest.trace.sequence),
                    sequence_key=key,
                    count=len(members),
                    weight=weight,
                    weight_at=at,
                    variants=[[[list(f) for f in fs], n] for fs, n in sorted(variants.items())],
                    exemplars=[m.trace_id for m in members[-EXEMPLARS:]],
                    projects=sorted({m.trace.project for m in members if m.trace.project}),
                    trace_id=latest.trace_id,
                    similarity=latest.similarity,
                    divergence=latest.divergence,
                    observed_at=at,
                    created_at=members[0].created_at,
                    updated_at=latest.created_at,
                )
            )
        Antithesis.objects.filter(thesis_id=thesis_id).delete()
        Antithesis.objects.bulk_create(new)
    for trace_id, theses in against.items():
        Trace.objects.filter(pk=trace_id).update(against=sorted(theses))


class Migration(migrations.Migration):
    dependencies = [
        ("dialectic", "0002_synthesis_support_share"),
    ]

    operations = [
        migrations.AddField(
            model_name="trace",
            name="previous",
            field=models.CharField(blank=True, default="", max_length=500),
        ),
        migrations.AddField(
            model_name="trace",
            name="against",
            field=models.JSONField(default=list),
        ),
        migrations.RemoveConstraint(
            model_name="antithesis",
            name="dialectic_uniq_antithesis",
        ),
        migrations.AddField(
            model_name="antithesis",
            name="sequence",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="sequence_key",
            field=models.CharField(default="", max_length=64),
            preserve_default=False,
        ),
        migrations.AddField(
            model_name="antithesis",
            name="count",
            field=models.PositiveIntegerField(default=0),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="weight",
            field=models.FloatField(default=0.0),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="weight_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="variants",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="exemplars",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="projects",
            field=models.JSONField(default=list),
        ),
        migrations.AddField(
            model_name="antithesis",
            name="updated_at",
            field=models.DateTimeField(default=django.utils.timezone.now),
        ),
        migrations.AlterField(
            model_name="antithesis",
            name="trace",
            field=models.ForeignKey(
                blank=True,
                null=True,
                on_delete=django.db.models.deletion.SET_NULL,
                related_name="antitheses",
                to="dialectic.trace",
            ),
        ),
        migrations.RunPython(fold, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="antithesis",
            constraint=models.UniqueConstraint(
                fields=("thesis", "sequence_key"), name="dialectic_uniq_antithesis_sequence"
            ),
        ),
    ]
