from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest
from django.db import connection, transaction

from memory.models import EMBEDDING_DIM, Engram
from memory.search import caches
from memory.search import dense as dense_leg
from memory.search import legs as search
from memory.search import lexical as lexical_leg
from tests.memory.helpers import embed, make_engram

pytestmark = [pytest.mark.django_db, pytest.mark.sqlite]

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)

STORE = {
    "A": "Use pytest fixtures to set up the database in tests",
    "B": "Run the whole test suite before pushing a branch",
    "C": "Database backups run nightly and are kept for thirty days",
    "D": "Keep React components small and typed with TypeScript",
    "E": "Never commit secrets or API keys to the repository",
}


@pytest.fixture
def store(owner: Any) -> dict[str, Engram]:
    return {
        key: make_engram(owner, statement=text, engram_id=f"ENG-{key}", now=NOW)
        for key, text in STORE.items()
    }


def names(hits: list[tuple[int, float]]) -> list[str]:
    by_pk = dict(Engram.objects.values_list("pk", "engram_id"))
    return [by_pk[pk].removeprefix("ENG-") for pk, _ in hits]


def unit(seed: int) -> np.ndarray:
    vector = np.random.default_rng(seed).standard_normal(EMBEDDING_DIM).astype(np.float32)
    return vector / np.linalg.norm(vector)


def test_lexical_ranks_rows_matching_more_and_rarer_terms_first(owner: Any, store: Any) -> None:
    assert names(search.lexical(owner, "pytest database fixtures")) == ["A", "C"]
    assert names(search.lexical(owner, "database backup schedule")) == ["C", "A"]
    assert names(search.lexical(owner, "react component typing")) == ["D"]


def test_lexical_scores_are_positive_and_descending(owner: Any, store: Any) -> None:
    hits = search.lexical(owner, "pytest database fixtures")
    scores = [score for _, score in hits]
    assert all(score > 0 for score in scores)
    assert scores == sorted(scores, reverse=True)


def test_lexical_matches_stems_and_ignores_stop_words(owner: Any, store: Any) -> None:
    assert names(search.lexical(owner, "committing")) == ["E"]
    assert search.lexical(owner, "the and of to") == []


@pytest.mark.parametrize(
    "text",
    [
        'secrets" OR "',
        "NOT secrets",
        "secrets AND -keys*",
        "(secrets",
        "secrets:keys ^commit",
        "NEAR(secrets keys)",
        "'; DROP TABLE memory_engram; --",
        "\\ secrets \\\\",
        "secrets \x00 % _",
        "\"\"\"'''",
        "***",
    ],
)
def test_lexical_accepts_any_user_text(owner: Any, store: Any, text: str) -> None:
    hits = search.lexical(owner, text)
    if any(word in text for word in ("secrets", "keys", "commit")):
        assert names(hits)[0] == "E"
    assert Engram.objects.count() == len(STORE)


def test_lexical_filters_owner_scope_status_and_validity(
    owner: Any, other_owner: Any, store: Any
) -> None:
    make_engram(other_owner, statement=STORE["A"], engram_id="ENG-OTHER", now=NOW)
    make_engram(
        owner,
        statement="pytest fixtures in the api project",
        scope="project:api",
        engram_id="ENG-API",
        now=NOW,
    )
    make_engram(
        owner, statement="pytest fixtures retired", status="retired", engram_id="ENG-RET", now=NOW
    )
    make_engram(
        owner,
        statement="pytest fixtures that expired",
        valid_until=NOW - timedelta(days=1),
        engram_id="ENG-OLD",
        now=NOW,
    )
    everything = names(search.lexical(owner, "pytest fixtures"))
    assert set(everything) == {"A", "API", "RET", "OLD"}
    assert set(names(search.lexical(owner, "pytest fixtures", scopes=["global"]))) == {
        "A",
        "RET",
        "OLD",
    }
    assert set(names(search.lexical(owner, "pytest fixtures", scope_patterns=["project:*"]))) == {
        "API"
    }
    live = search.lexical(owner, "pytest fixtures", statuses=["active"], valid_at=NOW)
    assert set(names(live)) == {"A", "API"}
    assert search.lexical(owner, "pytest fixtures", scopes=[]) == []


def test_dense_ranks_by_cosine(owner: Any, store: Any) -> None:
    hits = search.dense(owner, embed("pytest database fixtures"), limit=3)
    assert names(hits) == ["A", "B", "C"]
    expected = float(embed("pytest database fixtures") @ embed(STORE["A"]))
    assert hits[0][1] == pytest.approx(expected, abs=1e-4)
    assert [c for _, c in hits] == sorted((c for _, c in hits), reverse=True)


@pytest.mark.postgres_only
def test_dense_search_settings_hold_for_that_search_only(owner: Any, store: Any) -> None:
    def settings() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute(
                "SELECT current_setting('hnsw.ef_search'), current_setting('hnsw.iterative_scan')"
            )
            return list(cursor.fetchone())

    search.dense(owner, embed("warm up the extension"), limit=3)
    defaults = settings()
    assert search.dense(owner, embed("pytest database fixtures"), limit=50)
    assert settings() == defaults
    with transaction.atomic():
        assert search.dense(owner, embed("pytest database fixtures"), limit=50)
        assert settings() == defaults
    assert defaults[1] == "off"


@pytest.mark.postgres_only
def test_a_dense_search_is_one_round_trip_even_when_the_scope_is_empty(
    owner: Any, store: Any
) -> None:
    from django.test.utils import CaptureQueriesContext

    for scopes, found in ((["global"], len(store)), (["project:nothing-here"], 0)):
        with CaptureQueriesContext(connection) as queries:
            hits = search.dense(owner, embed("pytest database fixtures"), scopes=scopes, limit=50)
        assert len(hits) == found
        assert len(queries.captured_queries) == 1


def test_dense_filters_owner_scope_status_validity_and_exclusions(
    owner: Any, other_owner: Any, store: Any
) -> None:
    make_engram(other_owner, statement=STORE["A"], engram_id="ENG-OTHER", now=NOW)
    make_engram(
        owner, statement=STORE["A"] + " (api)", scope="project:api", engram_id="ENG-API", now=NOW
    )
    make_engram(
        owner,
        statement=STORE["A"] + " (later)",
        valid_from=NOW + timedelta(days=1),
        engram_id="ENG-LATER",
        now=NOW,
    )
    query = embed(STORE["A"])
    assert "OTHER" not in names(search.dense(owner, query, limit=20))
    assert names(search.dense(owner, query, limit=2, scopes=["project:api"])) == ["API"]
    assert "LATER" not in names(search.dense(owner, query, limit=20, valid_at=NOW))
    assert "LATER" in names(search.dense(owner, query, limit=20, valid_at=NOW + timedelta(days=2)))
    excluded = search.dense(
        owner, query, limit=1, exclude_pks=[store["A"].pk], scopes=["global"], valid_at=NOW
    )
    assert names(excluded) == ["B"]
    assert search.dense(owner, query, statuses=[]) == []


def test_a_small_scope_inside_a_large_store_still_gets_k_results(owner: Any) -> None:
    crowd = unit(1)
    rng = np.random.default_rng(7)
    rows = []
    for i in range(3000):
        # The big scope crowds the query's neighbourhood; the small one lies far from it.
        vector = crowd + 0.3 * rng.standard_normal(EMBEDDING_DIM).astype(np.float32)
        rows.append(
            Engram(
                owner=owner,
                engram_id=f"ENG-BIG-{i}",
                statement=f"big {i}",
                scope="project:big",
                status="active",
                content_hash=f"big{i}",
                embedding=vector / np.linalg.norm(vector),
            )
        )
    small = []
    for i in range(15):
        vector = -crowd + 0.5 * unit(100 + i)
        small.append(
            Engram(
                owner=owner,
                engram_id=f"ENG-SMALL-{i}",
                statement=f"small {i}",
                scope="project:small",
                status="active",
                content_hash=f"small{i}",
                embedding=vector / np.linalg.norm(vector),
            )
        )
    Engram.objects.bulk_create(rows + small, batch_size=500)

    hits = search.dense(owner, crowd, scopes=["project:small"], limit=10)

    assert len(hits) == 10
    vectors = {e.pk: e.embedding for e in Engram.objects.filter(scope="project:small")}
    exact = sorted(vectors, key=lambda pk: -float(np.dot(vectors[pk], crowd)))[:10]
    assert [pk for pk, _ in hits] == exact


def _crowded_store(owner: Any, big: int, small: int) -> np.ndarray:
    crowd = unit(1)
    rng = np.random.default_rng(11)
    rows = []
    for scope, count, centre, spread in (
        ("project:big", big, crowd, 0.3),
        ("project:small", small, -crowd, 0.5),
    ):
        for i in range(count):
            vector = centre + spread * rng.standard_normal(EMBEDDING_DIM).astype(np.float32)
            rows.append(
                Engram(
                    owner=owner,
                    engram_id=f"ENG-{scope[8:]}-{i}",
                    statement=f"{scope} {i}",
                    scope=scope,
                    status="active",
                    content_hash=f"{scope}{i}",
                    embedding=vector / np.linalg.norm(vector),
                )
            )
    Engram.objects.bulk_create(rows, batch_size=500)
    return crowd


def _brute_force(scope: str, query: np.ndarray, k: int) -> list[int]:
    vectors = {e.pk: e.embedding for e in Engram.objects.filter(scope=scope)}
    return sorted(vectors, key=lambda pk: -float(np.dot(vectors[pk], query)))[:k]


def _ran_hnsw(plan: str) -> bool:
    line = next(ln for ln in plan.splitlines() if "engram_embedding_hnsw" in ln)
    return "never executed" not in line


@pytest.mark.postgres_only
def test_the_dense_leg_chooses_exact_or_hnsw_by_scope_size_not_by_the_planner(
    owner: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    crowd = _crowded_store(owner, big=400, small=15)
    monkeypatch.setattr(dense_leg, "EXACT_SCOPE_ROWS", 100)

    big_plan = search.dense_plan(owner, crowd, limit=10, scopes=["project:big"])
    small_plan = search.dense_plan(owner, crowd, limit=10, scopes=["project:small"])
    assert _ran_hnsw(big_plan) and "Seq Scan" not in big_plan
    assert not _ran_hnsw(small_plan) and "Seq Scan" not in small_plan

    # HNSW is approximate (and random vectors are its hardest case; its graph is built with
    # random levels, so one probe's overlap varies run to run): the row whose own vector is the
    # query comes first, and over a few probes most of the true ten are found.
    found = []
    for number in (7, 42, 99, 250):
        probe = Engram.objects.get(engram_id=f"ENG-big-{number}")
        big = [
            pk for pk, _ in search.dense(owner, probe.embedding, scopes=["project:big"], limit=10)
        ]
        assert big[0] == probe.pk
        found.append(len(set(big) & set(_brute_force("project:big", probe.embedding, 10))))
    assert sum(found) / len(found) >= 6, found
    small = search.dense(owner, crowd, scopes=["project:small"], limit=10)
    assert [pk for pk, _ in small] == _brute_force("project:small", crowd, 10)

    # A scope just over the threshold, far from the crowd: HNSW finds few of its rows among
    # the crowd's, and the exact query makes up the k.
    monkeypatch.setattr(dense_leg, "EXACT_SCOPE_ROWS", 10)
    assert _ran_hnsw(search.dense_plan(owner, crowd, limit=10, scopes=["project:small"]))
    small = search.dense(owner, crowd, scopes=["project:small"], limit=10)
    assert [pk for pk, _ in small] == _brute_force("project:small", crowd, 10)


def test_dense_index_follows_writes_updates_and_deletes(owner: Any, store: Any) -> None:
    query = embed("pytest database fixtures")
    assert names(search.dense(owner, query, limit=1)) == ["A"]
    Engram.objects.filter(pk=store["A"].pk).update(status="retired")
    assert names(search.dense(owner, query, limit=1, statuses=["active"])) == ["B"]
    Engram.objects.filter(pk=store["B"].pk).update(embedding=-query)
    assert names(search.dense(owner, query, limit=1, statuses=["active"])) == ["C"]
    store["C"].delete()
    assert "C" not in names(search.dense(owner, query, limit=10))
    make_engram(owner, statement="pytest database fixtures", engram_id="ENG-NEW", now=NOW)
    assert names(search.dense(owner, query, limit=1)) == ["NEW"]


def test_dense_index_is_not_fooled_by_a_rolled_back_write(owner: Any, store: Any) -> None:
    query = embed("gardening tips for tomatoes")

    def write_then_roll_back() -> None:
        with transaction.atomic():
            make_engram(
                owner, statement="gardening tips for tomatoes", engram_id="ENG-GHOST", now=NOW
            )
            assert names(search.dense(owner, query, limit=1)) == ["GHOST"]
            raise RuntimeError("roll back")

    with pytest.raises(RuntimeError):
        write_then_roll_back()
    make_engram(owner, statement="how to grow tomatoes in pots", engram_id="ENG-REAL", now=NOW)
    assert names(search.dense(owner, query, limit=1)) == ["REAL"]


@pytest.mark.skipif(connection.vendor != "sqlite", reason="SQLite triggers")
def test_sqlite_index_repairs_triggers_a_table_rebuild_dropped(owner: Any, store: Any) -> None:
    with connection.cursor() as cursor:
        cursor.execute("DROP TRIGGER memory_engram_search_ai")
    make_engram(
        owner, statement="Pin dependency versions in lock files", engram_id="ENG-PIN", now=NOW
    )
    assert search.sqlite_index_ensure(connection, force=True) is True
    assert names(search.lexical(owner, "dependency lock")) == ["PIN"]
    assert names(search.dense(owner, embed("dependency lock files"), limit=1)) == ["PIN"]
    assert search.sqlite_index_ensure(connection, force=True) is False


def test_fts5_query_quotes_every_token() -> None:
    assert search.fts5_query('use "quotes" OR NOT the') == '"use" OR """quotes"""'
    assert search.fts5_query("NEAR(a* b:c") == '"NEAR(a*" OR "b:c"'
    assert search.fts5_query("the of and") == ""


def test_nearest_keeps_its_signature_and_skips_retired(owner: Any, store: Any) -> None:
    Engram.objects.filter(pk=store["A"].pk).update(status="retired")
    hits = search.nearest(owner=owner, vector=embed(STORE["A"]), limit=2)
    assert [e.engram_id for e, _ in hits] == ["ENG-B", "ENG-C"]
    assert isinstance(hits[0][0], Engram)
    with_retired = search.nearest(
        owner=owner, vector=embed(STORE["A"]), limit=1, include_retired=True
    )
    assert with_retired[0][0].engram_id == "ENG-A"
    assert with_retired[0][1] == pytest.approx(1.0, abs=1e-4)
    excluded = search.nearest(
        owner=owner, vector=embed(STORE["A"]), limit=1, exclude_pks=[store["B"].pk], scope="global"
    )
    assert [e.engram_id for e, _ in excluded] == ["ENG-C"]
    assert search.nearest(owner=owner, vector=embed(STORE["A"]), scope="project:none") == []


def test_vectors_of_reads_stored_embeddings(owner: Any, store: Any) -> None:
    vectors = search.vectors_of([store["A"].pk, store["D"].pk])
    assert set(vectors) == {store["A"].pk, store["D"].pk}
    assert vectors[store["A"].pk].dtype == np.float32
    assert np.allclose(vectors[store["A"].pk], embed(STORE["A"]), atol=1e-6)


def test_engram_reembed_updates_only_stale_vectors(owner: Any, store: Any) -> None:
    from io import StringIO

    from django.core.management import call_command

    from lib.embedder import MODEL_ID

    Engram.objects.filter(pk=store["A"].pk).update(
        embedding=-embed(STORE["A"]), embedding_model="old-model"
    )
    Engram.objects.filter(pk=store["B"].pk).update(embedding=None, embedding_model="")
    assert names(search.dense(owner, embed(STORE["A"]), limit=1)) != ["A"]
    out = StringIO()

    call_command("engram_reembed", "--quiet", stdout=out)

    assert "Re-embedded 2 engram(s)" in out.getvalue()
    assert set(Engram.objects.values_list("embedding_model", flat=True)) == {MODEL_ID}
    assert names(search.dense(owner, embed(STORE["A"]), limit=1)) == ["A"]
    again = StringIO()
    call_command("engram_reembed", "--quiet", stdout=again)
    assert "Nothing to re-embed" in again.getvalue()


@pytest.mark.postgres_only
def test_lexical_on_a_large_store_uses_planner_statistics_with_the_same_ranking(
    owner: Any,
) -> None:
    topics = ["fixtures", "migrations", "logging", "caching", "typing", "linting"]
    rows = [
        Engram(
            owner=owner,
            engram_id=f"ENG-PY-{i}",
            statement=f"python {topics[i % len(topics)]} rule {i}",
            search_text=f"python {topics[i % len(topics)]} rule {i}",
            status="active",
            content_hash=f"py{i}",
        )
        for i in range(600)
    ]
    Engram.objects.bulk_create(rows)
    with connection.cursor() as cursor:
        cursor.execute("ANALYZE memory_engram")
    query = "python fixtures and caching rule 7"

    exact = search.lexical(owner, query, limit=20)
    key = lexical_leg._n_key(connection, search.make_filter(owner))
    caches.n_rows[key] = (600.0, float("inf"))
    estimated = search.lexical(owner, query, limit=20)

    assert [pk for pk, _ in estimated] == [pk for pk, _ in exact]
    assert [s for _, s in estimated] == pytest.approx([s for _, s in exact], rel=0.05)


def test_nearest_many_gives_each_vector_its_scopes_exact_neighbours(owner: Any) -> None:
    # 120 rows in one scope: one query vector goes through the HNSW index (more than 40 rows
    # per vector), four are compared exactly against every row. The exact path gives the exact
    # top 5; HNSW is approximate (random vectors are its hardest case: how many of the exact
    # runners-up it finds varies with the graph's random levels, 3 to 5 of 5 in CI runs), so it
    # must find the row the query copies first and five rows of the scope.
    rows = [
        Engram(
            owner=owner,
            engram_id=f"ENG-N{i}",
            statement=f"row {i}",
            scope="project:n" if i < 120 else "project:other",
            status="active",
            content_hash=f"n{i}",
            embedding=unit(500 + i),
        )
        for i in range(140)
    ]
    Engram.objects.bulk_create(rows)
    stored = search.vectors_of(Engram.objects.values_list("pk", flat=True))
    vectors = {pk: np.asarray(v, dtype=np.float64) for pk, v in stored.items()}
    scoped = set(Engram.objects.filter(scope="project:n").values_list("pk", flat=True))
    queries = [unit(500 + 7)] + [unit(900 + j) for j in range(1, 4)]

    def exact(query: np.ndarray) -> list[str]:
        best = sorted(scoped, key=lambda pk: (-float(vectors[pk] @ query), pk))[:5]
        by_pk = Engram.objects.in_bulk(best)
        return [by_pk[pk].engram_id for pk in best]

    alone = search.nearest_many(owner=owner, vectors=queries[:1], scopes=["project:n"], limit=5)
    together = search.nearest_many(owner=owner, vectors=queries, scopes=["project:n"] * 4, limit=5)

    found = [e.engram_id for e, _ in alone[0]]
    assert found[0] == exact(queries[0])[0] == "ENG-N7"
    assert len(set(found)) == 5
    in_scope = set(Engram.objects.filter(scope="project:n").values_list("engram_id", flat=True))
    assert set(found) <= in_scope
    for query, hits in zip(queries, together, strict=True):
        assert [e.engram_id for e, _ in hits] == exact(query)
        cosines = [cosine for _, cosine in hits]
        assert cosines == sorted(cosines, reverse=True)
