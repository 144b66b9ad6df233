// The web chat: streamed chat (POST /v1/chat, SSE) and queued turns (POST /v1/turns, followed on
// the thread's event stream, polled when that fails), either with "As of" set for a reply from
// the memory as it stood at the end of that day (docs/as-of.md), with the conversation and
// thread lists in the sidebar, and the beliefs view (beliefs.js) a sidebar button opens.

import {
  ApiError,
  apiKey,
  chat,
  downloadEvidence,
  getAsOwner,
  getJson,
  postAnswer,
  remove,
  setApiKey,
  watchThread,
} from "./api.js";
import {
  el,
  liftWithheldNote,
  messageItem,
  renderAsOf,
  renderCitations,
  renderError,
  renderEvidenceLink,
  renderForgotten,
  renderMeta,
  renderTurnState,
} from "./render.js";
import { closeBeliefs, showBeliefs } from "./beliefs.js";
import { closeNote, noteIdFromLocation, showNote } from "./note.js";

const POLL_MS = 1000;
const PERSONA_STORAGE = "memex.persona";
const $ = (id) => document.getElementById(id);

const state = {
  mode: "stream",
  conversationId: "", // the streamed conversation being shown
  threadId: "", // the queued thread being shown
  controller: null, // aborts the running stream
  watches: new Set(), // abort controllers of the thread event streams following turns
};

function log() {
  return $("log");
}

function scrollToEnd() {
  const chatPane = $("chat");
  chatPane.scrollTop = chatPane.scrollHeight;
}

function append(item) {
  $("empty").hidden = true;
  log().append(item);
  scrollToEnd();
  return item;
}

function clearLog(title) {
  for (const watch of state.watches) watch.abort(); // their turns are no longer shown
  state.watches.clear();
  log().replaceChildren();
  $("empty").hidden = false;
  $("chat-title").textContent = title;
}

function persona() {
  return $("persona").value.trim();
}

function savedPersona() {
  try {
    return localStorage.getItem(PERSONA_STORAGE) || "";
  } catch {
    return "";
  }
}

function personaOption(value, label, title = "") {
  const option = el("option", {}, label);
  option.value = value;
  if (title) option.title = title;
  return option;
}

/**
 * Fills the persona picker from GET /v1/personas (the orchestrator's list: built-ins and the
 * personas folder's), keeping the saved choice when it is still a persona. When the list cannot be
 * read (no API key yet, gateway down) the picker offers the default and the saved choice, and says
 * why in its tooltip.
 */
async function loadPersonas() {
  const select = $("persona");
  const saved = savedPersona();
  let options;
  try {
    const { personas, default_chat: fallback } = await getJson("/v1/personas");
    options = [personaOption("", `default (${fallback})`, "The chat default persona")];
    for (const p of personas || []) {
      options.push(personaOption(p.name, p.name, p.description));
    }
    select.title = "";
  } catch (err) {
    options = [personaOption("", "default")];
    if (saved) options.push(personaOption(saved, saved));
    select.title = `The personas could not be listed: ${describe(err).join(": ")}`;
  }
  select.replaceChildren(...options);
  select.value = options.some((o) => o.value === saved) ? saved : "";
  select.dataset.loaded = String(options.length);
}

function describe(err) {
  if (err instanceof ApiError) return [err.code, err.message];
  return ["ERROR", String(err && err.message ? err.message : err)];
}

// ---- streamed chat -------------------------------------------------------------------------

async function streamAnswer(text, day) {
  append(messageItem("user", text));
  const answer = append(messageItem("assistant", "", { state: "waiting", deltas: "0" }));
  answer.setAttribute("aria-busy", "true");
  if (day) renderAsOf(answer, day);
  const body = answer.querySelector(".text");
  const meta = { persona: "", model: "" };
  let deltas = 0;
  let finished = false;
  state.controller = new AbortController();
  setBusy(true);
  try {
    const request = { message: text, persona: persona() || undefined, as_of: day || undefined };
    if (state.conversationId) request.conversation_id = state.conversationId;
    for await (const { event, data } of chat(request, state.controller.signal)) {
      if (event === "meta") {
        state.conversationId = data.conversation_id || state.conversationId;
        meta.persona = data.persona;
        meta.model = data.model;
        answer.dataset.state = "streaming";
        if (data.as_of) renderAsOf(answer, data.as_of);
        renderMeta(answer, [meta.persona, meta.model]);
      } else if (event === "delta") {
        body.append(document.createTextNode(data.text || ""));
        deltas += 1;
        answer.dataset.deltas = String(deltas);
        answer.dataset.state = "streaming";
        scrollToEnd();
      } else if (event === "citations") {
        const lifted = liftWithheldNote(answer);
        renderCitations(answer, data.citations, Math.max(data.withheld || 0, lifted));
      } else if (event === "done") {
        finished = true;
        answer.dataset.state = "done";
        const seconds = data.latency_ms ? `${(data.latency_ms / 1000).toFixed(1)} s` : "";
        const chunks =
          data.chunks_considered !== undefined ? `${data.chunks_considered} chunks considered` : "";
        renderMeta(answer, [meta.persona, meta.model, seconds, chunks]);
        renderEvidenceLink(answer, data.message_id, downloadEvidence);
      } else if (event === "error") {
        finished = true;
        renderError(answer, data.code, data.message || "the answer failed");
      }
    }
    if (!finished) renderError(answer, "INTERRUPTED", "The stream ended before the answer did.");
    if (!body.textContent.trim() && answer.dataset.state === "done") {
      body.textContent = "(no answer text)";
    }
  } catch (err) {
    if (err.name === "AbortError") {
      renderError(answer, "STOPPED", "You stopped this answer.");
    } else {
      renderError(answer, ...describe(err));
    }
  } finally {
    answer.removeAttribute("aria-busy");
    state.controller = null;
    setBusy(false);
    refreshSidebar();
  }
}

// ---- queued turns --------------------------------------------------------------------------

async function queueTurn(text, day) {
  const question = append(messageItem("user", text));
  renderTurnState(question, "sending");
  if (day) renderAsOf(question, day);
  let turn;
  try {
    const request = { text, as_of: day || undefined };
    if (state.threadId) request.thread_id = state.threadId;
    ({ turn } = await postAnswer("/v1/turns", request));
  } catch (err) {
    renderError(question, ...describe(err));
    return;
  }
  state.threadId = turn.thread_id;
  question.dataset.turnId = turn.id;
  renderTurnState(question, turn.state);
  refreshSidebar();
  followTurn(question, turn);
}

// Follows a queued turn until it is answered or fails, as the thread's event stream pushes its
// changes (issue 37). If the stream cannot be opened or breaks off first, polls instead. A thread
// forgotten meanwhile (here, in another tab, with `memex forget`) is said on the question.
async function followTurn(question, turn) {
  const controller = new AbortController();
  state.watches.add(controller);
  try {
    for await (const { event, data } of watchThread(turn.thread_id, controller.signal)) {
      if (!question.isConnected) return; // the user moved to another conversation
      if (event === "turn" && data.turn.id === turn.id && (await settle(question, data.turn))) {
        return;
      }
      if (event === "deleted") {
        threadForgotten(question, turn.thread_id);
        return;
      }
      if (event === "error") break;
    }
  } catch (err) {
    if (err.name === "AbortError") return; // closed on purpose (clearLog)
    // Any other failure (a 404 included: a gateway without the route, or a thread forgotten
    // before the stream opened) falls back to polling, which tells the two apart.
  } finally {
    controller.abort();
    state.watches.delete(controller);
  }
  if (question.isConnected) pollTurn(question, turn.id, turn.thread_id);
}

// Shows a turn's state; true once it is final (answered, with its reply shown, or failed).
async function settle(question, turn) {
  renderTurnState(question, turn.state);
  if (turn.state === "error") {
    renderError(question, "TURN_FAILED", turn.error || "the worker could not answer");
    return true;
  }
  if (turn.state === "answered") {
    await showReply(question, turn);
    return true;
  }
  return false;
}

// Rate limited, a service restarting, the gateway briefly unreachable: worth polling again.
const TRANSIENT = new Set([0, 429, 502, 503, 504]);
const MAX_TRANSIENT_FAILURES = 6;

async function pollTurn(question, turnId, threadId) {
  let delay = POLL_MS;
  let failures = 0;
  for (;;) {
    await new Promise((resolve) => setTimeout(resolve, delay));
    if (!question.isConnected) return; // the user moved to another conversation
    let turn;
    try {
      ({ turn } = await getJson(`/v1/turns/${encodeURIComponent(turnId)}`));
      delay = POLL_MS;
      failures = 0;
    } catch (err) {
      if (isGone(err)) {
        threadForgotten(question, threadId);
        return;
      }
      failures += 1;
      const transient = err instanceof ApiError && TRANSIENT.has(err.status);
      if (transient && failures < MAX_TRANSIENT_FAILURES) {
        delay = Math.min(delay * 2, 10_000); // back off; the turn is safe in the queue meanwhile
        continue;
      }
      renderError(question, ...describe(err));
      return;
    }
    if (await settle(question, turn)) return;
  }
}

// A turn that was queued here and now answers 404 was forgotten with its thread.
function isGone(err) {
  return err instanceof ApiError && err.status === 404;
}

/** Marks a followed question's thread forgotten; the next message starts a new thread. */
function threadForgotten(question, threadId) {
  if (question.isConnected) renderForgotten(question);
  if (state.threadId === threadId) state.threadId = "";
  refreshSidebar();
}

async function showReply(question, turn) {
  try {
    const { turns } = await getAsOwner(`/v1/threads/${encodeURIComponent(turn.thread_id)}/turns`);
    const reply = turns.find((t) => t.role === "assistant" && t.reply_to === turn.id);
    if (!reply) throw new ApiError(0, "NOT_FOUND", "the answer was not found in the thread");
    const item = messageItem("assistant", reply.text, { state: "done", turnId: reply.id });
    question.after(item);
    if (turn.as_of) renderAsOf(item, turn.as_of);
    renderCitations(item, reply.citations, liftWithheldNote(item));
    renderEvidenceLink(item, reply.id, downloadEvidence);
    scrollToEnd();
  } catch (err) {
    renderError(question, ...describe(err));
  }
}

// ---- history -------------------------------------------------------------------------------

async function openConversation(id) {
  closeSidebarOnNarrow();
  closeNote();
  closeBeliefs();
  state.mode = "stream";
  setMode("stream");
  try {
    const { conversation, messages } = await getAsOwner(
      `/v1/conversations/${encodeURIComponent(id)}`,
    );
    state.conversationId = id;
    state.threadId = "";
    clearLog(conversation.title || "Conversation");
    for (const m of messages || []) {
      const item = append(messageItem(m.role, m.text, { state: "done" }));
      if (m.role === "assistant") {
        renderCitations(item, m.citations, liftWithheldNote(item));
        const seconds = m.latency_ms ? `${(m.latency_ms / 1000).toFixed(1)} s` : "";
        renderMeta(item, [conversation.persona, m.model, seconds]);
        renderEvidenceLink(item, m.id, downloadEvidence);
      }
    }
  } catch (err) {
    showSidebarError(err);
  }
  markCurrent();
}

async function openThread(id, title) {
  closeSidebarOnNarrow();
  closeNote();
  closeBeliefs();
  setMode("queue");
  try {
    const { turns } = await getAsOwner(`/v1/threads/${encodeURIComponent(id)}/turns`);
    state.threadId = id;
    state.conversationId = "";
    clearLog(title || "Thread");
    for (const t of turns || []) {
      const item = append(messageItem(t.role, t.text, { turnId: t.id }));
      if (t.role === "user") {
        renderTurnState(item, t.state);
        if (t.as_of) renderAsOf(item, t.as_of);
        if (t.state === "error") renderError(item, "TURN_FAILED", t.error || "failed");
        if (t.state === "pending" || t.state === "thinking") followTurn(item, t);
      } else {
        renderCitations(item, t.citations, liftWithheldNote(item));
        renderEvidenceLink(item, t.id, downloadEvidence);
      }
    }
  } catch (err) {
    showSidebarError(err);
  }
  markCurrent();
}

async function forgetConversation(id) {
  if (!confirm("Forget this conversation and its messages?")) return;
  try {
    await remove(`/v1/conversations/${encodeURIComponent(id)}`);
    if (state.conversationId === id) newConversation();
  } catch (err) {
    showSidebarError(err);
  }
  refreshSidebar();
}

async function forgetThread(id) {
  if (!confirm("Forget this queued thread, its questions and answers?")) return;
  const open = state.threadId === id; // its followed turn may say "forgotten" first
  try {
    await remove(`/v1/threads/${encodeURIComponent(id)}`);
    if (open) newConversation();
  } catch (err) {
    showSidebarError(err);
  }
  refreshSidebar();
}

function historyEntry(kind, id, title, when, open) {
  const titleId = `${kind}-title-${id}`;
  const button = el(
    "button",
    { type: "button", class: "open", dataset: { id } },
    el("span", { class: "title", id: titleId }, title || "(untitled)"),
    el("time", { datetime: when || "" }, when ? new Date(when).toLocaleString() : ""),
  );
  button.addEventListener("click", open);
  // A thread's title is its first question: named by it, its × would share the entry's name.
  const label = kind === "conversation" ? `Forget “${title}”` : "Forget this thread";
  const forget = el(
    "button",
    {
      type: "button",
      class: "forget",
      "aria-label": label,
      "aria-describedby": titleId,
      title: "Forget",
    },
    "×",
  );
  forget.addEventListener("click", () =>
    kind === "conversation" ? forgetConversation(id) : forgetThread(id),
  );
  return el("li", { dataset: { kind, id } }, button, forget);
}

// Refreshes overlap (a turn queued, then its thread forgotten): the latest one's lists are shown,
// never an earlier one's that happened to answer last.
let sidebarReads = 0;

async function refreshSidebar() {
  const read = ++sidebarReads;
  $("sidebar-error").hidden = true;
  try {
    const [{ conversations }, { threads }] = await Promise.all([
      getJson("/v1/conversations?limit=50"),
      getJson("/v1/threads"),
    ]);
    if (read !== sidebarReads) return;
    $("conversations").replaceChildren(
      ...(conversations || []).map((c) =>
        historyEntry("conversation", c.id, c.title, c.updated_at || c.created_at, () =>
          openConversation(c.id),
        ),
      ),
    );
    $("threads").replaceChildren(
      ...(threads || []).map((t) =>
        historyEntry("thread", t.id, t.title, t.created_at, () => openThread(t.id, t.title)),
      ),
    );
    markCurrent();
    const current =
      (conversations || []).find((c) => c.id === state.conversationId) ||
      (threads || []).find((t) => t.id === state.threadId);
    if (current && current.title) $("chat-title").textContent = current.title;
  } catch (err) {
    if (read === sidebarReads) showSidebarError(err);
  }
}

function markCurrent() {
  for (const item of document.querySelectorAll(".threads li")) {
    const current =
      (item.dataset.kind === "conversation" && item.dataset.id === state.conversationId) ||
      (item.dataset.kind === "thread" && item.dataset.id === state.threadId);
    // aria-current="" would mean false: say "true", or leave it off.
    const open = item.querySelector(".open");
    if (current) open.setAttribute("aria-current", "true");
    else open.removeAttribute("aria-current");
  }
}

function showSidebarError(err) {
  const [code, message] = describe(err);
  const box = $("sidebar-error");
  box.textContent = `${code}: ${message}`;
  box.hidden = false;
}

// ---- controls ------------------------------------------------------------------------------

function setBusy(busy) {
  $("send").disabled = busy;
  $("stop").hidden = !busy;
}

function setMode(mode) {
  state.mode = mode;
  for (const radio of document.querySelectorAll('input[name="mode"]')) {
    radio.checked = radio.value === mode;
  }
  $("persona").disabled = mode === "queue"; // queued turns use the worker's default persona
}

function newConversation() {
  closeNote();
  closeBeliefs();
  state.conversationId = "";
  state.threadId = "";
  clearLog("New conversation");
  markCurrent();
  $("composer-input").focus();
}

function closeSidebarOnNarrow() {
  document.body.classList.remove("sidebar-open");
  $("sidebar-toggle").setAttribute("aria-expanded", "false");
}

function submit(event) {
  event.preventDefault();
  const input = $("composer-input");
  const text = input.value.trim();
  if (!text || state.controller) return;
  input.value = "";
  const day = $("as-of").value; // "" or YYYY-MM-DD
  if (state.mode === "queue") queueTurn(text, day);
  else streamAnswer(text, day);
}

function init() {
  $("composer").addEventListener("submit", submit);
  $("composer-input").addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) submit(event);
  });
  $("stop").addEventListener("click", () => state.controller?.abort());
  // No day after today, the reader's today (the orchestrator allows a day's grace over UTC).
  const local = new Date(Date.now() - new Date().getTimezoneOffset() * 60_000);
  $("as-of").max = local.toISOString().slice(0, 10);
  $("new-chat").addEventListener("click", newConversation);
  $("open-beliefs").addEventListener("click", () => {
    closeSidebarOnNarrow();
    closeNote();
    showBeliefs();
  });
  for (const radio of document.querySelectorAll('input[name="mode"]')) {
    radio.addEventListener("change", () => {
      // Streamed conversations and queued threads are separate histories: start afresh.
      setMode(radio.value);
      newConversation();
    });
  }
  $("persona").addEventListener("change", () => {
    localStorage.setItem(PERSONA_STORAGE, persona());
  });
  loadPersonas();
  $("api-key").value = apiKey();
  $("key-form").addEventListener("submit", (event) => {
    event.preventDefault();
    setApiKey($("api-key").value.trim());
    $("key-status").textContent = apiKey() ? "Saved." : "No key set.";
    refreshSidebar();
    loadPersonas(); // a list refused for want of a key can be read now
  });
  $("key-clear").addEventListener("click", () => {
    setApiKey("");
    $("api-key").value = "";
    $("key-status").textContent = "Forgotten.";
  });
  $("sidebar-close").addEventListener("click", closeSidebarOnNarrow);
  document.addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeSidebarOnNarrow();
  });
  $("sidebar-toggle").addEventListener("click", () => {
    const open = document.body.classList.toggle("sidebar-open");
    $("sidebar-toggle").setAttribute("aria-expanded", String(open));
  });
  refreshSidebar();
  const noteId = noteIdFromLocation();
  if (noteId) showNote(noteId);
}

init();
