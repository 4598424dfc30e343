// The room's dashboard: a snapshot of the room, then updates, over server-sent events. Everything a
// learner sent is written with textContent, never as HTML.
"use strict";

const token = new URLSearchParams(location.search).get("token") || "";
const room = { catalogue: [], learners: {}, summary: null, clockOffset: 0 };
const $ = (id) => document.getElementById(id);
const WORDS = { passed: "passed", incorrect: "incorrect", error: "error", not_attempted: "not attempted" };
const MARKS = { passed: "✓", incorrect: "✗", error: "!", not_attempted: "–" };

function element(tag, text, attributes) {
  const node = document.createElement(tag);
  if (text !== undefined && text !== null) node.textContent = String(text);
  for (const [name, value] of Object.entries(attributes || {})) node.setAttribute(name, value);
  return node;
}

function hidden(text) {
  return element("span", text, { class: "visually-hidden" });
}

function ago(seconds) {
  const minutes = Math.max(0, Math.floor((Date.now() / 1000 + room.clockOffset - seconds) / 60));
  return minutes < 1 ? "under a minute" : minutes === 1 ? "1 minute" : `${minutes} minutes`;
}

function shownLesson() {
  return $("lesson").value || (room.summary && room.summary.lesson) || (room.catalogue[0] || {}).lesson;
}

function take(message, whole) {
  room.clockOffset = message.now - Date.now() / 1000;
  if (whole) {
    room.catalogue = message.catalogue;
    room.learners = message.learners;
    const select = $("lesson");
    const lessons = [...new Set(room.catalogue.map((e) => e.lesson))];
    if (select.options.length === 1) {
      for (const lesson of lessons) select.append(element("option", `Lesson ${lesson}`, { value: lesson }));
    }
  } else {
    Object.assign(room.learners, message.learners);
  }
  room.summary = message;
  if (document.activeElement !== $("idle")) $("idle").value = message.idle_minutes;
  scheduleRender();
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
  $("lesson-name").textContent = lesson ? `lesson ${lesson}` : "the room's lesson";
  renderHelp();
  renderGrid(exercises, names);
  renderExercises(exercises, names.length);
  renderReady(names);
}

function renderHelp() {
  const list = $("needs-help");
  const rows = room.summary.needs_help;
  $("help-count").textContent = `(${rows.length})`;
  list.replaceChildren(
    ...rows.map((row) => {
      const item = element("li");
      item.append(element("strong", row.name), ` · ${row.exercise || "no exercise yet"}: ${row.why}`);
      item.append(element("span", ` (for ${ago(row.since)})`, { class: "since" }));
      return item;
    })
  );
  if (!rows.length) list.append(element("li", "Nobody right now.", { class: "quiet" }));
}

function renderGrid(exercises, names) {
  const head = element("tr");
  head.append(element("th", "Learner", { scope: "col" }));
  for (const e of exercises) {
    const th = element("th", e.id.split(".")[1], { scope: "col", title: `${e.id}: ${e.title}` });
    head.append(th);
  }
  $("grid").tHead.replaceChildren(head);
  const body = $("grid").tBodies[0];
  body.replaceChildren(
    ...names.map((name) => {
      const learner = room.learners[name];
      const row = element("tr");
      row.append(element("th", name, { scope: "row", title: name }));
      for (const e of exercises) {
        const [outcome, tries, hint] = learner.cells[e.id] || ["not_attempted", 0, 0];
        const cell = element("td", null, { class: `outcome ${outcome}` });
        let shown = MARKS[outcome];
        let said = WORDS[outcome];
        if (tries) said += `, ${tries} ${tries === 1 ? "try" : "tries"}`;
        if (outcome !== "passed" && tries) shown += ` ${tries}`;
        if (outcome === "incorrect" || outcome === "error") {
          if (hint) {
            shown += ` h${hint}`;
            said += `, hint ${hint}`;
          }
        }
        cell.append(element("span", shown, { "aria-hidden": "true" }), hidden(said));
        row.append(cell);
      }
      return row;
    })
  );
  if (!names.length) {
    const row = element("tr");
    row.append(element("td", "Nobody has joined yet.", { colspan: exercises.length + 1 }));
    body.append(row);
  }
}

function renderExercises(exercises, learners) {
  const body = $("exercises").tBodies[0];
  body.replaceChildren(
    ...exercises.map((e) => {
      const stats = room.summary.exercises[e.id];
      const row = element("tr");
      row.append(element("th", `${e.id} (${e.points} ${e.points === 1 ? "point" : "points"}): ${e.title}`, { scope: "row" }));
      row.append(element("td", `${stats.passed} of ${learners}`));
      const stuck = stats.stuck;
      let said = "nobody failing";
      if (stuck) {
        const who = `${stuck.count} ${stuck.count === 1 ? "learner" : "learners"}`;
        said = stuck.hint ? `hint ${stuck.hint}, ${who}: ${stuck.text}` : `no hint yet, ${who}: they have seen what went wrong`;
      }
      row.append(element("td", said));
      return row;
    })
  );
}

function renderReady(names) {
  // Those who need you first: a failed check, then not yet run, then ready.
  const rank = (name) => {
    const info = room.learners[name].ready;
    return info ? (info.ok ? 2 : 0) : 1;
  };
  const ready = names.filter((name) => rank(name) === 2);
  $("ready-count").textContent = `(${ready.length} of ${names.length})`;
  const body = $("ready").tBodies[0];
  body.replaceChildren(
    ...[...names].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b)).map((name) => {
      const info = room.learners[name].ready;
      const row = element("tr");
      row.append(element("th", name, { scope: "row" }));
      row.append(element("td", info ? (info.ok ? "✓ ready" : "✗ check failed") : "– not yet"));
      row.append(element("td", info ? info.jax : ""));
      row.append(element("td", info ? info.backend : ""));
      return row;
    })
  );
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
$("idle").addEventListener("change", () => {
  clearTimeout(idleTimer);
  idleTimer = setTimeout(async () => {
    const said = $("idle-problem");
    const reply = await fetch("api/settings", {
      method: "POST",
      headers: { "Content-Type": "application/json", "X-Room-Token": token },
      body: JSON.stringify({ idle_minutes: Number($("idle").value) }),
    }).catch(() => null);
    said.textContent = reply && reply.ok ? "" : `Not changed: ${reply ? (await reply.json()).error : "the room did not answer"}.`;
  }, 300);
});
$("lesson").addEventListener("change", render);
$("export").href = `export.csv?token=${encodeURIComponent(token)}`;
setInterval(() => room.summary && renderHelp(), 15000);
connect();
