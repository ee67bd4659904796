// The page's start: sign in (the key is checked with GET /me and kept in this tab's
// sessionStorage), then documents, conversations and the chat. Signed out, only the sign-in is
// shown and nothing of the user's is left on the page.

import { ApiError, api, forgetKey, saveKey, savedKey } from "./api.js";
import { Chat } from "./chat.js";
import { ConversationList } from "./conversations.js";
import { Documents } from "./documents.js";

const CONVERSATION_ITEM = "keel.conversation";  // the conversation on screen, resumed after a reload
const WIDE = window.matchMedia("(min-width: 760px)");
const byId = (id) => document.getElementById(id);

const session = {
  apiKey: null,
  key() {
    return this.apiKey;
  },
  signedOut(message) {
    signOut(message);
  },
  turnSaved(threadId) {
    sessionStorage.setItem(CONVERSATION_ITEM, threadId);
    conversations.mark(threadId);
    conversations.refresh();
  },
};

const chat = new Chat({
  list: byId("messages"), form: byId("ask-form"), question: byId("question"), askButton: byId("ask"),
  openMode: byId("open-mode"), title: byId("chat-title"), emptyNote: byId("empty-chat"),
  problem: byId("ask-problem"), dialog: byId("passage-dialog"), session,
});

const conversations = new ConversationList({
  list: byId("conversations"), emptyNote: byId("no-conversations"), problem: byId("conversations-problem"), session,
  onOpen(conversation) {
    sessionStorage.setItem(CONVERSATION_ITEM, conversation.conversation_id);
    chat.show(conversation);
    if (!WIDE.matches) byId("conversations-panel").open = false;
    byId("question").focus();
  },
});

const documents = new Documents({
  dropZone: byId("drop-zone"), input: byId("file-input"), chooseButton: byId("choose-files"),
  uploads: byId("uploads"), clearButton: byId("clear-uploads"), list: byId("documents"), emptyNote: byId("no-documents"),
  problem: byId("documents-problem"), typesNote: byId("file-types"), session,
});

function showProblem(text) {
  const problem = byId("signin-problem");
  problem.textContent = text;
  problem.hidden = !text;
}

// Panels are open side by side on a wide screen and folded away on a phone.
function fitPanels() {
  for (const id of ["conversations-panel", "documents-panel"]) byId(id).open = WIDE.matches;
}

async function enter(key, me) {
  session.apiKey = key;
  saveKey(key);
  byId("user-name").textContent = me.user_id;
  chat.maxQuestionChars = me.max_question_chars;
  documents.setLimits(me);
  byId("signin").hidden = true;
  byId("account").hidden = false;
  byId("workspace").hidden = false;
  fitPanels();
  chat.startNew();
  const resumed = sessionStorage.getItem(CONVERSATION_ITEM);
  await Promise.all([documents.refresh(), conversations.refresh()]);
  if (!(resumed && (await conversations.open(resumed)))) sessionStorage.removeItem(CONVERSATION_ITEM);
  byId("question").focus();
}

function signOut(message = "") {
  session.apiKey = null;
  forgetKey();
  sessionStorage.removeItem(CONVERSATION_ITEM);
  chat.startNew();
  conversations.clear();
  documents.clear();
  byId("user-name").textContent = "";
  byId("workspace").hidden = true;
  byId("account").hidden = true;
  byId("signin").hidden = false;
  byId("api-key").value = "";
  showProblem(message);
  byId("api-key").focus();
}

async function signIn(key) {
  try {
    return await api("/me", key);
  } catch (error) {
    if (!(error instanceof ApiError)) throw error;
    if (error.status === 401) showProblem("That key was not accepted. Check that you pasted all of it, or ask for a new one.");
    else showProblem(error.message);
    return null;
  }
}

byId("signin-form").addEventListener("submit", async (event) => {
  event.preventDefault();
  const key = byId("api-key").value.trim();
  if (!key) {
    showProblem("Paste your API key first.");
    byId("api-key").focus();
    return;
  }
  const button = byId("sign-in");
  button.disabled = true;
  showProblem("");
  const me = await signIn(key);
  button.disabled = false;
  if (me) await enter(key, me);
});

byId("sign-out").addEventListener("click", () => signOut(""));
byId("new-conversation").addEventListener("click", () => {
  chat.startNew();
  sessionStorage.removeItem(CONVERSATION_ITEM);
  conversations.mark(null);
  if (!WIDE.matches) byId("conversations-panel").open = false;
  byId("question").focus();
});

async function start() {
  const key = savedKey();
  const me = key ? await signIn(key) : null;
  if (me) await enter(key, me);
  else signOut(key ? "Your key is no longer accepted. Sign in again." : "");
  document.body.dataset.ready = "true";  // the page has settled (tests wait for this)
}

start();
