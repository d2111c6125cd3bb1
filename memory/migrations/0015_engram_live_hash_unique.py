from django.db import migrations, models
from django.db.models import Q


def retire_live_duplicates(apps, schema_editor):
    """Before the constraint: of live engrams that share owner, scope and content hash (left by
    a race before this migration), the oldest stays live and the others are retired."""
    Engram = apps.get_model("memory", "Engram")
    seen = set()
    duplicates = []
    rows = (
        Engram.objects.exclude(status="retired")
        .order_by("owner_id", "scope", "content_hash", "id")
        .values_list("id", "owner_id", "scope", "content_hash")
    )
    for pk, owner, scope, digest in rows.iterator():
        key = (owner, scope, digest)
        if key in seen:
            duplicates.append(pk)
        seen.add(key)
    for start in range(0, len(duplicates), 500):
        Engram.objects.filter(pk__in=duplicates[start : start + 500]).update(status="retired")


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0014_answered_text"),
    ]

    operations = [
        migrations.RunPython(retire_live_duplicates, migrations.RunPython.noop),
        migrations.AddConstraint(
            model_name="engram",
            constraint=models.UniqueConstraint(
                condition=~Q(status="retired"),
                fields=("owner", "scope", "content_hash"),
                name="uniq_live_engram_hash",
            ),
        ),
    ]
