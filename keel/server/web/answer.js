// How an answer looks: one view per status Keel reports, so a grounded answer, "I don't know",
// a refusal, a question too long and an error never look alike. Text from answers and documents
// is only ever set as text (textContent), never parsed as HTML.

export const VIEWS = {
  success: { kind: "grounded", label: "From your documents" },
  open: {
    kind: "open",
    label: "Not from your documents",
    hint: "Answered from the model's general knowledge, not from your documents. Check it before you rely on it.",
  },
  insufficient_context: {
    kind: "unknown",
    label: "I don't know based on your documents",
    hint: "Your documents do not seem to answer this. Try other words, or add a document that covers it.",
  },
  low_confidence: {
    kind: "unknown",
    label: "I don't know based on your documents",
    hint: "The passages found were not close enough to the question to answer it safely.",
  },
  hallucination_detected: {
    kind: "unknown",
    label: "I don't know based on your documents",
    hint: "The drafted answer could not be backed by your documents, so Keel withheld it.",
  },
  not_safe: {
    kind: "refused",
    label: "Keel can't help with that",
    hint: "This request was refused by the safety check.",
  },
  exceeded_token_budget: {
    kind: "too-long",
    label: "Too long to answer",
    hint: "The question (with the conversation so far) is longer than Keel can read. Shorten it or start a new conversation.",
  },
  awaiting_review: {
    kind: "review",
    label: "Waiting for a reviewer",
    hint: "A person checks this answer before you see it. Open this conversation again later to read it.",
  },
  review_rejected: {
    kind: "unknown",
    label: "I don't know based on your documents",
    hint: "A reviewer withheld the drafted answer.",
  },
  error: {
    kind: "error",
    label: "Something went wrong",
    hint: "The answer could not be finished.",
    retry: true,
  },
};

export function viewFor(status, openMode) {
  if (status === "success" && openMode) return VIEWS.open;
  return VIEWS[status] || VIEWS.error;
}

export function element(tag, className, text) {
  const node = document.createElement(tag);
  if (className) node.className = className;
  if (text !== undefined) node.textContent = text;
  return node;
}

const CITATION = /\[Source\s+(\d+)\]/g;

// The answer's text with each [Source N] that Keel can point at as a button opening the passage.
export function fillAnswerText(container, text, citations, openPassage) {
  container.replaceChildren();
  const byNumber = new Map((citations || []).map((citation) => [Number(citation.number), citation]));
  let last = 0;
  for (const match of text.matchAll(CITATION)) {
    container.append(text.slice(last, match.index));
    const citation = byNumber.get(Number(match[1]));
    if (citation) {
      const button = element("button", "citation", `Source ${match[1]}`);
      button.type = "button";
      button.setAttribute("aria-label", `Source ${match[1]}: ${where(citation)}`);
      button.addEventListener("click", () => openPassage(citation, button));
      container.append(button);
    } else {
      container.append(match[0]);
    }
    last = match.index + match[0].length;
  }
  container.append(text.slice(last));
}

export function where(citation) {
  return citation.page ? `${citation.source}, page ${citation.page}` : citation.source;
}

// The sources under a grounded answer: each passage behind it (openable), else the sources alone.
function sourceList(citations, sources, openPassage) {
  const list = element("ul", "sources");
  list.setAttribute("aria-label", "Sources");
  if (citations && citations.length) {
    for (const citation of citations) {
      const item = element("li");
      const button = element("button", "source-link", `[Source ${citation.number}] ${where(citation)}`);
      button.type = "button";
      button.addEventListener("click", () => openPassage(citation, button));
      item.append(button);
      list.append(item);
    }
  } else {
    for (const source of sources || []) list.append(element("li", "", where(source)));
  }
  return list.children.length ? list : null;
}

// Fill an answer's list item for a finished turn: {answer, status, open_mode, citations, sources}.
// onRetry (for an error) asks the same question again.
export function renderFinal(item, turn, { openPassage, onRetry } = {}) {
  const view = viewFor(turn.status, turn.open_mode);
  item.className = `message answer answer--${view.kind}`;
  item.dataset.status = turn.status || "error";
  item.removeAttribute("aria-busy");
  const label = element("p", "answer-label", view.label);
  if (view.kind === "error") label.setAttribute("role", "alert");
  const text = element("div", "answer-text");
  fillAnswerText(text, turn.answer || "", turn.citations, openPassage);
  const parts = [label, text];
  if (view.hint) parts.push(element("p", "answer-hint", view.hint));
  if (view.kind === "grounded" || view.kind === "open") {
    const sources = sourceList(turn.citations, turn.sources, openPassage);
    if (sources) parts.push(sources);
  }
  if (turn.request_id) parts.push(element("p", "answer-hint", `Request id: ${turn.request_id}`));
  if (view.retry && onRetry) {
    const retry = element("button", "retry", "Retry");
    retry.type = "button";
    retry.addEventListener("click", onRetry);
    parts.push(retry);
  }
  item.replaceChildren(...parts);
}

// An answer being written: the draft as it streams, and a note (continuing, retrying) that is an
// indicator beside the answer, never part of its text.
export class DraftView {
  constructor(item) {
    this.item = item;
    item.className = "message answer answer--pending";
    item.setAttribute("aria-busy", "true");
    this.label = element("p", "answer-label", "Keel is answering…");
    this.text = element("div", "answer-text draft");
    this.note = element("p", "indicator");
    this.note.hidden = true;
    item.replaceChildren(this.label, this.text, this.note);
    this.draft = "";
  }

  set(text) {
    this.draft = text;
    this.text.textContent = text;
    this.showNote("");
  }

  append(text) {
    this.set(this.draft + text);
  }

  showNote(note) {
    this.note.textContent = note;
    this.note.hidden = !note;
  }
}
