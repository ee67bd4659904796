// The conversation on screen: questions, answers streamed from /chat/events, the passage dialog.
// A conversation is one thread id; every question of it (follow-ups included) is sent with it, so
// Keel answers with the conversation's history, as `keel chat` does.

import { ApiError, streamAnswer } from "./api.js";
import { DraftView, element, renderFinal, where } from "./answer.js";

export function newThreadId() {
  const bytes = new Uint8Array(16);
  crypto.getRandomValues(bytes);
  return Array.from(bytes, (byte) => byte.toString(16).padStart(2, "0")).join("");
}

// What the stream says while an answer is written, shown beside the draft (never in it).
const CONTINUING = "Continuing the answer…";
const RETRYING = "Checking did not pass; writing the answer again…";

// What the search found, shown while the answer is written and checked.
export function foundNote(data) {
  const count = Number(data.passages || 0);
  const names = (data.sources || []).map((name) => String(name).split("/").pop()).join(", ");
  const passages = count === 1 ? "1 passage" : `${count} passages`;
  return `Found ${passages}${names ? ` in ${names}` : ""}; writing the answer and checking it against them…`;
}

export class PassageDialog {
  constructor(dialog) {
    this.dialog = dialog;
    this.title = dialog.querySelector("#passage-title");
    this.where = dialog.querySelector("#passage-where");
    this.text = dialog.querySelector("#passage-text");
    this.opener = null;
    dialog.querySelector("#passage-close").addEventListener("click", () => dialog.close());
    dialog.addEventListener("close", () => this.opener && this.opener.focus());
  }

  open(citation, opener) {
    this.opener = opener;
    this.title.textContent = `Source ${citation.number}`;
    this.where.textContent = where(citation);
    this.text.textContent = citation.text || "The passage's text is not available.";
    this.dialog.showModal();
  }

  close() {
    if (this.dialog.open) this.dialog.close();
  }
}

export class Chat {
  constructor({ list, form, question, askButton, openMode, title, emptyNote, problem, dialog, session }) {
    Object.assign(this, { list, form, question, askButton, openMode, title, emptyNote, problem, session });
    this.passages = new PassageDialog(dialog);
    this.threadId = newThreadId();
    this.titled = false;
    this.controller = null;
    this.maxQuestionChars = 4000;  // until /me says what this server allows
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      this.ask(question.value);
    });
    question.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        form.requestSubmit();
      }
    });
  }

  get busy() {
    return this.controller !== null;
  }

  openPassage = (citation, opener) => this.passages.open(citation, opener);

  stop() {
    if (this.controller) this.controller.abort();
    this.controller = null;
    this.setBusy(false);
  }

  // Start a new, empty conversation (a fresh thread id).
  startNew() {
    this.stop();
    this.passages.close();
    this.threadId = newThreadId();
    this.list.replaceChildren();
    this.title.textContent = "New conversation";
    this.titled = false;
    this.emptyNote.hidden = false;
    this.showProblem("");
  }

  // Show a stored conversation ({conversation_id, title, messages}) to continue it.
  show(conversation) {
    this.stop();
    this.passages.close();
    this.threadId = conversation.conversation_id;
    this.title.textContent = conversation.title || "Conversation";
    this.titled = true;
    this.list.replaceChildren();
    let question = "";
    for (const message of conversation.messages) {
      if (message.role === "user") {
        question = message.text;
        this.appendQuestion(question);
      } else {
        const item = element("li");
        this.list.append(item);
        const asked = question;
        renderFinal(item, { answer: message.text, status: message.status, open_mode: message.open_mode,
                            citations: message.citations, sources: message.sources },
                    { openPassage: this.openPassage, onRetry: () => this.ask(asked, item) });
      }
    }
    this.emptyNote.hidden = this.list.children.length > 0;
    this.scrollToEnd(true);
  }

  appendQuestion(text) {
    const item = element("li", "message question");
    item.append(element("p", "visually-hidden", "You asked:"), element("p", "question-text", text));
    this.list.append(item);
    this.emptyNote.hidden = true;
  }

  showProblem(text) {
    this.problem.textContent = text;
    this.problem.hidden = !text;
  }

  setBusy(busy) {
    this.askButton.disabled = busy;
    this.askButton.textContent = busy ? "Answering…" : "Ask";
  }

  scrollToEnd(force = false) {
    const near = this.list.scrollHeight - this.list.scrollTop - this.list.clientHeight < 120;
    if (force || near) this.list.scrollTop = this.list.scrollHeight;
  }

  // Ask ``text`` in this conversation; ``item`` is an answer to redo (Retry) instead of a new one.
  async ask(text, item = null) {
    const question = text.trim();
    if (this.busy) return;
    if (!question) {
      this.showProblem("Type a question first.");
      this.question.focus();
      return;
    }
    if (question.length > this.maxQuestionChars) {
      this.showProblem(`The question is longer than ${this.maxQuestionChars} characters; shorten it.`);
      return;
    }
    this.showProblem("");
    if (!item) {
      this.appendQuestion(question);
      this.question.value = "";
      item = element("li");
      this.list.append(item);
    }
    const threadId = this.threadId;
    const draft = new DraftView(item);
    const controller = new AbortController();
    this.controller = controller;
    this.setBusy(true);
    this.scrollToEnd(true);
    const configurable = { thread_id: threadId };
    if (this.openMode.checked) configurable.grounding_mode = "open";
    const body = { input: { messages: [{ type: "human", content: question }] }, config: { configurable } };
    const retry = () => this.ask(question, item);
    let final = null;
    let failure = null;
    try {
      await streamAnswer(body, this.session.key(), (name, data) => {
        if (name === "keel.progress") draft.showNote(foundNote(data));
        else if (name === "keel.token") draft.append(String(data.text || ""));
        else if (name === "keel.revert") draft.set(String(data.text || ""));
        else if (name === "keel.discard") {
          draft.set("");
          draft.showNote(RETRYING);
        } else if (name === "keel.continuation") draft.showNote(CONTINUING);
        else if (name === "keel.final") final = data;
        else if (name === "keel.error") failure = data;
        this.scrollToEnd();
      }, controller.signal);
    } catch (error) {
      if (error.name === "AbortError") {
        item.remove();
        return;
      }
      if (error instanceof ApiError && error.status === 401) {
        this.session.signedOut("Your key is no longer accepted. Sign in again.");
        return;
      }
      failure = { message: error.message, request_id: error.requestId };
    } finally {
      if (this.controller === controller) {
        this.controller = null;
        this.setBusy(false);
      }
    }
    if (final) {
      const openMode = final.status === "success" && final.route === "pretrained_corpus";
      renderFinal(item, { ...final, open_mode: openMode }, { openPassage: this.openPassage, onRetry: retry });
      if (!this.titled) {
        this.title.textContent = question;
        this.titled = true;
      }
      this.session.turnSaved(threadId);
    } else {
      const message = (failure && failure.message) || "The answer stopped before it was finished.";
      renderFinal(item, { answer: message, status: "error", request_id: failure && failure.request_id },
                  { openPassage: this.openPassage, onRetry: retry });
    }
    this.scrollToEnd(true);
  }
}
