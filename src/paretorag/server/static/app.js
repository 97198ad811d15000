// The paretorag page: no build step. Its one library, cytoscape.js (the graph view), is
// vendored in /static/vendor (scripts/vendor_js.sh) and loaded when the Graph tab opens.
// Every text from the server is put into the page as text (textContent), never as HTML;
// cytoscape draws labels on a canvas.
"use strict";

const $ = (id) => document.getElementById(id);
const KEY = "paretorag-api-key";
let lastContexts = [];
// the key lives in this tab only (sessionStorage): closing the tab forgets it; a key an
// older page kept in localStorage (across sessions) is removed
const keyStore = window.sessionStorage;
localStorage.removeItem(KEY);

function headers(extra) {
  const h = Object.assign({}, extra || {});
  const key = keyStore.getItem(KEY);
  if (key) h["Authorization"] = "Bearer " + key;
  return h;
}

async function errorText(resp) {
  try {
    const body = await resp.json();
    if (body && body.error) return `${resp.status}: ${body.error.message}`;
  } catch (e) { /* not JSON */ }
  return `${resp.status} ${resp.statusText}`;
}

function show(el, text) { el.textContent = text; el.hidden = !text; }

// -- the key ------------------------------------------------------------------
// What the server said of the key decides the status: a server with keys answers 401
// without one (the page then asks for it), and only a 200 says it is accepted.
function keyStatus(state) {
  $("key-status").textContent = {
    accepted: "key accepted (kept for this tab only)",
    open: "no key needed",
    needed: "key needed",
    rejected: "key not accepted",
  }[state] || "";
}
function askForKey(rejected) {
  if (rejected) keyStore.removeItem(KEY);
  keyStatus(rejected ? "rejected" : "needed");
  show($("key-prompt"), rejected
    ? "The server did not accept this API key. Enter a valid key above."
    : "This server needs an API key. Enter it above: the page keeps it for this tab only.");
  const sel = $("method");
  sel.textContent = "";
  const opt = document.createElement("option");
  opt.textContent = "enter the API key first";
  opt.disabled = true;
  sel.appendChild(opt);
  $("ask").disabled = true;
  $("api-key").focus();
}
// a 401 anywhere: ask for the key (true), else let the caller show the error (false)
function needsKey(resp) {
  if (resp.status !== 401) return false;
  askForKey(!!keyStore.getItem(KEY));
  return true;
}
$("key-form").addEventListener("submit", (ev) => {
  ev.preventDefault();
  const v = $("api-key").value.trim();
  if (v) keyStore.setItem(KEY, v);
  $("api-key").value = "";
  loadMethods();
});
$("forget-key").addEventListener("click", () => { keyStore.removeItem(KEY); loadMethods(); });

// -- tabs ---------------------------------------------------------------------
for (const tab of document.querySelectorAll(".tab")) {
  tab.addEventListener("click", () => {
    for (const t of document.querySelectorAll(".tab")) {
      t.classList.toggle("active", t === tab);
      $(t.dataset.panel).hidden = t !== tab;
    }
    if (tab.id === "tab-docs") loadDocuments();
    if (tab.id === "tab-graph") loadStructures();
  });
}
function openTab(id) { $(id).click(); }

// -- methods ------------------------------------------------------------------
async function loadMethods() {
  const resp = await fetch("/methods", { headers: headers() });
  if (needsKey(resp)) return;
  if (!resp.ok) { show($("error"), "methods: " + (await errorText(resp))); return; }
  show($("error"), "");
  show($("key-prompt"), "");
  keyStatus(keyStore.getItem(KEY) ? "accepted" : "open");
  $("ask").disabled = false;
  const sel = $("method");
  const current = sel.value;
  sel.textContent = "";
  const { methods } = await resp.json();
  methods.sort((a, b) => (b.available - a.available) || (b.recommended - a.recommended) || a.name.localeCompare(b.name));
  for (const m of methods) {
    const opt = document.createElement("option");
    opt.value = m.name;
    const label = m.recommended ? `${m.name} (recommended)` : m.name;
    opt.textContent = m.available ? label : `${label} (not built)`;
    opt.disabled = !m.available;
    opt.title = m.doc || "";
    sel.appendChild(opt);
  }
  // the server's default (the recommended method where it is built), as `paretorag query` without --method
  const byDefault = methods.find((m) => m.default) || methods.find((m) => m.available) || { name: "vanilla" };
  sel.value = methods.some((m) => m.name === current && m.available) ? current : byDefault.name;
}

// -- asking -------------------------------------------------------------------
function openPassage(n) {
  const c = lastContexts[n - 1];
  if (!c) return;
  $("passage-title").textContent = `[${n}] ${c.title || "(untitled)"}${c.heading ? " > " + c.heading : ""}`;
  $("passage-score").textContent = Number(c.score).toFixed(3);
  $("passage-id").textContent = c.chunk_id;
  $("passage-text").textContent = c.text;
  $("passage").showModal();
}

function renderAnswer(text) {
  const el = $("answer");
  el.textContent = "";
  let last = 0;
  for (const m of text.matchAll(/\[(\d{1,3})\]/g)) {
    el.appendChild(document.createTextNode(text.slice(last, m.index)));
    const n = Number(m[1]);
    if (n >= 1 && n <= lastContexts.length) {
      const a = document.createElement("a");
      a.className = "cite";
      a.dataset.n = String(n);
      a.textContent = m[0];
      a.href = "#";
      a.addEventListener("click", (ev) => { ev.preventDefault(); openPassage(n); });
      el.appendChild(a);
    } else {
      el.appendChild(document.createTextNode(m[0]));
    }
    last = m.index + m[0].length;
  }
  el.appendChild(document.createTextNode(text.slice(last)));
}

function renderContexts(contexts) {
  lastContexts = contexts;
  const ol = $("contexts");
  ol.textContent = "";
  contexts.forEach((c, i) => {
    const li = document.createElement("li");
    const a = document.createElement("a");
    a.className = "title cite";
    a.href = "#";
    a.textContent = (c.title || "(untitled)") + (c.heading ? " > " + c.heading : "");
    a.addEventListener("click", (ev) => { ev.preventDefault(); openPassage(i + 1); });
    li.appendChild(a);
    li.appendChild(document.createTextNode(` (score ${Number(c.score).toFixed(3)}) ${c.text.slice(0, 200)}`));
    ol.appendChild(li);
  });
}

function count(n, one, many) { return `${n} ${n === 1 ? one : many}`; }
function millis(x) { return x < 1 ? "under 1 ms" : `${Math.round(x)} ms`; }

// The line under the answer, in plain words: "fusion, 5 passages, 12 ms" (the method, the
// passages it found, its retrieval time), who answered, the total time and the LLM's part.
// How the method retrieved (its mode and branch) and each step's time are in the tooltip and
// under "details".
function routeLine(method, n, retrievalMs) {
  return `${method}, ${count(n, "passage", "passages")}` + (retrievalMs == null ? "" : `, ${millis(retrievalMs)}`);
}

function renderDone(ans) {
  renderContexts(ans.contexts);
  // the reader's text is the short answer, then its cited evidence; an LLM's text is its answer
  renderAnswer(ans.text || ans.answer || (ans.contexts.length ? "(passages only)" : "(nothing found)"));
  const t = ans.timings_ms || {};
  $("route").textContent = routeLine(ans.method, ans.contexts.length, t.retrieval ?? t.total);
  const how = `${ans.mode} retrieval` + (ans.branch ? `: ${ans.branch}` : "");
  const steps = Object.entries(t).map(([k, v]) => `${k} ${millis(v)}`).join(", ");
  $("route").title = `${how}\n${steps}`;
  const confidence = `confidence ${Number(ans.confidence).toFixed(2)}`;
  $("reading").textContent = ans.found === true ? ` · answered by ${ans.answered_by}, ${confidence}`
    : ans.found === false ? ` · no answer found (${ans.answered_by}, ${confidence})`
    : ans.answered_by ? ` · answered by ${ans.answered_by}` : "";
  $("latency").textContent = millis(t.total ?? 0);
  const u = ans.usage;
  $("cost").textContent = u.llm_calls
    ? `${count(u.llm_calls, "LLM call", "LLM calls")}, ${u.prompt_tokens} + ${u.completion_tokens} tokens`
    : "no LLM call";
  const more = $("route-more");
  more.textContent = "";
  for (const line of [`how: ${how}`, `time: ${steps}`, ...(ans.warnings || []).map((w) => `note: ${w}`)]) {
    const li = document.createElement("li");
    li.textContent = line;
    more.appendChild(li);
  }
  $("route-details").hidden = false;
}

async function ask(ev) {
  ev.preventDefault();
  show($("error"), "");
  const body = {
    question: $("question").value,
    method: $("method").value || undefined,
    context_only: $("context-only").checked,
  };
  if ($("k").value) body.k = Number($("k").value);
  $("ask").disabled = true;
  $("result").hidden = false;
  $("answer").textContent = "…";
  for (const id of ["route", "reading", "latency", "cost"]) $(id).textContent = "";
  $("route").title = "";
  $("route-details").hidden = true;
  try {
    const resp = await fetch("/query/stream", {
      method: "POST",
      headers: headers({ "Content-Type": "application/json" }),
      body: JSON.stringify(body),
    });
    if (needsKey(resp)) { $("result").hidden = true; return; }
    if (!resp.ok) { $("result").hidden = true; show($("error"), await errorText(resp)); return; }
    const reader = resp.body.getReader();
    const decoder = new TextDecoder();
    let buffer = "", streamed = "";
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      buffer += decoder.decode(value, { stream: true });
      let cut;
      while ((cut = buffer.indexOf("\n\n")) >= 0) {
        const block = buffer.slice(0, cut);
        buffer = buffer.slice(cut + 2);
        let event = "message", data = "";
        for (const line of block.split("\n")) {
          if (line.startsWith("event:")) event = line.slice(6).trim();
          else if (line.startsWith("data:")) data += line.slice(5).trim();
        }
        const payload = data ? JSON.parse(data) : {};
        if (event === "contexts") {
          renderContexts(payload.contexts);
          $("answer").textContent = "";
          $("route").textContent = routeLine(payload.method, payload.contexts.length);
        }
        else if (event === "token") { streamed += payload.text; $("answer").textContent = streamed; }
        else if (event === "wait") $("answer").textContent = streamed || `(${payload.message})`;
        else if (event === "done") renderDone(payload);
        else if (event === "error") show($("error"), `${payload.status}: ${payload.message}`);
      }
    }
  } catch (e) {
    show($("error"), String(e));
  } finally {
    $("ask").disabled = $("key-prompt").hidden === false;
  }
}
$("ask-form").addEventListener("submit", ask);

// -- documents ----------------------------------------------------------------
async function loadDocuments() {
  const resp = await fetch("/documents", { headers: headers() });
  if (needsKey(resp)) return;
  if (!resp.ok) { show($("docs-error"), await errorText(resp)); return; }
  show($("docs-error"), "");
  const tbody = $("documents").querySelector("tbody");
  tbody.textContent = "";
  for (const d of (await resp.json()).documents) {
    const tr = document.createElement("tr");
    tr.dataset.docId = d.doc_id;
    for (const v of [d.title, d.doc_id, d.n_chunks, d.source + (d.pending_delete ? " (delete pending)" : "")]) {
      const td = document.createElement("td");
      td.textContent = String(v);
      tr.appendChild(td);
    }
    const td = document.createElement("td");
    const b = document.createElement("button");
    b.className = "delete";
    b.dataset.docId = d.doc_id;
    b.textContent = "Delete";
    b.addEventListener("click", () => removeDocument(d.doc_id));
    td.appendChild(b);
    tr.appendChild(td);
    tbody.appendChild(tr);
  }
}

async function followJob(job) {
  const status = $("job-status");
  while (job.state !== "done" && job.state !== "failed") {
    const stages = job.progress.map((s) => `${s.stage} ${s.done}/${s.total ?? "?"}`).join(", ");
    status.textContent = `${job.kind}: ${job.state}${job.waiting_for ? " (" + job.waiting_for + ")" : ""} ${stages}`;
    await new Promise((r) => setTimeout(r, 400));
    const resp = await fetch(`/jobs/${job.id}`, { headers: headers() });
    if (!resp.ok) { show($("docs-error"), await errorText(resp)); return; }
    job = await resp.json();
  }
  if (job.state === "failed") { show($("docs-error"), `${job.kind} failed: ${job.error.message}`); status.textContent = ""; }
  else {
    const r = job.result;
    status.textContent = job.kind === "insert"
      ? `added ${r.added}, unchanged ${r.unchanged}; ${r.documents} documents` + (r.problems.length ? `; ${r.problems.join("; ")}` : "")
      : `deleted ${r.deleted.length}; ${r.documents} documents`;
  }
  await loadDocuments();
}

async function submitJob(url, init) {
  show($("docs-error"), "");
  const resp = await fetch(url, init);
  if (needsKey(resp)) return;
  const body = await resp.json().catch(() => ({}));
  if (!resp.ok) { show($("docs-error"), body.error ? `${resp.status}: ${body.error.message}` : `${resp.status}`); return; }
  await followJob(body.job);
}

$("upload-form").addEventListener("submit", async (ev) => {
  ev.preventDefault();
  const files = $("files").files;
  if (!files.length) { show($("docs-error"), "choose one or more files first"); return; }
  const form = new FormData();
  for (const f of files) form.append("files", f, f.name);
  await submitJob("/documents", { method: "POST", headers: headers(), body: form });
  $("files").value = "";
});

async function removeDocument(docId) {
  await submitJob(`/documents/${docId}`, { method: "DELETE", headers: headers() });
}

// -- the graph ----------------------------------------------------------------
let cytoscapeLoaded = null;
let graphData = null;

function loadCytoscape() {
  if (!cytoscapeLoaded) {
    cytoscapeLoaded = new Promise((resolve, reject) => {
      const script = document.createElement("script");
      script.src = "/static/vendor/cytoscape.min.js";
      script.onload = () => resolve(window.cytoscape);
      script.onerror = () => { cytoscapeLoaded = null; reject(new Error("cannot load /static/vendor/cytoscape.min.js")); };
      document.head.appendChild(script);
    });
  }
  return cytoscapeLoaded;
}

async function loadStructures() {
  const sel = $("graph-structure");
  if (sel.options.length) return;
  const resp = await fetch("/graph/structures", { headers: headers() });
  if (!resp.ok) { show($("graph-error"), await errorText(resp)); return; }
  const body = await resp.json();
  if (!body.structures.length) {
    show($("graph-error"), "this index has no graph yet; build one with `paretorag index --index DIR --methods fusion`");
    return;
  }
  for (const st of body.structures) {
    const opt = document.createElement("option");
    opt.value = st.name;
    opt.textContent = `${st.name} (${st.nodes} nodes)`;
    sel.appendChild(opt);
  }
  sel.value = body.default;
}

// Text with some spans wrapped in `tag` elements (the name in a sentence, a sentence in its
// passage); every piece goes in as text. `tidy` rewrites each piece (line breaks).
function appendMarked(parent, text, spans, tag, tidy) {
  const put = tidy || ((t) => t);
  let at = 0;
  for (const [a, b] of spans) {
    if (a < at || b > text.length) continue;
    parent.appendChild(document.createTextNode(put(text.slice(at, a))));
    const m = document.createElement(tag);
    m.textContent = put(text.slice(a, b));
    parent.appendChild(m);
    at = b;
  }
  parent.appendChild(document.createTextNode(put(text.slice(at))));
}

// a passage as prose: a hard-wrapped line break is a space, a blank line ends a paragraph
// (the box keeps "\n\n" with `white-space: pre-line`)
function prose(text) {
  return text.replace(/\s*\n\s*\n\s*/g, "\uE000").replace(/\s+/g, " ").replace(/\uE000/g, "\n\n");
}

// one sentence that names the node, the name marked, opening onto its whole passage
function mentionItem(m, p) {
  const details = document.createElement("details");
  details.className = "mention";
  const summary = document.createElement("summary");
  const sentence = document.createElement("span");
  sentence.className = "sentence";
  appendMarked(sentence, m.sentence, m.highlights, "mark");
  summary.appendChild(sentence);
  details.appendChild(summary);
  const whole = document.createElement("div");
  whole.className = "text";
  appendMarked(whole, p.text, m.end > m.start ? [[m.start, m.end]] : [], "mark", prose);
  whole.firstChild.textContent = whole.firstChild.textContent.trimStart(); // text nodes, both
  whole.lastChild.textContent = whole.lastChild.textContent.trimEnd();
  details.appendChild(whole);
  details.addEventListener("toggle", () => { // the sentence in view, however deep in its passage
    const here = whole.querySelector("mark");
    if (details.open && here) whole.scrollTop = Math.max(0, here.offsetTop - 24);
  });
  return details;
}

function showNode(data) {
  $("graph-node").hidden = false;
  $("graph-node-title").textContent = data.name;
  const aliases = data.aliases && data.aliases.length ? ` · also ${data.aliases.join(", ")}` : "";
  $("graph-node-meta").textContent =
    `${data.kind} · ${data.degree} neighbour(s) · in ${data.passages} passage(s)` + aliases +
    (data.description ? ` · ${data.description}` : "");
  const shown = data.passage_ids.length;
  $("graph-node-hint").textContent = "The sentences that name it" +
    (data.passages > shown ? `, from ${shown} of its ${data.passages} passages` : "") +
    "; open one to read its whole passage.";
  const ol = $("graph-passages");
  ol.textContent = "";
  for (const id of data.passage_ids) {
    const p = graphData.passages[id];
    if (!p) continue;
    const li = document.createElement("li");
    li.dataset.chunkId = id;
    const title = document.createElement("span");
    title.className = "title";
    title.textContent = p.title || "(untitled)";
    li.appendChild(title);
    if (p.retrieved) {
      const tag = document.createElement("span");
      tag.className = "tag";
      tag.textContent = `retrieved, score ${Number(p.score).toFixed(3)}`;
      li.appendChild(tag);
    }
    const quotes = (data.mentions || []).filter((m) => m.chunk_id === id);
    if (!quotes.length) quotes.push({ sentence: p.text.slice(0, 200), start: 0, end: 0, highlights: [] });
    for (const m of quotes) li.appendChild(mentionItem(m, p));
    ol.appendChild(li);
  }
  $("graph-node").scrollIntoView({ block: "nearest" });
}

async function showGraph(ev) {
  if (ev) ev.preventDefault();
  show($("graph-error"), "");
  $("graph-node").hidden = true;
  const q = $("graph-q").value.trim();
  if (!q) return;
  const params = new URLSearchParams({ [$("graph-by").value]: q });
  if ($("graph-structure").value) params.set("structure", $("graph-structure").value);
  if ($("graph-by").value === "question" && $("method").value) params.set("method", $("method").value);
  $("graph-show").disabled = true;
  try {
    const [cytoscape, resp] = await Promise.all([loadCytoscape(), fetch("/graph/neighborhood?" + params, { headers: headers() })]);
    if (!resp.ok) { show($("graph-error"), await errorText(resp)); return; }
    graphData = await resp.json();
    const maxDegree = Math.max(1, ...graphData.nodes.map((n) => n.degree));
    const elements = graphData.nodes.map((n) => ({
      group: "nodes",
      data: Object.assign({}, n, { id: "n" + n.id, row: n.id, size: 16 + 24 * Math.sqrt(n.degree / maxDegree) }),
      classes: n.seed ? "seed" : "",
    }));
    graphData.edges.forEach((e, i) => elements.push({
      group: "edges",
      data: { id: "e" + i, source: "n" + e.source, target: "n" + e.target, weight: e.weight, label: e.relation || "" },
      classes: e.relation && e.relation !== "synonym" ? "relation" : "", // subject -> object
    }));
    const maxWeight = Math.max(1, ...graphData.edges.map((e) => e.weight));
    const maxScore = Math.max(1e-6, ...graphData.nodes.map((n) => n.score));
    if (window.paretoragGraph) window.paretoragGraph.destroy();
    const cy = cytoscape({
      container: $("graph-canvas"),
      elements,
      layout: { name: "cose", animate: false, randomize: false, nodeDimensionsIncludeLabels: true },
      minZoom: 0.2,
      maxZoom: 4,
      style: [
        { selector: "node", style: {
          "label": "data(name)", "width": "data(size)", "height": "data(size)", "font-size": 11,
          "background-color": "#9db4e8", "text-valign": "bottom", "text-margin-y": 3, "color": "#1d1d1f" } },
        // darker: in more of the retrieved passages, and in better ones (or the entity itself)
        { selector: "node.seed", style: { "background-color": `mapData(score, 0, ${maxScore}, #9db4e8, #2463eb)` } },
        { selector: "node:selected", style: { "border-width": 3, "border-color": "#f08c00" } },
        { selector: "edge", style: {
          "width": `mapData(weight, 0, ${maxWeight}, 1, 5)`, "line-color": "#c4c9d4", "curve-style": "bezier",
          "label": "data(label)", "font-size": 9, "color": "#666" } },
        { selector: "edge.relation", style: { "target-arrow-shape": "triangle", "target-arrow-color": "#c4c9d4" } },
      ],
    });
    cy.on("tap", "node", (e) => showNode(e.target.data()));
    window.paretoragGraph = cy; // for the page's test and the browser console
    const what = graphData.entity ? `around ${graphData.entity}` : `in the ${graphData.retrieved.length} passage(s) ${graphData.method} retrieved`;
    $("graph-summary").textContent =
      `${graphData.nodes.length} node(s), ${graphData.edges.length} edge(s) of ${graphData.structure} ${what}` +
      (graphData.truncated ? " (the best shown)" : "") + "; click a node for the sentences that name it";
  } catch (e) {
    show($("graph-error"), String(e));
  } finally {
    $("graph-show").disabled = false;
  }
}
$("graph-form").addEventListener("submit", showGraph);
window.addEventListener("resize", () => { // a phone turned sideways: the whole graph in view again
  const cy = window.paretoragGraph;
  if (cy && !$("panel-graph").hidden) { cy.resize(); cy.fit(undefined, 20); }
});
$("show-graph").addEventListener("click", () => {
  $("graph-q").value = $("question").value;
  $("graph-by").value = "question";
  openTab("tab-graph");
  showGraph();
});

loadMethods();
