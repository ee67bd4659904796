"""Follow-ups rewritten as standalone questions: the rewrite check, the rules' rewrite, the chain that
tries the model first, and the graph reading the conversation from its checkpointer. The real chat
model and MongoDB are in integration_tests/test_condense_question_real.py."""

from __future__ import annotations

import pytest
from langchain_core.messages import AIMessage, HumanMessage
from langgraph.checkpoint.memory import InMemorySaver

from keel.chains.condense import AS_ASKED, MODEL, RULES, STANDALONE, condense_question
from keel.chains.followup_rules import parts_of, rewrite_by_rules, subject_of
from keel.checks.followup_rewrite import (
    BARE_PHRASE,
    LEAD_ONLY,
    NOT_A_FOLLOWUP,
    REFERRING,
    followup_kind,
    rewrite_problem,
)
from keel.graph import chat_graph
from tests.answer_fakes import KeywordEmbeddings, ScriptedChatModel
from tests.fakes import StaticRetriever, WordTokenizer, passage_doc


def word_overlap(text: str, others) -> list[float]:
    """Similarity by shared words, articles and prepositions aside: enough to tell parts apart."""
    ignore = {"the", "a", "an", "for", "on", "in", "of"}
    words = set(text.lower().split()) - ignore
    return [len(words & (set(other.lower().split()) - ignore)) / max(1, len(words)) for other in others]


# --- which questions lean on the conversation ------------------------------------------------------

@pytest.mark.parametrize("question, kind", [
    ("And on Sundays?", BARE_PHRASE),
    ("What about abroad?", BARE_PHRASE),
    ("The late shift?", BARE_PHRASE),
    ("Who signed it?", REFERRING),
    ("How often is it replaced?", REFERRING),
    ("What's its price?", REFERRING),
    ("And how much does the Aurora A7 cost?", LEAD_ONLY),
    ("How much does the Aurora A7 cost?", NOT_A_FOLLOWUP),
    # a question that names its own subject is not rewritten for a pronoun further on
    ("Does the warranty of the Vela V20 cover its battery pack?", NOT_A_FOLLOWUP),
    # short messages that are not follow-ups: thanks, commands, a question in its own words
    ("Thanks!", NOT_A_FOLLOWUP),
    ("Ok", NOT_A_FOLLOWUP),
    ("List all fees", NOT_A_FOLLOWUP),
    ("Summarise the memo", NOT_A_FOLLOWUP),
])
def test_follow_up_kinds(question, kind):
    assert followup_kind(question) == kind


# --- the rewrite check -------------------------------------------------------------------------------

CONVERSATION = ["When is the Alder clinic open on Saturdays?", "The Alder clinic is open from 9 am to 1 pm on Saturdays."]


def test_a_rewrite_that_keeps_the_users_words_and_adds_the_conversations_passes():
    assert rewrite_problem("And on Sundays?", "When is the Alder clinic open on Sundays?", CONVERSATION) is None


def test_a_rewrite_that_drops_the_users_word_is_refused():
    problem = rewrite_problem("And on Sundays?", "When is the Alder clinic open on Saturdays?", CONVERSATION)
    assert problem.code == "dropped_words" and problem.words == ("sunday",)


def test_a_rewrite_that_adds_a_word_nobody_said_is_refused():
    problem = rewrite_problem("And on Sundays?", "When is the Birch clinic open on Sundays?", CONVERSATION)
    assert problem.code == "added_words" and problem.words == ("birch",)


def test_a_rewrite_that_fills_in_nothing_is_unresolved():
    assert rewrite_problem("Who signed it?", "Who signed it?", ["What did the memo announce?"]).code == "unresolved"


def test_an_answer_made_only_of_the_conversations_words_is_not_a_question():
    answer = "The Alder clinic is open from 9 am to 1 pm on Saturdays and on Sundays."
    assert rewrite_problem("And on Sundays?", answer, CONVERSATION).code == "not_a_question"


def test_a_runaway_rewrite_is_refused():
    long = "When is the Alder clinic open on Sundays " + "and Saturdays " * 12 + "?"
    assert rewrite_problem("And on Sundays?", long, CONVERSATION).code == "too_long"


def test_an_answer_instead_of_a_question_is_caught_by_what_it_adds_or_drops():
    answer = "The Alder clinic is closed on Sundays."
    assert rewrite_problem("And on Sundays?", answer, CONVERSATION).code == "not_a_question"


# --- the rules -------------------------------------------------------------------------------------------

@pytest.mark.parametrize("question, previous, expected", [
    ("And on Sundays?", "When is the Alder clinic open on Saturdays?", "When is the Alder clinic open on Sundays?"),
    ("And for the late shift?", "What is the allowance for the early shift on Sundays?",
     "What is the allowance for the late shift on Sundays?"),
    ("And the late shift?", "What is the allowance for the early shift?", "What is the allowance for the late shift?"),
    ("Who signed it?", "What did the memo announce?", "Who signed the memo?"),
    ("How often is it replaced?", "How long does the main filter of the Aurora A7 last?",
     "How often is the main filter of the Aurora A7 replaced?"),
    ("What is its price?", "How long does the main filter of the Aurora A7 last?",
     "What is the main filter of the Aurora A7's price?"),
    ("And how much does the A7 cost?", "How much does the Mini cost?", "How much does the A7 cost?"),
])
def test_rules_rewrite(question, previous, expected):
    assert rewrite_by_rules(question, previous, word_overlap) == expected


def test_a_group_stands_in_for_the_group_it_reads_closest_to():
    def groups_alike(text, others):  # an embedding would put "interns" near "full-time employees"
        return [0.8 if "employees" in other else 0.1 for other in others]

    rewrite = rewrite_by_rules("And for interns?", "How many days of annual leave do full-time employees get?",
                               groups_alike)
    assert rewrite == "How many days of annual leave do interns get?"


def test_a_phrase_like_no_part_of_the_last_question_is_asked_about_its_subject():
    # "the price" reads like nothing in the question, so it is not put in place of the clinic
    rewrite = rewrite_by_rules("And the price?", "When is the Alder clinic open on Saturdays?", word_overlap)
    assert rewrite == "The price, for the Alder clinic?"
    assert rewrite_problem("And the price?", rewrite, ["When is the Alder clinic open on Saturdays?"]) is None


def test_parts_keep_of_phrases_and_leave_the_verb_out():
    assert subject_of("How long does the main filter of the Aurora A7 last?") == "the main filter of the Aurora A7"
    assert [p.text for p in parts_of("How many laptops were delivered?")] == ["laptops"]
    assert [p.text for p in parts_of("When is the clinic open on Saturdays?") if p.prepositional] == ["on Saturdays"]


# --- the chain: model first, then the rules, then as asked ------------------------------------------------

HISTORY = [HumanMessage("When is the Alder clinic open on Saturdays?"),
           AIMessage("The Alder clinic is open from 9 am to 1 pm on Saturdays [Source 1].")]


def test_a_standalone_question_costs_no_model_call():
    model = ScriptedChatModel(responses=[], calls=[])
    result = condense_question("How much is a flu vaccination?", HISTORY, "", mode="model", model=lambda: model,
                               similarity=word_overlap)
    assert result.method == STANDALONE and result.question == "How much is a flu vaccination?" and model.calls == []


def test_the_models_rewrite_is_used_when_it_passes():
    model = ScriptedChatModel(responses=["When is the Alder clinic open on Sundays?"], calls=[])
    result = condense_question("And on Sundays?", HISTORY, "", mode="model", model=lambda: model, similarity=word_overlap)
    assert (result.question, result.method) == ("When is the Alder clinic open on Sundays?", MODEL)
    sent = "\n".join(str(m.content) for m in model.calls[0]["messages"])
    assert "user: When is the Alder clinic open on Saturdays?" in sent and "And on Sundays?" in sent


def test_a_model_rewrite_that_answers_instead_falls_back_to_the_rules():
    model = ScriptedChatModel(responses=["The clinic is closed on Sundays."], calls=[])
    result = condense_question("And on Sundays?", HISTORY, "", mode="model", model=lambda: model, similarity=word_overlap)
    assert (result.question, result.method) == ("When is the Alder clinic open on Sundays?", RULES)
    assert result.problem.startswith("model:not_a_question")


def test_rules_mode_never_calls_the_model():
    model = ScriptedChatModel(responses=[], calls=[])
    result = condense_question("And on Sundays?", HISTORY, "", mode="rules", model=lambda: model, similarity=word_overlap)
    assert result.method == RULES and model.calls == []


def test_off_asks_as_typed():
    result = condense_question("And on Sundays?", HISTORY, "", mode="off", similarity=word_overlap)
    assert (result.question, result.method) == ("And on Sundays?", STANDALONE)


def test_without_history_a_follow_up_is_asked_as_typed():
    result = condense_question("And on Sundays?", [], "", mode="rules", similarity=word_overlap)
    assert result.question == "And on Sundays?"


def test_when_nothing_passes_the_question_is_asked_as_typed_with_the_reason():
    model = ScriptedChatModel(responses=["Who signed it?"], calls=[])
    history = [HumanMessage("Hello"), AIMessage("Hello! Ask me about your documents.")]
    result = condense_question("Who signed it?", history, "", mode="model", model=lambda: model, similarity=word_overlap)
    assert result.method == AS_ASKED and result.question == "Who signed it?"
    assert "model:unresolved" in result.problem and "rules:" in result.problem


def test_rules_leave_another_language_as_asked():
    french = condense_question("Et le dimanche ?", HISTORY, "", mode="rules", similarity=word_overlap, language="fr")
    assert french.question == "Et le dimanche ?"
    # a question the English cues take for a follow-up, in a conversation detected as German
    mixed = condense_question("And on Sundays?", HISTORY, "", mode="rules", similarity=word_overlap, language="de")
    assert (mixed.question, mixed.method) == ("And on Sundays?", AS_ASKED) and "not_en" in mixed.problem


def test_a_chain_of_follow_ups_keeps_the_first_subject():
    history = [*HISTORY, HumanMessage("And on Sundays?"), AIMessage("I don't know based on the provided documents."),
               HumanMessage("And on holidays?"), AIMessage("I don't know based on the provided documents.")]
    result = condense_question("What about on Mondays?", history, "When is the Alder clinic open on holidays?",
                               mode="rules", similarity=word_overlap)
    assert (result.question, result.method) == ("When is the Alder clinic open on Mondays?", RULES)


def test_the_last_turns_own_rewrite_is_what_a_second_follow_up_leans_on():
    # "And on Saturdays?" leans on "... on Sundays?" (the last turn as answered), not on the user's "And on Sundays?"
    history = [*HISTORY, HumanMessage("And on Sundays?"), AIMessage("I don't know based on the provided documents.")]
    result = condense_question("And on Saturdays?", history, "When is the Alder clinic open on Sundays?",
                               mode="rules", similarity=word_overlap)
    assert result.question == "When is the Alder clinic open on Saturdays?"


# --- the graph: the conversation comes from the checkpointer --------------------------------------------

FACT = "The Alder clinic is open from 9 am to 1 pm on Saturdays and from 10 am to 2 pm on Sundays."


class RecordingRetriever(StaticRetriever):
    queries: list = []

    def _get_relevant_documents(self, query, *, run_manager):
        self.queries.append(query)
        return super()._get_relevant_documents(query, run_manager=run_manager)


def test_a_follow_up_is_searched_and_answered_as_its_standalone_question():
    answer = "<answer>The Alder clinic is open from 10 am to 2 pm on Sundays [Source 1].</answer>"
    model = ScriptedChatModel(responses=[answer] * 10, calls=[])
    retriever = RecordingRetriever(documents=[passage_doc(FACT)], queries=[])
    graph = chat_graph.build_graph(chat_model=model, embeddings=KeywordEmbeddings(), retriever=retriever,
                                   tokenizer=WordTokenizer(), checkpointer=InMemorySaver())
    config = {"configurable": {"user_id": "alice", "thread_id": "conv-1", "followup_rewrite": "rules"}}
    graph.invoke({"messages": [("human", "When is the Alder clinic open on Saturdays?")]}, config)
    second = graph.invoke({"messages": [("human", "And on Sundays?")]}, config)
    assert second["standalone_question"] == "When is the Alder clinic open on Sundays?"
    assert "When is the Alder clinic open on Sundays?" in retriever.queries
    assert "And on Sundays?" not in retriever.queries
    assert [m.content for m in second["messages"] if m.type == "human"][-1] == "And on Sundays?", "the history keeps the user's words"
    assert second["reasons"][0] == "followup_rules", "the turn says it was rewritten"
    third = graph.invoke({"messages": [("human", "Thanks!")]}, config)
    assert third["standalone_question"] == "Thanks!", "a message that leans on nothing is asked as typed"


def test_a_refused_turn_does_not_carry_the_last_turns_rewrite():
    model = ScriptedChatModel(responses=["<answer>The Alder clinic is open on Sundays [Source 1].</answer>"] * 10, calls=[])
    graph = chat_graph.build_graph(chat_model=model, embeddings=KeywordEmbeddings(),
                                   retriever=StaticRetriever(documents=[passage_doc(FACT)]),
                                   tokenizer=WordTokenizer(), checkpointer=InMemorySaver())
    config = {"configurable": {"user_id": "alice", "thread_id": "conv-2", "max_input_tokens": 12}}
    graph.invoke({"messages": [("human", "When is the Alder clinic open on Saturdays?")]}, config)
    graph.invoke({"messages": [("human", "And on Sundays?")]}, config)
    refused = graph.invoke({"messages": [("human", "word " * 40)]}, config)
    assert refused["status"] == "exceeded_token_budget"
    assert refused["standalone_question"].startswith("word"), "not the last turn's rewrite"


class ExactModerator:
    """Refuses exactly the texts it is given (category S7), answers every other."""

    def __init__(self, *refused: str):
        self.refused, self.judged = set(refused), []

    def check(self, text):
        from keel.checks.moderation import ModerationResult

        self.judged.append(text)
        return ModerationResult(False, "S7") if text in self.refused else ModerationResult(True)


def follow_up_graph(moderator):
    # each turn's own answer (the same answer twice would answer the first question, not the second)
    answers = ["<answer>The Alder clinic is open from 9 am to 1 pm on Saturdays [Source 1].</answer>",
               *["<answer>The Alder clinic is open from 10 am to 2 pm on Sundays [Source 1].</answer>"] * 10]
    return chat_graph.build_graph(chat_model=ScriptedChatModel(responses=answers, calls=[]),
                                  embeddings=KeywordEmbeddings(), retriever=StaticRetriever(documents=[passage_doc(FACT)]),
                                  tokenizer=WordTokenizer(), checkpointer=InMemorySaver(), moderator=moderator)


def test_a_follow_up_refused_as_typed_is_judged_as_the_question_it_stands_for():
    moderator = ExactModerator("And on Sundays?")
    graph = follow_up_graph(moderator)
    config = {"configurable": {"user_id": "alice", "thread_id": "conv-3", "followup_rewrite": "rules"}}
    graph.invoke({"messages": [("human", "When is the Alder clinic open on Saturdays?")]}, config)
    second = graph.invoke({"messages": [("human", "And on Sundays?")]}, config)
    assert "When is the Alder clinic open on Sundays?" in moderator.judged  # then the answer, as always
    assert second["status"] == "success" and "10 am" in second["answer"]


def test_a_follow_up_whose_rewrite_is_refused_too_or_that_is_asked_alone_stays_refused():
    rewrite = "When is the Alder clinic open on Sundays?"
    config = {"configurable": {"user_id": "alice", "thread_id": "conv-4", "followup_rewrite": "rules"}}
    graph = follow_up_graph(ExactModerator("And on Sundays?", rewrite))
    graph.invoke({"messages": [("human", "When is the Alder clinic open on Saturdays?")]}, config)
    second = graph.invoke({"messages": [("human", "And on Sundays?")]}, config)
    assert second["status"] == "not_safe" and second["reasons"] == ["moderation:S7"]
    alone = follow_up_graph(ExactModerator("And on Sundays?")).invoke(
        {"messages": [("human", "And on Sundays?")]}, {"configurable": {"user_id": "alice", "thread_id": "conv-5"}})
    assert alone["status"] == "not_safe", "no conversation: nothing to rewrite, the typed verdict holds"
    off = follow_up_graph(ExactModerator("And on Sundays?"))
    off_config = {"configurable": {"user_id": "alice", "thread_id": "conv-6", "followup_rewrite": "off"}}
    off.invoke({"messages": [("human", "When is the Alder clinic open on Saturdays?")]}, off_config)
    assert off.invoke({"messages": [("human", "And on Sundays?")]}, off_config)["status"] == "not_safe"
