// The list of the user's conversations (GET /conversations), most recently active first; opening
// one reads it back (GET /conversations/{id}) to continue it.

import { api } from "./api.js";
import { element } from "./answer.js";

export function when(iso) {
  if (!iso) return "";
  const date = new Date(iso);
  if (Number.isNaN(date.getTime())) return "";
  return date.toLocaleString(undefined, { month: "short", day: "numeric", hour: "2-digit", minute: "2-digit" });
}

export class ConversationList {
  constructor({ list, emptyNote, problem, session, onOpen }) {
    Object.assign(this, { list, emptyNote, problem, session, onOpen });
    this.current = null;
  }

  clear() {
    this.list.replaceChildren();
    this.emptyNote.hidden = false;
    this.problem.hidden = true;
  }

  async refresh() {
    let conversations;
    try {
      ({ conversations } = await api("/conversations", this.session.key()));
    } catch (error) {
      if (error.status === 401) return this.session.signedOut("Your key is no longer accepted. Sign in again.");
      this.problem.textContent = `Conversations could not be loaded: ${error.message}`;
      this.problem.hidden = false;
      return;
    }
    this.problem.hidden = true;
    this.list.replaceChildren(...conversations.map((conversation) => this.row(conversation)));
    this.emptyNote.hidden = conversations.length > 0;
    this.mark(this.current);
  }

  row(conversation) {
    const item = element("li");
    const button = element("button", "conversation");
    button.type = "button";
    button.dataset.conversationId = conversation.conversation_id;
    button.append(element("span", "conversation-title", conversation.title || "Untitled"),
                  element("span", "conversation-when", when(conversation.updated_at)));
    button.addEventListener("click", () => this.open(conversation.conversation_id));
    item.append(button);
    return item;
  }

  // Highlight the conversation on screen (aria-current tells a screen reader which it is).
  mark(conversationId) {
    this.current = conversationId;
    for (const button of this.list.querySelectorAll("button.conversation")) {
      if (button.dataset.conversationId === conversationId) button.setAttribute("aria-current", "true");
      else button.removeAttribute("aria-current");
    }
  }

  async open(conversationId) {
    try {
      const conversation = await api(`/conversations/${encodeURIComponent(conversationId)}`, this.session.key());
      this.mark(conversationId);
      this.onOpen(conversation);
      return true;
    } catch (error) {
      if (error.status === 401) this.session.signedOut("Your key is no longer accepted. Sign in again.");
      else if (error.status !== 404) {
        this.problem.textContent = `The conversation could not be opened: ${error.message}`;
        this.problem.hidden = false;
      }
      return false;
    }
  }
}
