"""Every prompt Keel sends, as templates in one place.

Small models follow short, concrete instructions best; the rules follow seeds 001 and 004 (use
only the context, cite [Source N], say "I don't know", answer inside <answer> tags).
"""

from __future__ import annotations

from langchain_core.prompts import ChatPromptTemplate, MessagesPlaceholder

BASE_SYSTEM_PROMPT = "You are Keel, an assistant that answers questions from the user's documents."

LANGUAGE_RULE = "Always answer in {language}."

GROUNDED_RULES = """Rules:
1. Use ONLY the numbered context passages below. Do not use outside knowledge.
2. Cite the passage of every claim as [Source N].
3. If the context does not contain the answer, reply exactly: {fallback_answer}
4. Put the final answer inside <answer> and </answer> tags. Only that text is shown.
5. Do not repeat the question. Do not explain your reasoning in the answer."""

STRICT_RETRY_RULES = """You MUST follow these rules. The previous answer broke them.
1. Copy facts from the context passages only, in short sentences.
2. Every sentence ends with its citation, like [Source 1].
3. If the passages do not answer the question, reply exactly: {fallback_answer}
4. Write only: <answer>your answer</answer>"""

FEW_SHOT_EXAMPLE = """Example:
Context:
[Source 1] (handbook.pdf, page 3) The office opens at 8 am on weekdays.
Question: When does the office open?
<answer>The office opens at 8 am on weekdays [Source 1].</answer>"""

GENERAL_KNOWLEDGE_RULES = """No document matched this question. Answer briefly from general knowledge and
start with: "(Not from your documents)". If you are not sure, reply exactly: {fallback_answer}"""

CONTEXT_TEMPLATE = "[Source {number}] ({source}{page_label}) {text}"

USER_TEMPLATE = """Context:
{context}

Question: {question}"""

CONTINUATION_TEMPLATE = "Continue the answer exactly where it stopped. Do not repeat what is already written."

answer_prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "{system_prompt}\n\n{rules}\n\n{examples}"),
        MessagesPlaceholder("history"),
        ("human", USER_TEMPLATE),
    ]
)

general_prompt = ChatPromptTemplate.from_messages(
    [
        ("system", "{system_prompt}\n\n{rules}"),
        MessagesPlaceholder("history"),
        ("human", "{question}"),
    ]
)

EXCEEDED_TOKEN_BUDGET_MESSAGE = (
    "Your message is too long for this model: it has {tokens} tokens and the limit is {limit}. "
    "Please shorten it or split it into several questions."
)

NOT_SAFE_MESSAGE = "I can't help with that request."

ERROR_MESSAGE = "Something went wrong while answering: {error}"
