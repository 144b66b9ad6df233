// The note view (/notes/{episode_id}?chunk={item_id}): a cited note, with the cited chunk marked.

import { ApiError, getJson } from "./api.js";
import { el } from "./render.js";

/** The episode id when the page was opened at /notes/{id}, else null. */
export function noteIdFromLocation() {
  const match = location.pathname.match(/^\/notes\/([^/]+)\/?$/);
  return match ? decodeURIComponent(match[1]) : null;
}

function body(note, chunkId) {
  const text = note.text || "";
  const chunk = (note.sections || []).find((c) => c.id === chunkId);
  if (!chunk || chunk.end <= chunk.start) return el("div", { class: "note-text" }, text);
  // The offsets count code points (Python's str), not JavaScript's UTF-16 units.
  const chars = Array.from(text);
  const part = (from, to) => chars.slice(from, to).join("");
  const mark = el("mark", { id: "cited", tabindex: "-1" }, part(chunk.start, chunk.end));
  return el(
    "div",
    { class: "note-text" },
    part(0, chunk.start),
    mark,
    part(chunk.end, chars.length),
  );
}

/** Leaves the note view for the chat (the sidebar was used). */
export function closeNote() {
  if (!document.body.classList.contains("note-view")) return;
  document.body.classList.remove("note-view");
  document.querySelector("article.note")?.remove();
  history.pushState(null, "", "/");
  document.title = "memex chat";
}

/** Shows the note in place of the chat; a missing note or an API error is said plainly. */
export async function showNote(episodeId) {
  document.body.classList.add("note-view");
  const main = document.getElementById("chat");
  const back = el("a", { href: "/", class: "back" }, "← Back to chat");
  const article = el("article", { class: "note", "aria-busy": "true" }, back);
  main.querySelector("article.note")?.remove();
  main.append(article);
  document.title = "Note — memex";
  try {
    // The owner opens a note they were cited: ask for it even if it is marked sensitive. The
    // gateway allows that to a loopback caller without a key, or a key granted sensitive reads;
    // anyone else gets a 403 saying so, shown below.
    const id = encodeURIComponent(episodeId);
    const note = await getJson(`/v1/notes/${id}?include_sensitive=true`);
    const where = [note.path, note.date].filter(Boolean).join(" · ");
    const chunkId = new URLSearchParams(location.search).get("chunk");
    article.append(
      el("h2", { class: "note-title" }, note.title || note.path || episodeId),
      el("p", { class: "where" }, where),
      body(note, chunkId),
    );
    document.title = `${note.title || "Note"} — memex`;
    document.getElementById("cited")?.scrollIntoView({ block: "center" });
  } catch (err) {
    const [code, message] =
      err instanceof ApiError ? [err.code, err.message] : ["ERROR", String(err)];
    article.append(
      el("p", { class: "error", role: "alert" }, el("strong", {}, code), ` ${message}`),
    );
  } finally {
    article.removeAttribute("aria-busy");
  }
}
