from django.db import migrations, models


class Migration(migrations.Migration):
    dependencies = [
        ("memory", "0010_llm_reservation_breaker"),
    ]

    operations = [
        migrations.AddField(
            model_name="agentsession",
            name="read_refusals",
            field=models.JSONField(blank=True, default=list),
        ),
    ]
