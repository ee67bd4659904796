"""Answering beyond max_new_tokens, piece by piece: completeness, structure and plan, dedup, stitching, continuation
checks, and the continuation loop driven by a scripted model (pure logic, fakes)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from keel.checks.completeness import assess_completeness, looks_complete, trim_to_complete
from keel.checks.continuation_checks import check_continuation, hallucination_pattern, language_switch
from keel.checks.dedup import deduplicate, stitch
from keel.chains.generation import GenerationTools, generate_with_continuation
from keel.chains.prompts import CONTINUATION_INDICATOR
from keel.checks.semantic import Semantic, token_overlap
from keel.checks.structure import extract_structure, structure_coherence
from keel.core.configuration import Configuration
from langchain_core.messages import HumanMessage, SystemMessage
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel

CFG = Configuration()


def semantic() -> Semantic:
    return Semantic(KeywordEmbeddings().embed_documents)


@pytest.mark.parametrize(
    "text, closed, reasons",
    [
        ("The lighthouse was built in 1874.", False, []),
        ("The lighthouse was built by", True, ["trailing_joiner"]),
        ("It opens at 8 am,", True, ["trailing_joiner"]),
        ("It opens at 8 am;", True, ["trailing_joiner"]),
        ("Bring your card, and", True, ["trailing_joiner"]),
        ("It opens early. Next", True, ["continuation_word"]),
        ("It opens early. Additionally,", True, ["trailing_joiner", "continuation_word"]),
        ("The steps:\n1. Plan the work.\n2. Build it.\n3.", True, ["unfinished_list"]),
        ("There are three steps:\n1. Plan the work.\n2. Build it.", True, ["unfinished_list"]),
        ("Mara Holt", True, []),  # closed by the model: a short factoid is complete
        ("Mara Holt", False, ["no_end_punctuation"]),  # cut off by the token limit
        ("It was built (in 1874", True, ["open_bracket"]),
        ("The lighthouse, a tall white tower near the northern coast.", False, ["last_sentence_without_structure"]),
        ("", False, ["empty"]),
    ],
)
def test_completeness_signs(text, closed, reasons):
    report = assess_completeness(text, closed)
    assert report.reasons == reasons and report.complete is (not reasons)


def test_looks_complete_trusts_a_closing_answer_tag_for_soft_signs_only():
    assert looks_complete("<answer>Mara Holt</answer>")
    assert not looks_complete("<answer>It was built by</answer>")


def test_trim_to_complete_keeps_whole_sentences():
    assert trim_to_complete("It is red [Source 1]. It was built by") == "It is red [Source 1]."
    assert trim_to_complete("no sentence end here") == "no sentence end here"


def test_structure_plan_next_number_and_covered_topics():
    planned = extract_structure("There are three steps: planning, design and testing.")
    assert planned.planned == ["planning", "design", "testing"] and planned.expected_count == 3
    assert planned.unmentioned("There are three steps: planning, design and testing. Planning comes first.") == [
        "design", "testing"]
    listed = extract_structure("## Steps\nThe three steps are:\n1. Plan the work.\n2. Design the parts.")
    assert listed.next_number == 3 and listed.list_unfinished
    assert listed.headings[0] == "Steps" and "Plan the work." in listed.covered_topics()
    assert extract_structure("Built in 1874. 12:30 is lunch.").numbered == []


def test_a_continuation_off_the_answers_numbered_plan_is_incoherent():
    structure = extract_structure("The three steps are:\n1. Plan the lighthouse.\n2. Build the tower.")
    sem = semantic()
    on_plan = structure_coherence("3. Paint the lighthouse tower red.", structure, sem.similarities, 0.2, 0.25)
    off_plan = structure_coherence("Bananas grow in warm places.", structure, sem.similarities, 0.2, 0.25)
    assert on_plan.coherent and not off_plan.coherent and off_plan.reason == "off_plan"
    assert structure_coherence("Anything.", extract_structure("Plain text."), sem.similarities, 0.2, 0.25).coherent


def test_dedup_sentence_phrase_and_full_text_levels():
    previous = "The lighthouse was built in 1874 by Mara Holt. Its lamp is seen from 22 miles."
    fresh = deduplicate("The lighthouse was built in 1874 by Mara Holt. It is painted red and white.", previous,
                        semantic(), CFG)
    assert fresh.text == "It is painted red and white." and len(fresh.dropped) == 1
    assert deduplicate(previous, previous, semantic(), CFG).repetition == "repetition"
    phrase = deduplicate("Indeed its lamp is seen from 22 miles away today.", previous, semantic(), CFG)
    assert phrase.text == "" and phrase.dropped  # most 4-word phrases already said


def test_dedup_needs_both_semantic_and_token_overlap():
    previous = "The lighthouse was built in 1874 by Mara Holt."
    reordered = "In 1874 the lighthouse built Mara Holt by."

    def one_hot(texts):  # every distinct text its own direction: no two texts are similar
        return [[1.0 if j == sum(map(ord, t)) % 997 + len(t) % 3 else 0.0 for j in range(1000)] for t in texts]

    # the same words (token overlap 1.0), but the embeddings say the meaning differs: kept
    assert token_overlap(reordered, previous) == 1.0
    assert deduplicate(reordered, previous, Semantic(one_hot), CFG).text == reordered
    assert token_overlap("a b c d", "a b c") == 0.75


def test_stitch_mends_a_cut_sentence():
    assert stitch("It is red. It was built by", "Mara Holt in 1874.") == "It is red. It was built by Mara Holt in 1874."
    assert stitch("It is red. It was built by", "It was built by Mara Holt.") == "It is red. It was built by Mara Holt."
    assert stitch("It is red. It was built by", "The lamp is bright.") == "It is red. The lamp is bright."
    assert stitch("It was built by", "engineers from the mainland.") == "It was built by engineers from the mainland."
    assert stitch("Steps:\n1. Plan.", "2. Build.") == "Steps:\n1. Plan.\n2. Build."


def test_hallucination_patterns_and_language_switch():
    assert hallucination_pattern("See https://en.wikipedia.org/wiki/Lighthouse for more.", "the lighthouse")
    assert hallucination_pattern("As an AI language model I cannot say.", "")
    assert hallucination_pattern("\nQuestion: what else?", "")
    assert hallucination_pattern("Visit www.varden.org.", "Visit www.varden.org for tickets.") is None
    english = "The lighthouse was built by the engineer and it is painted red and white for the ships."
    german = "Der Leuchtturm ist rot und weiss und er steht auf der Insel, die von den Fischern bewohnt ist."
    russian = "Маяк был построен инженером и окрашен в красный и белый цвета для кораблей."
    assert language_switch(german, english, 20) == "language:en->de"
    assert language_switch(russian, english, 20).startswith("script:LATIN->CYRILLIC")
    assert language_switch(english, english, 20) is None


def test_a_long_off_topic_continuation_is_rejected_at_the_default_thresholds():
    question = "Who built the Varden lighthouse?"
    answer = "The Varden lighthouse was built by Mara Holt in 1874."
    off_topic = "Bananas are yellow tropical fruits rich in potassium and vitamins. " * 3
    verdict = check_continuation(off_topic, question, answer, [answer], answer, extract_structure(answer), semantic(),
                                 CFG)
    assert not verdict.ok and verdict.reason == "off_topic"
    on_topic = "The Varden lighthouse lamp was lit by Mara Holt every night, and the lighthouse keeper helped." * 2
    assert check_continuation(on_topic, question, answer, [answer], answer, extract_structure(answer), semantic(),
                              CFG).ok
    short = "Bananas are yellow."  # under 150 chars: relevance is not judged yet
    assert check_continuation(short, question, answer, [], answer, extract_structure(answer), semantic(), CFG).ok


def messages(question="Describe the Varden lighthouse."):
    return [SystemMessage("Answer from the context."), HumanMessage(f"Context: lighthouse facts\nQuestion: {question}")]


def run(model, cfg=CFG, question="Describe the Varden lighthouse.", contexts=("The Varden lighthouse facts.",)):
    events: list[dict] = []
    tools = GenerationTools(semantic=semantic(), emit=events.append, count_tokens=lambda t: len(t.split()))
    result = generate_with_continuation(model, messages(question), cfg, 0.0, question=question,
                                        contexts=list(contexts), tools=tools)
    return result, events


def test_an_answer_cut_mid_sentence_is_continued_and_the_indicator_is_its_own_event():
    model = ScriptedChatModel(responses=[
        "<answer>The Varden lighthouse was built in 1874 by",
        "Mara Holt, the engineer. The lighthouse is painted red and white.</answer>",
    ])
    result, events = run(model)
    assert result.text == ("The Varden lighthouse was built in 1874 by Mara Holt, the engineer. "
                           "The lighthouse is painted red and white.")
    assert result.continuations == 1 and result.complete and result.parse_layer == "xml"
    indicators = [e for e in events if e["event"] == "keel.continuation"]
    assert indicators == [{"event": "keel.continuation", "text": CONTINUATION_INDICATOR, "number": 1}]
    streamed = "".join(e["text"] for e in events if e["event"] == "keel.token")
    assert CONTINUATION_INDICATOR not in result.text and CONTINUATION_INDICATOR not in streamed
    assert "<answer>" not in streamed and "Mara Holt" in streamed
    prompt = model.calls[1]["messages"][-1].content
    assert "cut off" in prompt and "built in 1874 by" in prompt


def test_an_unfinished_list_is_continued_with_the_next_number_in_the_prompt():
    model = ScriptedChatModel(responses=[
        "The Varden lighthouse has three parts:\n1. The tower of the lighthouse.\n2. The lamp of the lighthouse.\n3.",
        "3. The Varden lighthouse keeper house.",
    ])
    result, _ = run(model)
    assert result.continuations == 1
    assert result.text.endswith("2. The lamp of the lighthouse.\n3. The Varden lighthouse keeper house.")
    assert "Next, write item 3." in model.calls[1]["messages"][-1].content


def test_continuation_limits_the_chunk_size_and_the_total_budget():
    cfg = replace(CFG, max_new_tokens=20, max_continuations=10)
    endless = "The Varden lighthouse tower stands on the rock and its lamp and"
    model = ScriptedChatModel(responses=[endless] + [f"light number {i} shines on the lighthouse rock and" for i in range(20)])
    result, _ = run(model, cfg)
    for call in model.calls[1:]:
        assert call["kwargs"]["max_tokens"] <= cfg.max_new_tokens * cfg.continuation_fraction
    assert result.usage["completion_tokens"] <= cfg.max_new_tokens * cfg.max_total_tokens_factor + 10
    assert result.continuations <= cfg.max_continuations
    cfg_few = replace(cfg, max_continuations=2, max_new_tokens=400)
    result_few, _ = run(ScriptedChatModel(responses=[endless] + [f"beam {i} reaches ship {i} and" for i in range(5)]), cfg_few)
    assert result_few.continuations == 2 and "max_continuations" in result_few.stops


def test_an_off_topic_continuation_is_stopped_while_streaming_and_reverted():
    cfg = replace(CFG, stream_check_every_chunks=30, stream_check_min_chars=150)
    off_topic = "Bananas are yellow tropical fruits rich in potassium and grown on large farms in warm countries. " * 6
    model = ScriptedChatModel(responses=["The Varden lighthouse was built by Mara Holt and", off_topic], chunk_chars=2)
    result, events = run(model, cfg)
    assert any(s.startswith("stream_check:off_topic") for s in result.stops)
    assert "Bananas" not in result.text
    assert result.text == "The Varden lighthouse was built by Mara Holt and"  # the last valid answer, nothing trimmable
    streamed_banana = "".join(e["text"] for e in events if e["event"] == "keel.token").count("Banana")
    assert streamed_banana < off_topic.count("Banana") / 2  # stopped soon after 150 chars, long before its end
    revert = events[-1]  # the streamed banana text is taken back: the client keeps exactly this text
    assert revert["event"] == "keel.revert" and revert["text"] == result.text
    assert revert["reason"].startswith("stream_check:off_topic")


def test_duplicate_continuation_content_is_not_appended():
    model = ScriptedChatModel(responses=[
        "The Varden lighthouse was built by Mara Holt. The lamp is seen from 22 miles and",
        "The Varden lighthouse was built by Mara Holt. The tower is painted red and white.",
    ])
    result, events = run(model)
    assert result.text.count("built by Mara Holt") == 1
    assert result.text.endswith("The tower is painted red and white.")
    streamed = "".join(e["text"] for e in events if e["event"] == "keel.token")
    assert streamed.count("built by Mara Holt") == 2  # the duplicate went out live ...
    assert events[-1] == {"event": "keel.revert", "reason": "deduplicated", "text": result.text}  # ... and is taken back


def test_an_answer_still_cut_at_the_limits_is_trimmed_to_its_last_sentence():
    cfg = replace(CFG, max_continuations=1)
    model = ScriptedChatModel(responses=["The Varden lighthouse is red. It was built by", "Mara Holt who also built the"])
    result, _ = run(model, cfg)
    assert result.text == "The Varden lighthouse is red." and "trimmed_to_last_sentence" in result.stops


def test_a_complete_answer_is_not_continued():
    model = ScriptedChatModel(responses=[("Mara Holt built it in 1874.", "stop")])
    result, events = run(model)
    assert result.continuations == 0 and len(model.calls) == 1
    assert not [e for e in events if e["event"] in ("keel.continuation", "keel.revert")]  # streamed = answer


def test_without_embeddings_relevance_falls_back_to_keywords():
    question = "Who built the Varden lighthouse?"
    answer = "The Varden lighthouse was built by Mara Holt in 1874."
    off_topic = "Bananas are yellow tropical fruits rich in potassium and vitamins. " * 3
    structure = extract_structure(answer)
    verdict = check_continuation(off_topic, question, answer, [answer], answer, structure, None, CFG)
    assert not verdict.ok and verdict.detail == "off_topic:keywords"
    on_topic = "The Varden lighthouse keeper lit the lamp that Mara Holt designed for the lighthouse tower. " * 2
    assert check_continuation(on_topic, question, answer, [answer], answer, structure, None, CFG).ok


class StubSemantic:
    """Similarities set by the test: ``to_question`` for the question/answer tail, ``to_context`` for the
    passages; exact numbers, so the configured thresholds are tested at their edges."""

    def __init__(self, to_question=0.9, to_context=0.9, contexts=(), pair=None):
        self.to_question, self.to_context, self.contexts, self.pair = to_question, to_context, set(contexts), pair

    def similarities(self, text, others):
        if self.pair is not None:
            return [self.pair for _ in others]
        return [self.to_context if other in self.contexts else self.to_question for other in others]

    def similarity(self, a, b):
        return self.similarities(a, [b])[0]


@pytest.mark.parametrize(
    "to_question, to_context, problem",
    [
        (0.21, 0.26, None),
        (0.19, 0.9, "off_topic:0.19"),  # < 0.2 to both question and answer so far
        (0.9, 0.24, "off_domain:0.24"),  # the domain variant: < 0.25 to the user's documents
        (0.9, 0.25, None),
    ],
)
def test_relevance_thresholds_off_topic_0_2_and_off_domain_0_25(to_question, to_context, problem):
    from keel.checks.continuation_checks import relevance_problem

    contexts = ["The Varden lighthouse handbook passage."]
    piece = "The keeper of the lighthouse cleans the lens every week and writes the weather in the log. " * 2
    stub = StubSemantic(to_question, to_context, contexts)
    found = relevance_problem(piece, "Who built it?", "It was built in 1874.", contexts, stub, CFG)
    assert found == problem
    assert relevance_problem(piece, "Who built it?", "", [], StubSemantic(0.9, 0.0, contexts), CFG) is None


@pytest.mark.parametrize(
    "similarity, verdict",
    [
        (0.96, "near_duplicate"),  # > 0.95 semantic AND > 0.85 token overlap
        (0.95, None),  # not above 0.95
        (0.93, None),  # the 0.9 repetition test needs > 0.9 token overlap too, and 7/8 = 0.875 is not
    ],
)
def test_near_duplicate_branch_needs_0_95_similarity_and_0_85_overlap(similarity, verdict):
    from keel.checks.dedup import full_text_repetition

    previous = "the varden lighthouse was built by mara holt"
    continuation = "the varden lighthouse was built by mara smith"  # 7 of 8 words known: overlap 0.875
    assert token_overlap(continuation, previous) == 0.875
    assert full_text_repetition(continuation, previous, StubSemantic(pair=similarity), CFG) == verdict
    less = "the varden lighthouse was made by anna smith"  # overlap 0.625: not a duplicate at any similarity
    assert full_text_repetition(less, previous, StubSemantic(pair=0.99), CFG) is None
    dropped = deduplicate(continuation + ".", previous + ".", StubSemantic(pair=similarity), CFG)
    assert (dropped.repetition == "near_duplicate") is (verdict == "near_duplicate")


def test_the_continuation_prompt_names_what_is_still_to_cover_and_what_is_already_covered():
    model = ScriptedChatModel(responses=[
        "The Varden lighthouse has three steps: planning, design and testing.\n1. Planning the lighthouse work.\n",
        "2. Design of the lighthouse tower.\n3. Testing the lighthouse lamp.",
    ])
    run(model)
    prompt = model.calls[1]["messages"][-1].content
    assert "Next, write item 2." in prompt
    assert "Still to cover: design, testing." in prompt
    assert "Already covered: Planning the lighthouse work." in prompt
    short = ScriptedChatModel(responses=model.responses)
    run(short, replace(CFG, topic_label_words=2))
    assert "Already covered: Planning the." in short.calls[1]["messages"][-1].content  # labels follow the config
