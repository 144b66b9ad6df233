// The beliefs view (issue 37, docs/reflect.md): what the learning loop concluded from the notes,
// and the vault's own beliefs, each with its status, confidence and the graded quotes it rests
// on, each quote linked to its note. A derived belief can be confirmed, rejected or forgotten;
// the list is then read again, so it shows what the API now reports. Shown in place of the chat,
// as a note is.

import { ApiError, getAsOwner, postJson, remove } from "./api.js";
import { el, errorLine, noteHref, supportOf } from "./render.js";

// Rejected ones too: they stay listed (marked) so they can be confirmed after all, or forgotten.
const LIST = "/v1/beliefs?include_rejected=true";
const DONE = {
  confirm: "Confirmed",
  reject: "Rejected",
  forget: "Forgot",
};

function describe(err) {
  if (err instanceof ApiError) return [err.code, err.message];
  return ["ERROR", String(err && err.message ? err.message : err)];
}

/** Leaves the beliefs view for the chat. */
export function closeBeliefs() {
  if (!document.body.classList.contains("beliefs-view")) return;
  document.body.classList.remove("beliefs-view");
  document.querySelector("section.beliefs")?.remove();
  document.title = "memex chat";
}

/** Shows the beliefs in place of the chat; an API error is said in their place. */
export async function showBeliefs() {
  document.body.classList.add("beliefs-view");
  const main = document.getElementById("chat");
  main.querySelector("section.beliefs")?.remove();
  const back = el("button", { type: "button", class: "back" }, "← Back to chat");
  back.addEventListener("click", closeBeliefs);
  const view = el(
    "section",
    { class: "beliefs", "aria-labelledby": "beliefs-heading" },
    back,
    el("h2", { id: "beliefs-heading", class: "note-title" }, "Beliefs"),
    el(
      "p",
      { class: "where" },
      "What memex concluded from your notes, newest first, with the quotes each rests on.",
    ),
    el("p", { class: "beliefs-status", role: "status" }),
    el("ul", { class: "belief-list" }),
  );
  main.append(view);
  main.scrollTop = 0;
  document.title = "Beliefs — memex";
  await load(view);
}

/** Reads the list (again) into the view; `said` goes in its status line. */
async function load(view, said = "") {
  const list = view.querySelector(".belief-list");
  view.querySelector(".beliefs-status").textContent = said;
  view.setAttribute("aria-busy", "true");
  try {
    const { beliefs } = await getAsOwner(LIST);
    list.replaceChildren(...(beliefs || []).map((b) => beliefItem(view, b)));
    view.querySelector(".beliefs-empty")?.remove();
    if (!list.children.length) list.after(empty());
  } catch (err) {
    list.replaceChildren(el("li", {}, errorLine(...describe(err))));
  } finally {
    view.removeAttribute("aria-busy");
  }
}

function empty() {
  return el(
    "p",
    { class: "beliefs-empty" },
    "No beliefs yet. ",
    el("code", {}, "memex reflect"),
    " reads your recent notes and draws them, each resting on quotes from the notes, to check " +
      "here.",
  );
}

function beliefItem(view, belief) {
  const percent = `${Math.round((belief.confidence || 0) * 100)}%`;
  const source = belief.derived
    ? ["derived", belief.model ? `by ${belief.model}` : ""].filter(Boolean).join(" ")
    : "from your vault";
  const item = el(
    "li",
    { class: "belief", dataset: { id: belief.id, status: belief.status } },
    el("p", { class: "statement" }, belief.statement),
    el(
      "p",
      { class: "facts" },
      el("span", { class: `belief-status status-${belief.status}` }, belief.status),
      belief.confirmed ? " " : null,
      belief.confirmed ? el("span", { class: "belief-status status-confirmed" }, "confirmed") : null,
      ` confidence ${percent}`,
      belief.date ? ` · ${belief.date}` : "",
      ` · ${source}`,
    ),
    quotes("Rests on", belief.evidence),
    quotes("Contradicted by", belief.contradicted_by),
  );
  item.append(belief.derived ? actions(view, item, belief) : vaultNote());
  return item;
}

/** The quotes a belief rests on (or that disagree with it), each graded and linked to its note. */
function quotes(heading, evidence) {
  if (!evidence || !evidence.length) return null;
  return el(
    "section",
    { class: "sources" },
    el("h3", {}, heading),
    el("ul", { class: "citations" }, ...evidence.map(quoteItem)),
  );
}

function quoteItem(quote) {
  const support = supportOf(quote.support);
  const href = noteHref(quote.episode_id);
  const name = quote.title || quote.episode_id || "note";
  const note = href ? el("a", { href, class: "ref" }, name) : el("span", { class: "ref" }, name);
  return el(
    "li",
    { class: "citation", dataset: { support } },
    el("span", { class: `support support-${support}` }, support),
    " ",
    note,
    quote.date ? el("span", { class: "when" }, ` ${quote.date}`) : null,
    quote.quote ? el("q", { class: "quote" }, quote.quote) : null,
  );
}

function vaultNote() {
  return el(
    "p",
    { class: "facts" },
    "Kept in your vault's ",
    el("code", {}, "records/beliefs.jsonl"),
    ": edit it there.",
  );
}

function actions(view, item, belief) {
  const button = (action, label, disabled) => {
    const b = el("button", { type: "button", disabled }, label);
    b.addEventListener("click", () => act(view, item, belief, action));
    return b;
  };
  return el(
    "p",
    { class: "belief-actions" },
    button("confirm", "Confirm", belief.confirmed && belief.status === "active"),
    button("reject", "Reject", belief.status === "rejected"),
    button("forget", "Forget", false),
  );
}

/** Confirms, rejects or forgets a derived belief, then reads the list again. */
async function act(view, item, belief, action) {
  if (action === "forget" && !confirm("Forget this belief? Reflect may draw it again.")) {
    return;
  }
  const buttons = [...item.querySelectorAll(".belief-actions button")];
  const were = buttons.map((b) => b.disabled);
  for (const b of buttons) b.disabled = true;
  item.querySelector(".error")?.remove();
  const path = `/v1/beliefs/${encodeURIComponent(belief.id)}`;
  try {
    if (action === "forget") await remove(path);
    else await postJson(`${path}/${action}`);
  } catch (err) {
    item.append(errorLine(...describe(err)));
    buttons.forEach((b, i) => (b.disabled = were[i]));
    return;
  }
  await load(view, `${DONE[action]} “${belief.statement}”.`);
}
