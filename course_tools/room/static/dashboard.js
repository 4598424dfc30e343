// The room's dashboard: a snapshot of the room, then updates, over server-sent events. Everything a
// learner sent is written with textContent, never as HTML. The projector view hides every name and
// every learner's own words; it shows a mistake's idea only when several learners share it, and
// never its fix (the answer, nearly). Merge and remove ask first, in the page; Undo takes back the
// latest rename, merge or remove. A new raised hand is said aloud (a live region), in the page's
// title and by a marked entry. "On my way" claims a learner for the helper (whose name the helpers'
// page asks once and keeps in this browser); every screen shows the claim, and taking over another
// helper's asks first.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const room = { catalogue: [], learners: {}, summary: null, clockOffset: 0, role: "" };
const TITLE = document.title;
const FRESH_MS = 15000; // how long a new hand stays marked "new"
const hands = { seen: null, fresh: new Map() }; // hands known (name@since); name: when marked
const $ = (id) => document.getElementById(id);
const WORDS = { passed: "passed", incorrect: "incorrect", error: "error", not_attempted: "not attempted" };
const NOT_TRIED = { outcome: "not_attempted", tries: 0, hint: 0, mistake: null, fix: null };
const MARKS = { passed: "✓", incorrect: "✗", error: "!", not_attempted: "–" };

function element(tag, text, attributes) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  return node;
}

// Replace a list's or a table's rows only when what they show changed: a row rebuilt under the
// pointer, as updates stream in, would swallow the click on its button.
const shownAs = new WeakMap();
function replaceIfChanged(parent, children) {
  const shown = children.map((child) => child.outerHTML).join("");
  if (shownAs.get(parent) === shown) return;
  shownAs.set(parent, shown);
  parent.replaceChildren(...children);
}

function hidden(text) {
  return element("span", text, { class: "visually-hidden" });
}

function minutesSince(seconds) {
  return Math.max(0, Math.floor((Date.now() / 1000 + room.clockOffset - seconds) / 60));
}

function minutesWords(minutes) {
  return minutes < 1 ? "under a minute" : `${minutes} min`;
}

function ago(seconds) {
  return minutesWords(minutesSince(seconds));
}

const GAP = "\u00a0· "; // between the parts of a needs-help entry (kept at the start of a part)

function lastTime(seconds) {
  const minutes = minutesSince(seconds);
  return minutes < 1 ? "just now" : `${minutes} min ago`;
}

function howLong(row) {
  // How long: a streak's tries span and its latest try (a pause is not a struggle), else the wait
  // (said already by a running check's and a gone kernel's own words).
  let words = row.kind === "running" || row.kind === "gone" ? "" : `${GAP}${ago(row.since)}`;
  if (row.kind === "streak" || row.kind === "again") {
    const span = Math.floor((row.last - row.since) / 60);
    words = `${GAP}${span < 1 ? "" : `over ${span} min, `}last ${lastTime(row.last)}`;
  }
  if (row.helped && row.kind !== "again") words += `${GAP}helped ${lastTime(row.helped)}`;
  return words;
}

function projecting() {
  return document.body.classList.contains("projector");
}

function shownLesson() {
  return $("lesson").value || (room.summary && room.summary.lesson) || (room.catalogue[0] || {}).lesson;
}

function take(message, whole) {
  room.clockOffset = message.now - Date.now() / 1000;
  if (whole) {
    room.catalogue = message.catalogue;
    room.learners = message.learners;
    room.role = message.role;
    document.body.classList.toggle("helper", room.role !== "instructor");
    $("role").textContent = room.role === "instructor" ? "" : "(helpers' view)";
    $("reach").textContent = message.reach || "";
    $("reach").classList.toggle("warning", (message.reach || "").startsWith("The room listens on this machine only"));
    if (room.role !== "instructor" && !helperName()) {
      $("action-said").textContent = "Type your name at the top of the page: it shows on your claims and in the export.";
    }
    const select = $("lesson");
    const lessons = [...new Set(room.catalogue.map((e) => e.lesson))];
    if (select.options.length === 1) {
      for (const lesson of lessons) select.append(element("option", `Lesson ${lesson}`, { value: lesson }));
    }
  } else {
    for (const [name, learner] of Object.entries(message.learners)) {
      if (learner === null) delete room.learners[name];
      else room.learners[name] = learner;
    }
  }
  room.summary = message;
  if (document.activeElement !== $("idle")) $("idle").value = message.idle_minutes;
  noticeHands(message.needs_help);
  scheduleRender();
}

function noticeHands(rows) {
  // The hands up now; those not seen before (after the first snapshot) are announced and marked.
  const up = rows.filter((row) => row.kind === "hand");
  const keys = new Set(up.map((row) => `${row.name}@${row.since}`));
  const raised = hands.seen ? up.filter((row) => !hands.seen.has(`${row.name}@${row.since}`)) : [];
  hands.seen = keys;
  for (const row of raised) hands.fresh.set(row.name, Date.now());
  if (raised.length) {
    const who = raised.map((row) => `${row.name}${row.exercise ? ` (${row.exercise})` : ""}`);
    const said = `Hand up: ${who.join(", ")}.`;
    $("hand-alert").textContent = said;
    setTimeout(() => {
      if ($("hand-alert").textContent === said) $("hand-alert").textContent = "";
      scheduleRender();
    }, FRESH_MS + 100);
  }
  const count = `${up.length} hand${up.length === 1 ? "" : "s"} up`;
  document.title = up.length ? `(${count}) ${TITLE}` : TITLE;
  $("hands-up").hidden = !up.length;
  $("hands-up").textContent = `${count}: go to Needs help`;
}

let pending = false;
function scheduleRender() {
  if (pending) return;
  pending = true;
  requestAnimationFrame(() => {
    pending = false;
    render();
  });
}

function render() {
  const lesson = shownLesson();
  const exercises = room.catalogue.filter((e) => e.lesson === lesson);
  const names = Object.keys(room.learners).sort((a, b) => a.localeCompare(b));
  const present = names.filter((name) => !room.learners[name].left); // who counts in a total
  $("lesson-name").textContent = lesson ? `lesson ${lesson}` : "the room's lesson";
  $("grid-lesson").textContent = $("lesson-name").textContent;
  renderClock();
  renderHelp();
  renderReady(names, present);
  renderExercises(exercises, present.length);
  renderGrid(exercises, names);
  renderNames(names);
  renderUndo();
}

function clockTime(seconds) {
  return new Date((seconds - room.clockOffset) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function renderClock() {
  const since = room.summary.block_since;
  const from = room.summary.block_by === "instructor" ? "you started it" : "the first check after a pause";
  $("block").textContent = since
    ? `Exercise block: ${ago(since)}, since ${from} (${clockTime(since)})`
    : "Between exercise blocks";
}

function helperName() {
  return $("helper-name").value.trim();
}

async function act(body) {
  if (room.role !== "instructor") {
    if (!helperName()) {
      $("action-said").textContent = "Not done: type your name at the top of the page first.";
      $("helper-name").focus();
      return false;
    }
    body = { ...body, by: helperName() };
  }
  const reply = await fetch("api/actions", {
    method: "POST",
    headers: { "Content-Type": "application/json", "X-Room-Token": token },
    body: JSON.stringify(body),
  }).catch(() => null);
  $("action-said").textContent = reply && reply.ok ? "" : `Not done: ${reply ? (await reply.json()).error : "the room did not answer"}.`;
  return reply && reply.ok;
}

// Merge and remove ask first: the buttons give way to "Confirm …" and "Cancel".
let pendingAction = null;
function ask(question, label, body) {
  pendingAction = body;
  $("confirm-said").textContent = question;
  $("confirm").textContent = label;
  $("name-actions").hidden = true;
  $("confirming").hidden = false;
  $("confirm").focus();
}

function stopAsking() {
  pendingAction = null;
  $("confirming").hidden = true;
  $("name-actions").hidden = false;
}

function renderUndo() {
  const undo = room.summary.undo;
  const button = $("undo");
  button.hidden = !undo;
  if (!undo) return;
  const words = { remove: `remove ${undo.name}`, merge: `merge ${undo.name} into ${undo.to}`, rename: `rename ${undo.name} to ${undo.to}` };
  button.textContent = `Undo: ${words[undo.kind]}`;
}

function renderHelp() {
  const list = $("needs-help");
  const rows = room.summary.needs_help;
  $("help-count").textContent = `(${rows.length})`;
  const items = rows.map((row) => {
      const fresh = Date.now() - (hands.fresh.get(row.name) || -Infinity) < FRESH_MS && row.kind === "hand";
      // One line each: the end of what went wrong (the learner's words, the mistake's idea and fix, then
      // why) is cut on screen (an ellipsis), never in the page: the whole text stays in it for a
      // screen reader, and the entry opens to it on hover and when its button has the focus (no
      // tooltip: a screen reader would hear the text twice). The time and the button always show.
      const item = element("li", null, { class: fresh ? `${row.kind} fresh` : row.kind });
      if (fresh) item.append(element("span", "new", { class: "new-mark" }), " ");
      const what = element("span", null, { class: "what" });
      const why = {
        again: `helped ${lastTime(row.helped)}, ${row.why}`,
        running: `${row.why} ${ago(row.since)}`,
        gone: `${row.why} last seen ${lastTime(row.since)}`,
      }[row.kind] || row.why;
      const where = row.kind === "setup" ? "" : `${row.exercise || "no exercise yet"}: `;
      what.append(element("strong", row.name), `${GAP}${where}${why}`);
      if (row.text) what.append(" “", element("span", row.text), "”");
      // A recognised mistake by the idea it misses (what went wrong), then its fix, each labelled.
      if (row.idea) what.append(", misses: ", element("span", row.idea, { class: "idea" }));
      if (row.fix) what.append(" — fix: ", element("span", row.fix, { class: "fix" }));
      item.append(what, element("span", howLong(row), { class: "since" }));
      if (row.claim) item.append(element("span", claimWords(row.claim), { class: "claim" }));
      item.append(claimButton(row), " ");
      const button = element("button", "Helped", { type: "button", "aria-label": `Mark ${row.name} helped` });
      button.addEventListener("click", () => act({ kind: "helped", name: row.name }));
      item.append(button);
      return item;
    });
  if (!rows.length) items.push(element("li", "Nobody right now.", { class: "quiet" }));
  replaceIfChanged(list, items);
  const claims = Object.entries(room.summary.claims || {});
  $("claims").textContent = claims.length
    ? `On the way: ${claims.map(([name, claim]) => `${claim.by} to ${name} (${ago(claim.since)})`).join(", ")}`
    : "";
}

function claimWords(claim) {
  return `${claim.by} is on the way (${ago(claim.since)})`;
}

function mine(claim) {
  return claim && (room.role === "instructor" ? claim.by === "the instructor" : claim.by === helperName());
}

// "On my way", or, on another's claim, "Take over from Alex", which asks once more before it acts.
const confirming = new Set();
function claimButton(row) {
  const other = row.claim && !mine(row.claim) ? row.claim.by : "";
  const asking = other && confirming.has(row.name);
  const label = mine(row.claim) ? "On my way ✓" : asking ? `Confirm: take over from ${other}` : other ? `Take over from ${other}` : "On my way";
  const button = element("button", label, { type: "button", "aria-label": `${label}: ${row.name}`, "data-claim": row.name });
  button.addEventListener("click", async () => {
    if (other && !asking) {
      confirming.add(row.name);
      render();
      const again = [...document.querySelectorAll("[data-claim]")].find((b) => b.dataset.claim === row.name);
      if (again) again.focus();
      return;
    }
    confirming.delete(row.name);
    await act({ kind: "claim", name: row.name, ...(other ? { take_over: true } : {}) });
  });
  return button;
}

function mistakeWords(mistake) {
  // A mistake's id is a stable name, not words: its short fix names it for you, and the idea the
  // course gives for it is what to explain. The projector shows the idea alone.
  const who = `${mistake.count} ${mistake.count === 1 ? "learner" : "learners"}`;
  const named = mistake.fix && !projecting() ? `${who}: ${mistake.fix}` : who;
  return mistake.idea ? `${named} — idea: ${mistake.idea}` : `${named} (mistake ${mistake.id})`;
}

function renderExercises(exercises, learners) {
  const body = $("exercises").tBodies[0];
  body.replaceChildren(
    ...exercises.map((e) => {
      const stats = room.summary.exercises[e.id];
      const row = element("tr");
      row.append(element("th", `${e.id}: ${e.title} (${e.minutes} min)`, { scope: "row" }));
      row.append(element("td", `${stats.passed} of ${learners}`));
      const failing = [];
      if (stats.incorrect) failing.push(`${stats.incorrect} incorrect`);
      if (stats.error) failing.push(`${stats.error} raised an error`);
      const hints = stats.hints.map(([hint, count]) => (hint ? `hint ${hint} ×${count}` : `no hint yet ×${count}`));
      let failed = failing.length ? `${failing.join(", ")} · seen: ${hints.join(", ")}` : "nobody failing";
      if (stats.setup) failed += ` (and ${stats.setup} whose setup failed, not this exercise)`;
      row.append(element("td", failed));
      const shared = stats.mistakes.filter((m) => !projecting() || m.count >= room.summary.shared_by);
      const cell = element("td");
      if (shared.length) {
        const list = element("ul", null, { class: "mistakes" });
        for (const mistake of shared) list.append(element("li", mistakeWords(mistake)));
        cell.append(list);
      } else {
        cell.textContent = "none recognised";
      }
      row.append(cell);
      return row;
    })
  );
}

function renderGrid(exercises, names) {
  const head = element("tr");
  head.append(element("th", "Learner", { scope: "col" }));
  for (const e of exercises) head.append(element("th", e.id.split(".")[1], { scope: "col", title: `${e.id}: ${e.title}` }));
  head.append(element("th", "Last seen", { scope: "col" }));
  head.append(element("th", "Names", { scope: "col", class: "instructor" }));
  $("grid").tHead.replaceChildren(head);
  const body = $("grid").tBodies[0];
  const rows = names.map((name) => {
      const learner = room.learners[name];
      const row = element("tr");
      const header = element("th", name, { scope: "row", title: name });
      if (learner.hand) header.append(element("span", " · hand up", { class: "hand" }));
      const claim = (room.summary.claims || {})[name];
      if (claim) header.append(element("span", ` · ${claimWords(claim)}`));
      if (learner.left) header.append(element("span", " · left", { class: "left" }));
      row.append(header);
      for (const e of exercises) {
        const { outcome, tries, hint, mistake, fix } = learner.cells[e.id] || NOT_TRIED;
        const cell = element("td", null, { class: `outcome ${outcome}`, title: fix || "" });
        let shown = MARKS[outcome];
        let said = WORDS[outcome];
        if (tries) said += `, ${tries} ${tries === 1 ? "try" : "tries"}`;
        if (outcome !== "passed" && tries) shown += ` ${tries}`;
        if ((outcome === "incorrect" || outcome === "error") && hint) {
          shown += ` h${hint}`;
          said += `, saw hint ${hint}`;
        }
        if (mistake) said += ", a recognised mistake";
        cell.append(element("span", shown, { "aria-hidden": "true" }), hidden(said));
        row.append(cell);
      }
      row.append(element("td", learner.seen ? lastTime(learner.seen) : "", { class: "seen" }));
      const names = element("td", null, { class: "instructor" });
      names.append(namesButton(name));
      row.append(names);
      return row;
    });
  if (!names.length) {
    const row = element("tr");
    row.append(element("td", "Nobody has joined yet.", { colspan: exercises.length + 3 }));
    rows.push(row);
  }
  replaceIfChanged(body, rows);
}

// Rename, merge and remove, reached from the learner's row: the controls, with them chosen.
function namesButton(name) {
  const button = element("button", "Names…", { type: "button", class: "row-names", "aria-label": `Names… (rename, merge or remove ${name})` });
  button.addEventListener("click", () => {
    $("learner").value = name;
    $("controls-heading").scrollIntoView({ block: "start" });
    $("new-name").focus();
  });
  return button;
}

function setupWords(info) {
  if (!info) return "– not yet";
  return info.ok ? "✓ ready" : `✗ setup failed: ${info.reason || "no reason sent"}`;
}

function renderReady(names, present) {
  // Those who need you first: a failed setup, then not yet run, then ready; those who left (out of
  // the counts until their next event) last.
  const rank = (name) => {
    const info = room.learners[name].ready;
    return room.learners[name].left ? 3 : info ? (info.ok ? 2 : 0) : 1;
  };
  const ready = present.filter((name) => rank(name) === 2);
  const failed = present.filter((name) => rank(name) === 0);
  const left = names.length - present.length;
  let count = `(${ready.length} of ${present.length} ready`;
  if (failed.length) count += `, ${failed.length} setup failed`;
  if (left) count += `, ${left} left`;
  $("ready-count").textContent = `${count})`;
  const waiting = [...names].filter((name) => rank(name) !== 2).sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  $("not-ready").replaceChildren(
    ...waiting.map((name) => {
      const item = element("li");
      const words = rank(name) === 3 ? "left the room" : setupWords(room.learners[name].ready);
      item.append(element("strong", name), ` · ${words}`);
      return item;
    })
  );
  const body = $("ready").tBodies[0];
  body.replaceChildren(
    ...[...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((name) => {
      const info = room.learners[name].ready;
      const row = element("tr");
      row.append(element("th", name, { scope: "row" }));
      row.append(element("td", `${setupWords(info)}${room.learners[name].left ? " · left" : ""}`));
      row.append(element("td", info ? info.jax : ""));
      row.append(element("td", info ? info.backend : ""));
      return row;
    })
  );
}

function renderNames(names) {
  const select = $("learner");
  if (document.activeElement === select) return; // never rebuilt under the instructor's hand
  const chosen = select.value;
  select.replaceChildren(...names.map((name) => element("option", name, { value: name })));
  if (names.includes(chosen)) select.value = chosen;
}

function connect() {
  const source = new EventSource(`api/stream?token=${encodeURIComponent(token)}`);
  source.addEventListener("snapshot", (event) => {
    $("connection").textContent = "Live: updates as learners check.";
    take(JSON.parse(event.data), true);
  });
  source.addEventListener("update", (event) => take(JSON.parse(event.data), false));
  source.addEventListener("error", () => {
    $("connection").textContent = "Reconnecting to the room…";
  });
}

let idleTimer = null;
// The helper's name, asked once and kept in this browser.
$("helper-name").value = localStorage.getItem("room-helper-name") || "";
$("helper-name").addEventListener("change", () => {
  localStorage.setItem("room-helper-name", helperName());
  render();
});
$("idle").addEventListener("change", () => {
  clearTimeout(idleTimer);
  idleTimer = setTimeout(async () => {
    const reply = await fetch("api/settings", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Room-Token": token },
      body: JSON.stringify({ idle_minutes: Number($("idle").value) }),
    }).catch(() => null);
    $("action-said").textContent = reply && reply.ok ? "" : `Not changed: ${reply ? (await reply.json()).error : "the room did not answer"}.`;
  }, 300);
});
$("rename").addEventListener("click", async () => {
  const name = $("learner").value;
  const to = $("new-name").value.trim();
  const body = { kind: "rename", name, to };
  if (Object.hasOwn(room.learners, to) && to !== name) {
    ask(`Merge ${name} into ${to}? One learner then, under ${to}.`, `Confirm merge into ${to}`, body);
  } else if (await act(body)) {
    $("new-name").value = "";
  }
});
$("remove").addEventListener("click", () => {
  const name = $("learner").value;
  if (name) ask(`Remove ${name}? Kept in the file; back if they check again.`, `Confirm remove ${name}`, { kind: "remove", name });
});
$("confirm").addEventListener("click", async () => {
  const body = pendingAction;
  stopAsking();
  $("rename").focus();
  if (body && (await act(body)) && body.kind === "rename") $("new-name").value = "";
});
$("cancel").addEventListener("click", () => {
  stopAsking();
  $("rename").focus();
});
$("undo").addEventListener("click", () => act({ kind: "undo", id: room.summary.undo.id }));
$("start-block").addEventListener("click", () => act({ kind: "block" }));
// The projector view lives in the address (#projector) too, so that a reload, or a browser that
// restores its tabs, keeps the names off the projector.
function showProjector(on) {
  document.body.classList.toggle("projector", on);
  $("projector").setAttribute("aria-pressed", String(on));
  $("projector").textContent = on ? "Back to the full view" : "Projector view (no names)";
  history.replaceState(null, "", on ? "#projector" : location.pathname + location.search);
  if (room.summary) render();
}
$("projector").addEventListener("click", () => showProjector(!projecting()));
if (location.hash === "#projector") showProjector(true);
$("lesson").addEventListener("change", render);
$("export").href = `export.csv?token=${encodeURIComponent(token)}`;
setInterval(() => room.summary && render(), 15000);
connect();
