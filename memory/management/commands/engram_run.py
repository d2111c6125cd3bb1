"""Run web, worker and beat together in the foreground (the embedded default)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from typing import Any

from django.conf import settings
from django.core.management.base import BaseCommand, CommandParser


class Command(BaseCommand):
    help = "Start the web server, a Celery worker and Celery beat; Ctrl-C stops all three."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("--bind", default=os.environ.get("ENGRAM_BIND", "127.0.0.1:8000"))
        parser.add_argument("--web-workers", type=int, default=2)
        parser.add_argument("--concurrency", type=int, default=1, help="Celery worker processes.")
        parser.add_argument("--no-worker", action="store_true", help="Web only.")

    def handle(self, *args: Any, **options: Any) -> None:
        python = sys.executable
        root = str(settings.BASE_DIR)
        commands = {
            "web": [
                python,
                "-m",
                "gunicorn",
                "engramsite.wsgi:application",
                "--bind",
                options["bind"],
                "--workers",
                str(options["web_workers"]),
                "--access-logfile",
                "-",
                "--timeout",
                "60",
            ],
        }
        if not options["no_worker"]:
            commands["worker"] = [
                python,
                "-m",
                "celery",
                "-A",
                "engramsite",
                "worker",
                "--loglevel",
                "INFO",
                "--concurrency",
                str(options["concurrency"]),
                "--hostname",
                "engram@%h",
            ]
            commands["beat"] = [
                python,
                "-m",
                "celery",
                "-A",
                "engramsite",
                "beat",
                "--loglevel",
                "INFO",
                "--schedule",
                settings.CELERY_BEAT_SCHEDULE_FILENAME,
            ]
        # The children find the same data folder however this one was found (ENGRAM_DATA_DIR
        # or the per-user default), and the server's own URL for what they print.
        env = {
            **os.environ,
            "ENGRAM_DATA_DIR": str(settings.DATA_DIR),
            "SITE_URL": os.environ.get("SITE_URL") or settings.SITE_URL,
        }
        procs: dict[str, subprocess.Popen[bytes]] = {}
        for name, cmd in commands.items():
            procs[name] = subprocess.Popen(cmd, cwd=root, env=env)
        self.stdout.write(
            f"Engram is running on http://{options['bind']}/ ({', '.join(procs)}). "
            "Press Ctrl-C to stop."
        )
        stopping = False

        def stop(*_: Any) -> None:
            nonlocal stopping
            stopping = True

        signal.signal(signal.SIGINT, stop)
        signal.signal(signal.SIGTERM, stop)
        exit_code = 0
        while not stopping:
            for name, proc in procs.items():
                if proc.poll() is not None:
                    self.stderr.write(f"{name} exited with code {proc.returncode}; stopping.")
                    exit_code = proc.returncode or 1
                    stopping = True
                    break
            time.sleep(0.5)
        for proc in procs.values():
            if proc.poll() is None:
                proc.terminate()
        deadline = time.monotonic() + 15
        for proc in procs.values():
            try:
                proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                proc.kill()
        if exit_code:
            sys.exit(exit_code)
