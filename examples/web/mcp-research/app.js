// The MCP research page: submits a query to `POST /research`, reads the SSE marker stream
// (fetch + ReadableStream, since EventSource cannot POST) and shows the run live.
// Hand-written, no dependencies: an SSE parser and SVG bar charts drawn from the service's
// chart configs. The report's markdown is rendered by the service (`POST /research/render`,
// pulldown-cmark with raw HTML escaped and unsafe URLs dropped), not here.
"use strict";

(function () {
  // ---------------------------------------------------------------- helpers

  const $ = (id) => document.getElementById(id);

  function el(tag, attrs, text) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, value);
    if (text !== undefined) node.textContent = text;
    return node;
  }

  /** `url` when the browser reads it as an http(s) URL (its own parser decides), else null. */
  function webUrl(url) {
    try {
      const parsed = new URL(String(url));
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (_) {
      return null;
    }
  }

  // ---------------------------------------------------------------- charts

  const SVG = "http://www.w3.org/2000/svg";
  const PALETTE = ["#3b6fd8", "#e07b39", "#3aa776", "#a455c9", "#d4a72c", "#d64f6a"];

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG, tag);
    for (const [key, value] of Object.entries(attrs || {})) node.setAttribute(key, String(value));
    if (text !== undefined) node.textContent = text;
    return node;
  }

  function niceStep(rough) {
    if (!(rough > 0)) return 1;
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const scaled = rough / power;
    const nice = scaled <= 1 ? 1 : scaled <= 2 ? 2 : scaled <= 5 ? 5 : 10;
    return Math.max(1, nice * power);
  }

  function shorten(label, max) {
    const text = String(label);
    return text.length > max ? text.slice(0, max - 1) + "…" : text;
  }

  /** One chart config `{type:"bar", title, data:{labels, datasets:[{label, data}]}}` as a figure. */
  function drawChart(config, index) {
    const figure = el("figure", { class: "chart", "data-chart-index": String(index) });
    const title = (config && (config.title || (config.options && config.options.title))) || "Chart";
    const data = config && config.data;
    const labels = data && Array.isArray(data.labels) ? data.labels.map(String) : null;
    const datasets = data && Array.isArray(data.datasets) ? data.datasets : null;
    if (!config || config.type !== "bar" || !labels || !datasets || !labels.length) {
      figure.appendChild(el("figcaption", {}, String(title)));
      figure.appendChild(el("p", { class: "muted" }, "This chart cannot be drawn (only bar charts with labels and datasets are supported)."));
      return figure;
    }
    const values = datasets.map((set) =>
      labels.map((_, i) => {
        const value = Number(Array.isArray(set.data) ? set.data[i] : 0);
        return Number.isFinite(value) && value > 0 ? value : 0;
      }),
    );
    const rotate = labels.length > 6 || labels.some((label) => label.length > 10);
    const width = 560;
    const height = rotate ? 320 : 270;
    const margin = { top: 18, right: 12, bottom: rotate ? 86 : 30, left: 56 };
    const plotW = width - margin.left - margin.right;
    const plotH = height - margin.top - margin.bottom;
    const max = Math.max(1, ...values.flat());
    const step = niceStep(max / 5);
    const top = Math.ceil(max / step) * step;
    const y = (value) => margin.top + plotH - (value / top) * plotH;

    const root = svg("svg", {
      viewBox: "0 0 " + width + " " + height,
      class: "bar-chart",
      role: "img",
      "aria-label": String(title),
    });
    root.appendChild(svg("title", {}, String(title)));
    for (let tick = 0; tick <= top + step / 2; tick += step) {
      root.appendChild(svg("line", { class: "grid", x1: margin.left, x2: width - margin.right, y1: y(tick), y2: y(tick) }));
      root.appendChild(svg("text", { class: "tick", x: margin.left - 6, y: y(tick) + 4, "text-anchor": "end" }, tick.toLocaleString("en")));
    }
    const group = plotW / labels.length;
    const barW = Math.max(2, (group * 0.78) / datasets.length);
    const valueLabels = datasets.length === 1 && labels.length <= 16;
    labels.forEach((label, i) => {
      const x0 = margin.left + i * group + group * 0.11;
      datasets.forEach((set, d) => {
        const value = values[d][i];
        const bar = svg("rect", {
          class: "bar",
          x: x0 + d * barW,
          y: y(value),
          width: Math.max(1, barW - 1),
          height: Math.max(0, margin.top + plotH - y(value)),
          fill: PALETTE[d % PALETTE.length],
          "data-label": label,
          "data-value": value,
          "data-dataset": set.label || "",
        });
        bar.appendChild(svg("title", {}, label + ": " + value.toLocaleString("en")));
        root.appendChild(bar);
        if (valueLabels) {
          root.appendChild(svg("text", {
            class: "value-label",
            x: x0 + d * barW + barW / 2,
            y: y(value) - 4,
            "text-anchor": "middle",
          }, value.toLocaleString("en")));
        }
      });
      const cx = margin.left + (i + 0.5) * group;
      const ly = margin.top + plotH + 14;
      const attrs = { class: "axis-label", x: cx, y: ly, "text-anchor": rotate ? "end" : "middle" };
      if (rotate) attrs.transform = "rotate(-35 " + cx + " " + ly + ")";
      const text = svg("text", attrs, shorten(label, 16));
      root.appendChild(text);
    });
    root.appendChild(svg("line", { class: "axis", x1: margin.left, x2: width - margin.right, y1: y(0), y2: y(0) }));

    figure.appendChild(el("figcaption", {}, String(title)));
    figure.appendChild(root);
    const legend = el("ul", { class: "legend" });
    datasets.forEach((set, d) => {
      const entry = el("li");
      const swatch = el("span", { class: "swatch" });
      swatch.style.background = PALETTE[d % PALETTE.length];
      entry.appendChild(swatch);
      entry.appendChild(document.createTextNode(String(set.label || "count")));
      legend.appendChild(entry);
    });
    figure.appendChild(legend);
    return figure;
  }

  // ---------------------------------------------------------------- SSE

  /** Splits a `text/event-stream` into events and hands each one's joined `data:` lines on. */
  function createSseParser(onData) {
    let buffer = "";
    let data = [];
    const line = (text) => {
      if (text === "") {
        if (data.length) onData(data.join("\n"));
        data = [];
        return;
      }
      if (text.startsWith(":")) return; // a comment (keep-alive)
      const colon = text.indexOf(":");
      const field = colon < 0 ? text : text.slice(0, colon);
      let value = colon < 0 ? "" : text.slice(colon + 1);
      if (value.startsWith(" ")) value = value.slice(1);
      if (field === "data") data.push(value);
    };
    return {
      push(chunk) {
        buffer += chunk;
        let newline;
        while ((newline = buffer.search(/\r\n|\n|\r(?=[^\n])/)) >= 0) {
          const width = buffer.startsWith("\r\n", newline) ? 2 : 1;
          line(buffer.slice(0, newline));
          buffer = buffer.slice(newline + width);
        }
      },
      finish() {
        if (buffer.length) line(buffer.replace(/\r$/, ""));
        buffer = "";
        line("");
      },
    };
  }

  // ---------------------------------------------------------------- page state

  let toolNames = null; // null: the tool list could not be loaded, all tools are used
  let run = null;

  function setState(state) {
    document.body.dataset.state = state;
  }

  function resetRun() {
    run = { markdown: null, report: null, phases: [], finished: false };
    // Counts the runs of this page, so a watcher can tell a new run's end from the last one's.
    document.body.dataset.run = String(Number(document.body.dataset.run || 0) + 1);
    $("run").hidden = false;
    $("phase").textContent = "starting";
    $("phase").dataset.phase = "";
    $("session-id").textContent = "";
    $("phase-history").replaceChildren();
    $("thinking-log").replaceChildren();
    $("sources").replaceChildren();
    $("sources-count").textContent = "0";
    $("charts").replaceChildren();
    $("charts-section").hidden = true;
    $("report").replaceChildren();
    $("report-section").hidden = true;
    $("error").hidden = true;
    $("error").textContent = "";
    $("complete").hidden = true;
    $("complete").textContent = "";
    setProgress(0);
  }

  function setProgress(value) {
    const percent = Math.max(0, Math.min(100, Math.round(Number(value) || 0)));
    $("progress-bar").style.width = percent + "%";
    $("progress").setAttribute("aria-valuenow", String(percent));
    $("progress").dataset.progress = String(percent);
    $("progress-text").textContent = percent + "%";
  }

  function setPhase(phase) {
    $("phase").textContent = phase;
    $("phase").dataset.phase = phase;
    if (run.phases[run.phases.length - 1] !== phase) {
      run.phases.push(phase);
      $("phase-history").appendChild(el("li", { "data-phase": phase }, phase));
    }
  }

  function addThinking(text) {
    const log = $("thinking-log");
    log.appendChild(el("li", {}, text));
    log.scrollTop = log.scrollHeight;
  }

  function parseJson(payload, what) {
    try {
      return JSON.parse(payload);
    } catch (error) {
      addThinking("(could not read " + what + ": " + error.message + ")");
      return null;
    }
  }

  function showSources(sources) {
    if (!Array.isArray(sources)) return;
    const list = $("sources");
    list.replaceChildren();
    for (const source of sources) {
      const title = String((source && (source.title || source.url)) || "untitled");
      const entry = el("li", { class: "source" });
      const href = source && source.url ? webUrl(source.url) : null;
      if (href) {
        const link = el("a", { href, target: "_blank", rel: "noopener noreferrer" }, title);
        entry.appendChild(link);
        entry.appendChild(el("span", { class: "url" }, href));
      } else {
        entry.appendChild(el("span", {}, title));
      }
      list.appendChild(entry);
    }
    $("sources-count").textContent = String(sources.length);
  }

  function showCharts(configs) {
    if (!Array.isArray(configs)) return;
    const charts = $("charts");
    charts.replaceChildren(...configs.map(drawChart));
    $("charts-section").hidden = configs.length === 0;
  }

  /** The report's markdown as safe HTML, rendered by the service. */
  async function renderMarkdown(markdown) {
    const response = await fetch("/research/render", {
      method: "POST",
      headers: { "Content-Type": "text/markdown; charset=utf-8", Accept: "text/html" },
      body: markdown,
    });
    if (!response.ok) throw new Error("status " + response.status + ": " + (await readErrorBody(response)));
    return response.text();
  }

  /**
   * Shows the report once the service has rendered it; until then (and if rendering fails)
   * the markdown shows as plain text. Resolves when the report is on the page.
   */
  async function showReport(markdown) {
    const current = run;
    const report = $("report");
    report.replaceChildren(el("pre", { class: "report-source" }, markdown));
    $("report-section").hidden = false;
    try {
      const html = await renderMarkdown(markdown);
      if (run !== current) return;
      report.innerHTML = html;
      for (const link of report.querySelectorAll("a[href]")) {
        link.target = "_blank";
        link.rel = "noopener noreferrer";
      }
    } catch (error) {
      if (run === current) addThinking("(could not render the report: " + error.message + "; shown as text)");
    }
  }

  function showError(message) {
    $("error").textContent = message;
    $("error").hidden = false;
    run.finished = true;
    setState("error");
  }

  function payloadMessage(payload) {
    const parsed = (() => {
      try {
        return JSON.parse(payload);
      } catch (_) {
        return null;
      }
    })();
    if (parsed && typeof parsed === "object" && parsed.message) return String(parsed.message);
    if (typeof parsed === "string") return parsed;
    return payload || "the research failed";
  }

  const MARKDOWN_START = "MARKDOWN_CONTENT_START:";
  const MARKDOWN_END = "MARKDOWN_CONTENT_END:";

  /** One SSE event's data: a marker, or a piece of the report between the markdown markers. */
  function handleEvent(data) {
    if (run.markdown !== null) {
      const lines = data.split("\n");
      const end = lines.indexOf(MARKDOWN_END);
      if (end < 0) {
        run.markdown.push(data);
        return;
      }
      run.markdown.push(...lines.slice(0, end));
      run.report = showReport(run.markdown.join("\n"));
      run.markdown = null;
      const rest = lines.slice(end + 1).join("\n");
      if (rest) handleEvent(rest);
      return;
    }
    const colon = data.indexOf(":");
    const marker = colon < 0 ? data : data.slice(0, colon);
    const payload = colon < 0 ? "" : data.slice(colon + 1);
    switch (marker) {
      case "RESEARCH_START": {
        const start = payload ? parseJson(payload, "the session") : null;
        if (start && start.session_id) $("session-id").textContent = "session " + start.session_id;
        break;
      }
      case "PHASE":
        setPhase(payload.trim());
        break;
      case "PROGRESS":
        setProgress(payload);
        break;
      case "THINKING":
        addThinking(payload);
        break;
      case "SOURCES":
        showSources(parseJson(payload, "the sources"));
        break;
      case "CHART_CONFIGS":
        showCharts(parseJson(payload, "the charts"));
        break;
      case "FINAL_RESPONSE_START":
        setState("reporting");
        break;
      case "MARKDOWN_CONTENT_START":
        run.markdown = [];
        if (payload.replace(/^\n/, "")) handleEvent(payload.replace(/^\n/, ""));
        break;
      case "MARKDOWN_CONTENT_END":
        break;
      case "RESEARCH_COMPLETE": {
        const stats = parseJson(payload, "the statistics") || {};
        const parts = [];
        if (stats.iterations !== undefined) parts.push(stats.iterations + " iterations");
        if (stats.docs_processed !== undefined) parts.push(stats.docs_processed + " documents");
        if (typeof stats.confidence === "number") parts.push("confidence " + Math.round(stats.confidence * 100) + "%");
        $("complete").textContent = "Research complete" + (parts.length ? ": " + parts.join(", ") : "") + ".";
        $("complete").hidden = false;
        setPhase("complete");
        setProgress(100);
        run.finished = true;
        // Complete once the report is on the page.
        const current = run;
        Promise.resolve(run.report).then(() => {
          if (run === current) setState("complete");
        });
        break;
      }
      case "ERROR":
        showError(payloadMessage(payload));
        break;
      default:
        console.warn("unknown marker", marker);
    }
  }

  async function readErrorBody(response) {
    const text = await response.text();
    try {
      const body = JSON.parse(text);
      return String(body.error || body.message || text);
    } catch (_) {
      return text || response.statusText;
    }
  }

  async function startResearch(event) {
    event.preventDefault();
    const query = $("query").value.trim();
    if (!query) {
      $("query").focus();
      return;
    }
    const request = { query };
    const maxIterations = parseInt($("max-iterations").value, 10);
    if (Number.isFinite(maxIterations)) request.max_iterations = maxIterations;
    if (toolNames !== null) {
      const chosen = [...document.querySelectorAll("#tool-list input:checked")].map((box) => box.value);
      if (chosen.length === 0) {
        resetRun();
        showError("Select at least one MCP tool.");
        return;
      }
      if (chosen.length !== toolNames.length) request.enabled_tools = chosen;
    }

    resetRun();
    setState("running");
    $("submit").disabled = true;
    try {
      const response = await fetch("/research", {
        method: "POST",
        headers: { "Content-Type": "application/json", Accept: "text/event-stream" },
        body: JSON.stringify(request),
      });
      if (!response.ok) {
        showError("The service refused the request (" + response.status + "): " + (await readErrorBody(response)));
        return;
      }
      const session = response.headers.get("X-Session-Id");
      if (session) $("session-id").textContent = "session " + session;
      const parser = createSseParser(handleEvent);
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        parser.push(value);
      }
      parser.finish();
      if (!run.finished) {
        showError("The stream ended before the research completed; its status stays available at /research/status/{session_id}.");
      }
    } catch (error) {
      showError("The connection to the service failed: " + error.message);
    } finally {
      $("submit").disabled = false;
    }
  }

  async function loadTools() {
    const list = $("tool-list");
    const status = $("tools-status");
    try {
      const response = await fetch("/research/tools", { headers: { Accept: "application/json" } });
      if (!response.ok) throw new Error("status " + response.status);
      const body = await response.json();
      const tools = Array.isArray(body) ? body : body.tools;
      if (!Array.isArray(tools)) throw new Error("unexpected answer");
      toolNames = [];
      list.replaceChildren();
      for (const tool of tools) {
        const name = typeof tool === "string" ? tool : String(tool.name);
        const description = typeof tool === "string" ? "" : String(tool.description || "");
        toolNames.push(name);
        const label = el("label", { class: "tool", title: description });
        const box = el("input", { type: "checkbox", value: name, "data-tool": name });
        box.checked = true;
        label.appendChild(box);
        label.appendChild(el("span", { class: "tool-name" }, name));
        if (description) label.appendChild(el("span", { class: "tool-description" }, description));
        list.appendChild(label);
      }
      status.textContent = tools.length + (tools.length === 1 ? " tool" : " tools");
      list.dataset.loaded = "true";
    } catch (error) {
      toolNames = null;
      status.textContent = "(could not list the tools: " + error.message + "; all tools are used)";
      list.dataset.loaded = "false";
    }
  }

  document.addEventListener("DOMContentLoaded", () => {
    $("research-form").addEventListener("submit", startResearch);
    loadTools();
  });

  // For the console and tests: the renderers as plain functions.
  window.mcpResearch = { renderMarkdown, drawChart, createSseParser };
})();
