from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def run_django(tmp_path: Path, code: str, **env: str) -> subprocess.CompletedProcess[str]:
    # DJANGO_ALLOW_ASYNC_UNSAFE is set for the browser tests; a deployment must not inherit it.
    dropped = {"SECRET_KEY", "DEBUG", "DJANGO_ALLOW_ASYNC_UNSAFE"}
    base = {k: v for k, v in os.environ.items() if k not in dropped}
    base.update(
        {"ENGRAM_DATA_DIR": str(tmp_path / "data"), "DJANGO_SETTINGS_MODULE": "engramsite.settings"}
    )
    base.update(env)
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=base,
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_it_refuses_to_start_with_debug_off_and_the_development_secret(tmp_path: Path) -> None:
    result = run_django(tmp_path, "import django; django.setup()", DEBUG="0")
    assert result.returncode != 0
    assert "ImproperlyConfigured" in result.stderr and "SECRET_KEY" in result.stderr


def test_it_starts_with_debug_on_and_the_development_secret(tmp_path: Path) -> None:
    result = run_django(tmp_path, "import django; django.setup(); print('ok')", DEBUG="1")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "ok"


def test_it_uses_the_key_written_to_the_data_directory(tmp_path: Path) -> None:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "secret_key").write_text("k" * 60)
    code = "import django; django.setup(); from django.conf import settings; print(settings.SECRET_KEY)"
    result = run_django(tmp_path, code, DEBUG="0")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "k" * 60


@pytest.mark.parametrize(
    ("name", "value", "message"),
    [
        ("DEBUG", "maybe", "DEBUG must be a boolean"),
        ("DATABASE_URL", "mysql://x/y", "DATABASE_URL must start with"),
        ("ENGRAM_INJECT_BUDGET_TOKENS", "lots", "must be an integer"),
    ],
)
def test_it_rejects_bad_values_with_a_clear_message(
    tmp_path: Path, name: str, value: str, message: str
) -> None:
    env = {"DEBUG": "1", name: value}
    result = run_django(tmp_path, "import django; django.setup()", **env)
    assert result.returncode != 0
    assert message in result.stderr


def test_check_deploy_is_clean_with_production_settings(tmp_path: Path) -> None:
    env = {
        "DEBUG": "0",
        "SECRET_KEY": "p" * 20 + "Qz8#vLm2@x!Rk5$wNf7&Yt3^Hb9*Jd4(Gc6)Ps1-Ue0+Wa",
        "ALLOWED_HOSTS": "engram.example.com",
        "SECURE_SSL_REDIRECT": "1",
        "SESSION_COOKIE_SECURE": "1",
        "CSRF_COOKIE_SECURE": "1",
        "SECURE_HSTS_PRELOAD": "1",
    }
    code = (
        "import sys; from django.core.management import execute_from_command_line; "
        "execute_from_command_line(['manage.py', 'check', '--deploy', '--fail-level', 'WARNING'])"
    )
    result = run_django(tmp_path, code, **env)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no issues" in result.stdout


def test_the_embedded_broker_looks_for_work_often_and_can_be_tuned(tmp_path: Path) -> None:
    """A worker on the filesystem broker waits one polling interval after every task (one is
    prefetched): at 0.5 s it fell minutes behind 8 agents (docs/reliability.md)."""
    code = (
        "import django; django.setup(); from django.conf import settings; "
        "print(settings.CELERY_BROKER_TRANSPORT_OPTIONS['polling_interval'])"
    )
    default = run_django(tmp_path, code, DEBUG="1", REDIS_URL="", CELERY_BROKER_URL="")
    assert default.returncode == 0, default.stderr
    assert float(default.stdout) <= 0.1
    tuned = run_django(
        tmp_path,
        code,
        DEBUG="1",
        REDIS_URL="",
        CELERY_BROKER_URL="",
        ENGRAM_BROKER_POLL_SECONDS="1",
    )
    assert float(tuned.stdout) == 1.0
