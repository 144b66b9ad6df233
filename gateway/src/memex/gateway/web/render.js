// DOM building for messages and citations. Text always goes in as text nodes, never as HTML:
// answers quote the user's notes, and notes can contain anything.

// A citation's label comes with it (`support_label`: the gateway's one vocabulary, shared with the
// MCP tools and the CLI); the support name only picks a style and a hint here.
const SUPPORT_HINTS = {
  verbatim: "The quote appears word for word in the note.",
  paraphrase: "The note says this in other words.",
  inference: "Not stated in the note; the answer reads it between the lines.",
  unchecked: "Not checked against the note.",
};

/** Creates an element with attributes and children (strings become text nodes). */
export function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === undefined || value === null || value === false) continue;
    if (name === "class") node.className = value;
    else if (name === "dataset") Object.assign(node.dataset, value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children) {
    if (child === null || child === undefined) continue;
    node.append(typeof child === "string" ? document.createTextNode(child) : child);
  }
  return node;
}

/** "verbatim" | "paraphrase" | "inference" | "unchecked" from the API's value (tolerating proto
 * names); anything else was not checked, and is not dressed up as if it were. */
export function supportOf(value) {
  const name = String(value || "").toLowerCase().replace(/^support_/, "");
  return name in SUPPORT_HINTS ? name : "unchecked";
}

/** Where a note opens: the page's note view (cited chunk marked), when the citation names one. */
export function noteHref(episodeId, itemId) {
  if (!episodeId) return null;
  const chunk = itemId ? `?chunk=${encodeURIComponent(itemId)}` : "";
  return `/notes/${encodeURIComponent(episodeId)}${chunk}`;
}

function citationItem(citation) {
  const support = supportOf(citation.support);
  const href = noteHref(citation.episode_id, citation.item_id);
  const ref = citation.ref || citation.item_id || "source";
  const label = href ? el("a", { href, class: "ref" }, ref) : el("span", { class: "ref" }, ref);
  return el(
    "li",
    { class: "citation", dataset: { support } },
    el(
      "span",
      { class: `support support-${support}`, title: SUPPORT_HINTS[support] },
      citation.support_label || support,
    ),
    " ",
    label,
    citation.quote ? el("q", { class: "quote" }, citation.quote) : null,
  );
}

// The orchestrator ends an answer with "_(N sensitive sources withheld from the cloud answer.)_"
// (Markdown italics); the page shows that as the sources block's withheld line instead.
const WITHHELD_NOTE = /\s*_\((\d+) sensitive sources? withheld from [^)]*\)_\s*$/;

/** Takes the trailing withheld note out of a message's text; returns its count (0: none). */
export function liftWithheldNote(message) {
  const body = message.querySelector(".text");
  const match = body.textContent.match(WITHHELD_NOTE);
  if (!match) return 0;
  body.textContent = body.textContent.slice(0, match.index);
  return Number(match[1]);
}

/** Fills (or refills) a message's citation block; `withheld` sensitive items get a note. */
export function renderCitations(message, citations, withheld = 0) {
  message.querySelector(".sources")?.remove();
  const list = citations || [];
  if (!list.length && !withheld) return;
  const block = el("section", { class: "sources", "aria-label": "Sources" });
  if (list.length) {
    block.append(
      el("h3", {}, list.length === 1 ? "1 source" : `${list.length} sources`),
      el("ul", { class: "citations" }, ...list.map(citationItem)),
    );
  }
  if (withheld > 0) {
    const noun = withheld === 1 ? "source was" : "sources were";
    block.append(
      el(
        "p",
        { class: "withheld", role: "note" },
        `${withheld} sensitive ${noun} withheld from this answer.`,
      ),
    );
  }
  message.querySelector(".bubble").append(block);
}

/** A message in the log. Returns the <li>; its `.text` node receives streamed text. */
export function messageItem(role, text = "", extra = {}) {
  const who = role === "user" ? "You" : "memex";
  const body = el("div", { class: "text" }, text);
  const item = el(
    "li",
    { class: `message ${role}`, dataset: { role, ...extra } },
    el("div", { class: "bubble" }, el("p", { class: "who" }, who), body),
  );
  return item;
}

/** An error line: its code in bold, then what went wrong (an alert). */
export function errorLine(code, text) {
  return el("p", { class: "error", role: "alert" }, el("strong", {}, code || "ERROR"), ` ${text}`);
}

/** Shows an error inside a message (or as its own entry) with its code. */
export function renderError(message, code, text) {
  message.querySelector(".error")?.remove();
  message.dataset.state = "error";
  message.querySelector(".bubble").append(errorLine(code, text));
}

/**
 * Marks a queued question whose thread was forgotten (here, in another tab, from the CLI) while
 * it was followed: not an error, so a status, not an alert.
 */
export function renderForgotten(message) {
  renderTurnState(message, "forgotten");
  message.querySelector(".error")?.remove();
  message.querySelector(".forgotten")?.remove();
  message
    .querySelector(".bubble")
    .append(el("p", { class: "forgotten", role: "status" }, "This thread was forgotten."));
}

/** Marks an answer given from the memory as of a day (docs/as-of.md) beside its "memex". */
export function renderAsOf(message, day) {
  message.querySelector(".as-of-badge")?.remove();
  if (!day) return;
  const badge = el("span", { class: "as-of-badge" }, `as of ${day}`);
  badge.title = "Answered from your notes as they stood at the end of that day";
  message.querySelector(".who").append(" ", badge);
}

/** A small line under an answer: model, persona, latency. */
export function renderMeta(message, parts) {
  let line = message.querySelector(".meta");
  if (!line) {
    line = el("p", { class: "meta" });
    message.querySelector(".bubble").append(line);
  }
  line.textContent = parts.filter(Boolean).join(" · ");
}

/** The state badge of a queued user turn: pending → thinking → answered | error | forgotten. */
export function renderTurnState(message, state) {
  message.dataset.state = state;
  let badge = message.querySelector(".turn-state");
  if (!badge) {
    badge = el("span", { class: "turn-state", role: "status" });
    message.querySelector(".who").append(" ", badge);
  }
  badge.textContent = state;
  badge.className = `turn-state state-${state}`;
}

/**
 * The "Download evidence" link under an answer (issue 37): `download(answerId)` saves its evidence
 * bundle; a failure (an answer from before bundles were kept: 404) is said beside the link.
 */
export function renderEvidenceLink(message, answerId, download) {
  message.querySelector(".evidence")?.remove();
  if (!answerId) return;
  const href = `/v1/evidence/${encodeURIComponent(answerId)}`;
  const note = el("span", { class: "evidence-error", role: "status" });
  const link = el("a", { href, class: "evidence-link", download: "" }, "Download evidence");
  link.title = "The question, the answer, its excerpts and checked citations, as a JSON file";
  link.addEventListener("click", async (event) => {
    event.preventDefault();
    note.textContent = "";
    try {
      await download(answerId);
    } catch (err) {
      note.textContent = ` ${err && err.message ? err.message : err}`;
    }
  });
  message.querySelector(".bubble").append(el("p", { class: "evidence" }, link, note));
}
