"""The five parser layers, the stream-safe reasoning filter, and the artifact list (pure logic)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from keel.checks.answer_checks import has_artifacts, is_fallback, quality_score
from keel.checks.parser import parse_answer
from keel.checks.reasoning_filter import LINE_MARKERS, SPECIAL_TOKENS, StreamFilter, find_leaks, strip_reasoning
from keel.core.configuration import Configuration
from tests.property_budget import examples

CFG = Configuration()


@pytest.mark.parametrize(
    "raw, expected, layer",
    [
        # layer 1: tags
        ("<thinking>look</thinking><answer>Paris is the capital.</answer>", "Paris is the capital.", "xml"),
        ("<answer>Unclosed answer text", "Unclosed answer text", "xml"),
        ("<answer></answer><answer>Second one counts.</answer>", "Second one counts.", "xml"),
        ("<answer>First answer.</answer> more <answer>Another answer.</answer>", "First answer.", "xml"),
        ("<thinking>notes</thinking>\nThe lamp is red.", "The lamp is red.", "xml"),
        ("<thinking>look it up</thinking> Paris is the capital.", "Paris is the capital.", "xml"),
        ("<answer>Straße und Café: 東京 is Tokyo ✓</answer>", "Straße und Café: 東京 is Tokyo ✓", "xml"),
        ("<ANSWER>Case does not matter.</ANSWER>", "Case does not matter.", "xml"),
        # layer 2: JSON, nested objects and braces inside strings
        ('{"answer": "It is {big}", "meta": {"x": {"y": 1}}}', "It is {big}", "json"),
        ('Sure: {"result": {"answer": "Nested 42."}} done', "Nested 42.", "json"),
        ('Here: {"answer": "It is {big}", "meta": {"x": 1}}', "It is {big}", "json"),
        ('{"answer": 42}', "42", "json"),
        ('{"answer": "unterminated', '{"answer": "unterminated', "raw"),
        # layer 3: Final Answer
        ("Thought about it.\nFinal Answer: 42 days.", "42 days.", "final_answer"),
        ("final answer: first\nFinal Answer: the last one.", "the last one.", "final_answer"),
        # layer 4: regex cleaning
        ("Based on the analysis of revenue: $73.6B", "$73.6B", "regex"),
        ("The lamp is red (in the context of User, Assistant).", "The lamp is red.", "regex"),
        ("It is red. It is red. It is tall.", "It is red. It is tall.", "regex"),
        # layer 5: raw, and empty
        ("Plain answer.", "Plain answer.", "raw"),
        ("", "", "raw"),
        ("   ", "", "raw"),
    ],
)
def test_parse_layers(raw, expected, layer):
    parsed = parse_answer(raw)
    assert (parsed.text, parsed.layer) == (expected, layer)


def test_raw_layer_records_an_error_and_tagged_answers_do_not():
    assert parse_answer("Plain answer.").error
    assert parse_answer("<answer>Tagged.</answer>").error is None


def test_an_echoed_few_shot_answer_is_skipped():
    raw = "<answer>Arvind Krishna is the CEO [Source 1].</answer><answer>Mara Holt built it [Source 1].</answer>"
    parsed = parse_answer(raw, ignore=["Arvind Krishna is the CEO [Source 1]."])
    assert parsed.text == "Mara Holt built it [Source 1]."


def test_input_is_capped_before_parsing():
    raw = "<answer>" + "word " * 10_000 + "</answer>"
    assert len(parse_answer(raw, max_chars=1000).text) <= 1000


def test_leaks_inside_answer_tags_are_stripped_too():
    parsed = parse_answer("<answer>Thinking: hidden\nThe lamp is red.<|im_end|></answer>")
    assert parsed.text == "The lamp is red."


LEAKY = (
    "<thinking>scratch work</thinking>The lamp is red.<end_of_turn> It is tall.\n"
    "Reasoning: do not show\nOkay, I need to finish this answer. "
    "It was built in 1874 (in the context of User, Assistant).<|im_end|>"
)


def test_strip_reasoning_removes_every_marker_kind():
    cleaned = strip_reasoning(LEAKY)
    assert cleaned == "The lamp is red. It is tall.\nIt was built in 1874."
    assert find_leaks(cleaned) == []
    assert {"<thinking>", "<end_of_turn>", "reasoning:", "okay, i need to finish", "<|im_end|>"} <= set(find_leaks(LEAKY))


@settings(max_examples=examples(200))
@given(st.lists(st.integers(min_value=1, max_value=len(LEAKY) - 1), max_size=15, unique=True))
def test_stream_filter_output_does_not_depend_on_how_the_text_is_split(cuts):
    bounds = [0, *sorted(cuts), len(LEAKY)]
    chunks = [LEAKY[a:b] for a, b in zip(bounds, bounds[1:])]
    stream = StreamFilter()
    shown = [stream.feed(chunk) for chunk in chunks] + [stream.flush()]
    whole = StreamFilter()
    assert "".join(shown) == whole.feed(LEAKY) + whole.flush()
    # no prefix of what the user has seen so far ever ends in part of a marker
    seen = ""
    for piece in shown:
        seen += piece
        for marker in SPECIAL_TOKENS + ("<thinking>", "</thinking>"):
            assert marker.lower() not in seen.lower()
            assert not any(seen.lower().endswith(marker.lower()[:k]) for k in range(2, len(marker)))


@pytest.mark.parametrize("marker", ["<|im_end|>", "<end_of_turn>", "</thinking>", "[INST]"])
def test_a_marker_split_one_character_at_a_time_is_never_shown(marker):
    stream = StreamFilter()
    text = f"Red lamp.{marker} Tall tower."
    shown = "".join(stream.feed(ch) for ch in text) + stream.flush()
    assert marker not in shown and "Red lamp." in shown and "Tall tower." in shown


def test_unfinished_marker_at_the_end_of_the_stream_is_dropped():
    stream = StreamFilter()
    assert stream.feed("The lamp is red.<|im_") + stream.flush() == "The lamp is red."


def test_line_markers_hide_the_whole_line_but_ordinary_lines_pass():
    stream = StreamFilter()
    shown = stream.feed("Thinking: secret\nThinking about it, the lamp is red.\nmeta: x\n") + stream.flush()
    assert shown == "Thinking about it, the lamp is red.\n"
    assert all(marker.endswith((":", "]")) for marker in LINE_MARKERS)


def test_phrase_markers_need_a_word_boundary():
    assert strip_reasoning("We also provide steps for safety.") == "We also provide steps for safety."
    assert strip_reasoning("Red. So provide steps involved in it. Tall.") == "Red. Tall."


def test_ordinary_words_are_not_artifacts_but_leaks_are():
    normal = (
        "The clinic opens at 7 am. Additionally, walk-in patients are seen from 9 am. Furthermore, it closes on "
        "Sundays.\nStep 1: fill in the form.\nThe user manual says the system reboots."
    )
    assert not has_artifacts(normal)
    assert quality_score(normal, "When does the clinic open?", CFG).deductions == {}
    for leak in ("The clinic opens at 7.<|im_end|>", "Thinking: check\nIt opens at 7.", "<thinking>x</thinking>7"):
        assert has_artifacts(leak)
        assert quality_score(leak, "When?", CFG).deductions.get("artifacts") == CFG.artifact_penalty


def test_quality_score_takes_extra_named_deductions():
    report = quality_score("Paris is the capital of France.", "Capital?", CFG, extra={"grounding_layer": 0.5})
    assert report.deductions == {"grounding_layer": 0.5} and report.score == 0.5


@pytest.mark.parametrize(
    "answer, abstained",
    [("I don't know based on the provided documents.", True), ("The context does not contain the answer.", True),
     ("There is no information about fees.", True), ("The fee is 5 euros.", False),
     ("I know the fee is 5 euros.", False)],
)
def test_abstention_is_recognised_in_its_common_forms(answer, abstained):
    assert is_fallback(answer, CFG.fallback_answer) is abstained


def test_a_raw_layer_answer_is_counted_in_telemetry_not_logged_as_a_problem(caplog):
    """A small model's plain prose answer is the ordinary case: nothing at WARNING or above (a demo
    prints no ERROR), while the parse result still says which layer found it and why."""
    with caplog.at_level("DEBUG"):
        parsed = parse_answer("The clinic opens at eight in the morning on weekdays.")
    assert parsed.layer == "raw" and parsed.error and "All parsing strategies failed" in parsed.error
    assert parsed.text == "The clinic opens at eight in the morning on weekdays."
    assert not [r for r in caplog.records if r.levelno >= 30], [r.getMessage() for r in caplog.records]
    assert any(r.name == "keel.parser" for r in caplog.records), "still visible at DEBUG for whoever looks"


def test_the_prompts_own_data_delimiters_echoed_back_are_an_artifact():
    assert has_artifacts("You can return a product within 30 days.\n</documents>")
    assert parse_answer("You can return a product within 30 days.\n</documents>").text.strip().endswith("30 days.")


def test_a_wrapper_tag_of_the_models_own_is_an_artifact_and_is_not_shown():
    raw = "<response>You can return a product within 30 days.\n</response>"
    assert has_artifacts(raw)
    assert parse_answer(raw).text == "You can return a product within 30 days."
