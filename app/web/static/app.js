// Page behaviour: footprint/track switches, the upload form with job polling, the SQL console.
"use strict";
(function () {
  const PF = (window.PF = window.PF || {});
  const $ = (sel, root) => (root || document).querySelector(sel);

  function fmt(v) {
    if (v === null || v === undefined) return "";
    if (typeof v === "number") {
      if (Number.isInteger(v)) return v.toLocaleString("en-US");
      return Math.abs(v) >= 1000 ? v.toFixed(1) : v.toFixed(4);
    }
    if (typeof v === "object") return JSON.stringify(v);
    return String(v);
  }
  PF.fmt = fmt;

  PF.renderTable = function (container, columns, rows) {
    container.innerHTML = "";
    if (!rows.length) { container.innerHTML = '<div class="empty">No rows.</div>'; return; }
    const table = document.createElement("table");
    const head = table.createTHead().insertRow();
    columns.forEach((c) => { const th = document.createElement("th"); th.textContent = c; head.appendChild(th); });
    const body = table.createTBody();
    rows.forEach((r) => {
      const tr = body.insertRow();
      r.forEach((v) => {
        const td = tr.insertCell();
        td.textContent = fmt(v);
        if (typeof v !== "number") td.className = "text";
      });
    });
    container.appendChild(table);
  };

  // Leaderboard: a switch reloads the page with the chosen footprint and track.
  function initLeaderboard() {
    const form = $("#switches");
    if (!form) return;
    form
      .querySelectorAll("select, input[type=checkbox]")
      .forEach((s) => s.addEventListener("change", () => form.submit()));
    const data = PF.readJSON("chart-data");
    if (!data) return;
    const r2 = $("#chart-r2");
    if (r2) PF.lineChart(r2, data.by_horizon, { xlabel: "horizon (quarters)", ylabel: data.metric_label,
      legend: $("#legend-r2"), includeZero: true, colors: data.colors });
    const cov = $("#chart-coverage");
    if (cov) PF.coverageChart(cov, data.coverage, { legend: $("#legend-coverage"), colors: data.colors });
    const pitSel = $("#pit-model"), pit = $("#chart-pit");
    if (pit && pitSel) {
      const draw = () => {
        const entry = data.pit.find((p) => String(p.submission_id) === pitSel.value);
        const svg = $("#chart-pit");
        if (svg) PF.pitChart(svg, entry ? entry.shares : [], { color: entry ? PF.colour({ colors: data.colors }, entry.name, entry.index) : PF.palette[0] });
      };
      pitSel.addEventListener("change", draw);
      draw();
    }
  }

  function initSubmission() {
    const data = PF.readJSON("submission-data");
    if (!data) return;
    data.forEach((fp, i) => {
      const svg = document.getElementById(`chart-h-${i}`);
      if (svg) PF.lineChart(svg, [{ name: "R²", points: fp.by_horizon.map((r) => [r.horizon, r.r2]) }],
        { xlabel: "horizon (quarters)", ylabel: "R²", includeZero: true });
      const pit = document.getElementById(`chart-pit-${i}`);
      if (pit) PF.pitChart(pit, fp.pit);
    });
  }

  // Upload: stream the file with the token, then poll the job until done or failed.
  function initUpload() {
    const form = $("#upload-form");
    if (!form) return;
    const tokenInput = $("#token");
    tokenInput.value = localStorage.getItem("proforma-token") || "";
    const out = $("#upload-result");
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      const token = tokenInput.value.trim();
      localStorage.setItem("proforma-token", token);
      const body = new FormData(form);
      body.delete("token");
      const button = $("#upload-button");
      button.disabled = true;
      out.innerHTML = '<span class="status">uploading…</span>';
      try {
        const resp = await fetch("/api/v1/submissions", { method: "POST", body,
          headers: { Authorization: `Bearer ${token}` } });
        const answer = await resp.json();
        if (!resp.ok) { showError(out, resp.status, answer); return; }
        await poll(answer.job_id, token, out);
      } catch (e) {
        out.innerHTML = `<div class="error">${e}</div>`;
      } finally {
        button.disabled = false;
      }
    });
  }
  function showError(out, status, answer) {
    const problems = (answer.problems || []).map((p) => "• " + Object.values(p).join(": ")).join("\n");
    out.innerHTML = "";
    const div = document.createElement("div");
    div.className = "error";
    div.id = "upload-error";
    div.textContent = `${status}: ${answer.detail}${problems ? "\n" + problems : ""}`;
    out.appendChild(div);
  }
  async function poll(jobId, token, out) {
    for (;;) {
      const resp = await fetch(`/api/v1/jobs/${jobId}`, { headers: { Authorization: `Bearer ${token}` } });
      const job = await resp.json();
      if (!resp.ok) { showError(out, resp.status, job); return; }
      out.innerHTML = "";
      const line = document.createElement("div");
      line.innerHTML = `job ${job.job_id}: <span id="job-status" class="status ${job.status}">${job.status}</span>`;
      out.appendChild(line);
      if (job.message) { const m = document.createElement("div"); m.textContent = job.message; out.appendChild(m); }
      if (job.report && (job.report.problems || []).length) {
        const pre = document.createElement("div");
        pre.className = "error";
        pre.textContent = job.report.problems.map((p) => "• " + (typeof p === "string" ? p : JSON.stringify(p))).join("\n");
        out.appendChild(pre);
      }
      if (job.status === "done") {
        const a = document.createElement("p");
        a.innerHTML = `<a id="submission-link" href="/submissions/${job.submission_id}">submission ${job.submission_id}</a>` +
          ' · <a id="leaderboard-link" href="/">leaderboard</a>';
        out.appendChild(a);
        return;
      }
      if (job.status === "failed") return;
      await new Promise((r) => setTimeout(r, 700));
    }
  }

  // SQL console: POST the query, show rows or the specific error.
  function initQuery() {
    const form = $("#query-form");
    if (!form) return;
    const out = $("#query-result"), meta = $("#query-meta");
    document.querySelectorAll("[data-example]").forEach((a) => a.addEventListener("click", (ev) => {
      ev.preventDefault();
      $("#sql").value = a.dataset.example;
    }));
    form.addEventListener("submit", async (ev) => {
      ev.preventDefault();
      meta.textContent = "running…";
      const resp = await fetch("/api/v1/query", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ sql: $("#sql").value }) });
      const answer = await resp.json();
      if (!resp.ok) {
        meta.textContent = "";
        out.innerHTML = "";
        const div = document.createElement("div");
        div.className = "error"; div.id = "query-error";
        div.textContent = `${resp.status}: ${answer.detail}`;
        out.appendChild(div);
        return;
      }
      meta.textContent = `${answer.row_count} row(s)${answer.truncated ? " (truncated at the row limit)" : ""} in ${answer.elapsed_ms} ms`;
      PF.renderTable(out, answer.columns, answer.rows);
    });
  }

  document.addEventListener("DOMContentLoaded", () => {
    initLeaderboard(); initSubmission(); initUpload(); initQuery();
  });
})();
