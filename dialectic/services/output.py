"""Consolidation stage 6: the output type of an accepted synthesis (none, rule, skill,
rule_with_skill), classified by the LLM or the regexes, refined by the LLM when unclear."""

from __future__ import annotations

import json
from typing import Any

from dialectic import maths
from dialectic.models import Synthesis, Thesis, Trace
from memory.services.llm import PRODUCER_HEURISTIC, PRODUCER_LLM, LlmUnavailable, llm_run

CLASSIFY_TASK = "dialectic_classify"
REFINE_TASK = "dialectic_refine_output"

# --- output type ----------------------------------------------------------------------------

CLASSIFY_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"imperative": {"type": "boolean"}, "procedural": {"type": "boolean"}},
    "required": ["imperative", "procedural"],
}
REFINE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "output_type": {"type": "string", "enum": list(maths.OUTPUT_TYPES)},
        "confidence": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": {"type": "string", "maxLength": 300},
    },
    "required": ["output_type", "confidence"],
}


def instruction_text(synthesis: Synthesis, thesis: Thesis) -> str:
    """The instruction as an artifact would carry it: the statement, its exception and the
    steps with a typical argument each (what K's length measures)."""
    from dialectic.services.publish import examples_of

    text = synthesis.statement
    if synthesis.condition:
        text += f" Except when {synthesis.condition}."
    examples = examples_of(list(Trace.objects.filter(cluster_id=thesis.cluster_id)[:200]))
    steps = [
        f"{n}. {tool}" + (f" (e.g. `{examples[tool]}`)" if examples.get(tool) else "")
        for n, tool in enumerate(dict.fromkeys(thesis.expected_sequence), 1)
    ]
    return text + (" Steps: " + " ".join(steps) if steps else "")


def output_decide(*, synthesis: Synthesis, thesis: Thesis) -> maths.OutputDecision:
    """none / rule / skill / rule_with_skill from the characteristics (the LLM classifies, the
    regexes otherwise), tool diversity and K; refined by the LLM when its confidence is < 0.7."""
    if (
        synthesis.confidence < maths.OUTPUT_MIN_CONFIDENCE
        or synthesis.exemplars < maths.OUTPUT_MIN_EXEMPLARS
    ):
        # Nothing to classify: DESIGN's first rule decides, whatever the text says.
        decision = maths.output_type(
            confidence=synthesis.confidence,
            exemplars=synthesis.exemplars,
            imperative=False,
            procedural=False,
            diversity=0,
            k=0.0,
        )
        Synthesis.objects.filter(pk=synthesis.pk).update(
            output_type=decision.output_type,
            decision_confidence=decision.confidence,
            decision_reason=decision.reason,
        )
        synthesis.refresh_from_db()
        return decision
    full = instruction_text(synthesis, thesis)
    text = synthesis.statement + (
        f" Except when {synthesis.condition}." if synthesis.condition else ""
    )
    producer = PRODUCER_HEURISTIC
    try:
        answer = llm_run(
            owner=thesis.owner,
            task=CLASSIFY_TASK,
            schema=CLASSIFY_SCHEMA,
            instructions=(
                "Classify this instruction for a coding agent: `imperative` when it tells the "
                "agent what it must or should do; `procedural` when it is a sequence of steps."
            ),
            data=text,
            max_tokens=200,
        )
        imperative, procedural = bool(answer["imperative"]), bool(answer["procedural"])
        producer = PRODUCER_LLM
    except (LlmUnavailable, KeyError):
        imperative, procedural = maths.is_imperative(text), maths.is_procedural(text)
    tools = set(thesis.expected_sequence)
    diversity = len(tools)
    conditional = bool(synthesis.condition) or maths.is_conditional(text)
    k = maths.complexity(
        length=maths.length_score(len(full)),
        tools=maths.tools_score(diversity),
        conditional=conditional,
        procedural=procedural,
    )
    decision = maths.output_type(
        confidence=synthesis.confidence,
        exemplars=synthesis.exemplars,
        imperative=imperative,
        procedural=procedural,
        diversity=diversity,
        k=k,
    )
    refined_by = ""
    if decision.needs_refinement:
        try:
            answer = llm_run(
                owner=thesis.owner,
                task=REFINE_TASK,
                schema=REFINE_SCHEMA,
                instructions=(
                    "Decide how this learned instruction should reach a coding agent: `rule` (a "
                    "short always-loaded instruction), `skill` (a procedure with a script), "
                    "`rule_with_skill` (both) or `none`."
                ),
                data=json.dumps(
                    {
                        "instruction": full,
                        "tools": sorted(tools),
                        "imperative": imperative,
                        "procedural": procedural,
                        "complexity": round(k, 2),
                        "heuristic": decision.output_type,
                    }
                ),
                max_tokens=300,
            )
            if answer.get("output_type") in maths.OUTPUT_TYPES:
                decision = maths.OutputDecision(
                    str(answer["output_type"]),
                    float(answer.get("confidence", 0.7)),
                    str(answer.get("reason", "refined by the LLM"))[:300],
                )
                refined_by = PRODUCER_LLM
        except LlmUnavailable:
            refined_by = PRODUCER_HEURISTIC
    Synthesis.objects.filter(pk=synthesis.pk).update(
        output_type=decision.output_type,
        decision_confidence=decision.confidence,
        decision_reason=decision.reason,
        characteristics={
            "imperative": imperative,
            "procedural": procedural,
            "conditional": conditional,
            "tool_diversity": diversity,
            "complexity": round(k, 4),
            "classified_by": producer,
            "refined_by": refined_by,
        },
    )
    synthesis.refresh_from_db()
    return decision
