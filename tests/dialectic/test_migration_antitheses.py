"""Migration 0003 folds one-row-per-observation antitheses into one row per distinct sequence,
keeping what syntheses are computed from: counts, the recency-weighted weight, the feature
sets, the latest exemplars, and which traces contradict which thesis."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.db import connection
from django.db.migrations.executor import MigrationExecutor
from django.utils import timezone

from dialectic import maths
from dialectic.models import Antithesis, Thesis, Trace
from dialectic.services.antitheses import variants_of

BEFORE = ("dialectic", "0002_synthesis_support_share")
AFTER = ("dialectic", "0003_antithesis_per_sequence")

SEQUENCES = [["Bash", "Read", "Edit", "Bash", "Read"], ["Bash", "Read"]]


def _populate(apps: Any) -> dict[str, Any]:
    user = apps.get_model("auth", "User").objects.create(username="migrator", password="x")
    observation_model = apps.get_model("memory", "Observation")
    cluster_model = apps.get_model("dialectic", "Cluster")
    trace_model = apps.get_model("dialectic", "Trace")
    thesis_model = apps.get_model("dialectic", "Thesis")
    anti_model = apps.get_model("dialectic", "Antithesis")
    cluster = cluster_model.objects.create(owner=user, scope="project:shop", size=10)
    thesis = thesis_model.objects.create(
        owner=user,
        cluster=cluster,
        scope="project:shop",
        statement="Survey src/api before editing.",
        expected_sequence=["Glob", "Grep", "Read", "Read", "Read"],
    )
    now = timezone.now()
    when: list[Any] = []
    features: list[frozenset[tuple[str, str]]] = []
    for n in range(14):
        sequence = SEQUENCES[0] if n % 3 else SEQUENCES[1]
        failed = n % 2 == 0
        observed = now - timedelta(days=20 - n)
        observation = observation_model.objects.create(owner=user, tool="Read")
        feats = [["tool", "Bash"], ["tool", "Read"]] + (
            [["error", "Bash failed"]] if failed else []
        )
        trace = trace_model.objects.create(
            observation=observation,
            owner=user,
            scope="project:shop",
            project=f"/home/p{n % 2}",
            tool="Read",
            sequence=sequence,
            features=feats,
            observed_at=observed,
        )
        anti_model.objects.create(
            thesis=thesis, trace=trace, similarity=0.6, divergence=0.5, observed_at=observed
        )
        when.append(observed)
        features.append(frozenset((k, v) for k, v in feats))
    return {"thesis": thesis.pk, "when": when, "features": features, "now": now}


@pytest.mark.sqlite
@pytest.mark.django_db(transaction=True)
def test_the_migration_folds_antitheses_per_sequence_and_keeps_their_evidence() -> None:
    executor = MigrationExecutor(connection)
    latest = executor.loader.graph.leaf_nodes()
    at_before = [key for key in latest if key[0] != "dialectic"] + [BEFORE]
    try:
        executor.migrate([BEFORE])
        executor.loader.build_graph()
        planted = _populate(executor.loader.project_state(at_before).apps)
        MigrationExecutor(connection).migrate([AFTER])
    finally:
        MigrationExecutor(connection).migrate(latest)
    thesis = Thesis.objects.get(pk=planted["thesis"])
    rows = list(Antithesis.objects.filter(thesis=thesis).order_by("sequence_key"))
    assert sorted(len(r.sequence) for r in rows) == [2, 5]
    assert sorted(r.count for r in rows) == [5, 9]
    now = planted["now"]
    # The weight seen at any later time is what summing every observation's weight gives.
    folded = sum(maths.decayed_value(r.weight, r.weight_at, now) for r in rows)
    assert folded == pytest.approx(sum(maths.recency_weight(t, now) for t in planted["when"]))
    # The feature sets (so Q's counts) are kept whole.
    assert sorted(map(sorted, variants_of(rows))) == sorted(map(sorted, planted["features"]))
    for row in rows:
        assert len(row.exemplars) == maths.ANTITHESIS_EXEMPLARS
        assert row.trace_id == row.exemplars[-1]
        assert row.projects == ["/home/p0", "/home/p1"]
        assert row.sequence_key == maths.sequence_key(row.sequence)
    assert all(t.against == [thesis.pk] for t in Trace.objects.all())
    assert Trace.objects.count() == 14
