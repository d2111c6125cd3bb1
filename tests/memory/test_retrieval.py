from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import numpy as np
import pytest

from memory.maths import activation, coaccess
from memory.maths.ranking import (
    HEADER_TOKENS,
    MAX_FUSED,
    RECENT_BONUS,
    RENDER_MAX_CHARS,
    line_tokens,
    prior_tiebreak,
)
from memory.models import ActivityDay, Association, Engram, Injection
from memory.services.retrieval import inject, recall, visible_scopes
from tests.memory.helpers import embed, link, make_engram, make_session

pytestmark = pytest.mark.django_db

NOW = datetime(2026, 3, 2, 12, 0, tzinfo=UTC)
BASE = 0.5 + 0.5 * 0.7  # activation prior of a fresh engram (RS 0.7)
RECENT = 1 + RECENT_BONUS  # the lead of an engram stated within the last day

STORE = {
    "A": "Use pytest fixtures to set up the database in tests",
    "B": "Run the whole test suite before pushing a branch",
    "C": "Database backups run nightly and are kept for thirty days",
    "D": "Keep React components small and typed with TypeScript",
    "E": "Never commit secrets or API keys to the repository",
}
PIN = "Pin exact dependency versions in the lock file"
REVIEW = "Review dependency updates before merging them"
DEPS_PROMPT = "dependency versions lock file"
LOGGING_PROMPT = "How should I set up logging in production?"
UNRELATED_PROMPT = "What is a good recipe for banana bread with walnuts?"
OLD_INDENT = "Indent Python code with tabs"
NEW_INDENT = "Spaces, not tabs, for indentation in Python"
INDENT_PROMPT = "indent Python code with tabs"


def mk(owner: Any, key: str, statement: str, **overrides: Any) -> Engram:
    return make_engram(owner, statement=statement, engram_id=f"ENG-{key}", now=NOW, **overrides)


@pytest.fixture
def store(owner: Any) -> dict[str, Engram]:
    return {key: mk(owner, key, text) for key, text in STORE.items()}


@pytest.fixture
def deps(owner: Any) -> dict[str, Engram]:
    return {"P": mk(owner, "P", PIN), "Q": mk(owner, "Q", REVIEW)}


@pytest.fixture
def logging_store(owner: Any) -> dict[str, Engram]:
    return {
        "PRINT": mk(
            owner,
            "PRINT",
            "Never use print statements for logging in production code",
            polarity="dont",
        ),
        "MODULE": mk(
            owner, "MODULE", "Use the logging module with structured fields for production logs"
        ),
        "FADING": mk(
            owner,
            "FADING",
            "Log request ids so production errors can be traced",
            retrieval_strength=0.4,
        ),
        "DORMANT": mk(
            owner, "DORMANT", "Rotate production log files daily", retrieval_strength=0.2
        ),
        "CAND": mk(
            owner, "CAND", "Send production logs to the central collector", status="candidate"
        ),
        "RET": mk(owner, "RET", "Logging to stdout is enough in production", status="retired"),
        "DORM_STATUS": mk(
            owner, "DORM_STATUS", "Logging levels are set per environment", status="dormant"
        ),
    }


def snapshot() -> list[dict[str, Any]]:
    return list(
        Engram.objects.order_by("pk").values(
            *(f.attname for f in Engram._meta.concrete_fields if f.name != "embedding")
        )
    )


def ids(items: list[dict[str, Any]]) -> list[str]:
    return [item["id"].removeprefix("ENG-") for item in items]


# --- recall ---------------------------------------------------------------------------------


@pytest.mark.sqlite
def test_recall_fuses_both_legs_with_reciprocal_ranks(owner: Any, store: Any) -> None:
    results = recall(owner=owner, query="pytest database fixtures", now=NOW)

    # Lexical [A, C]; dense [A, B, C, E, D]: C (2nd and 3rd) beats B (2nd in one leg only).
    assert [r.id for r in results] == ["ENG-A", "ENG-C", "ENG-B", "ENG-E", "ENG-D"]
    expected_fused = [2 / 61, 1 / 62 + 1 / 63, 1 / 62, 1 / 64, 1 / 65]
    assert [r.fused for r in results] == pytest.approx(expected_fused)
    # A and C match lexically (evidence 1); B, E and D only by cosines under the dense floor
    # (evidence 0), so they keep their fused order at score 0. All were stated today with equal
    # priors: the score is the relevance with the recent lead.
    assert [r.score for r in results] == pytest.approx(
        [RECENT, expected_fused[1] / MAX_FUSED * RECENT, 0, 0, 0]
    )
    first = results[0].components
    assert first["lexical_rank"] == 1
    assert first["dense_rank"] == 1
    assert first["lexical_score"] > 0
    # 0.85 on the CPUs measured; the exact value follows the CPU's integer kernels.
    cosine = float(embed("pytest database fixtures") @ embed(STORE["A"]))
    assert first["cosine"] == pytest.approx(cosine, abs=1e-5)
    assert first["cosine"] > 0.8
    assert first["rs_eff"] == pytest.approx(0.7)
    assert results[2].lexical_rank is None
    assert results[2].lexical_score is None


@pytest.mark.sqlite
def test_recall_modes_use_one_leg(owner: Any, store: Any) -> None:
    lexical = recall(owner=owner, query="pytest database fixtures", mode="lexical", now=NOW)
    dense = recall(owner=owner, query="pytest database fixtures", mode="dense", now=NOW, limit=3)
    assert [r.id for r in lexical] == ["ENG-A", "ENG-C"]
    assert all(r.dense_rank is None for r in lexical)
    assert lexical[0].score == pytest.approx(RECENT)
    assert [r.id for r in dense] == ["ENG-A", "ENG-B", "ENG-C"]
    assert all(r.lexical_rank is None for r in dense)
    with pytest.raises(ValueError, match="mode"):
        recall(owner=owner, query="x", mode="fuzzy")


@pytest.mark.sqlite
def test_recall_breaks_ties_by_strength_not_insertion_order(owner: Any) -> None:
    old = mk(
        owner, "OLD", "Indent Python code with four spaces", rs_anchor_at=NOW - timedelta(days=30)
    )
    ActivityDay.objects.bulk_create(
        ActivityDay(owner=owner, scope="global", day=(NOW - timedelta(days=d)).date())
        for d in range(1, 11)
    )
    # One statement is live once per scope (uniq_live_engram_hash): the tie is a project's copy
    # of a global lesson, both visible from the project.
    new = make_engram(
        owner, statement=old.statement, engram_id="ENG-NEW", scope="project:api", now=NOW
    )

    results = recall(owner=owner, query="indent python code", scope="project:api", now=NOW)

    assert [r.id for r in results] == ["ENG-NEW", "ENG-OLD"]
    assert results[0].fused == pytest.approx(results[1].fused)
    assert results[1].rs_eff == pytest.approx(activation.effective_rs(0.7, 10, 5, 0))
    assert new.pk > old.pk


@pytest.mark.sqlite
def test_recall_is_read_only_without_a_session(owner: Any, store: Any) -> None:
    before = snapshot()
    recall(owner=owner, query="pytest database fixtures", now=NOW)
    assert snapshot() == before
    assert not Injection.objects.exists()


@pytest.mark.sqlite
def test_recall_with_a_session_counts_as_access(owner: Any, store: Any) -> None:
    session = make_session(owner)
    later = NOW + timedelta(hours=1)
    results = recall(
        owner=owner, query="pytest database fixtures", limit=2, session=session, now=later
    )
    rows = list(Injection.objects.filter(session=session).order_by("rank"))
    assert [(r.engram.engram_id, r.bucket, r.rank) for r in rows] == [
        ("ENG-A", "recall", 1),
        ("ENG-C", "recall", 2),
    ]
    assert rows[0].score == pytest.approx(results[0].score)
    a = Engram.objects.get(engram_id="ENG-A")
    assert (a.frequency, a.injections, a.surfaced) == (1, 0, 0)
    assert a.last_accessed == later
    assert a.rs_anchor_at == later
    assert a.retrieval_strength == pytest.approx(0.7)
    assert Engram.objects.get(engram_id="ENG-B").frequency == 0


@pytest.mark.sqlite
def test_recall_respects_scopes_tokens_and_validity(owner: Any, other_owner: Any) -> None:
    mk(owner, "G", "Write docstrings for public functions")
    mk(owner, "X", "Write docstrings in the api project", scope="project:x")
    mk(owner, "Y", "Write docstrings in the web project", scope="project:y")
    mk(
        owner,
        "EXP",
        "Write docstrings until the old style guide ends",
        valid_until=NOW - timedelta(days=1),
    )
    make_engram(other_owner, statement="Write docstrings everywhere", engram_id="ENG-BOB", now=NOW)
    query = "write docstrings"

    def found(**kwargs: Any) -> set[str]:
        return {
            r.id.removeprefix("ENG-") for r in recall(owner=owner, query=query, now=NOW, **kwargs)
        }

    assert found() == {"G", "X", "Y"}
    assert found(scope="project:x") == {"G", "X"}
    assert found(scopes=["project:y"]) == {"Y"}
    assert found(token_scopes=["project:*"]) == {"X", "Y"}
    assert found(scope="project:x", token_scopes=["project:x"]) == {"X"}
    assert found(scope="project:x", token_scopes=["global"]) == {"G"}


@pytest.mark.sqlite
def test_recall_pins_its_query_count(
    owner: Any, store: Any, django_assert_max_num_queries: Any
) -> None:
    session = make_session(owner)
    recall(owner=owner, query="warm up the embedder", now=NOW)
    with django_assert_max_num_queries(14):
        recall(owner=owner, query="pytest database fixtures", session=session, now=NOW)


# --- inject: scoring and buckets ------------------------------------------------------------


@pytest.mark.sqlite
def test_inject_scores_with_activation_feedback_emotion_and_consolidation(
    owner: Any, deps: Any
) -> None:
    result = inject(owner=owner, prompt=DEPS_PROMPT, now=NOW)
    # Both legs rank P first and Q second; both are lexical hits (relevance evidence 1).
    assert ids(result.directives) == ["P", "Q"]
    assert [item["score"] for item in result.directives] == pytest.approx(
        [RECENT, (61 / 62) * RECENT], abs=1e-6
    )

    Engram.objects.filter(pk=deps["Q"].pk).update(emotional_weight=10, consolidated=True)
    Engram.objects.filter(pk=deps["P"].pk).update(feedback_negative=3)
    result = inject(owner=owner, prompt=DEPS_PROMPT, now=NOW)
    # Q: f_emo 1.2, x1.1 consolidated (the best prior); P: net feedback -3 gives f_fb 0.7. The
    # prior breaks the near-tie only: P loses at most PRIOR_SPAN of its relevance.
    assert ids(result.directives) == ["Q", "P"]
    best = BASE * 1.2 * 1.1
    assert [item["score"] for item in result.directives] == pytest.approx(
        [(61 / 62) * RECENT, prior_tiebreak(BASE * 0.7, best) * RECENT], abs=1e-6
    )
    assert prior_tiebreak(BASE * 0.7, best) == pytest.approx(0.97, abs=1e-3)


@pytest.mark.sqlite
def test_inject_fills_constraints_directives_and_consider_by_band(
    owner: Any, logging_store: Any
) -> None:
    result = inject(owner=owner, prompt=LOGGING_PROMPT, now=NOW)

    assert ids(result.constraints) == ["PRINT"]
    assert ids(result.directives) == ["MODULE"]
    assert ids(result.consider) == ["FADING"]  # fading band: consider only
    assert result.spread == []
    # Dormant band, candidate, retired and dormant status are never injected.
    for absent in ("DORMANT", "CAND", "RET", "DORM_STATUS"):
        assert f"ENG-{absent}" not in result.rendered
    assert result.rendered.index("### Constraints") < result.rendered.index("### Directives")
    assert "- [ENG-PRINT] Never use print statements" in result.rendered
    assert result.tokens == -(-len(result.rendered) // 4)


@pytest.mark.sqlite
def test_inject_caps_main_buckets_at_ten_and_consider_at_five(owner: Any) -> None:
    topics = [
        "log levels", "log rotation", "request ids", "json logs", "error tracking", "audit trails",
        "log sampling", "sensitive fields", "log retention", "structured context", "timestamps",
        "correlation ids", "metrics from logs", "alerting on errors", "debug output", "log shipping",
    ]  # fmt: skip
    for i, topic in enumerate(topics):
        mk(owner, f"L{i:02d}", f"Production logging: take care of {topic} in every service")

    result = inject(owner=owner, prompt="production logging for services", now=NOW)

    assert len(result.constraints) + len(result.directives) == 10
    assert 1 <= len(result.consider) <= 5
    assert sum(item["tokens"] for item in result.consider) <= 200
    main_scores = [item["score"] for item in result.directives]
    assert min(main_scores) >= max(item["score"] for item in result.consider)


@pytest.mark.sqlite
def test_inject_keeps_within_the_token_budget(owner: Any, deps: Any) -> None:
    budget = HEADER_TOKENS + line_tokens("ENG-P", PIN)
    result = inject(owner=owner, prompt=DEPS_PROMPT, budget_tokens=budget, now=NOW)
    assert ids(result.directives) == ["P"]
    assert result.consider == []
    assert result.tokens <= budget

    roomy = inject(owner=owner, prompt=DEPS_PROMPT, budget_tokens=budget + 100, now=NOW)
    assert ids(roomy.directives) == ["P", "Q"]


@pytest.mark.sqlite
def test_inject_skips_near_duplicates(owner: Any, deps: Any) -> None:
    # One statement is live once per scope (uniq_live_engram_hash): the duplicate is a project's
    # copy of a global lesson, both visible from the project.
    mk(owner, "P2", PIN + ".", scope="project:api")
    result = inject(owner=owner, prompt=DEPS_PROMPT, scope="project:api", now=NOW)
    assert len({"P", "P2"} & set(ids(result.directives) + ids(result.consider))) == 1


@pytest.mark.sqlite
def test_inject_spreads_one_hop_along_associations(owner: Any, deps: Any) -> None:
    pager = mk(owner, "T", "Rotate the on-call pager every Monday")
    plants = mk(owner, "U", "Water the office plants on Fridays")
    tickets = mk(owner, "V", "Archive old tickets each quarter", retrieval_strength=0.2)
    labels = mk(owner, "W", "Label pull requests by team", scope="project:other")
    draft = mk(owner, "X", "Draft release notes on Thursdays", status="candidate")
    beyond = mk(owner, "Z", "Book the retro room a week ahead")
    p = deps["P"]
    link(p, pager, 0.6)
    link(p, plants, 0.8, type=Association.Type.CO_ACCESSED, updated_at=NOW - timedelta(days=100))
    for target in (tickets, labels, draft):
        link(p, target, 0.9)
    link(pager, beyond, 0.95)  # two hops away: never reached

    result = inject(owner=owner, prompt=DEPS_PROMPT, now=NOW)

    decayed = coaccess.decayed_coaccess_strength(0.8, 100)
    assert ids(result.spread) == ["T", "U"]
    assert [item["score"] for item in result.spread] == pytest.approx([0.6, decayed], abs=1e-6)
    assert "### Related" in result.rendered


@pytest.mark.sqlite
def test_inject_abstains_when_nothing_is_relevant(owner: Any, store: Any, deps: Any) -> None:
    session = make_session(owner)
    result = inject(owner=owner, prompt=UNRELATED_PROMPT, session=session, now=NOW)
    assert result.abstained
    assert result.rendered == ""
    assert result.tokens == 0
    assert result.ids == []
    assert not Injection.objects.exists()


@pytest.mark.sqlite
def test_the_rendered_block_stays_under_ten_thousand_characters(owner: Any) -> None:
    topics = [
        "cache", "queue", "schema", "router", "token", "worker", "bucket", "shard", "replica",
        "index", "cursor", "buffer", "socket", "thread", "lock", "batch", "stream", "widget",
        "pager", "ledger", "invoice", "sprite", "tensor", "kernel", "codec",
    ]  # fmt: skip
    for i, topic in enumerate(topics):
        mk(owner, f"LONG{i:02d}", f"Logging rule {i} about the {topic}: " + f"{topic} " * 800)

    result = inject(owner=owner, prompt="logging rule", budget_tokens=100_000, now=NOW)

    assert len(result.directives) == 10
    assert 0 < len(result.rendered) < RENDER_MAX_CHARS


# --- inject: visibility ---------------------------------------------------------------------


@pytest.mark.sqlite
def test_inject_sees_its_scope_and_global_only(owner: Any) -> None:
    mk(owner, "G", PIN)
    mk(owner, "X", "Pin dependency versions with uv lock in the api", scope="project:x")
    mk(owner, "Y", "Pin dependency versions with npm lock in the web app", scope="project:y")
    mk(owner, "EXP", "Pin dependency versions until the freeze ends", valid_until=NOW)
    mk(
        owner,
        "SOON",
        "Pin dependency versions once the freeze starts",
        valid_from=NOW + timedelta(days=1),
    )

    def seen(**kwargs: Any) -> set[str]:
        result = inject(owner=owner, prompt=DEPS_PROMPT, now=NOW, **kwargs)
        return {i.removeprefix("ENG-") for i in result.ids}

    assert seen(scope="project:x") == {"G", "X"}
    assert seen(scope="project:y") == {"G", "Y"}
    assert seen() == {"G"}
    assert seen(scope="project:x", token_scopes=["project:*"]) == {"X"}
    assert seen(scope="project:x", token_scopes=["*"]) == {"G", "X"}


def test_visible_scopes_combine_request_and_token() -> None:
    assert visible_scopes(scope="project:x") == (("project:x", "global"), None)
    assert visible_scopes(scope="global") == (("global",), None)
    assert visible_scopes(scope=None) == (None, None)
    assert visible_scopes(scope=None, token_scopes=["project:*"]) == (None, ("project:*",))
    assert visible_scopes(scope="project:x", token_scopes=["global"]) == (("global",), None)
    assert visible_scopes(scope=None, scopes=["a", "a"], token_scopes=["*"]) == (("a",), None)


# --- inject: recording and access -----------------------------------------------------------


@pytest.mark.sqlite
def test_inject_records_injections_and_applies_the_access_rule(
    owner: Any, logging_store: Any
) -> None:
    anchor = NOW - timedelta(days=10)
    Engram.objects.filter(engram_id="ENG-MODULE").update(rs_anchor_at=anchor)
    ActivityDay.objects.bulk_create(
        ActivityDay(owner=owner, scope="global", day=(NOW - timedelta(days=d)).date())
        for d in range(1, 5)
    )
    session = make_session(owner)

    result = inject(owner=owner, prompt=LOGGING_PROMPT, session=session, now=NOW)

    rows = {
        r.engram.engram_id: r
        for r in Injection.objects.filter(session=session).select_related("engram")
    }
    assert {eid: r.bucket for eid, r in rows.items()} == {
        "ENG-PRINT": "constraint",
        "ENG-MODULE": "directive",
        "ENG-FADING": "consider",
    }
    assert rows["ENG-MODULE"].score == pytest.approx(result.directives[0]["score"], abs=1e-6)
    assert rows["ENG-MODULE"].tokens == result.directives[0]["tokens"]
    assert rows["ENG-MODULE"].query == LOGGING_PROMPT
    module = Engram.objects.get(engram_id="ENG-MODULE")
    expected_rs = activation.effective_rs(0.7, 4, 5, 0)
    assert module.retrieval_strength == pytest.approx(expected_rs)  # re-anchored, no bump
    assert module.rs_anchor_at == NOW
    assert module.last_accessed == NOW
    assert (module.frequency, module.injections, module.surfaced) == (1, 1, 1)
    fading = Engram.objects.get(engram_id="ENG-FADING")
    assert (fading.frequency, fading.injections, fading.surfaced) == (1, 1, 0)
    assert fading.retrieval_strength == pytest.approx(0.4)
    untouched = Engram.objects.get(engram_id="ENG-DORMANT")
    assert (untouched.frequency, untouched.injections) == (0, 0)

    inject(owner=owner, prompt=LOGGING_PROMPT, session=session, now=NOW + timedelta(minutes=5))
    module.refresh_from_db()
    assert (module.frequency, module.injections, module.surfaced) == (2, 2, 2)
    assert module.retrieval_strength == pytest.approx(expected_rs)


@pytest.mark.sqlite
def test_inject_without_a_session_writes_nothing(owner: Any, logging_store: Any) -> None:
    before = snapshot()
    inject(owner=owner, prompt=LOGGING_PROMPT, now=NOW)
    assert snapshot() == before


@pytest.mark.sqlite
def test_inject_pins_its_query_count(
    owner: Any, deps: Any, django_assert_max_num_queries: Any
) -> None:
    link(deps["P"], mk(owner, "T", "Rotate the on-call pager every Monday"), 0.6)
    session = make_session(owner)
    inject(owner=owner, prompt="warm up the embedder", now=NOW)
    with django_assert_max_num_queries(16):
        result = inject(owner=owner, prompt=DEPS_PROMPT, session=session, now=NOW)
    assert ids(result.spread) == ["T"]


@pytest.mark.sqlite
def test_a_small_scope_inside_a_large_store_still_gets_k_results(owner: Any) -> None:
    rng = np.random.default_rng(11)
    crowd = [
        Engram(
            owner=owner,
            engram_id=f"ENG-BIG-{i}",
            statement=f"dependency versions lock file note {i}",
            search_text=f"dependency versions lock file note {i}",
            scope="project:big",
            status="active",
            content_hash=f"big{i}",
            embedding=rng.standard_normal(384).astype(np.float32),
            learned_at=NOW,
            rs_anchor_at=NOW,
        )
        for i in range(2500)
    ]
    Engram.objects.bulk_create(crowd, batch_size=500)
    for i in range(12):
        mk(
            owner,
            f"S{i:02d}",
            f"Small project rule {i}: pin versions of dependency {i}",
            scope="project:small",
        )

    results = recall(owner=owner, query=DEPS_PROMPT, scopes=["project:small"], limit=10, now=NOW)

    assert len(results) == 10
    assert all(r.engram.scope == "project:small" for r in results)


@pytest.mark.sqlite
def test_the_newest_variant_of_a_rule_ranks_above_the_one_it_replaced(owner: Any) -> None:
    # The old version has earned positive feedback (the better prior), but the newer value is
    # the rule now.
    old = mk(
        owner,
        "OLD",
        "Always start attribute names with 'q_'",
        learned_at=NOW - timedelta(days=2),
        updated_at=NOW - timedelta(days=2),
        feedback_positive=6,
    )
    new = mk(owner, "NEW", "Always start attribute names with 'j_'")
    mk(owner, "OTHER", "Always start variable names with 'z_'")

    results = recall(owner=owner, query="attribute names", now=NOW)
    by_id = {r.id: r for r in results}
    # Halved, the old version also falls below a weaker match that is not superseded.
    assert [r.id for r in results] == ["ENG-NEW", "ENG-OTHER", "ENG-OLD"]
    # The old one has the best prior (its feedback factor is 1.3), but the prior only breaks
    # ties (at most PRIOR_SPAN) and the new one was stated today (the recent lead): the new one
    # leads on its own score, and the old one keeps its score, halved. Both match lexically, so
    # relevance is linear in the fused score; the dense leg may order the two near-identical
    # statements either way on a given CPU's integer kernels, so the fused ratio scales it.
    old_prior = (0.5 + 0.5 * by_id["ENG-OLD"].rs_eff) * 1.3
    new_own = prior_tiebreak(BASE, old_prior) * RECENT
    fused_ratio = by_id["ENG-NEW"].fused / by_id["ENG-OLD"].fused
    assert fused_ratio == pytest.approx(1.0, abs=0.05)
    assert by_id["ENG-NEW"].score == pytest.approx(
        2 * new_own * fused_ratio * by_id["ENG-OLD"].score
    )
    assert new.updated_at > old.updated_at

    injected = inject(owner=owner, prompt="attribute names", now=NOW)
    assert injected.ids.index("ENG-NEW") < injected.ids.index("ENG-OLD")


@pytest.mark.sqlite
def test_variants_in_different_scopes_keep_their_own_order(owner: Any) -> None:
    mk(owner, "P", "Always start attribute names in classes with 'q_'", scope="project:p")
    mk(owner, "G", "Always start attribute names with 'j_'", updated_at=NOW + timedelta(hours=1))
    results = recall(owner=owner, query="attribute names in classes", scope="project:p", now=NOW)
    assert [r.id for r in results][:2] == ["ENG-P", "ENG-G"]


@pytest.mark.sqlite
def test_an_imported_lesson_on_trial_is_offered_to_consider_only(
    owner: Any, logging_store: Any
) -> None:
    trial = mk(
        owner,
        "TRIAL",
        "Never log full request bodies in production",
        status="candidate",
        polarity="dont",
        provisional_until=NOW + timedelta(days=20),
    )
    mk(
        owner,
        "EXPIRED",
        "Production logs should carry the deploy version",
        status="candidate",
        provisional_until=NOW - timedelta(days=1),
    )
    session = make_session(owner)

    result = inject(owner=owner, prompt=LOGGING_PROMPT, session=session, now=NOW)

    assert "TRIAL" in ids(result.consider)  # relevant enough for a constraint, but on trial
    assert "TRIAL" not in ids(result.constraints) + ids(result.directives)
    for absent in ("EXPIRED", "CAND"):  # trial over; waiting for review
        assert f"ENG-{absent}" not in result.rendered
    injection = Injection.objects.get(engram=trial)
    assert injection.bucket == Injection.Bucket.CONSIDER
    trial.refresh_from_db()
    assert (trial.injections, trial.surfaced) == (1, 0)


@pytest.mark.sqlite
def test_a_rule_stated_again_counts_as_the_newest_variant(owner: Any) -> None:
    from memory.services.engrams import engram_learn

    def say(statement: str, days: int) -> None:
        engram_learn(
            owner=owner, statement=statement, source="user", now=NOW + timedelta(days=days)
        )

    say("Always start attribute names with 'q_'", 0)
    say("Always start attribute names with 'j_'", 1)
    say("always start attribute names with 'q_'", 2)  # back to the first value

    results = recall(owner=owner, query="attribute names", now=NOW + timedelta(days=3))
    assert [r.engram.statement for r in results] == [
        "Always start attribute names with 'q_'",
        "Always start attribute names with 'j_'",
    ]


@pytest.mark.sqlite
def test_variants_without_match_evidence_still_come_newest_first(owner: Any) -> None:
    # The prompt shares no word with either version, so both score 0 and only their fused
    # ranks would order them.
    mk(owner, "OLD", "Always start attribute names with 'q_'", updated_at=NOW - timedelta(days=1))
    mk(owner, "NEW", "Always start attribute names with 'j_'")
    results = recall(owner=owner, query="LRU cache class with get and put methods", now=NOW)
    assert [r.id for r in results] == ["ENG-NEW", "ENG-OLD"]


@pytest.mark.sqlite
@pytest.mark.django_db
def test_the_raw_row_inject_reads_matches_the_model(owner: Any) -> None:
    """inject reads engrams with raw SQL for speed; every field must land where the model has it."""
    from django.utils import timezone

    from memory.services import retrieval

    engram = make_engram(owner, statement="Pin every dependency", scope="project:x")
    Engram.objects.filter(pk=engram.pk).update(
        consolidated=True,
        feedback_positive=3,
        feedback_negative=1,
        polarity="do",
        enforcement="reminder",
        provisional_until=timezone.now(),
    )
    engram.refresh_from_db()
    row = retrieval._candidate_rows([engram.pk])[engram.pk]
    for name in retrieval._ROW_NAMES:
        expected = engram.pk if name == "pk" else getattr(engram, name)
        assert getattr(row, name) == expected, name
    assert row.feedback_net == engram.feedback_net == 2


@pytest.mark.django_db
def test_recall_and_inject_score_an_engram_the_same(owner: Any) -> None:
    """One scoring path: an engram inject surfaces carries the score recall gives it."""
    rows = [
        make_engram(owner, statement=text)
        for text in (
            "Run database migrations before the test suite",
            "Use uv to install Python packages",
            "Prefer small pull requests",
        )
    ]
    prompt = "run the database migrations before tests"
    recalled = {r.id: r.score for r in recall(owner=owner, query=prompt, limit=10)}
    injected = inject(owner=owner, prompt=prompt)
    surfaced = injected.directives + injected.constraints + injected.consider
    assert surfaced, "the migrations rule is relevant and must be injected"
    for item in surfaced:
        assert item["score"] == pytest.approx(recalled[item["id"]], abs=1e-6), item
    assert rows[0].engram_id in {item["id"] for item in surfaced}


@pytest.mark.sqlite
def test_a_rule_contradicted_by_a_newer_one_ranks_below_it(owner: Any) -> None:
    # Worded apart (another variant key), the old rule matches the prompt better; only the
    # contradiction the write path filed between the two says the newer one replaced it.
    from memory.maths import textnorm
    from memory.models import ReviewItem

    old = mk(
        owner,
        "OLD",
        OLD_INDENT,
        learned_at=NOW - timedelta(days=3),
        updated_at=NOW - timedelta(days=3),
        feedback_positive=4,
    )
    new = mk(
        owner,
        "NEW",
        NEW_INDENT,
        learned_at=NOW - timedelta(days=2),
        updated_at=NOW - timedelta(days=2),
    )
    assert textnorm.variant_key(OLD_INDENT) != textnorm.variant_key(NEW_INDENT)

    def order() -> tuple[list[str], list[str]]:
        recalled = [r.id for r in recall(owner=owner, query=INDENT_PROMPT, now=NOW)]
        injected = inject(owner=owner, prompt=INDENT_PROMPT, now=NOW).ids
        return recalled[:2], [eid for eid in injected if eid in ("ENG-OLD", "ENG-NEW")]

    assert order() == (["ENG-OLD", "ENG-NEW"], ["ENG-OLD", "ENG-NEW"])

    item = ReviewItem.objects.create(
        owner=owner, kind=ReviewItem.Kind.CONTRADICTION, engram=new, other=old
    )
    assert order() == (["ENG-NEW", "ENG-OLD"], ["ENG-NEW", "ENG-OLD"])
    by_id = {r.id: r for r in recall(owner=owner, query=INDENT_PROMPT, now=NOW)}
    assert by_id["ENG-OLD"].score < by_id["ENG-NEW"].score / 2 + 1e-9

    # Someone decided both hold: the old rule keeps its own place again.
    item.state, item.decision = ReviewItem.State.DONE, "both_valid"
    item.save()
    assert order() == (["ENG-OLD", "ENG-NEW"], ["ENG-OLD", "ENG-NEW"])
