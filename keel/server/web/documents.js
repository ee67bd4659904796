// The user's documents: upload several at once (drop them or pick them), one row per file with its
// progress and outcome (Keel's own reason when it refuses one), the list of stored documents with
// pages and date, and delete. Files go up one after another: Keel indexes one at a time anyway.

import { api, errorMessage, uploadFile } from "./api.js";
import { element } from "./answer.js";

const MB = 1024 * 1024;

function size(bytes) {
  return bytes >= MB ? `${(bytes / MB).toFixed(bytes >= 10 * MB ? 0 : 1)} MB` : `${Math.max(1, Math.round(bytes / 1024))} KB`;
}

function added(seconds) {
  if (!seconds) return "";
  return new Date(seconds * 1000).toLocaleDateString(undefined, { year: "numeric", month: "short", day: "numeric" });
}

// Why Keel refused an upload, in its own words: the 422 report's errors, or a short message.
export function refusalReason(status, body, maxFileBytes) {
  const detail = body && body.detail;
  if (detail && typeof detail === "object" && Array.isArray(detail.errors) && detail.errors.length) {
    return detail.errors.map((error) => error.error).join("; ");
  }
  if (status === 413) return `too large: the most Keel accepts is ${size(maxFileBytes)}`;
  return errorMessage(body, status);
}

function needsPassword(reason) {
  return /password/i.test(reason) && /encrypted|password-protected/i.test(reason);
}

class UploadRow {
  constructor(file) {
    this.file = file;
    this.item = element("li", "upload upload--waiting");
    this.name = element("span", "upload-name", file.name);
    this.progress = element("progress");
    this.progress.max = 100;
    this.progress.value = 0;
    this.progress.setAttribute("aria-label", `Upload of ${file.name}`);
    this.state = element("span", "upload-state", "Waiting…");
    this.extra = element("div", "upload-extra");
    this.item.append(this.name, this.progress, this.state, this.extra);
  }

  show(kind, text) {
    this.item.className = `upload upload--${kind}`;
    this.state.textContent = text;
    this.progress.hidden = kind === "done" || kind === "rejected";
  }

  sending(fraction) {
    this.progress.value = Math.round(fraction * 100);
    this.show("sending", `Uploading ${Math.round(fraction * 100)}%`);
  }

  ingesting() {
    this.progress.removeAttribute("value");  // indeterminate: Keel is reading and indexing
    this.show("ingesting", "Reading and indexing…");
  }
}

export class Documents {
  constructor({ dropZone, input, chooseButton, uploads, clearButton, list, emptyNote, problem, typesNote, session }) {
    Object.assign(this, { dropZone, input, chooseButton, uploads, clearButton, list, emptyNote, problem, typesNote,
                          session });
    this.rows = [];
    this.queue = [];
    this.running = false;
    this.limits = { max_file_bytes: 50 * MB, file_types: [] };
    chooseButton.addEventListener("click", () => input.click());
    clearButton.addEventListener("click", () => this.clearFinished());
    input.addEventListener("change", () => {
      this.add(Array.from(input.files));
      input.value = "";
    });
    dropZone.addEventListener("dragover", (event) => {
      event.preventDefault();
      dropZone.classList.add("drop-zone--over");
    });
    dropZone.addEventListener("dragleave", () => dropZone.classList.remove("drop-zone--over"));
    dropZone.addEventListener("drop", (event) => {
      event.preventDefault();
      dropZone.classList.remove("drop-zone--over");
      this.add(Array.from(event.dataTransfer.files));
    });
  }

  setLimits(me) {
    this.limits = me;
    this.input.accept = me.file_types.join(",");
    this.typesNote.textContent = `PDF, Word, PowerPoint, Excel, CSV, HTML, text, Markdown or images (scans are read by OCR), up to ${size(me.max_file_bytes)} each.`;
  }

  // Rows of files added (or refused for good) go; rows still uploading, or waiting for a password, stay.
  clearFinished() {
    this.rows = this.rows.filter((row) => !row.finished);
    this.uploads.replaceChildren(...this.rows.map((row) => row.item));
    this.showClear();
  }

  showClear() {
    this.clearButton.hidden = !this.rows.some((row) => row.finished);
  }

  clear() {
    this.queue = [];
    this.rows = [];
    this.clearButton.hidden = true;
    this.uploads.replaceChildren();
    this.list.replaceChildren();
    this.emptyNote.hidden = false;
    this.problem.hidden = true;
  }

  add(files) {
    for (const file of files) {
      const row = new UploadRow(file);
      this.rows.push(row);
      this.uploads.append(row.item);
      this.queue.push(row);
    }
    this.drain();
  }

  async drain() {
    if (this.running) return;
    this.running = true;
    try {
      while (this.queue.length) await this.send(this.queue.shift());
    } finally {
      this.running = false;
    }
  }

  async send(row, password) {
    const { file } = row;
    if (file.size > this.limits.max_file_bytes) {
      return this.rejected(row, `too large: ${size(file.size)} (the most Keel accepts is ${size(this.limits.max_file_bytes)})`);
    }
    row.sending(0);
    let outcome;
    try {
      outcome = await uploadFile(file, this.session.key(), {
        password,
        onProgress: (fraction) => row.sending(fraction),
        onSent: () => row.ingesting(),
      });
    } catch (error) {
      return this.rejected(row, error.message);
    }
    if (outcome.status === 401) return this.session.signedOut("Your key is no longer accepted. Sign in again.");
    if (outcome.status === 200 && outcome.body && outcome.body.documents) {
      row.extra.replaceChildren();
      row.show("done", "Added");
      row.finished = true;
      this.showClear();
      await this.refresh();
      return;
    }
    this.rejected(row, refusalReason(outcome.status, outcome.body, this.limits.max_file_bytes));
  }

  rejected(row, reason) {
    row.show("rejected", `Not added: ${reason}`);
    row.extra.replaceChildren();
    row.finished = !needsPassword(reason);
    if (!row.finished) row.extra.append(this.passwordForm(row));
    this.showClear();
  }

  // An encrypted PDF: ask for its password right in the row and try again.
  passwordForm(row) {
    const form = element("form", "password-form");
    const id = `password-${Math.random().toString(36).slice(2)}`;
    const label = element("label", "", `Password for ${row.file.name}`);
    label.htmlFor = id;
    const field = element("input");
    field.type = "password";
    field.id = id;
    field.autocomplete = "off";
    const button = element("button", "", "Try again");
    button.type = "submit";
    form.append(label, field, button);
    form.addEventListener("submit", (event) => {
      event.preventDefault();
      if (field.value) this.send(row, field.value);
    });
    return form;
  }

  async refresh() {
    let documents;
    try {
      ({ documents } = await api("/documents", this.session.key()));
    } catch (error) {
      if (error.status === 401) return this.session.signedOut("Your key is no longer accepted. Sign in again.");
      this.problem.textContent = `Documents could not be loaded: ${error.message}`;
      this.problem.hidden = false;
      return;
    }
    this.problem.hidden = true;
    this.list.replaceChildren(...documents.map((doc) => this.row(doc)));
    this.emptyNote.hidden = documents.length > 0;
  }

  row(doc) {
    const item = element("li", "document");
    item.dataset.docId = doc.doc_id;
    const pages = doc.pages === 1 ? "1 page" : `${doc.pages} pages`;
    const about = element("div", "document-about");
    about.append(element("span", "document-name", doc.name),
                 element("span", "document-meta", [pages, added(doc.ingested_at)].filter(Boolean).join(" · ")));
    const remove = element("button", "delete", "Delete");
    remove.type = "button";
    remove.setAttribute("aria-label", `Delete ${doc.name}`);
    remove.addEventListener("click", () => this.confirmDelete(item, doc, remove));
    item.append(about, remove);
    return item;
  }

  // Deleting asks once more in the row itself: "Delete" and "Keep".
  confirmDelete(item, doc, remove) {
    const confirm = element("div", "confirm");
    confirm.setAttribute("role", "group");
    confirm.setAttribute("aria-label", `Delete ${doc.name}?`);
    const yes = element("button", "delete-confirm", "Delete for good");
    yes.type = "button";
    const no = element("button", "", "Keep");
    no.type = "button";
    confirm.append(element("span", "", `Delete ${doc.name}?`), yes, no);
    remove.hidden = true;
    item.append(confirm);
    no.addEventListener("click", () => {
      confirm.remove();
      remove.hidden = false;
      remove.focus();
    });
    yes.addEventListener("click", async () => {
      try {
        await api(`/documents/${encodeURIComponent(doc.doc_id)}`, this.session.key(), { method: "DELETE" });
      } catch (error) {
        if (error.status === 401) return this.session.signedOut("Your key is no longer accepted. Sign in again.");
        if (error.status !== 404) {
          this.problem.textContent = `${doc.name} could not be deleted: ${error.message}`;
          this.problem.hidden = false;
          return;
        }
      }
      await this.refresh();
    });
    no.focus();
  }
}
