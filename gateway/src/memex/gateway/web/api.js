// The gateway's HTTP API as the page uses it: JSON calls, errors, and the SSE streams (chat, a
// thread's turns). EventSource cannot POST nor send the API key's Authorization header, so the
// streams are read with fetch and a ReadableStream.

const KEY_STORAGE = "memex.apiKey";

/** The API key saved in this browser, or "". */
export function apiKey() {
  try {
    return localStorage.getItem(KEY_STORAGE) || "";
  } catch {
    return ""; // storage can be blocked (private mode, file policies); run without a key
  }
}

/** Saves (or, with "", forgets) the API key. */
export function setApiKey(key) {
  if (key) localStorage.setItem(KEY_STORAGE, key);
  else localStorage.removeItem(KEY_STORAGE);
  sensitiveRefused = false; // a new key may hold the grant: ask again
}

// Answers follow the read rule (issue 11): they use sensitive notes only when the request sets
// include_sensitive and the caller may. This page is the owner's own, so it asks. The gateway
// allows it to a loopback caller without a key and to a key granted sensitive reads; with a key
// that lacks the grant the answer is a 403, and the page asks again without, so it still works,
// and the answer's note says how many sensitive notes were withheld. Remembered until the key
// changes, so each later answer is asked for once.
let sensitiveRefused = false;

/**
 * Calls `call(body)` asking for sensitive notes, unless this key was refused them; on that 403,
 * once more without. Only the refusal before any answer is retried: nothing was answered yet.
 */
async function asOwner(call, body) {
  if (!sensitiveRefused) {
    try {
      return await call({ ...body, include_sensitive: true });
    } catch (err) {
      if (!(err instanceof ApiError) || err.status !== 403) throw err;
      sensitiveRefused = true;
    }
  }
  return call(body);
}

/** An error the gateway (or the network) reported, with the gateway's code when it gave one. */
export class ApiError extends Error {
  constructor(status, code, message) {
    super(message);
    this.status = status;
    this.code = code;
  }
}

function headers(extra = {}) {
  const key = apiKey();
  return key ? { ...extra, Authorization: `Bearer ${key}` } : extra;
}

async function errorFrom(response) {
  let code = `HTTP_${response.status}`;
  let message = response.statusText || "request failed";
  try {
    const body = await response.json();
    if (body && body.error) {
      code = body.error.code || code;
      message = body.error.message || message;
    }
  } catch {
    // not JSON (a proxy's error page, say): keep the status line
  }
  if (response.status === 401) {
    message += " — set the API key (top right) to the gateway's key.";
  }
  return new ApiError(response.status, code, message);
}

async function send(method, path, body, signal) {
  let response;
  try {
    response = await fetch(path, {
      method,
      headers: headers(body === undefined ? {} : { "Content-Type": "application/json" }),
      body: body === undefined ? undefined : JSON.stringify(body),
      signal,
    });
  } catch (err) {
    if (err.name === "AbortError") throw err;
    throw new ApiError(0, "UNREACHABLE", "The gateway cannot be reached. Is memex running?");
  }
  if (!response.ok) throw await errorFrom(response);
  return response;
}

/** GET a JSON resource. */
export async function getJson(path) {
  return (await send("GET", path)).json();
}

/**
 * GET stored answers (a conversation, a thread) as the owner: with include_sensitive, unless this
 * key was refused it (then without, and replies that drew on sensitive notes are placeholders).
 */
export async function getAsOwner(path) {
  const sensitive = `${path}${path.includes("?") ? "&" : "?"}include_sensitive=true`;
  return asOwner((params) => getJson(params.include_sensitive ? sensitive : path), {});
}

/** DELETE a resource. */
export async function remove(path) {
  await send("DELETE", path);
}

/** POST a JSON body, returning the JSON answer. */
export async function postJson(path, body) {
  return (await send("POST", path, body)).json();
}

/** POST a request for an answer (a queued turn) as the owner: see `asOwner`. */
export async function postAnswer(path, body) {
  return asOwner((b) => postJson(path, b), body);
}

/**
 * Splits an SSE byte stream into events: yields {event, data} with data parsed as JSON.
 * Comment lines (": ping") are skipped; fields may span several `data:` lines.
 */
export async function* readEvents(body) {
  const reader = body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value.replace(/\r\n?/g, "\n");
    let end;
    while ((end = buffer.indexOf("\n\n")) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const parsed = parseBlock(block);
      if (parsed) yield parsed;
    }
  }
  const last = parseBlock(buffer);
  if (last) yield last;
}

function parseBlock(block) {
  let event = "message";
  const data = [];
  for (const line of block.split("\n")) {
    if (!line || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (field === "event") event = value;
    else if (field === "data") data.push(value);
  }
  if (!data.length) return null;
  const text = data.join("\n");
  try {
    return { event, data: JSON.parse(text) };
  } catch {
    return { event, data: { text } };
  }
}

/**
 * POST /v1/chat (as the owner: see `asOwner`) and yield its events. An error before the stream
 * starts is thrown as ApiError; one inside the stream arrives as an `error` event.
 */
export async function* chat(body, signal) {
  const response = await asOwner((b) => send("POST", "/v1/chat", b, signal), body);
  yield* readEvents(response.body);
}

/**
 * GET /v1/threads/{id}/events (issue 37) and yield its events: a `turn` for each turn of the
 * thread, then one each time a turn changes; `deleted` or `error` end it. An error before the
 * stream starts is thrown as ApiError.
 */
export async function* watchThread(threadId, signal) {
  const path = `/v1/threads/${encodeURIComponent(threadId)}/events`;
  const response = await send("GET", path, undefined, signal);
  yield* readEvents(response.body);
}

/**
 * GET an answer's evidence bundle (issue 37) and save it as a file. Fetched rather than linked,
 * so the API key's Authorization header goes with it, which a plain download link cannot send.
 * The name is the gateway's (Content-Disposition), else one made from the id.
 */
export async function downloadEvidence(answerId) {
  const response = await send("GET", `/v1/evidence/${encodeURIComponent(answerId)}`);
  const blob = await response.blob();
  const named = /filename="([^"]+)"/.exec(response.headers.get("Content-Disposition") || "");
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = named ? named[1] : `memex-evidence-${answerId}.json`;
  document.body.append(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 10_000); // the browser reads it after the click
}

/**
 * GET a cited voice memo's or PDF's own file as an object URL for a player or a viewer, fetched
 * with the API key like the evidence bundle. The caller revokes the URL when done.
 */
export async function noteFileUrl(episodeId) {
  const id = encodeURIComponent(episodeId);
  const response = await send("GET", `/v1/notes/${id}/file?include_sensitive=true`);
  return URL.createObjectURL(await response.blob());
}
