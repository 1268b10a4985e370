// The instructor's page, kept live: swaps in the fragments the server rendered (and escaped), never
// builds markup from data. Shipped in the package; no build step, no CDN.
(() => {
  "use strict";
  const config = JSON.parse(document.body.dataset.room);
  const live = document.getElementById("live");
  const panel = document.getElementById("learner");
  const parts = ["summary", "board", "rules"];
  let offset = 0; // the server's clock minus ours, in seconds
  let selected = null;
  let revisions = {};

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

  function mark() {
    for (const row of document.querySelectorAll("tr.learner")) {
      row.classList.toggle("selected", row.dataset.name === selected);
    }
  }

  async function load(name) {
    const response = await fetch(config.learner + encodeURIComponent(name), { credentials: "same-origin" });
    if (!response.ok) {
      panel.hidden = true;
      return;
    }
    panel.innerHTML = '<button type="button" class="close" aria-label="close">×</button>' + (await response.text());
    panel.hidden = false;
  }

  function select(name) {
    if (panel === null) return; // the projector's page shows no learner's panel
    selected = selected === name ? null : name;
    mark();
    if (selected === null) {
      panel.hidden = true;
    } else {
      load(selected);
    }
  }

  const source = new EventSource(config.events);
  source.addEventListener("parts", (event) => {
    const update = JSON.parse(event.data);
    offset = update.now - Date.now() / 1000;
    for (const part of parts) {
      document.getElementById(part).innerHTML = update[part];
    }
    document.body.dataset.version = String(update.version);
    mark();
    tick();
    const before = JSON.stringify(revisions[selected]);
    revisions = update.revisions;
    if (selected !== null && before !== JSON.stringify(revisions[selected])) load(selected);
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
  });
  setInterval(tick, 1000);
  tick();
})();
