// The sweep report's page: draws what ncmesh.report wrote into #report-data, with Plotly.
//
// Points arrive summarized over their seeds by ncmesh.stats. Gains over a
// baseline are paired per seed here, since any axis value may be chosen as
// the baseline; summarize() below computes the same intervals as
// ncmesh.stats.summarize, from the same table of t quantiles.
"use strict";
(() => {
  const DATA = JSON.parse(document.getElementById("report-data").textContent);
  const RUNS = DATA.runs;
  const METRIC = Object.fromEntries(DATA.metrics.map((m) => [m.name, m]));
  const CONFIG = { displaylogo: false, responsive: true };
  const LEVEL = `${Math.round(DATA.level * 100)}%`;
  const METHOD = {
    "log-t": "geometric mean; t interval on the logarithms",
    t: "mean; t interval within the metric's bounds",
    one: "one seed: no interval",
    none: "no value",
  };
  const MAX_KEYS_SHOWN = 10;

  // ------------------------------------------------------------ statistics

  const scaleOf = (m) => ({ log: m.log, low: m.low ?? -Infinity, high: m.high ?? Infinity });

  /** A ratio for log-scale metrics (positive, multiplicative), else a difference within +/- the bounds' width. */
  function gainScale(m) {
    if (m.log) return { log: true, low: 0, high: Infinity };
    const s = scaleOf(m);
    return { log: false, low: -(s.high - s.low), high: s.high - s.low };
  }

  function pairedGain(value, base, m) {
    if (value === null || base === null) return NaN;
    if (m.log) return base > 0 ? value / base : NaN;
    return value - base;
  }

  /** ncmesh.stats.summarize: the centre of the values and its interval on the scale. */
  function summarize(values, scale) {
    const xs = values.filter((v) => v !== null && !Number.isNaN(v));
    const n = xs.length;
    if (n === 0) return { center: NaN, low: NaN, high: NaN, n, method: "none" };
    if (n === 1) return { center: xs[0], low: NaN, high: NaN, n, method: "one" };
    const onLogs = scale.log && xs.every((x) => x > 0);
    const ys = onLogs ? xs.map(Math.log) : xs;
    const mean = ys.reduce((a, y) => a + y, 0) / n;
    const sd = Math.sqrt(ys.reduce((a, y) => a + (y - mean) ** 2, 0) / (n - 1));
    const half = (DATA.t[n - 1] * sd) / Math.sqrt(n);
    if (onLogs) return { center: Math.exp(mean), low: Math.exp(mean - half), high: Math.exp(mean + half), n, method: "log-t" };
    return { center: mean, low: Math.max(mean - half, scale.low), high: Math.min(mean + half, scale.high), n, method: "t" };
  }

  // ------------------------------------------------------------ words and numbers

  function fmt(x) {
    if (x === null || x === undefined || Number.isNaN(x)) return "–";
    if (!Number.isFinite(x)) return x > 0 ? "∞" : "−∞";
    const a = Math.abs(x);
    if (a !== 0 && (a >= 1e7 || a < 1e-3)) return x.toExponential(3);
    return String(Number(x.toPrecision(4)));
  }

  const short = (name) =>
    name
      .split(" / ")
      .map((k) => k.split(".").pop())
      .join(" / ");
  const escape = (text) =>
    String(text).replace(/[&<>"']/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[c]);
  const clip = (text, n) => (text.length > n ? `${text.slice(0, n - 1)}…` : text);

  function el(tag, attributes = {}, ...children) {
    const node = document.createElement(tag);
    for (const [k, v] of Object.entries(attributes)) node.setAttribute(k, v);
    for (const child of children) node.append(child);
    return node;
  }

  function select(label, control, options, chosen, onChange) {
    const box = el("select", { "data-control": control });
    for (const option of options) {
      if (option.group) {
        const group = el("optgroup", { label: option.group });
        for (const o of option.options) group.append(el("option", { value: o.value }, o.text));
        box.append(group);
      } else {
        box.append(el("option", { value: option.value }, option.text));
      }
    }
    box.value = chosen;
    box.addEventListener("change", () => onChange(box.value));
    return el("label", {}, `${label} `, box);
  }

  /** Numbers (and the dash of a missing one) are set right, words left. */
  const numeric = (cell) => typeof cell === "number" || /^[-−]?[0-9.e+∞–]+$/.test(cell);

  function table(names, rows, attributes = {}) {
    const align = names.map((_, i) => (rows.length && numeric(rows[0].cells[i]) ? "num" : ""));
    const head = names.map((name, i) => `<th class="${align[i]}">${escape(name)}</th>`).join("");
    const cell = (c) => `<td class="${numeric(c) ? "num" : ""}">${escape(c)}</td>`;
    const row = (r) => `<tr class="${r.cls || ""}" data-row="${r.id ?? ""}">${r.cells.map(cell).join("")}</tr>`;
    const body = rows.map(row).join("");
    const wrap = el("div", { class: "scroll", ...attributes });
    wrap.innerHTML = `<table><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
    return wrap;
  }

  const plural = (n, word) => `${n} ${word}${n === 1 ? "" : "s"}`;

  /**
   * The y range of a plot: its points, and the intervals of points with enough
   * seeds. A point with fewer may have an interval a thousand times its value,
   * which would flatten every other point; it runs off the plot instead.
   */
  function yRange(traces, log, include = []) {
    const values = [...include];
    for (const t of traces) {
      t.y.forEach((y, k) => {
        if (y === null) return;
        values.push(y);
        if (t.meta[k] < DATA.fewSeeds) return;
        if (Number.isFinite(t.error_y.array[k])) values.push(y + t.error_y.array[k]);
        if (Number.isFinite(t.error_y.arrayminus[k])) values.push(y - t.error_y.arrayminus[k]);
      });
    }
    const shown = log ? values.filter((v) => v > 0).map(Math.log10) : values;
    if (!shown.length) return undefined;
    const [low, high] = [Math.min(...shown), Math.max(...shown)];
    const pad = (high - low) * 0.06 || (log ? 0.5 : Math.abs(high) * 0.1 || 1);
    return [low - pad, high + pad];
  }

  const seedRange = (counts) => {
    const [low, high] = [Math.min(...counts), Math.max(...counts)];
    return low === high ? String(low) : `${low}–${high}`;
  };

  // ------------------------------------------------------------ one sweep

  class SweepView {
    constructor(sweep, index) {
      this.sw = sweep;
      this.P = sweep.points;
      const numeric = sweep.axes.findIndex((a) => a.numeric);
      this.state = {
        metric: sweep.metrics.includes("throughput_bps") ? "throughput_bps" : sweep.metrics[0],
        x: numeric >= 0 ? numeric : 0,
        filters: sweep.axes.map(() => -1),
        baseline: sweep.baseline,
        log: null,
        point: null,
        run: null,
      };
      this.pointAt = new Map(this.P.at.map((at, i) => [at.join(","), i]));
      this.root = el("section", { class: "sweep", id: `sweep-${index}` });
    }

    // The points that pass the filters, and their traces: one per combination of the other axes.
    shown() {
      const { x, filters } = this.state;
      const passes = (at) => at.every((v, a) => a === x || filters[a] < 0 || filters[a] === v);
      return this.P.at.map((_, i) => i).filter((i) => passes(this.P.at[i]));
    }

    groups(points) {
      const { x, filters } = this.state;
      const byKey = new Map();
      for (const i of points) {
        const key = this.P.at[i].map((v, a) => (a === x || filters[a] >= 0 ? "" : v)).join(",");
        if (!byKey.has(key)) byKey.set(key, []);
        byKey.get(key).push(i);
      }
      return [...byKey.values()].map((list) => list.sort((i, j) => (this.P.at[i][x] ?? 0) - (this.P.at[j][x] ?? 0)));
    }

    traceName(i) {
      const { x, filters } = this.state;
      const named = (axis, a) => `${short(axis.name)}=${axis.values[this.P.at[i][a]]}`;
      return this.sw.axes
        .map((axis, a) => (a === x || filters[a] >= 0 ? null : named(axis, a)))
        .filter(Boolean)
        .join(", ");
    }

    xAxis() {
      return this.sw.axes[this.state.x];
    }

    xOf(i) {
      const axis = this.xAxis();
      if (!axis) return this.sw.name;
      const v = this.P.at[i][this.state.x];
      return axis.numeric ? axis.raw[v][0] : axis.values[v];
    }

    where(i) {
      return this.sw.axes.map((axis, a) => escape(`${axis.name}=${axis.values[this.P.at[i][a]]}`)).join("<br>");
    }

    axisNames() {
      return this.sw.axes.map((a) => a.name);
    }

    axisValues(i) {
      return this.sw.axes.map((a, k) => a.values[this.P.at[i][k]]);
    }

    summaryCells(s) {
      return [fmt(s.center), fmt(s.low), fmt(s.high), METHOD[s.method]];
    }

    stat(m, i) {
      const [center, low, high, n, method] = this.P.stats[m][i];
      return { center: center ?? NaN, low: low ?? NaN, high: high ?? NaN, n, method };
    }

    keys(runs) {
      const shown = runs.slice(0, MAX_KEYS_SHOWN).map((r) => RUNS.key[r].slice(0, 12));
      return shown.join(" ") + (runs.length > shown.length ? ` and ${runs.length - shown.length} more` : "");
    }

    warnings(i, n) {
      const lines = [];
      if (n < DATA.fewSeeds) lines.push(`⚠ fewer than ${DATA.fewSeeds} seeds: the interval says little`);
      for (const r of this.P.failed[i].slice(0, 3)) {
        const error = escape(clip(RUNS.error[r] || "", 90));
        lines.push(`✖ run ${RUNS.key[r].slice(0, 12)} (seed ${RUNS.seed[r]}) failed: ${error}`);
      }
      if (this.P.failed[i].length > 3) lines.push(`✖ and ${this.P.failed[i].length - 3} more failed runs`);
      return lines;
    }

    symbol(i, n) {
      const few = n < DATA.fewSeeds;
      if (this.P.failed[i].length) return few ? "x-open" : "x";
      return few ? "circle-open" : "circle";
    }

    trace(points, summary, hover) {
      const axis = this.xAxis();
      const stats = points.map(summary);
      return {
        type: "scatter",
        mode: axis && axis.numeric ? "lines+markers" : "markers",
        name: this.traceName(points[0]) || METRIC[this.state.metric].name,
        x: points.map((i) => this.xOf(i)),
        y: stats.map((s) => (Number.isNaN(s.center) ? null : s.center)),
        error_y: {
          // NaN where a point has no interval: Plotly then draws no bar, where null would leave a cap
          type: "data",
          symmetric: false,
          array: stats.map((s) => s.high - s.center),
          arrayminus: stats.map((s) => s.center - s.low),
          thickness: 1.3,
          width: 4,
        },
        customdata: points,
        meta: stats.map((st) => st.n),
        text: points.map((i, k) => hover(i, stats[k])),
        hovertemplate: "%{text}<extra></extra>",
        marker: { size: 9, symbol: points.map((i, k) => this.symbol(i, stats[k].n)), line: { width: 2 } },
      };
    }

    layout(title, ytitle, traces, extra = {}) {
      const axis = this.xAxis();
      const others = this.sw.axes.filter((_, a) => a !== this.state.x && this.state.filters[a] < 0).map((a) => short(a.name));
      return {
        title: { text: title, font: { size: 15 } },
        xaxis: {
          title: { text: axis ? axis.name : "" },
          type: axis && axis.numeric ? "linear" : "category",
          zeroline: false,
          automargin: true,
        },
        yaxis: { title: { text: ytitle }, automargin: true, ...extra.yaxis },
        showlegend: traces.length > 1,
        legend: { title: { text: others.join(", ") } },
        scattermode: axis && axis.numeric ? "overlay" : "group",
        hovermode: "closest",
        margin: { t: 50, r: 10, b: 50, l: 60 },
        shapes: extra.shapes || [],
      };
    }

    // ---------------------------------------------------------- drawing

    render() {
      const sw = this.sw;
      const seeds = this.P.runs.map((r) => r.length);
      const few = seeds.filter((n) => n < DATA.fewSeeds).length;
      const failedPoints = this.P.failed.filter((f) => f.length).length;
      const notes = [
        `axes: ${sw.axes.map((a) => `${a.name} (${a.values.length})`).join(", ") || "none"}`,
        `${plural(this.P.at.length, "point")}, ${seedRange(seeds)} successful ` +
          `seed${Math.max(...seeds) === 1 ? "" : "s"} per point`,
      ];
      if (few) notes.push(`${plural(few, "point")} with fewer than ${DATA.fewSeeds} seeds (open markers)`);
      if (failedPoints) notes.push(`${plural(failedPoints, "point")} with failed runs (×)`);
      if (sw.superseded) {
        notes.push(`${plural(sw.superseded, "run")} left out: a later run of the same point and seed replaced them`);
      }
      this.root.append(el("h2", {}, sw.name), el("p", { class: "note" }, notes.join("; ")));
      if (!sw.metrics.length) {
        this.root.append(el("p", {}, "No successful run recorded a metric."));
        return this.root;
      }
      this.controls = el("div", { class: "controls" });
      this.about = el("p", { class: "note" });
      this.main = el("div", { class: "plot main" });
      this.gainBox = el("div", { class: "gains" });
      this.pointsBox = el("div", { class: "points" });
      this.detail = el("div", { class: "detail" });
      this.root.append(this.controls, this.about, this.main, this.gainBox);
      this.root.append(el("h3", {}, "Points"), this.pointsBox, el("h3", {}, "Runs at the chosen point"), this.detail);
      this.renderControls();
      return this.root;
    }

    renderControls() {
      const sw = this.sw;
      const st = this.state;
      const redraw = () => this.draw();
      const parts = [
        select("metric", "metric", sw.metrics.map((m) => ({ value: m, text: m })), st.metric, (v) => {
          st.metric = v;
          st.log = null;
          this.renderControls();
          redraw();
        }),
      ];
      if (sw.axes.length > 1) {
        parts.push(
          select("x-axis", "x", sw.axes.map((a, i) => ({ value: i, text: a.name })), st.x, (v) => {
            st.x = Number(v);
            st.filters[st.x] = -1;
            this.renderControls();
            redraw();
          }),
        );
      }
      sw.axes.forEach((axis, a) => {
        if (a === st.x || axis.values.length < 2) return;
        const options = [{ value: -1, text: "all" }, ...axis.values.map((v, i) => ({ value: i, text: v }))];
        parts.push(
          select(short(axis.name), `filter-${a}`, options, st.filters[a], (v) => {
            st.filters[a] = Number(v);
            redraw();
          }),
        );
      });
      const baselines = [{ value: "", text: "none" }];
      sw.axes.forEach((axis, a) => {
        const options = axis.values.map((v, i) => ({ value: `${a}:${i}`, text: `${short(axis.name)} = ${v}` }));
        baselines.push({ group: axis.name, options });
      });
      if (sw.axes.length) {
        parts.push(
          select("baseline", "baseline", baselines, st.baseline ? st.baseline.join(":") : "", (v) => {
            st.baseline = v ? v.split(":").map(Number) : null;
            redraw();
          }),
        );
      }
      const log = el("input", { type: "checkbox", "data-control": "log" });
      log.checked = this.logScale();
      log.addEventListener("change", () => {
        st.log = log.checked;
        redraw();
      });
      parts.push(el("label", {}, log, " log scale"));
      this.controls.replaceChildren(...parts);
      this.about.textContent = `${st.metric}: ${METRIC[st.metric].description}.`;
    }

    /** Log by choice, or by default for a positive metric spanning more than three decades. */
    logScale() {
      if (this.state.log !== null) return this.state.log;
      const m = METRIC[this.state.metric];
      const ys = this.P.stats[m.name].map((s) => s[0]).filter((y) => y !== null);
      return m.log && ys.length > 0 && Math.min(...ys) > 0 && Math.max(...ys) / Math.min(...ys) > 1e3;
    }

    draw() {
      const st = this.state;
      const m = METRIC[st.metric];
      const points = this.shown();
      const hover = (i, s) =>
        [
          `<b>${escape(this.traceName(i) || this.sw.name)}</b>`,
          this.where(i),
          `${m.name}: <b>${fmt(s.center)}</b> (${METHOD[s.method]})`,
          `${LEVEL} interval: ${fmt(s.low)} – ${fmt(s.high)}`,
          `${s.n} seeds; runs: ${this.keys(this.P.runs[i])}`,
          ...this.warnings(i, s.n),
        ].join("<br>");
      const traces = this.groups(points).map((g) => this.trace(g, (i) => this.stat(m.name, i), hover));
      const title = `${m.name} against ${this.xAxis() ? this.xAxis().name : "the sweep"}`;
      const ytitle = `${m.name} (${m.log ? "geometric mean" : "mean"}, ${LEVEL} interval)`;
      const log = this.logScale();
      const range = yRange(traces, log, m.log && !log ? [0] : []);
      const layout = this.layout(title, ytitle, traces, { yaxis: { type: log ? "log" : "linear", range } });
      const drawn = [Plotly.react(this.main, traces, layout, CONFIG)];
      if (!this.main.dataset.listening) {
        this.main.dataset.listening = "yes";
        this.main.on("plotly_click", (e) => this.choosePoint(e.points[0].customdata));
      }
      this.pointsBox.replaceChildren(this.pointsTable(points));
      drawn.push(...this.drawGains(points));
      if (st.point === null) {
        const r = DATA.selected;
        const mine = r !== null && RUNS.point[r] !== null && RUNS.sweep[r] === this.sw.name;
        this.choosePoint(mine ? RUNS.point[r] : (points[0] ?? 0), mine ? r : null);
      } else {
        this.renderDetail();
      }
      return Promise.all(drawn);
    }

    pointsTable(points) {
      const m = this.state.metric;
      const names = [...this.axisNames(), "seeds", "failed", m, `${LEVEL} low`, `${LEVEL} high`, "summary"];
      const rows = points.map((i) => {
        const s = this.stat(m, i);
        const cells = [...this.axisValues(i), s.n, this.P.failed[i].length, ...this.summaryCells(s)];
        const cls = ["clickable", this.P.failed[i].length ? "failed" : "", i === this.state.point ? "chosen" : ""].join(" ");
        return { id: i, cls, cells };
      });
      const box = table(names, rows, { "data-table": "points" });
      box.addEventListener("click", (e) => {
        const row = e.target.closest("tr[data-row]");
        if (row && row.dataset.row !== "") this.choosePoint(Number(row.dataset.row));
      });
      return box;
    }

    // ---------------------------------------------------------- gains over a baseline

    /** Each shown point's runs paired, seed by seed, with the baseline point's. */
    gains(points) {
      const [ba, bv] = this.state.baseline;
      const m = METRIC[this.state.metric];
      const scale = gainScale(m);
      const values = RUNS.values[m.name];
      const found = [];
      for (const i of points) {
        const at = this.P.at[i];
        if (at[ba] === bv) continue;
        const partner = this.pointAt.get(at.map((v, a) => (a === ba ? bv : v)).join(","));
        if (partner === undefined) continue;
        const baseOf = new Map(this.P.runs[partner].map((r) => [RUNS.seed[r], r]));
        const pairs = this.P.runs[i]
          .filter((r) => baseOf.has(RUNS.seed[r]))
          .map((r) => {
            const base = baseOf.get(RUNS.seed[r]);
            return { run: r, base, gain: pairedGain(values[r], values[base], m) };
          });
        found.push({ point: i, partner, pairs, summary: summarize(pairs.map((p) => p.gain), scale) });
      }
      return found;
    }

    drawGains(points) {
      if (!this.state.baseline) {
        this.gainBox.replaceChildren();
        return [];
      }
      const m = METRIC[this.state.metric];
      const [ba, bv] = this.state.baseline;
      const axis = this.sw.axes[ba];
      const base = `${short(axis.name)} = ${axis.values[bv]}`;
      const word = m.log ? "ratio" : "difference";
      const found = this.gains(points);
      const byPoint = new Map(found.map((g) => [g.point, g]));
      const hover = (i, s) => {
        const g = byPoint.get(i);
        return [
          `<b>${escape(this.traceName(i) || this.sw.name)}</b>`,
          this.where(i),
          `${m.name} ${word} to ${escape(base)}: <b>${fmt(s.center)}</b> (${METHOD[s.method]})`,
          `${LEVEL} interval: ${fmt(s.low)} – ${fmt(s.high)}`,
          `${s.n} paired seeds of ${this.P.runs[i].length}; runs: ${this.keys(g.pairs.map((p) => p.run))}`,
          `baseline runs: ${this.keys(g.pairs.map((p) => p.base))}`,
          ...this.warnings(i, s.n),
          ...(this.P.failed[g.partner].length ? [`✖ ${plural(this.P.failed[g.partner].length, "baseline run")} failed`] : []),
        ].join("<br>");
      };
      const summary = (i) => byPoint.get(i).summary;
      const traces = this.groups(found.map((g) => g.point)).map((list) => this.trace(list, summary, hover));
      const unit = m.log ? 1 : 0;
      const line = { type: "line", xref: "paper", x0: 0, x1: 1, y0: unit, y1: unit, line: { dash: "dot", color: "#888" } };
      const title = `${m.name}: ${word} to ${base}, paired by seed`;
      const plot = el("div", { class: "plot small gain" });
      const cdf = el("div", { class: "plot small cdf" });
      const heading = el("h3", {}, `Gain over the baseline ${base}`);
      this.gainBox.replaceChildren(heading, el("div", { class: "pair" }, plot, cdf), this.gainTable(found, word));
      const log = m.log; // ratios: 2 and 1/2 are as far from 1
      const yaxis = { type: log ? "log" : "linear", range: yRange(traces, log, [unit]) };
      const layout = this.layout(title, `${word} (${LEVEL} interval)`, traces, { shapes: [line], yaxis });
      const drawn = [
        Plotly.react(plot, traces, layout, CONFIG),
        Plotly.react(cdf, this.cdfTraces(found, ba), this.cdfLayout(m, word, base, unit), CONFIG),
      ];
      plot.on("plotly_click", (e) => this.choosePoint(e.points[0].customdata));
      return drawn;
    }

    /** Every paired seed's gain, one curve per compared value of the baseline's axis. */
    cdfTraces(found, ba) {
      const axis = this.sw.axes[ba];
      const byValue = new Map();
      for (const g of found) {
        const v = this.P.at[g.point][ba];
        if (!byValue.has(v)) byValue.set(v, []);
        for (const p of g.pairs) if (!Number.isNaN(p.gain)) byValue.get(v).push({ ...p, point: g.point });
      }
      return [...byValue.entries()]
        .sort((a, b) => a[0] - b[0])
        .map(([v, pairs]) => {
          pairs.sort((a, b) => a.gain - b.gain);
          return {
            type: "scatter",
            mode: "lines+markers",
            line: { shape: "hv" },
            marker: { size: 5 },
            name: `${short(axis.name)}=${axis.values[v]}`,
            x: pairs.map((p) => p.gain),
            y: pairs.map((_, k) => (k + 1) / pairs.length),
            customdata: pairs.map((p) => p.point),
            text: pairs.map((p) => {
              const runs = `run ${RUNS.key[p.run].slice(0, 12)} against ${RUNS.key[p.base].slice(0, 12)}`;
              return `${fmt(p.gain)} at seed ${RUNS.seed[p.run]}<br>${this.where(p.point)}<br>${runs}`;
            }),
            hovertemplate: "%{text}<extra></extra>",
          };
        });
    }

    cdfLayout(m, word, base, unit) {
      return {
        title: { text: `CDF over seeds of the ${word}`, font: { size: 15 } },
        xaxis: { title: { text: `${m.name} ${word}` }, type: m.log ? "log" : "linear", automargin: true },
        yaxis: { title: { text: "fraction of paired seeds" }, range: [0, 1.02] },
        hovermode: "closest",
        margin: { t: 50, r: 10, b: 50, l: 60 },
        shapes: [{ type: "line", yref: "paper", y0: 0, y1: 1, x0: unit, x1: unit, line: { dash: "dot", color: "#888" } }],
      };
    }

    gainTable(found, word) {
      const names = [...this.axisNames(), "paired seeds", "seeds", word, `${LEVEL} low`, `${LEVEL} high`, "summary"];
      const rows = found.map((g) => {
        const cells = [...this.axisValues(g.point), g.summary.n, this.P.runs[g.point].length, ...this.summaryCells(g.summary)];
        return { id: g.point, cls: this.P.failed[g.point].length || this.P.failed[g.partner].length ? "failed" : "", cells };
      });
      return table(names, rows, { "data-table": "gains" });
    }

    // ---------------------------------------------------------- one point, one run

    choosePoint(i, run = null) {
      this.state.point = i;
      const ok = this.P.runs[i] || [];
      this.state.run = run ?? ok.find((r) => RUNS.series[r]) ?? ok[0] ?? null;
      this.pointsBox.querySelectorAll("tr[data-row]").forEach((tr) => tr.classList.toggle("chosen", Number(tr.dataset.row) === i));
      this.renderDetail();
    }

    renderDetail() {
      const i = this.state.point;
      if (i === null || this.P.at[i] === undefined) {
        this.detail.replaceChildren(el("p", {}, "Click a point to list its runs."));
        return;
      }
      const m = this.state.metric;
      const runs = [...this.P.runs[i], ...this.P.failed[i]].sort((a, b) => RUNS.seed[a] - RUNS.seed[b]);
      const names = ["key", "seed", "status", m, "wall s", "error"];
      const rows = runs.map((r) => ({
        id: r,
        cls: ["clickable", RUNS.status[r] === "failed" ? "failed" : "", r === this.state.run ? "chosen" : ""].join(" "),
        cells: [RUNS.key[r], RUNS.seed[r], RUNS.status[r], fmt(RUNS.values[m][r]), fmt(RUNS.wall[r]), RUNS.error[r] || ""],
      }));
      const list = table(names, rows, { "data-table": "runs-at-point" });
      list.addEventListener("click", (e) => {
        const row = e.target.closest("tr[data-row]");
        if (!row) return;
        this.state.run = Number(row.dataset.row);
        this.renderDetail();
      });
      const where = this.sw.axes.map((a, k) => `${a.name}=${a.values[this.P.at[i][k]]}`).join(", ");
      const series = el("div", { class: "series" });
      const note = el("p", { class: "note" }, `${where || this.sw.name}: click a run for its time series.`);
      this.detail.replaceChildren(note, list, series);
      drawSeries(series, this.state.run, where || this.sw.name);
    }
  }

  /** A run's time series, one panel per kind (goodput, cwnd, queues, RTT), sharing the time axis. */
  function drawSeries(box, r, where) {
    if (r === null || r === undefined) return;
    const data = RUNS.series[r];
    const title = `run ${RUNS.key[r].slice(0, 12)} (${where}; seed ${RUNS.seed[r]})`;
    if (!data || !data.lines.length) {
      box.replaceChildren(el("p", {}, `${title}: this run recorded no time series.`));
      return;
    }
    const kinds = Object.keys(DATA.seriesLabels).filter((k) => data.lines.some((l) => l.kind === k));
    const traces = data.lines.map((l) => {
      const row = kinds.indexOf(l.kind) + 1;
      const scale = DATA.seriesLabels[l.kind].scale;
      return {
        type: "scatter",
        mode: "lines",
        name: l.name,
        x: l.t ?? data.t,
        y: l.v.map((v) => (v === null ? null : v * scale)),
        yaxis: row === 1 ? "y" : `y${row}`,
        legendgroup: l.kind,
        line: { width: 1.3 },
      };
    });
    const layout = {
      title: { text: title, font: { size: 14 } },
      grid: { rows: kinds.length, columns: 1, pattern: "coupled" },
      height: 80 + 200 * kinds.length,
      margin: { t: 50, r: 10, b: 50, l: 70 },
      hovermode: "x unified",
    };
    kinds.forEach((k, n) => {
      layout[n === 0 ? "yaxis" : `yaxis${n + 1}`] = { title: { text: DATA.seriesLabels[k].label }, automargin: true };
    });
    layout.xaxis = { title: { text: "simulated time (s)" } };
    Plotly.react(box, traces, layout, CONFIG);
  }

  // ------------------------------------------------------------ every run

  function runsTable() {
    const metrics = DATA.metrics.map((m) => m.name);
    const names = ["key", "sweep", "point", "seed", "status", ...metrics, "wall s", "error"];
    const status = (r) => RUNS.status[r] + (RUNS.point[r] === null && RUNS.status[r] !== "null" ? " (replaced)" : "");
    const rows = RUNS.key.map((key, r) => ({
      id: r,
      cls: RUNS.status[r] === "failed" ? "failed" : "",
      cells: [key.slice(0, 12), RUNS.sweep[r], RUNS.at[r], RUNS.seed[r], status(r)]
        .concat(metrics.map((m) => fmt(RUNS.values[m][r])))
        .concat([fmt(RUNS.wall[r]), RUNS.error[r] || ""]),
    }));
    return table(names, rows, { "data-table": "all-runs" });
  }

  /**
   * Every run, listed when opened: a table of a thousand rows laid out with the
   * page would make each plot's first drawing wait for its layout.
   */
  function allRuns() {
    const box = el("details", { class: "all-runs" }, el("summary", {}, `All ${plural(RUNS.key.length, "run")}`));
    box.addEventListener("toggle", () => box.open && box.children.length === 1 && box.append(runsTable()));
    return box;
  }

  const views = DATA.sweeps.map((s, i) => new SweepView(s, i));
  const report = document.getElementById("report");
  report.replaceChildren(...views.map((v) => v.render()), allRuns());
  Promise.all(views.filter((v) => v.sw.metrics.length).map((v) => v.draw())).then(() => {
    window.reportReadyAt = performance.now();
    document.body.dataset.ready = "yes";
  });
})();
