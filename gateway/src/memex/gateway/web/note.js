// The note view (/notes/{episode_id}?chunk={item_id}): a cited note, with the cited chunk marked,
// and the note's versions (docs/as-of.md), each earlier one linked to its own view.

import { ApiError, getJson, noteFileUrl } from "./api.js";
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

/**
 * The note's versions, oldest first, each with when it held (UTC days); every one but the shown
 * one links to its own view ("NOTE_ID@vN" for an earlier one). Null when none are listed.
 */
function versions(note) {
  const list = note.versions || [];
  if (!list.length) return null;
  const items = list.map((v) => {
    const label = `v${v.number}`;
    const name =
      v.episode_id === note.episode_id
        ? el("strong", { "aria-current": "page" }, label)
        : el("a", { href: `/notes/${encodeURIComponent(v.episode_id)}` }, label);
    const from = el("time", { datetime: v.valid_from }, (v.valid_from || "").slice(0, 10));
    const held = v.valid_to
      ? [from, " to ", el("time", { datetime: v.valid_to }, v.valid_to.slice(0, 10))]
      : ["since ", from, " (current)"];
    return el("li", {}, name, " ", ...held);
  });
  return el(
    "section",
    { class: "versions", "aria-labelledby": "versions-heading" },
    el("h3", { id: "versions-heading" }, "Versions"),
    el("ol", {}, ...items),
  );
}

const AUDIO = /\.(m4a|mp3|wav|ogg|opus|webm|flac)$/i;
const CLOCK = /^(?:(\d+):)?(\d{1,2}):(\d{2})$/; // a memo's stretch is headed by its time
const PAGE = /^p\. (\d+)$/; // a PDF's section is headed by its page
let fileUrl = null; // the shown note's file, released when the view closes

async function fileOf(episodeId) {
  releaseFile();
  fileUrl = await noteFileUrl(episodeId);
  return fileUrl;
}

function releaseFile() {
  if (fileUrl) URL.revokeObjectURL(fileUrl);
  fileUrl = null;
}

/** Seconds into the memo of a section headed "02:41" (or "1:02:41"); null for another heading. */
export function secondsAt(heading) {
  const match = CLOCK.exec(heading || "");
  if (!match) return null;
  const [, hours, minutes, seconds] = match;
  return Number(hours || 0) * 3600 + Number(minutes) * 60 + Number(seconds);
}

/**
 * The memo's player, cued to the cited stretch, or a link opening the PDF at the cited page:
 * the file fetched with the API key (a plain src cannot send it). Null for any other note.
 */
async function original(note, episodeId, chunk) {
  const path = note.path || "";
  const heading = chunk ? chunk.heading : "";
  if (AUDIO.test(path)) {
    const player = el("audio", { controls: "", preload: "metadata", class: "memo" });
    player.src = await fileOf(episodeId);
    const at = secondsAt(heading);
    if (at !== null) {
      player.addEventListener("loadedmetadata", () => (player.currentTime = at), { once: true });
    }
    const label = at === null ? "The voice memo" : `The voice memo, from ${heading}`;
    return el("figure", { class: "original" }, el("figcaption", {}, label), player);
  }
  if (/\.pdf$/i.test(path)) {
    const page = PAGE.exec(heading);
    const url = await fileOf(episodeId);
    const link = el(
      "a",
      { href: page ? `${url}#page=${page[1]}` : url, target: "_blank", rel: "noopener" },
      page ? `Open the PDF at page ${page[1]}` : "Open the PDF",
    );
    return el("p", { class: "original" }, link);
  }
  return null;
}

/** Leaves the note view for the chat (the sidebar was used). */
export function closeNote() {
  if (!document.body.classList.contains("note-view")) return;
  document.body.classList.remove("note-view");
  document.querySelector("article.note")?.remove();
  releaseFile();
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
    );
    const chunk = (note.sections || []).find((c) => c.id === chunkId);
    const file = await original(note, episodeId, chunk).catch((err) =>
      el("p", { class: "error", role: "alert" }, `The file cannot be played: ${err.message}`),
    );
    if (file) article.append(file);
    article.append(body(note, chunkId));
    const kept = versions(note);
    if (kept) article.append(kept);
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
