"""How far the integer embedder (MODEL_ID) lies from the shipped float graph on this CPU.

Prints the CPU's vector extensions, the first components of "hello world" on both paths, and the
cosine between the two paths over the first 500 cursor-rules bullets (../shared/eval-data).
Run on machines of different CPU families to see how much vectors differ between them.

    .venv/bin/python bench/embedder_cpu.py
"""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path

import numpy as np
import onnxruntime as ort
from tokenizers import Tokenizer

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from lib.embedder import MAX_TOKENS, Embedder, _resolve  # noqa: E402

BULLETS = ROOT.parent / "shared" / "eval-data" / "cursorrules" / "rules_bullets.jsonl"


def main() -> None:
    flags = sorted(set(re.findall(r"\b(avx\w*|\w*vnni\w*)\b", Path("/proc/cpuinfo").read_text())))
    print("CPU flags:", " ".join(flags) or "none")
    embedder = Embedder()
    model, tokenizer_path = _resolve(None, None)
    tokenizer = Tokenizer.from_file(str(tokenizer_path))
    tokenizer.no_padding()
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    options = ort.SessionOptions()
    options.intra_op_num_threads = 1
    session = ort.InferenceSession(
        str(model), sess_options=options, providers=["CPUExecutionProvider"]
    )
    names = {item.name for item in session.get_inputs()}

    def float_vector(text: str) -> np.ndarray:
        ids = np.array([tokenizer.encode(text).ids], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": np.ones_like(ids)}
        if "token_type_ids" in names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        pooled = session.run(None, feeds)[0][0].mean(axis=0)
        return pooled / np.linalg.norm(pooled)

    if not BULLETS.is_file():
        print(f"eval data not found at {BULLETS}; skipped.")
        return
    bullets = [json.loads(line)["text"] for line in BULLETS.open()][:500]
    texts = ["hello world", *bullets]
    cosines = np.array([float(embedder.embed_one(t) @ float_vector(t)) for t in texts])
    print("hello world, integer path:", np.round(embedder.embed_one("hello world")[:4], 4))
    print("hello world, float graph: ", np.round(float_vector("hello world")[:4], 4))
    print(
        f"cosine integer vs float over {len(texts)} texts: mean {cosines.mean():.4f} "
        f"p5 {np.percentile(cosines, 5):.4f} min {cosines.min():.4f} (hello world {cosines[0]:.4f})"
    )


if __name__ == "__main__":
    main()
