"""Strict-grounding settings (answer from the documents or say so): one group of ``keel.core.configuration.Configuration``.
Every field is set the same way as any other (``config["configurable"]``); docs/grounding.md explains
each gate and where its default comes from. A few (the mode, the language rule, citations, the answer
format) are request scope: a caller may choose them per question."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from keel.core.settings.checks import AT_LEAST_ONE, NON_NEGATIVE, POSITIVE, SHARE, CheckedSettings
from keel.core.settings.scope import DEPLOYMENT, default_scope

GroundingMode = Literal["strict", "open"]


@default_scope(DEPLOYMENT)
@dataclass(kw_only=True, frozen=True)
class GroundingSettings(CheckedSettings):
    """Pre-generation gates, prompt rules, post-generation checks and the fallback."""

    grounding_mode: GroundingMode = field(
        default="strict",
        metadata={"doc": "strict: answer only from the user's documents, or say the fallback; open: a question the "
                  "documents do not answer may be answered from the model's general knowledge, marked "
                  "with open_mode_mark.", "scope": "request"},
    )
    fallback_answer: str = field(
        default="I don't know based on the provided documents.",
        metadata={"doc": "What Keel says in default_language when the documents do not answer the question.",
                  "min_chars": 1},
    )
    fallback_answers: dict[str, str] = field(
        default_factory=lambda: {
            "en": "I don't know based on the provided documents.",
            "de": "Das weiß ich anhand der bereitgestellten Dokumente nicht.",
            "fr": "Je ne sais pas d'après les documents fournis.",
            "es": "No lo sé según los documentos proporcionados.",
            "it": "Non lo so in base ai documenti forniti.",
            "pt": "Não sei com base nos documentos fornecidos.",
            "nl": "Dat weet ik niet op basis van de aangeleverde documenten.",
            "hi": "मुझे दिए गए दस्तावेज़ों के आधार पर इसका उत्तर नहीं पता।",
        },
        metadata={"doc": "The fallback per language (ISO 639-1 code -> text); fallback_answer is used for "
                  "default_language.", "min_chars": 1},
    )
    enforce_language_match: bool = field(
        default=True, metadata={"doc": "Answer (and say 'I don't know') in the question's language.", "scope": "request"}
    )
    answer_languages: tuple[str, ...] = field(
        default=("en",),
        metadata={"doc": "Languages (ISO 639-1) the chat model writes well enough to answer in. A question in another "
                  "language is answered in default_language, as the model writes it from the documents, under a "
                  "line in the asker's language that says so (answer_frames), instead of a translation the model "
                  "makes up; its fallback and refusals stay in the asker's language. SmolLM2-135M, the default, "
                  "writes English; a pool model that writes German, French or Spanish can add them.",
                  "min_chars": 1},
    )
    answer_frames: dict[str, str] = field(
        default_factory=lambda: {
            "de": "Aus Ihren Dokumenten (die Antwort ist auf {language}, wie die Quellen):",
            "fr": "D'après vos documents (la réponse est en {language}, comme les sources) :",
            "es": "Según sus documentos (la respuesta está en {language}, como las fuentes):",
            "it": "Dai suoi documenti (la risposta è in {language}, come le fonti):",
            "pt": "Dos seus documentos (a resposta está em {language}, como as fontes):",
            "nl": "Uit uw documenten (het antwoord is in het {language}, zoals de bronnen):",
        },
        metadata={"doc": "The line above an answer written in default_language for a question in a language not in "
                  "answer_languages, per asker's language; {language} is default_language's name in the asker's "
                  "language (answer_language_names). A language without a frame gets the answer alone.",
                  "min_chars": 1},
    )
    answer_language_names: dict[str, str] = field(
        default_factory=lambda: {"de": "Englisch", "fr": "anglais", "es": "inglés", "it": "inglese", "pt": "inglês",
                                 "nl": "Engels"},
        metadata={"doc": "default_language's name in each asker's language, for answer_frames.", "min_chars": 1},
    )
    default_language: str = field(
        default="en",
        metadata={"doc": "Language (ISO 639-1) of a question whose language cannot be told, and of fallback_answer.",
                  "min_chars": 1},
    )
    language_min_confidence: float = field(
        default=0.5,
        metadata={"doc": "Below this detector probability the question counts as default_language.", **SHARE},
    )
    grounding_word_overlap: float = field(
        default=0.5,
        metadata={"doc": "Share of an answer sentence's words found in one context sentence that grounds it.", **SHARE},
    )
    grounding_threshold: float = field(
        default=0.7, metadata={"doc": "Share of the answer's sentences that must be grounded for it to pass.", **SHARE}
    )
    drop_ungrounded_sentences: bool = field(
        default=True, metadata={"doc": "An answer that passes grounding_threshold is shown without its unsupported "
                                "sentences (reason ungrounded_sentences_dropped:N)."},
    )
    grounding_semantic_similarity: float = field(
        default=0.8,
        metadata={"doc": "A sentence below the word overlap still passes as a paraphrase at this embedding "
                  "similarity to a context sentence, if every name and number in it is in the context.", **SHARE},
    )
    min_confidence: float = field(
        default=0.6,
        metadata={"doc": "Retrieval confidence (the passages' mean similarity through the logistic map of "
                  "confidence_slope and confidence_intercept) below which the model is not asked: low_confidence.",
                  **SHARE},
    )
    whole_question_waives_confidence: bool = field(
        default=True,
        metadata={"doc": "Below min_confidence the model is still asked when one statement of the context, read "
                  "under its headings, says every word and name of a question that asks for a type of answer "
                  "(an amount, a duration, a name...) and holds an answer of that type."},
    )
    confidence_slope: float = field(
        default=2.8851,
        metadata={"doc": "Slope of the logistic map similarity -> confidence; fitted by "
                  "`python -m keel.evals.calibration`.", **POSITIVE},
    )
    confidence_intercept: float = field(
        default=-0.854,
        metadata={"doc": "Intercept of the logistic map; puts min_confidence at the dev set's best similarity "
                  "cut-off (0.4365). Beyond +-20 the map is flat.", "minimum": -20.0, "maximum": 20.0},
    )
    require_citations: bool = field(
        default=False,
        metadata={"doc": "Reject answers without [Source N]. Off by default: the 135M "
                  "default model rarely cites; grounding verification still applies.", "scope": "request"},
    )
    hallucination_indicators: tuple[str, ...] = field(
        default=("as we know", "in general", "typically", "usually", "it is well known", "common knowledge",
                 "everyone knows"),
        metadata={"doc": "Phrases (whole words, any case) that mark an answer reaching beyond its context; one the "
                  "context does not use fails a post-generation check.", "min_chars": 1},
    )
    max_answer_context_ratio: float = field(
        default=2.0,
        metadata={"doc": "An answer longer than this many times its context (in characters) fails a "
                  "post-generation check.", **POSITIVE},
    )
    post_check_penalty: float = field(
        default=0.5,
        metadata={"doc": "Deducted per failed post-generation check (keel/checks/post_checks.py: no/unknown citation, "
                  "indicator phrase, longer than context); 0.5 puts any failing answer below quality_threshold.",
                  **SHARE},
    )
    answer_format: Literal["plain", "sectioned"] = field(
        default="plain",
        metadata={"doc": "sectioned: ask for [CITATION] / [ANSWER] / [EXPLANATION] and parse them into "
                  "the result's `sections`; plain: the answer only.", "scope": "request"},
    )
    history_max_tokens: int = field(
        default=1024,
        metadata={"doc": "Earlier turns in the prompt are trimmed (oldest first) to this many tokens, on top of "
                  "history_max_turns, so a long history never squeezes out the passages; 0 = turns only.",
                  **NON_NEGATIVE},
    )
    language_mismatch_penalty: float = field(
        default=0.5, metadata={"doc": "Deducted when enforce_language_match is on and the answer is clearly in "
                               "another language than the question.", **SHARE},
    )
    language_mismatch_min_confidence: float = field(
        default=0.9,
        metadata={"doc": "Detector probability the answer's language needs to count as 'clearly' other.", **SHARE}
    )
    language_mismatch_min_chars: int = field(
        default=40, metadata={"doc": "Answers shorter than this many characters (names, numbers) are never judged by "
                              "language.", **NON_NEGATIVE}
    )
    injection_patterns: tuple[str, ...] = field(
        default=(
            r"\b(ignore|disregard|forget|override)\b[^.!?]{0,40}\b(rules?|instructions?|prompts?|guidelines|"
            r"above|previous|system)\b",
            r"\byou (must|should) (now )?(say|answer|reply|respond|tell)\b",
            r"\b(new|updated) (system )?instructions?\s*:",
            r"\bsystem prompt\b",
        ),
        metadata={"doc": "Regexes (case-insensitive) for instructions planted in documents; context sentences that "
                  "match are removed before the model sees them (reason context_injection_removed).",
                  "format": "regex"},
    )
    require_question_terms: bool = field(
        default=True,
        metadata={"doc": "Pre-generation: when a name or number the question asks about is in none of the passages, "
                  "answer insufficient_context without a model call (reason question_terms_not_in_context)."},
    )
    require_evidence: bool = field(
        default=True,
        metadata={"doc": "Pre-generation (keel/checks/answerability.py): the evidence_sentences closest to the question must "
                  "name its names and numbers, and state a negation if the question is negated; else "
                  "insufficient_context. Dev set: stops 40% of unanswerable, 4.8% of answerable-with-evidence."},
    )
    evidence_sentences: int = field(
        default=2, metadata={"doc": "Context sentences the evidence checks read.", **AT_LEAST_ONE}
    )
    topic_relevance_weight: float = field(
        default=0.2,
        metadata={"doc": "Added to a context sentence's embedding similarity to the question, times the share of the "
                  "question's topic words it says, where sentences are ranked as evidence, for the extractive quote "
                  "and for answer focus: the line that says 'founded' answers 'In which year was Corvan Home "
                  "founded?', not the one closest to 'Corvan Home'. 0 ranks by the embedding alone.", **NON_NEGATIVE},
    )
    question_negation_pattern: str = field(
        default=r"\b(not|never|cannot)\b|n't\b",
        metadata={"doc": "A question matching this regex (case-insensitive) is negated.", "format": "regex"},
    )
    evidence_negation_pattern: str = field(
        default=r"\b(not|no|never|cannot|without|none|neither|nor|except|unable|lack\w*|fail\w*|exclud\w*|unknown|"
                r"impossible|non)\b|n't\b",
        metadata={"doc": "Evidence matching this regex states a negation or exclusion (kept broad: misses cost "
                  "answers).", "format": "regex"},
    )
    open_mode_mark: str = field(
        default="(Not from your documents)",
        metadata={"doc": "Prefixed in code to every open-mode answer that comes from general knowledge."},
    )
    answer_focus_ratio: float = field(
        default=0.8,
        metadata={"doc": "The answer's evidence must be this relevant to the question, relative to the best "
                  "context sentence (keel.checks.answer_checks.answer_focus). Provisional; calibrated on the dev set.",
                  **SHARE},
    )
    off_focus_penalty: float = field(
        default=0.5, metadata={"doc": "Deducted from the quality score when the answer's focus is below "
                               "answer_focus_ratio.", **SHARE}
    )
    require_answer_type: bool = field(
        default=True,
        metadata={"doc": "Post-generation (keel/checks/answer_fit.py): the answer must hold what the question asks for "
                  "('how long' a duration, 'how much does it cost' an amount, 'how many' a number, 'who' a name, "
                  "'when' a date or time); else reason answer_type_mismatch."},
    )
    require_focus_entity: bool = field(
        default=True,
        metadata={"doc": "Post-generation: when the question names a model or code (ZR-200, AX3000), the answer's "
                  "figures must come from statements about it, not about a look-alike; else reason wrong_entity."},
    )
    refuse_sibling_evidence: bool = field(
        default=True,
        metadata={"doc": "Post-generation and for the extractive quote: the statement an answer rests on must say "
                  "the question's qualifiers (the 'Hillcrest' of 'Hillcrest branch', the 'D' of 'band D'), not a "
                  "sibling written in the same frame ('Riverside branch', 'Band B'); else reason about_a_sibling."},
    )
    min_entity_word_share: float = field(
        default=0.5,
        metadata={"doc": "With require_focus_entity: of the words an answer says about the named model or code that "
                  "the context holds, at least this share must be in a statement about it (with its headings); "
                  "fewer, with the rest from other lines, is reason wrong_entity.", **SHARE},
    )
    require_question_topic: bool = field(
        default=True,
        metadata={"doc": "Post-generation, for 'who' and untyped questions: the answer with the sentences it rests on "
                  "must share a content word with the question; else reason does_not_address_question."},
    )
    require_bound_figures: bool = field(
        default=True,
        metadata={"doc": "Post-generation: each figure of an answer sentence must share a context line (with its heading) "
                  "with a word of that sentence beyond names, codes and units, so '18 months' from the warranty line is "
                  "not given as a runtime, and a range it states ('2 to 3 months') must be one the context states; "
                  "else reason figure_from_another_statement."},
    )
    require_figures_about_question: bool = field(
        default=True,
        metadata={"doc": "Post-generation: an answer that states figures must take one from a statement saying at least "
                  "min_question_coverage of what the question is about, so the shipping line's '2 business days' is "
                  "not given as the refund time, nor may it bound a figure only the other way from the question "
                  "('over EUR 50' for 'under EUR 50'); else reason figure_about_something_else."},
    )
    require_claims_about_question: bool = field(
        default=True,
        metadata={"doc": "Post-generation, for questions of no particular type that name no model ('What does a solid "
                  "red light mean?'): of the answer's words the context holds, at least min_entity_word_share must "
                  "stand in a statement saying min_question_coverage of the question, not only in other lines; "
                  "else reason claim_about_something_else."},
    )
    require_names_about_question: bool = field(
        default=True,
        metadata={"doc": "Post-generation, for 'who' questions: a name the answer gives must stand in a statement that, "
                  "with its headings and the statements beside it, says min_question_coverage of what the question is "
                  "about, so the support team's head is not given as who runs the press office, nor as the head of "
                  "marketing; else reason name_about_something_else."},
    )
    specific_name_share: float = field(
        default=0.5,
        metadata={"doc": "With require_names_about_question: a name the question gives ('Who was Emma's brother?') is "
                  "part of what it asks about when no heading and at most this share of the context's statements say "
                  "it; the company's name on every line is not.", **SHARE},
    )
    refuse_unstated_question_words: bool = field(
        default=True,
        metadata={"doc": "Post-generation: an answer may not repeat a word of what the question is about that no "
                  "passage uses ('the warranty for refurbished products is 2 years' when the documents never say "
                  "refurbished): it restates the question around another fact; else reason "
                  "question_word_not_in_documents."},
    )
    answer_fit_penalty: float = field(
        default=0.5,
        metadata={"doc": "Deducted per failed answer-fit check; 0.5 puts the answer below quality_threshold, so it is "
                  "retried and, if no attempt fits, ends in the fallback rather than a wrong success.", **SHARE},
    )
    unused_question_word_weight: float = field(
        default=0.5,
        metadata={"doc": "In min_question_coverage, the weight of a question word the context never uses: it may be "
                  "the asker's word for what the documents say ('seen' for 'visible') or what they never state "
                  "('refurbished'); 0 leaves it out, 1 counts it as any other. A question none of whose words the "
                  "context uses is held to no line. Measured against 0 on the retrieved passages of every question, "
                  "half keeps the extractive attempt from 3 more unanswerable help-desk questions and 3 more SQuAD "
                  "dev ones, with the same right quotes (docs/benchmarks.md).", **SHARE},
    )
    extractive_requires_fit: bool = field(
        default=True,
        metadata={"doc": "The extractive last attempt quotes only sentences of the asked type that are about the "
                  "entity the question names; with none, it answers with the fallback."},
    )
    min_quote_similarity: float = field(
        default=0.45,
        metadata={"doc": "The extractive last attempt answers only when one of its quoted sentences, as written or "
                  "read under its headings, has at least this embedding similarity to the question; else the "
                  "fallback. On the SQuAD dev set it stops 8% of the quotes for unanswerable questions and 4% of "
                  "the right ones (docs/grounding.md).", **SHARE},
    )
    min_uncovered_quote_similarity: float = field(
        default=0.6,
        metadata={"doc": "A quote of the extractive last attempt that says less than min_question_coverage of what "
                  "the question is about must read at least this close to it (as written or under its headings): "
                  "the best sentence of the right page that is about something else reads at about 0.5 to 0.6. "
                  "Measured on the SQuAD dev questions outside the eval sample (docs/benchmarks.md).", **SHARE},
    )
    min_question_coverage: float = field(
        default=0.6,
        metadata={"doc": "The share of what the question is about (its words beyond question, type and unit words; "
                  "one the context never uses weighs unused_question_word_weight) that a statement, read with its "
                  "headings, must say to answer it: a table row or 'Label: value' line the extractive attempt quotes "
                  "('the V25's dock' is not answered by the V25's weight row; prose only when the question names a "
                  "model), and, with require_figures_about_question, some statement holding a figure of the answer; "
                  "with require_names_about_question, the line naming a 'who' answer, every word counting.", **SHARE},
    )
