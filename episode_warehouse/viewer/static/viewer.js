// The episode viewer's page: the episode list (SQL filter, sort), a partition's overview, and
// one episode (cameras in sync, plots with a cursor, done marks, task text, Python snippet).
// The URL holds the state, so every view is a deep link (?view=episode&...&t=12).
// Text from the warehouse is set as textContent only: names and tasks are never parsed as HTML.
"use strict";

const SORTS = ["episode", "length", "return", "idle_fraction", "jerk", "length_z", "return_z",
  "defects"];
const SPEEDS = [0.25, 0.5, 1, 2, 4];
const main = document.getElementById("main");
const params = new URLSearchParams(location.search);

function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (k === "on") for (const [ev, fn] of Object.entries(v)) node.addEventListener(ev, fn);
    else if (v !== undefined && v !== null && v !== false) node.setAttribute(k, v);
  }
  for (const c of children.flat()) node.append(c instanceof Node ? c : String(c ?? ""));
  return node;
}

function svg(tag, attrs = {}) {
  const node = document.createElementNS("http://www.w3.org/2000/svg", tag);
  for (const [k, v] of Object.entries(attrs)) node.setAttribute(k, v);
  return node;
}

function showError(message) {
  const box = document.getElementById("error");
  box.textContent = message;
  box.hidden = !message;
}

async function api(name, query) {
  const response = await fetch(`/api/${name}?${new URLSearchParams(query)}`);
  const body = await response.json();
  if (!response.ok) throw new Error(body.error || response.statusText);
  return body;
}

function link(query, text) {
  return el("a", { href: "?" + new URLSearchParams(query) }, text);
}

// a value for reading: 6 significant digits (a float32 widened to double prints 17)
function short(value) {
  if (value === null || value === undefined) return "n/a";
  if (typeof value !== "number" || Number.isInteger(value)) return String(value);
  return String(Number(value.toPrecision(6)));
}

function fmt(value, digits = 3) {
  if (value === null || value === undefined) return "";
  if (typeof value === "number" && !Number.isInteger(value)) return value.toFixed(digits);
  return String(value);
}

// -- the episode list ------------------------------------------------------------------------

async function listView() {
  const where = params.get("where") || "";
  const asked = params.get("sort") || "episode";  // a score column is checked by the server
  const sort = SORTS.includes(asked) || asked.startsWith("score_") ? asked : "episode";
  const desc = params.get("desc") === "1";
  const partitions = el("div", {}, "loading partitions ...");
  const input = el("input", { type: "text", id: "where", value: where,
    placeholder: "a SQL WHERE clause, e.g. length > 100 AND idle_fraction < 0.2" });
  const sortBox = el("select", { id: "sort" }, [...new Set([...SORTS, sort])].map((s) =>
    el("option", { value: s, selected: s === sort }, s)));
  const descBox = el("input", { type: "checkbox", id: "desc", checked: desc });
  const apply = () => {
    const q = new URLSearchParams({ where: input.value, sort: sortBox.value });
    if (descBox.checked) q.set("desc", "1");
    location.search = q.toString();
  };
  input.addEventListener("keydown", (e) => { if (e.key === "Enter") apply(); });
  const listed = el("div", { id: "episodes" }, "loading episodes ...");
  main.replaceChildren(
    el("h2", {}, "Partitions"), partitions,
    el("h2", {}, "Episodes"),
    el("div", { class: "filter" }, el("label", {}, "WHERE "), input,
      el("label", {}, " sort by "), sortBox, el("label", {}, descBox, " descending"),
      el("button", { id: "apply", on: { click: apply } }, "Apply")),
    listed);

  api("partitions", {}).then((body) => {
    partitions.replaceChildren(table(
      ["source", "partition", "episodes", "steps", "mean return", "mean idle"],
      body.partitions.map((p) => [p.source,
        link({ view: "partition", source: p.source, partition: p.partition }, p.partition),
        p.episodes, p.steps, fmt(p.mean_return), fmt(p.mean_idle_fraction)]),
      [0, 1]));
  }).catch((e) => showError(e.message));

  try {
    const body = await api("episodes", { where, sort, desc: desc ? "1" : "0" });
    const rows = body.rows.map((r) => {
      const target = { view: "episode", source: r.source, partition: r.partition,
        episode: r.episode, t: 0 };
      // every cell is a real link: a new tab (middle click, ctrl-click) opens the episode
      // the integrity audit's findings: the row is flagged, each finding in its tooltip
      const flagged = r.flags && r.flags.length > 0;
      // a click anywhere on the row opens it (an empty cell's link has no width to click)
      const open = (e) => { if (!e.target.closest("a")) location.search = "?" + new URLSearchParams(target); };
      const tr = el("tr", { class: flagged ? "link flagged" : "link", "data-source": r.source,
        "data-partition": r.partition, "data-episode": r.episode,
        title: flagged ? r.flags.join("\n") : undefined, on: { click: open } },
        body.columns.map((c) => el("td", { class: typeof r[c] === "string" ? "text" : "" },
          link(target, fmt(r[c])))));
      return tr;
    });
    for (const s of body.sorts || []) {  // the scores' columns sort too
      if (![...sortBox.options].some((o) => o.value === s)) sortBox.append(el("option", { value: s }, s));
    }
    const head = el("tr", {}, body.columns.map((c) => el("th", {}, c)));
    listed.replaceChildren(
      el("p", { id: "count", "data-count": body.rows.length },
        `${body.rows.length}${body.more ? "+ (the first 500)" : ""} episode(s)`),
      el("table", {}, el("thead", {}, head), el("tbody", {}, rows)),
      el("h2", {}, "Save this filter as a named selection"),
      el("pre", { id: "selection" }, body.export_command));
  } catch (e) {
    listed.replaceChildren(el("p", { id: "count", "data-count": "error" }, "no episodes"));
    showError(e.message);
  }
}

function table(columns, rows, textColumns = []) {
  return el("table", {},
    el("thead", {}, el("tr", {}, columns.map((c, i) =>
      el("th", { class: textColumns.includes(i) ? "text" : "" }, c)))),
    el("tbody", {}, rows.map((r) => el("tr", {}, r.map((v, i) =>
      el("td", { class: textColumns.includes(i) ? "text" : "" }, v))))));
}

// -- a partition's overview ------------------------------------------------------------------

function histogram(title, hist) {
  const box = el("div", {}, el("h2", {}, title));
  if (!hist) { box.append(el("p", { class: "muted" }, "no values")); return box; }
  const w = 420, h = 160, pad = 24, top = Math.max(...hist.counts, 1);
  const plot = svg("svg", { width: w, height: h, class: "hist" });
  const bw = (w - 2 * pad) / hist.counts.length;
  hist.counts.forEach((c, i) => {
    const bh = (h - 2 * pad) * c / top;
    const bar = svg("rect", { x: pad + i * bw, y: h - pad - bh, width: Math.max(bw - 1, 1),
      height: bh });
    const tip = svg("title", {});
    tip.textContent = `${fmt(hist.edges[i])} to ${fmt(hist.edges[i + 1])}: ${c}`;
    bar.append(tip);
    plot.append(bar);
  });
  for (const [x, v, anchor] of [[pad, hist.edges[0], "start"],
    [w - pad, hist.edges[hist.edges.length - 1], "end"]]) {
    const t = svg("text", { x, y: h - 8, "text-anchor": anchor });
    t.textContent = fmt(v);
    plot.append(t);
  }
  const t = svg("text", { x: pad, y: 14 });
  t.textContent = `max ${top} episodes a bin`;
  plot.append(t);
  box.append(plot);
  return box;
}

async function partitionView() {
  const source = params.get("source"), partition = params.get("partition");
  const o = await api("partition", { source, partition });
  const where = `source = '${source}' AND partition = '${partition.replaceAll("'", "''")}'`;
  const stats = o.action ? table(["dimension", ...o.action.columns],
    o.action.names.map((n, j) => [n, ...o.action.rows[j].map((v) => fmt(v, 4))]), [0])
    : el("p", { class: "muted" }, "no statistics for this TED yet: materialize the partition's "
      + "catalog stage (warehouse materialize ... --through catalog)");
  main.replaceChildren(
    el("h2", {}, `${o.source} ${o.partition}: ${o.episodes} episodes, ${o.steps} steps`
      + (o.fps ? `, ${o.fps} fps` : "")),
    el("p", {}, link({ where }, "list its episodes")),
    el("div", { class: "row" }, histogram("Episode length (steps)", o.length),
      histogram("Episode return", o["return"])),
    el("h2", {}, "Action statistics, per dimension"), stats,
    o.tasks.length ? el("div", {}, el("h2", {}, "Tasks"),
      el("ul", {}, o.tasks.map((t) => el("li", {}, t)))) : "");
}

// -- one episode -----------------------------------------------------------------------------

async function episodeView() {
  const source = params.get("source"), partition = params.get("partition");
  const number = Number(params.get("episode") || 0);
  const e = await api("episode", { source, partition, episode: number });
  let t = Math.min(Math.max(Number(params.get("t") || 0), 0), e.length - 1);
  let speed = 1, timer = null;
  const frameUrl = (camera, step) => "/api/frame?" + new URLSearchParams({ source, partition,
    episode: number, t: step, camera });

  // every frame of the episode is requested once, in order, and kept by the browser (lossless
  // PNGs): playback shows frames already loaded; memory is bounded by this episode's frames
  const preload = [];
  function preloadAll() {
    for (let step = 0; step < e.length; step++) {
      e.cameras.forEach((c) => { const img = new Image(); img.src = frameUrl(c.name, step);
        preload.push(img); });
    }
  }
  const images = e.cameras.map((c, i) => {
    const img = el("img", { id: `camera-${i}`, "data-camera": c.name, alt: c.name });
    img.addEventListener("load", () => { img.dataset.shown = img.dataset.step; });
    return img;
  });
  const stepLabel = el("span", { id: "step" });
  const scrubber = el("input", { type: "range", id: "scrubber", min: 0, max: e.length - 1,
    value: t });
  const playButton = el("button", { id: "play" }, "Play");
  const taskLine = el("div", { class: "task", id: "task" });
  const python = el("pre", { id: "python" });
  const cursors = [];
  const values = [];

  function show(step) {
    t = Math.min(Math.max(step, 0), e.length - 1);
    images.forEach((img, i) => {
      img.dataset.step = t;
      img.src = frameUrl(e.cameras[i].name, t);
    });
    stepLabel.textContent = `step ${t} / ${e.length - 1}`;
    scrubber.value = t;
    cursors.forEach((c) => { c.setAttribute("x1", t); c.setAttribute("x2", t); });
    readouts(t);
    const task = e.per_step ? e.tasks[e.per_step[t]] : e.tasks[0];
    const more = (e.texts || []).map((x) => `${x.key}: ${x.texts[x.per_step[t]]}`);
    taskLine.textContent = [task ? `task: ${task}` : "", ...more].filter(Boolean).join("\n");
    python.textContent = e.python + `step = episode[${t}]\n`;
    if (!timer) history.replaceState(null, "", "?" + new URLSearchParams({ view: "episode",
      source, partition, episode: number, t }));
  }

  // a long episode's series are drawn from buckets (each one's min and max): the exact values
  // at a step then come from the step route, the last asked step's answer wins
  const complete = e.series.every((s) => s.steps.every((st) => st.length === e.length));
  let asked = -1;
  function setValue(span, v) {
    span.textContent = short(v);  // the exact value stays in data-value (and the title)
    span.dataset.value = v === null || v === undefined ? "" : String(v);
    span.title = span.dataset.value;
  }
  async function readouts(step) {
    if (complete) {
      values.forEach(([span, s, j]) => setValue(span, s.values[j][step]));
      return;
    }
    asked = step;
    const at = await api("step", { source, partition, episode: number, t: step });
    if (asked !== step) return;
    values.forEach(([span, s, j]) => setValue(span, (at[s.key] || [])[j]));
  }

  function play(on) {
    if (timer) { clearInterval(timer); timer = null; }
    playButton.textContent = on ? "Pause" : "Play";
    if (!on) { show(t); return; }
    if (t >= e.length - 1) show(0);
    timer = setInterval(() => {
      if (t >= e.length - 1) { play(false); return; }
      show(t + 1);
    }, 1000 / ((e.fps || 10) * speed));
  }

  playButton.addEventListener("click", () => play(!timer));
  scrubber.addEventListener("input", () => show(Number(scrubber.value)));
  const speedBox = el("select", { id: "speed" }, SPEEDS.map((s) =>
    el("option", { value: s, selected: s === 1 }, `${s}x`)));
  speedBox.addEventListener("change", () => { speed = Number(speedBox.value); if (timer) play(true); });
  document.addEventListener("keydown", (ev) => {
    if (ev.target instanceof HTMLInputElement && ev.target.type === "text") return;
    const keys = { " ": () => play(!timer), ArrowRight: () => show(t + 1),
      ArrowLeft: () => show(t - 1), Home: () => show(0), End: () => show(e.length - 1) };
    if (keys[ev.key]) { ev.preventDefault(); if (ev.key !== " ") play(false); keys[ev.key](); }
  });

  const plots = e.series.flatMap((s) => s.values.map((series, j) => {
    const finite = series.filter((v) => v !== null);
    const lo = Math.min(...finite), hi = Math.max(...finite);
    const span = hi - lo || 1;
    const y = (v) => 50 - 45 * (v - lo) / span;
    const chart = svg("svg", { viewBox: `0 0 ${Math.max(e.length - 1, 1)} 55`,
      preserveAspectRatio: "none", "data-key": s.key, "data-dim": j });
    const line = svg("polyline", { points: series.map((v, i) =>
      v === null ? "" : `${s.steps[j][i]},${y(v)}`).filter(Boolean).join(" ") });
    chart.append(line);
    const axis = el("div", { class: "axis" },
      el("span", {}, `${short(lo)} .. ${short(hi)}`),
      el("span", {}, `steps 0 .. ${e.length - 1}`));
    for (const [flag, steps] of Object.entries(e.flags)) {
      for (const step of steps) chart.append(svg("line", { class: flag, x1: step, x2: step,
        y1: 0, y2: 55 }));
    }
    const cursor = svg("line", { class: "cursor", x1: t, x2: t, y1: 0, y2: 55 });
    chart.append(cursor);
    cursors.push(cursor);
    const readout = el("span", { class: "value", "data-key": s.key, "data-dim": j });
    values.push([readout, s, j]);
    return el("div", { class: "plot" },
      el("div", { class: "label" }, el("span", { class: "name" }, s.names[j]), readout),
      chart, axis);
  }));

  const flagText = Object.entries(e.flags).map(([flag, steps]) =>
    el("span", { class: flag }, `${flag}: ${steps.length ? steps.join(", ") : "none"}`));
  const nav = [];
  if (number > 0) nav.push(link({ view: "episode", source, partition, episode: number - 1, t: 0 },
    "< previous episode"));
  if (number < e.episodes - 1) nav.push(link({ view: "episode", source, partition,
    episode: number + 1, t: 0 }, "next episode >"));
  // the episode's cameras and every scalar on one timeline, for the Rerun viewer
  nav.push(el("a", { id: "rerun", download: "",
    href: `/api/rerun?${new URLSearchParams({ source, partition, episode: number })}` },
  "open in Rerun (.rrd)"));
  main.replaceChildren(
    el("h2", {}, `${source} `, link({ view: "partition", source, partition }, partition),
      ` episode ${number} of ${e.episodes}: ${e.length} steps`
      + (e["return"] !== null ? `, return ${fmt(e["return"])}` : "")
      + (e.fps ? `, ${e.fps} fps` : "")),
    el("div", { class: "controls" }, ...nav.map((a) => el("span", {}, a))),
    el("div", { class: "cameras" }, e.cameras.length ? images.map((img, i) =>
      el("div", { class: "camera" }, img, el("span", { class: "muted" }, e.cameras[i].name)))
      : el("p", { class: "muted" }, "this TED has no camera")),
    el("div", { class: "controls" },
      el("button", { id: "back", on: { click: () => { play(false); show(t - 1); } } }, "< step"),
      playButton,
      el("button", { id: "forward", on: { click: () => { play(false); show(t + 1); } } }, "step >"),
      speedBox, scrubber, stepLabel,
      el("span", { class: "muted" }, "keys: space play/pause, arrows step, Home/End")),
    taskLine,
    el("div", { class: "marks muted" }, flagText),
    el("h2", {}, "Actions, states and rewards"),
    el("div", { class: "plots" }, plots),
    e.not_plotted.length ? el("p", { class: "muted" }, "not plotted (too wide): "
      + e.not_plotted.map((w) => `${w.key} (${w.dims} dims)`).join(", ")) : "",
    el("h2", {}, "Open this episode in Python"), python);
  show(t);
  preloadAll();
  document.body.dataset.ready = "episode";
}

// -- routing ---------------------------------------------------------------------------------

async function start() {
  try {
    const info = await api("info", {});
    document.getElementById("root").textContent = info.root;
    const views = { episode: episodeView, partition: partitionView };
    await (views[params.get("view")] || listView)();
  } catch (e) {
    showError(e.message);
  }
}
start();
