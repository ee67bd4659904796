"""Does the answer fit the question? Checks for answers that are grounded but wrong.

Grounding says every sentence of an answer is in the documents; it cannot say the sentence is
about what was asked. A product guide with two look-alike models, or a policy full of numbers,
lets a small model quote the wrong line word for word: "How much does the ZR-200 cost?" answered
with the ZR-500's price, "How long is the warranty?" answered with a year. These checks catch that
class before an answer is shown, each a pure function of the question, the answer and the passages:

- **answer type**: "how long" wants a duration, "how much does it cost" an amount of money,
  "how many" a number, "who" a name, "when" a date or time (``expected_answer_type``);
- **focus entity**: when the question names a model or code ("ZR-200", "AX3000"), every figure
  in the answer must come from a statement about that entity, not a neighbouring one's
  (``figures_from_other_entities``): a statement's entity is the one it names, or else the one
  named earlier in its paragraph or in the heading above it; a table row comparing models states
  each value about its column's model, and a sentence naming two each figure about its own
  (keel/checks/statements.py), in the unit the answer gives it; the words the answer says of the
  named code must come from a statement about it (``words_from_other_entities``);
- **about a sibling**: the statement the answer rests on must say the question's qualifiers, not
  a sibling written in the same frame ("Riverside branch" for "Hillcrest branch", "Band B" for
  "band D"; keel/checks/siblings.py, ``rests_on_siblings``);
- **addresses the question**: the answer, with the context sentences it rests on, must share
  a content word with the question beyond its question words (``addresses_question``): "Who is the
  chief executive?" is not answered by a sentence about the annual report;
- **figures about the question**: an answer's figures must come from a statement that says what
  the question is about (``figures_off_question``): "Within how many days must I register my
  product?" is not answered by the price-protection line's "7 days".

The extractive last attempt uses the same rules to choose its sentence (``sentence_fits``), and
quotes it only when it says enough of what the question is about (``question_coverage``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence

from keel.checks.answer_topic import (
    addresses_question,
    names_off_question,
    unstated_question_words,
)
from keel.checks.answer_types import (
    ANSWER_PATTERNS,
    TYPE_WORDS,
    counts_in,
    expected_answer_type,
    has_answer_of_type,
    unit_asked,
)
from keel.checks.figure_claims import ranges_not_stated, reversed_conditions
from keel.checks.grounding import stems
from keel.checks.question_coverage import (
    NAME_BEFORE_CODE,
    borrowed_words,
    claim_words,
    context_vocabulary,
    question_coverage,
    words_off_question,
)
from keel.checks.siblings import ABOUT_A_SIBLING, about_a_sibling, rests_on_siblings
from keel.checks.statements import (
    HEADING,
    Statement,
    by_text,
    cells_by_entity,
    entity_codes,
    is_labelled,
    owners_by_figure,
    statements,
)
from keel.core.settings.grounding import GroundingSettings
from keel.core.text import (
    CITATION_PATTERN,
    WORD,
    content_words,
    figures,
    quantities,
    split_sentences,
    split_statements,
)

ANSWER_TYPE_MISMATCH = "answer_type_mismatch"
WRONG_ENTITY = "wrong_entity"
OFF_QUESTION = "does_not_address_question"
UNBOUND_FIGURE = "figure_from_another_statement"
FIGURE_OFF_QUESTION = "figure_about_something_else"
NAME_OFF_QUESTION = "name_about_something_else"
CLAIM_OFF_QUESTION = "claim_about_something_else"
UNSTATED_QUESTION_WORD = "question_word_not_in_documents"


def figures_from_other_entities(answer: str, question: str, passages: Sequence[str],
                                context: Sequence[Statement] | None = None) -> list[str]:
    """Figures of the answer that the context states only about other entities than the one the
    question names (empty when the question names none, or a figure is also stated for it).
    ``context``: the passages' ``statements``, when the caller has read them already."""
    asked = entity_codes(question)
    if not asked:
        return []
    context = statements(passages) if context is None else context
    named_elsewhere = entity_codes(answer) - asked
    wrong = sorted(f"entity:{code}" for code in named_elsewhere if not asked & entity_codes(answer))
    return wrong + _stated_about_others(answer, asked, owners_by_figure(context), exclude=figures(question))


def words_from_other_entities(answer: str, question: str, passages: Sequence[str],
                              context: Sequence[Statement] | None = None, min_share: float = 0.5) -> list[str]:
    """What the answer says of the model or code the question names, taken from other lines: of
    its words that the context holds, fewer than ``min_share`` are in a statement about the named
    entity (read with its headings), and the rest are in statements about no such model or another
    one. "E8 means the light is solid red" takes the router-light row's words for the error code's;
    "E4 is a firmware error that occurs when the router fails to reset" borrows all but "reset"
    (from the section's heading). Words the context never uses are grounding's to judge. Empty when
    the question names no entity or the answer has nothing to judge."""
    asked = entity_codes(question)
    said = claim_words(answer) - stems(content_words(question)) - TYPE_WORDS
    if not asked or not said:
        return []
    context = statements(passages) if context is None else context
    return borrowed_words(said, context, lambda statement: bool(statement.entities & asked), min_share)


def _stated_about_others(text: str, asked: set[str], owners: Mapping, exclude: set[str] = frozenset()) -> list[str]:
    """Figures of the text that every statement of the context holding them states about other
    entities than the asked ones (``owners``: ``owners_by_figure`` of the context). A figure the
    text gives with a unit is looked up in that unit where the context has it so: "2 years" is the
    warranty line's, not the "wait 2 minutes" line's."""
    counted = quantities(text)
    wrong, own = [], False
    for figure in sorted(figures(text) - exclude):
        holders = _in_its_unit(figure, counted, lambda key: owners.get(key, []))
        if holders and all(entities and not (entities & asked) for entities in holders):
            wrong.append(figure)
        own = own or any(entities & asked for entities in holders)
    if own:  # it gives the asked entity's figure: a look-alike's is wrong only when told as the asked one's
        said = _figures_told_about(text)
        wrong = [figure for figure in wrong if not said.get(figure) or said[figure] & asked]
    return wrong


def _figures_told_about(text: str) -> dict[str, frozenset[str]]:
    """Which entities the text itself tells each figure about: "the V20 runs for 70 minutes and
    the V25 for 95" tells 95 about the V25, so quoting it for the V20 does not give the V20 95."""
    told: dict[str, frozenset[str]] = {}
    for statement in statements([text]):
        for figure in statement.numbers:
            told[figure] = told.get(figure, frozenset()) | statement.owners_of(figure)
    return told


def _in_its_unit(figure: str, counted: set[tuple[str, str]], holding: Callable[[object], list]) -> list:
    """What holds the figure in the unit the text counts it in (``holding((figure, unit))``), or,
    where the context never states it in that unit, what holds the figure at all (``holding(figure)``)."""
    in_unit = [found for f, unit in counted if f == figure for found in holding((figure, unit))]
    return in_unit or holding(figure)


def unbound_figures(answer: str, passages: Sequence[str]) -> list[str]:
    """Figures the answer ties to words no context line states them with: "The V20 runs for 18
    months in Max mode" when 18 months is the warranty line. Each figure of an answer sentence must
    share a line (read with the heading above it) with a word of that sentence other than its
    names, codes, units and question words; lines that do not hold the figure are grounding's job."""
    unbound = []
    lines = _lines_with_headings(passages)
    for sentence in split_sentences(CITATION_PATTERN.sub(" ", answer)):
        said = claim_words(sentence)
        if not said:
            continue
        for figure in sorted(figures(sentence)):
            holders = [words for text, words in lines if figure in figures(text)]
            if holders and not any(said & words for words in holders):
                unbound.append(figure)
    return unbound


def _lines_with_headings(passages: Sequence[str]) -> list[tuple[str, set[str]]]:
    """Every sentence (or table row) of the passages with its claim words and its heading's."""
    found = []
    for passage in passages:
        heading = ""
        for sentence in split_statements(passage):
            if HEADING.match(sentence):
                heading = sentence
            found.append((sentence, claim_words(f"{heading} {sentence}")))
    return found


def fit_reasons(answer: str, question: str, passages: Sequence[str], cfg: GroundingSettings) -> list[str]:
    """Reason codes for the ways the answer does not fit the question; empty when it fits."""
    reasons = []
    kinds = expected_answer_type(question)
    if cfg.require_answer_type and kinds and not has_answer_of_type(answer, kinds):
        reasons.append(f"{ANSWER_TYPE_MISMATCH}:{'|'.join(kinds)}")
    unit = unit_asked(question) if cfg.require_answer_type else None
    if unit and not counts_in(unit, answer):
        reasons.append(f"{ANSWER_TYPE_MISMATCH}:count_in_{unit.split('?')[0].split('|')[0]}")
    context = statements(passages)  # read once for the checks below
    if cfg.require_focus_entity:
        wrong = figures_from_other_entities(answer, question, passages, context) or words_from_other_entities(
            answer, question, passages, context, cfg.min_entity_word_share)
        if wrong:
            reasons.append(f"{WRONG_ENTITY}:{','.join(wrong)}")
    if cfg.refuse_sibling_evidence:
        siblings = rests_on_siblings(answer, question, context)
        if siblings:
            reasons.append(f"{ABOUT_A_SIBLING}:{','.join(siblings)}")
    if cfg.require_bound_figures:
        unbound = unbound_figures(answer, passages) + ranges_not_stated(answer, context)
        if unbound:
            reasons.append(f"{UNBOUND_FIGURE}:{','.join(unbound)}")

    # For a quantity or date, or about a named model: a figure is then the answer, not a side remark.
    # "free for orders over EUR 50" is the other side of "for orders under EUR 50", whatever the type
    if cfg.require_figures_about_question:
        off = reversed_conditions(answer, question)
        if not off and (kinds not in ((), ("name",)) or entity_codes(question)):
            off = figures_off_question(answer, question, passages, cfg.min_question_coverage, context,
                                       cfg.unused_question_word_weight)
        if off:
            reasons.append(f"{FIGURE_OFF_QUESTION}:{','.join(off)}")

    # What something means or how to do it: the answer's words must come from the lines on the question
    if cfg.require_claims_about_question and kinds == () and not entity_codes(question):
        borrowed = words_off_question(answer, question, context, cfg.min_question_coverage, cfg.min_entity_word_share,
                                      cfg.unused_question_word_weight)
        if borrowed:
            reasons.append(f"{CLAIM_OFF_QUESTION}:{','.join(borrowed)}")

    if cfg.require_names_about_question and kinds == ("name",):
        off_names = names_off_question(answer, question, passages, cfg.specific_name_share,
                                       cfg.min_question_coverage)
        if off_names:
            reasons.append(f"{NAME_OFF_QUESTION}:{','.join(off_names)}")

    if cfg.refuse_unstated_question_words:
        unstated = unstated_question_words(answer, question, passages)
        if unstated:
            reasons.append(f"{UNSTATED_QUESTION_WORD}:{','.join(unstated)}")

    # Only where the type says little (a name, or no type): "Payload: 25 kg" answers "How much
    # weight...?" without the word "weight", and the weight type already checks that answer.
    if cfg.require_question_topic and kinds in ((), ("name",)) and not addresses_question(
        answer, question, passages, cfg.grounding_word_overlap
    ):
        reasons.append(OFF_QUESTION)
    return reasons


def quoted_about_asked(sentence: str, question: str) -> str:
    """The part of a context sentence to quote for the question: of a table row comparing entities,
    the asked entity's value with the row's label (its neighbours' values would be wrong answers);
    any other sentence whole."""
    asked = entity_codes(question)
    picked = [cell.text for cell in cells_by_entity(sentence) if cell.entities & asked]
    return picked[0] if len(picked) == 1 else sentence


def product_lines(context: Sequence[Statement]) -> set[str]:
    """The product lines a context names: the names it writes before model codes ("Vela" of "Vela V20")."""
    return {m.group(1).lower() for statement in context for m in NAME_BEFORE_CODE.finditer(statement.text)}


def read_context(context: Sequence[Statement]) -> tuple[Mapping, Mapping, set[str]]:
    """What ``sentence_fits`` reads of the whole context, built once when many sentences are tried."""
    return by_text(context), owners_by_figure(context), product_lines(context)


def _names_another_product_line(text: str, question: str, lines: set[str]) -> bool:
    """Does the text name one of the context's product ``lines`` other than the one the question
    names, and not that one?"""
    asked = {word.lower() for word in WORD.findall(question)} & lines
    said = {word.lower() for word in WORD.findall(text)} & lines
    return bool(asked) and bool(said) and not said & asked


def figures_off_question(answer: str, question: str, passages: Sequence[str], min_coverage: float,
                         context: Sequence[Statement] | None = None, unused_weight: float = 0.0) -> list[str]:
    """The answer's figures when no statement of the context that holds one of them says at least
    ``min_coverage`` of what the question is about (``question_coverage``); empty when one does,
    or when the answer states no figure of the context. A small model answers "How long until my
    refund?" with the shipping line's "2 business days": grounded, of the asked type, and about
    something else; nor may another statement of the asked type say more of the question. One
    figure on the question is enough: a right answer may add a neighbour's."""
    context = statements(passages) if context is None else context
    counted = quantities(answer)  # "3-5 business days": the 5 is counted in days

    def holding(key) -> list[Statement]:
        return [s for s in context if key in (s.counts if isinstance(key, tuple) else s.numbers)]

    stated = {figure: _in_its_unit(figure, counted, holding) for figure in figures(answer) - figures(question)}
    worded, priced_elsewhere = _worded_answers(answer, question)
    for phrase in worded:  # "at no cost" is as much the answer as "EUR 9.90"
        stated[phrase] = [s for s in context if re.search(rf"(?<![\w-]){re.escape(phrase)}(?![\w-])", s.text, re.I)]
    stated = {figure: holders for figure, holders in stated.items() if holders}  # the rest is grounding's job
    if not stated:  # "we email a free shipping label" is all it says of a repair's cost: about something else
        return sorted(priced_elsewhere) if not figures(answer) - figures(question) else []
    vocabulary = context_vocabulary(context)
    said = max(question_coverage(s.text, question, s.setting, vocabulary, unused_weight) for holders in stated.values() for s in holders)
    kinds, asked = expected_answer_type(question), entity_codes(question)
    # another statement of the asked type (about the asked model, if one is named) saying more of the
    # question is the one that answers it: "how long do I hold the Reset button" is not "the router
    # restarts ..., which takes 3 minutes"
    best = max((question_coverage(s.text, question, s.setting, vocabulary, unused_weight) for s in context
                if has_answer_of_type(s.text, kinds) and (not asked or s.entities & asked)),
               default=0.0) if kinds not in ((), ("name",)) else 0.0
    return [] if said >= min_coverage and said >= best else sorted(stated)


# The types whose words are values ("free", "lifetime", "midnight"); a time's or a count's words
# ("within", "after", "each") are the sentence's grammar, found in lines about anything.
_WORDED_KINDS = ("money", "duration", "clock")


def _worded_answers(answer: str, question: str) -> tuple[set[str], set[str]]:
    """The answer's parts of the asked type written without a figure ("free", "at no cost",
    "lifetime", "midnight"), lower-cased, that the question does not say itself; and apart, those
    that price a thing the question does not ask about: "we email a free shipping label" does not say
    what a repair costs, while "free standard delivery" says what delivery costs."""
    text, asked = CITATION_PATTERN.sub(" ", answer), question.lower()
    topic = stems(content_words(question))
    worded, elsewhere = set(), set()
    for kind in expected_answer_type(question):
        if kind not in _WORDED_KINDS:
            continue
        for match in ANSWER_PATTERNS[kind].finditer(text):
            phrase = match.group().strip().lower()
            if any(ch.isdigit() for ch in phrase) or phrase in asked:
                continue
            (elsewhere if _prices_another_thing(text[match.end():], topic) else worded).add(phrase)
    return worded, elsewhere


def _prices_another_thing(after: str, topic: set[str]) -> bool:
    """Does a "free" stand before what it prices ("a free shipping label", up to three words, up to a
    word such as "for" or "within" that goes on with the sentence), and is none of that the question's?"""
    words = []
    for word in re.match(r"[ \t]*((?:[A-Za-z][\w-]*[ \t]*){0,3})", after).group(1).split():
        if word.lower() in _LINKING_WORDS:
            break
        words.append(word)
    named = stems(content_words(" ".join(words)))
    return bool(named) and not named & topic


# Words after "free" that go on with the sentence rather than name what is free.
_LINKING_WORDS = frozenset("within for of from to in on at if when while until unless after before during over under "
                           "and or but with without via per across throughout".split())


def best_question_coverage(question: str, context: Sequence[Statement], vocabulary: set[str],
                           unused_weight: float = 0.0) -> float:
    """The most that any statement of the asked type which the coverage rule reads (a labelled one,
    or any about the model the question names) says of what the question is about. A quote must
    say as much: "How long does the V20 run in Max mode?" is not answered by the standard-mode
    runtime row while a sentence about Max mode gives the V20's runtime. That sentence counts even
    where it cannot be quoted: the row is then not quoted either, and the answer is "I don't know",
    not the standard-mode runtime."""
    kinds, asked = expected_answer_type(question), entity_codes(question)
    return max((question_coverage(s.text, question, s.setting, vocabulary, unused_weight) for s in context
                if (s.entities & asked if asked else is_labelled(s.text)) and not HEADING.match(s.text)
                and has_answer_of_type(s.text, kinds)),
               default=0.0)


def sentence_fits(sentence: str, question: str, context: Sequence[Statement] | None = None,
                  vocabulary: set[str] | None = None, min_coverage: float = 0.0,
                  read: tuple[Mapping, Mapping, set[str]] | None = None, unused_weight: float = 0.0,
                  refuse_siblings: bool = False) -> bool:
    """Whether one context sentence can be the extractive answer: it holds an answer of the asked
    type; when the question names an entity, it is a statement about that entity and gives no
    look-alike's figure as that entity's; with ``refuse_siblings``, it is not about a sibling of what
    was asked (``statement_about_sibling``); and it says at least ``min_coverage`` of what the question is about
    (``question_coverage``, with ``vocabulary`` and ``unused_weight``). ``read`` is ``read_context(context)``, built once
    when many sentences are tried."""
    if not has_answer_of_type(sentence, expected_answer_type(question)):
        return False
    unit = unit_asked(question)
    if unit and not counts_in(unit, sentence):
        return False  # "how many litres" is not answered by "7 weeks"
    context = context or ()
    statements_of, owners, lines = read or read_context(context)
    entities = set(entity_codes(sentence))
    setting = section = ""  # its headings and list item; its nearest heading
    for statement in statements_of.get(sentence, ()):
        entities |= statement.entities
        setting = setting or statement.setting
        section = section or f"{statement.section} {statement.item}"
    asked = entity_codes(question)
    if asked and not entities & asked:
        return False
    if asked and _names_another_product_line(f"{section} {sentence}", question, lines):
        return False  # the Vela's E5 row does not say what E5 means on a Nimbus router
    if asked and _stated_about_others(sentence, asked, owners):
        return False  # it gives a look-alike's figure as the asked one's: the answer check would refuse it
    if refuse_siblings and about_a_sibling(sentence, question, statements_of):
        return False  # the Riverside line for the Hillcrest branch: the answer check would refuse it
    # Prose says its subject in too many ways to count words, unless a named model narrows it down
    # to that model's statements, of which only the asked attribute's answers.
    if vocabulary is None or not (asked or is_labelled(sentence)):
        return True
    return question_coverage(sentence, question, setting, vocabulary, unused_weight) >= min_coverage
