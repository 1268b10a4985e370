// The instructor's page, kept live: swaps in the fragments the server rendered (and escaped), only
// those that changed, and never builds markup from data. Shipped in the package; no build step, no CDN.
(() => {
  "use strict";
  const config = JSON.parse(document.body.dataset.room);
  const live = document.getElementById("live");
  const panel = document.getElementById("learner"); // null on the projector's page
  const rows = document.getElementById("rows");
  let offset = 0; // the server's clock minus ours, in seconds
  let selected = null;

  function ago(seconds) {
    const s = Math.max(0, Math.round(seconds));
    if (s < 60) return `${s} s ago`;
    if (s < 3600) return `${Math.floor(s / 60)} min ago`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min ago`;
  }

  function tick() {
    const now = Date.now() / 1000 + offset;
    for (const time of document.querySelectorAll("time[data-t]")) {
      time.textContent = ago(now - Number(time.dataset.t));
    }
  }

  function rowOf(name) {
    for (const row of rows.children) if (row.dataset.name === name) return row;
    return null;
  }

  function parse(html) {
    const template = document.createElement("template");
    template.innerHTML = `<table><tbody>${html}</tbody></table>`;
    return template.content.querySelector("tr");
  }

  function apply(update) {
    offset = update.now - Date.now() / 1000;
    for (const [id, html] of Object.entries(update.parts)) {
      const part = document.getElementById(id);
      if (part !== null) part.innerHTML = html;
    }
    let reload = false;
    if (update.full) rows.replaceChildren();
    for (const name of update.removed || []) rowOf(name)?.remove();
    for (const [name, html] of Object.entries(update.rows)) {
      const fresh = parse(html);
      const old = rowOf(name);
      if (old === null) rows.append(fresh);
      else old.replaceWith(fresh);
      fresh.classList.toggle("selected", name === selected);
      reload ||= name === selected && old !== null && old.dataset.rev !== fresh.dataset.rev;
    }
    if (update.order) {
      const byName = new Map([...rows.children].map((row) => [row.dataset.name, row]));
      const ordered = update.order.map((name) => byName.get(name)).filter(Boolean);
      if (ordered.some((row, index) => rows.children[index] !== row)) rows.append(...ordered);
    }
    if (rows.children.length === 0) {
      rows.innerHTML = '<tr><td class="empty" colspan="99">No learner has joined yet.</td></tr>';
    } else {
      rows.querySelector("td.empty")?.parentElement.remove();
    }
    document.body.dataset.version = String(update.version);
    tick();
    if (reload) load(selected);
  }

  async function load(name) {
    const response = await fetch(config.learner + encodeURIComponent(name), { credentials: "same-origin" });
    if (!response.ok || selected !== name) {
      if (!response.ok) panel.hidden = true;
      return;
    }
    panel.innerHTML = '<button type="button" class="close" aria-label="close">×</button>' + (await response.text());
    panel.hidden = false;
  }

  function select(name) {
    if (panel === null) return;
    selected = selected === name ? null : name;
    for (const row of rows.children) row.classList.toggle("selected", row.dataset.name === selected);
    if (selected === null) {
      panel.hidden = true;
    } else {
      load(selected);
    }
  }

  async function call(method, path, body) {
    const response = await fetch(config.api + path, {
      method,
      credentials: "same-origin",
      headers: { "content-type": "application/json" },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const data = await response.json();
    const said = document.getElementById("admin-said");
    if (!response.ok) {
      window.alert(data.error.message);
      return null;
    }
    if (said !== null) said.textContent = "";
    return data;
  }

  async function manage(act, name) {
    const learner = "learners/" + encodeURIComponent(name);
    if (act === "rename") {
      const to = window.prompt(`Rename ${name} to:`, name);
      if (to && (await call("POST", learner + "/rename", { name: to }))) select(selected === name ? name : null);
    } else if (act === "merge") {
      const into = window.prompt(`Merge ${name} into which learner (their exact name)?`);
      if (into && (await call("POST", learner + "/merge", { into }))) select(name);
    } else if (act === "remove") {
      if (window.confirm(`Remove ${name} and everything they sent?`) && (await call("DELETE", learner))) select(name);
    } else if (act === "roster") {
      const names = document.getElementById("roster").value.split("\n").map((line) => line.trim()).filter(Boolean);
      const done = await call("PUT", "roster", { names });
      if (done) document.getElementById("admin-said").textContent = `roster: ${done.roster.length} names`;
    } else if (act === "rotate") {
      if (!window.confirm("A new key: the old URL stops working (this page keeps working). Go on?")) return;
      const done = await call("POST", "key");
      if (done) document.getElementById("admin-said").textContent = `new page URL: ${done.page}`;
    }
  }

  const source = new EventSource(config.events);
  source.addEventListener("parts", (event) => {
    apply(JSON.parse(event.data));
    live.textContent = "live";
    live.className = "live on";
  });
  source.addEventListener("error", () => {
    live.textContent = "reconnecting…";
    live.className = "live off";
  });

  document.addEventListener("click", (event) => {
    const who = event.target.closest("button.who");
    if (who) select(who.dataset.name);
    if (event.target.closest("button.close")) select(selected);
    const act = event.target.closest("button[data-act]");
    if (act) manage(act.dataset.act, act.closest("[data-name]")?.dataset.name);
  });
  setInterval(tick, 1000);
  tick();
})();
