"""`engram run`: what `make run` does, from any installation — data folder and secret key,
migrations, the first-run owner and token (printed once), the embedding model, then web +
worker + beat in the foreground (`manage.py engram_run`)."""

from __future__ import annotations

import os
import secrets
import sys
from pathlib import Path

from lib import paths

DEFAULT_BIND = "127.0.0.1:8000"


def say(message: str) -> None:
    print(f"==> {message}", file=sys.stderr, flush=True)


def site_url(bind: str) -> str:
    """The URL people and hooks use for a bind address (all interfaces: the loopback one)."""
    host, _, port = bind.rpartition(":")
    if host in {"", "0.0.0.0", "[::]", "::"}:
        host = "127.0.0.1"
    return f"http://{host}:{port}" if port else f"http://{bind}"


def prepare(bind: str) -> Path:
    """Before Django loads: the data folder, a random secret key in it on the first run (unless
    SECRET_KEY is set), and the environment every child process inherits."""
    folder = paths.data_dir()
    folder.mkdir(parents=True, exist_ok=True)
    os.environ[paths.DATA_DIR_ENV] = str(folder)
    os.environ.setdefault("SITE_URL", site_url(bind))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "engramsite.settings")
    key_file = folder / paths.SECRET_KEY_FILE
    if not os.environ.get("SECRET_KEY", "").strip() and not (
        key_file.exists() and key_file.read_text().strip()
    ):
        say(f"Writing a random secret key to {key_file}")
        old = os.umask(0o077)
        try:
            key_file.write_text(secrets.token_urlsafe(50) + "\n")
        finally:
            os.umask(old)
    return folder


def run(*, bind: str, web_workers: int, concurrency: int, no_worker: bool) -> int:
    folder = prepare(bind)
    import django
    from django.core.management import call_command

    django.setup()
    say(f"Data folder: {folder}")
    say("Applying database migrations")
    call_command("migrate", interactive=False, verbosity=1)
    call_command("engram_bootstrap")
    sys.stdout.flush()  # the first-run credentials reach a log file before the children write
    say("Loading the embedding model")
    from lib.embedder import get_embedder

    try:
        get_embedder().embed_one("warm up")
    except Exception as exc:  # the message names what is missing; the trace helps nobody
        say(f"The embedding model could not be loaded: {type(exc).__name__}: {exc}")
        return 1
    say(f"Starting Engram on {os.environ['SITE_URL']}/ (web, worker, beat)")
    call_command(
        "engram_run",
        bind=bind,
        web_workers=web_workers,
        concurrency=concurrency,
        no_worker=no_worker,
    )
    return 0
