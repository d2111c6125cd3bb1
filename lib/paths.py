"""Where Engram keeps its data: `ENGRAM_DATA_DIR`, else a per-user data folder.

No Django: the `engram` command needs the folder before settings load (it writes the secret key
there on the first run), and settings take it from here, so both always agree.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from platformdirs import user_data_path

APP_NAME = "engram"
DATA_DIR_ENV = "ENGRAM_DATA_DIR"
SECRET_KEY_FILE = "secret_key"


def data_dir(environ: Mapping[str, str] | None = None) -> Path:
    """The data folder, absolute: `ENGRAM_DATA_DIR` (`~` expanded, relative to the current
    directory), else the platform's per-user data folder (`~/.local/share/engram` on Linux,
    `~/Library/Application Support/engram` on macOS, `%LOCALAPPDATA%\\engram` on Windows)."""
    env = os.environ if environ is None else environ
    raw = (env.get(DATA_DIR_ENV) or "").strip()
    if raw:
        return Path(raw).expanduser().absolute()
    return user_data_path(APP_NAME, appauthor=False)
