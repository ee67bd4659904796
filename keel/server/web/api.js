// Talking to Keel: the API key (kept in this tab's sessionStorage only, sent as a Bearer header,
// never in a URL), JSON routes, uploads with progress, and the answer stream of /chat/events.

const KEY_ITEM = "keel.apiKey";

export function savedKey() {
  return sessionStorage.getItem(KEY_ITEM);
}

export function saveKey(key) {
  sessionStorage.setItem(KEY_ITEM, key);
}

export function forgetKey() {
  sessionStorage.removeItem(KEY_ITEM);
}

// A refused or failed request: the HTTP status, Keel's message and the request id to quote.
export class ApiError extends Error {
  constructor(status, message, requestId = "", body = null) {
    super(message);
    this.status = status;
    this.requestId = requestId;
    this.body = body;
  }
}

function headers(key, extra = {}) {
  return { Authorization: `Bearer ${key}`, ...extra };
}

// Keel's error body is {detail, status, request_id}; detail is text, or a list of problems.
export function errorMessage(body, status) {
  const detail = body && body.detail;
  if (typeof detail === "string") return detail;
  if (Array.isArray(detail) && detail.length) return detail.map((item) => item.msg || String(item)).join("; ");
  if (status === 0) return "Keel could not be reached. Check your connection and try again.";
  return `The request failed (HTTP ${status}).`;
}

async function errorFrom(response) {
  let body = null;
  try {
    body = await response.json();
  } catch (_) {
    body = null;
  }
  return new ApiError(response.status, errorMessage(body, response.status), (body && body.request_id) || "", body);
}

// credentials: "omit" keeps the browser's own sign-in prompt away when a key is refused (401):
// the page says so itself.
export async function api(path, key, { method = "GET", body, signal } = {}) {
  const init = { method, headers: headers(key, { Accept: "application/json" }), credentials: "omit", cache: "no-store", signal };
  if (body !== undefined) {
    init.headers["Content-Type"] = "application/json";
    init.body = JSON.stringify(body);
  }
  let response;
  try {
    response = await fetch(path, init);
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, errorMessage(null, 0));
  }
  if (!response.ok) throw await errorFrom(response);
  return response.json();
}

function dataUrl(file) {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(reader.result);
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(file);
  });
}

// POST /ingest with the file as base64. onProgress(fraction) while the bytes go up, onSent() once
// they are all there and Keel is reading and indexing. Resolves to {status, body} whatever the
// status (a 422 carries Keel's reason per file); rejects only when Keel cannot be reached.
export async function uploadFile(file, key, { password, onProgress, onSent } = {}) {
  const body = { filename: file.name, data_base64: await dataUrl(file) };
  if (file.type) body.mime_type = file.type;
  if (password) body.password = password;
  return new Promise((resolve, reject) => {
    const request = new XMLHttpRequest();
    request.open("POST", "/ingest");
    request.setRequestHeader("Authorization", `Bearer ${key}`);
    request.setRequestHeader("Content-Type", "application/json");
    request.setRequestHeader("Accept", "application/json");
    request.responseType = "text";
    request.upload.onprogress = (event) => {
      if (event.lengthComputable && onProgress) onProgress(event.loaded / event.total);
    };
    request.upload.onload = () => onSent && onSent();
    request.onload = () => {
      let parsed = null;
      try {
        parsed = JSON.parse(request.responseText);
      } catch (_) {
        parsed = null;
      }
      resolve({ status: request.status, body: parsed });
    };
    request.onerror = () => reject(new ApiError(0, errorMessage(null, 0)));
    request.send(JSON.stringify(body));
  });
}

// Server-Sent Events in a fetch body: blocks separated by a blank line, each with "event:" and
// "data:" lines. Feed it text as it arrives; it returns the complete events so far.
export class EventParser {
  constructor() {
    this.buffer = "";
  }

  push(text) {
    this.buffer += text.replace(/\r\n?/g, "\n");
    const events = [];
    let end;
    while ((end = this.buffer.indexOf("\n\n")) >= 0) {
      const block = this.buffer.slice(0, end);
      this.buffer = this.buffer.slice(end + 2);
      let name = "message";
      const data = [];
      for (const line of block.split("\n")) {
        if (line.startsWith("event:")) name = line.slice(6).trim();
        else if (line.startsWith("data:")) data.push(line.slice(5).replace(/^ /, ""));
      }
      if (!data.length) continue;
      try {
        events.push({ name, data: JSON.parse(data.join("\n")) });
      } catch (_) {
        // not Keel's JSON: nothing to show
      }
    }
    return events;
  }
}

// POST /chat/events and call onEvent(name, data) for each event until the stream ends.
export async function streamAnswer(requestBody, key, onEvent, signal) {
  let response;
  try {
    response = await fetch("/chat/events", {
      method: "POST",
      headers: headers(key, { "Content-Type": "application/json", Accept: "text/event-stream" }),
      body: JSON.stringify(requestBody),
      credentials: "omit",
      cache: "no-store",
      signal,
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, errorMessage(null, 0));
  }
  if (!response.ok) throw await errorFrom(response);
  const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
  const parser = new EventParser();
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    for (const event of parser.push(value)) onEvent(event.name, event.data);
  }
}
