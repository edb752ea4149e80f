// The report page's script: fetches the figures with the operator token, draws them as text nodes and SVG, and asks
// the analysis agent. Browser code, kept to what every current browser runs. Every value from the data becomes a text
// node or an attribute set through the DOM, never markup, so no reason or tool name can inject HTML into the page.
'use strict';
(function () {
  const KEY = 'melvin-report-token';
  const SVG_NS = 'http://www.w3.org/2000/svg';
  const OUTCOMES = ['resolved', 'other_replies', 'escalated', 'failed'];
  const LABELS = { resolved: 'resolved', other_replies: 'other replies', escalated: 'escalated', failed: 'failed' };
  const COLOURS = { resolved: '#2e7d32', other_replies: '#8fb4cc', escalated: '#ef8a17', failed: '#c62828' };
  const byId = (id) => document.getElementById(id);
  const dataUrl = location.pathname.replace(/\/+$/, '') + '/data';

  // The token comes in the URL fragment, which the browser never sends to a server; it moves to this tab's storage
  // and out of the address bar at once.
  const fragment = new URLSearchParams(location.hash.slice(1));
  if (fragment.get('token')) {
    sessionStorage.setItem(KEY, fragment.get('token'));
    history.replaceState(null, '', location.pathname + location.search);
  }

  const since = byId('since');
  const asked = new URLSearchParams(location.search).get('since');
  if (asked) {
    if (![...since.options].some((o) => o.value === asked)) since.append(new Option('last ' + asked, asked));
    since.value = asked;
  }

  function el(tag, attrs, children) {
    const node = document.createElement(tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    for (const child of children || []) node.append(child);
    return node;
  }

  function svg(tag, attrs, text) {
    const node = document.createElementNS(SVG_NS, tag);
    for (const [name, value] of Object.entries(attrs || {})) node.setAttribute(name, String(value));
    if (text !== undefined) node.textContent = String(text);
    return node;
  }

  const whole = (n) => Number(n).toLocaleString('en-US');
  const percent = (rate) => (rate === null ? '—' : (rate * 100).toFixed(1) + '%');
  const seconds = (ms) => (ms === null ? '—' : (ms / 1000).toFixed(1) + ' s');
  const minute = (iso) => iso.slice(0, 16).replace('T', ' ') + ' UTC';

  function message(text, isError) {
    const node = byId('message');
    node.textContent = text;
    node.hidden = !text;
    node.className = isError ? 'error' : '';
  }

  /** A table of rows; columns of counts and rates are aligned to the right, their headings too. */
  function fillTable(id, head, rows) {
    const numeric = head.map((_, i) => rows.some((row) => typeof row[i] === 'number' || /^([\d.]+%|—)$/.test(row[i])));
    const cell = (tag, value, i) =>
      el(tag, numeric[i] ? { class: 'num' } : {}, [typeof value === 'number' ? whole(value) : value]);
    const body = rows.length
      ? rows.map((row) =>
          el(
            'tr',
            {},
            row.map((value, i) => cell('td', value, i)),
          ),
        )
      : [el('tr', {}, [el('td', { class: 'empty', colspan: head.length }, ['none'])])];
    byId(id).replaceChildren(
      el('thead', {}, [
        el(
          'tr',
          {},
          head.map((h, i) => cell('th', h, i)),
        ),
      ]),
      el('tbody', {}, body),
    );
  }

  /** A round step for the y axis, so its labels read 0, 5, 10 rather than 0, 3.7, 7.4. */
  function niceStep(max) {
    const rough = max / 5;
    const power = Math.pow(10, Math.floor(Math.log10(rough)));
    const step = [1, 2, 5, 10].map((m) => m * power).find((s) => s >= rough);
    return Math.max(1, step);
  }

  /** Turns per day, stacked by outcome, with axes, their labels and a legend. */
  function chart(days) {
    const width = 760;
    const height = 300;
    const left = 52;
    const right = 12;
    const top = 40;
    const bottom = 52;
    const plotWidth = width - left - right;
    const plotHeight = height - top - bottom;
    const busiest = Math.max(1, ...days.map((d) => d.turns));
    const step = niceStep(busiest);
    const yMax = Math.ceil(busiest / step) * step;
    const yOf = (value) => top + plotHeight - (value / yMax) * plotHeight;
    const root = svg('svg', {
      id: 'turns-chart',
      viewBox: '0 0 ' + width + ' ' + height,
      role: 'img',
      'aria-labelledby': 'turns-chart-title',
    });
    root.append(svg('title', { id: 'turns-chart-title' }, 'Turns per day (UTC), by outcome'));
    for (let value = 0; value <= yMax; value += step) {
      root.append(svg('line', { class: 'grid-line', x1: left, x2: width - right, y1: yOf(value), y2: yOf(value) }));
      root.append(svg('text', { x: left - 6, y: yOf(value) + 4, 'text-anchor': 'end' }, value));
    }
    const slot = plotWidth / days.length;
    const barWidth = Math.max(2, Math.min(36, slot * 0.7));
    const labelEvery = Math.ceil(days.length / 12);
    days.forEach((day, index) => {
      const x = left + index * slot + (slot - barWidth) / 2;
      let base = 0;
      for (const outcome of OUTCOMES) {
        if (!day[outcome]) continue;
        const bar = svg('rect', {
          class: 'bar ' + outcome,
          'data-date': day.date,
          x: x,
          y: yOf(base + day[outcome]),
          width: barWidth,
          height: yOf(base) - yOf(base + day[outcome]),
          fill: COLOURS[outcome],
        });
        bar.append(svg('title', {}, day.date + ': ' + day[outcome] + ' ' + LABELS[outcome]));
        root.append(bar);
        base += day[outcome];
      }
      if (index % labelEvery === 0) {
        root.append(
          svg('text', { x: x + barWidth / 2, y: top + plotHeight + 16, 'text-anchor': 'middle' }, day.date.slice(5)),
        );
      }
    });
    root.append(
      svg('line', { class: 'axis', x1: left, x2: width - right, y1: top + plotHeight, y2: top + plotHeight }),
    );
    root.append(svg('line', { class: 'axis', x1: left, x2: left, y1: top, y2: top + plotHeight }));
    root.append(
      svg('text', { x: left + plotWidth / 2, y: height - 10, 'text-anchor': 'middle' }, 'day (UTC, month-day)'),
    );
    root.append(
      svg(
        'text',
        {
          x: 14,
          y: top + plotHeight / 2,
          'text-anchor': 'middle',
          transform: 'rotate(-90 14 ' + (top + plotHeight / 2) + ')',
        },
        'turns',
      ),
    );
    let legendX = left;
    for (const outcome of OUTCOMES) {
      const item = svg('g', { class: 'legend-item' });
      item.append(svg('rect', { x: legendX, y: 12, width: 12, height: 12, fill: COLOURS[outcome] }));
      item.append(svg('text', { x: legendX + 17, y: 22 }, LABELS[outcome]));
      root.append(item);
      legendX += 30 + LABELS[outcome].length * 7;
    }
    return root;
  }

  function tile(id, value, note) {
    byId(id).textContent = value;
    byId(id + '-note').textContent = note;
  }

  function render(report) {
    tile('turns', whole(report.turns), 'and ' + whole(report.skipped) + ' skipped (Melvin sent nothing)');
    tile('resolution-rate', percent(report.resolution_rate), whole(report.resolved) + ' resolved');
    tile('escalation-rate', percent(report.escalation_rate), whole(report.escalated) + ' handed to the team');
    tile('turn-time', seconds(report.turn_ms.p50), 'p50 · p95 ' + seconds(report.turn_ms.p95));
    tile(
      'tokens',
      report.tokens.per_turn === null ? '—' : whole(report.tokens.per_turn),
      'per turn · ' + whole(report.tokens.total) + ' in all',
    );
    byId('chart').replaceChildren(chart(report.days));
    fillTable(
      'by-source',
      ['source', 'turns', 'of turns'],
      report.escalations.by_source.map((s) => [s.source, s.turns, percent(s.rate)]),
    );
    fillTable(
      'by-reason',
      ['kind', 'turns', 'recent reasons'],
      report.escalations.by_reason.map((r) => [r.kind, r.turns, r.examples.join('\n')]),
    );
    byId('by-reason')
      .querySelectorAll('tbody td:nth-child(3)')
      .forEach((td) => td.classList.add('examples'));
    fillTable(
      'statuses',
      ['Melvin Status', 'turns'],
      report.statuses.map((s) => [s.status, s.turns]),
    );
    fillTable(
      'approvals',
      ['outcome', 'turns'],
      report.approvals.map((a) => [a.outcome, a.turns]),
    );
    fillTable(
      'hops',
      ['hops', 'turns'],
      report.hops.map((h) => [String(h.hops), h.turns]),
    );
    fillTable(
      'tools',
      ['tool', 'calls', 'failed', 'failure rate'],
      report.tools.slice(0, 15).map((t) => [t.name, t.calls, t.failures, percent(t.failure_rate)]),
    );
    fillTable(
      'days',
      ['date (UTC)', 'turns', 'resolved', 'other replies', 'escalated', 'failed'],
      report.days.map((d) => [d.date, d.turns, d.resolved, d.other_replies, d.escalated, d.failed]),
    );
    renderPatterns(report.patterns);
    const runs = report.runs;
    byId('runs-note').replaceChildren(
      'Turns that ended from ' +
        minute(report.window.since) +
        ' to ' +
        minute(report.window.until) +
        ' (last ' +
        report.window.label +
        '). Read ' +
        whole(runs.listed) +
        ' runs from Temporal visibility; ' +
        whole(runs.without_summary) +
        ' without a summary (older code, or a turn still going), ' +
        whole(runs.unreadable) +
        ' unreadable. ',
      ...(runs.truncated
        ? [el('strong', { class: 'warning' }, ['The listing stopped at its limit: figures cover only the runs read.'])]
        : []),
    );
    byId('report').hidden = false;
  }

  /** A link to a run in the Temporal UI, only for http(s) URLs; the run id as text otherwise. */
  function runLink(example) {
    const text = 'conversation ' + example.conversation_id;
    if (!example.url || !(example.url.startsWith('http://') || example.url.startsWith('https://')))
      return el('span', {}, [text]);
    return el(
      'a',
      { href: example.url, target: '_blank', rel: 'noopener noreferrer', title: 'run ' + example.run_id },
      [text],
    );
  }

  /** A table whose last column holds links to example runs. */
  function fillExamplesTable(id, head, rows, examplesOf) {
    fillTable(
      id,
      head,
      rows.map((row) => [...row, '']),
    );
    const cells = byId(id).querySelectorAll('tbody tr');
    rows.forEach((_, i) => {
      const td = cells[i] && cells[i].lastElementChild;
      if (!td) return;
      const links = examplesOf(i).map(runLink);
      td.replaceChildren(...links.flatMap((link, k) => (k ? [' · ', link] : [link])));
      td.classList.add('examples');
    });
  }

  const CAUSE_TITLES = { kind: 'kind', source: 'step', intent: 'intents handed over', stage: 'stage', tool: 'tool' };

  function renderCauses(patterns) {
    const by = byId('cause-by').value;
    const rows = patterns.causes[by] || [];
    fillExamplesTable(
      'causes',
      [CAUSE_TITLES[by], 'turns', 'of escalated', 'example runs'],
      rows.map((c) => [c.cause, c.turns, percent(c.share)]),
      (i) => rows[i].examples,
    );
  }

  /** A flow graph in columns: each node one column right of its furthest predecessor, back edges arched below. */
  function flowSvg(graph, title) {
    const index = new Map(graph.nodes.map((n, i) => [n.id, i]));
    const column = new Map(graph.nodes.map((n) => [n.id, 0]));
    for (let pass = 0; pass < graph.nodes.length; pass++) {
      for (const e of graph.edges) {
        if (index.get(e.from) < index.get(e.to)) column.set(e.to, Math.max(column.get(e.to), column.get(e.from) + 1));
      }
    }
    const rows = new Map();
    const position = new Map();
    for (const n of graph.nodes) {
      const c = column.get(n.id);
      const r = rows.get(c) || 0;
      rows.set(c, r + 1);
      position.set(n.id, { c: c, r: r });
    }
    const boxW = 118,
      boxH = 30,
      gapX = 44,
      gapY = 22,
      pad = 16;
    const maxRows = Math.max(1, ...rows.values());
    const columns = Math.max(1, ...[...column.values()].map((c) => c + 1));
    const width = pad * 2 + columns * boxW + (columns - 1) * gapX;
    const height = pad * 2 + maxRows * boxH + (maxRows - 1) * gapY + 40;
    const xy = (id) => {
      const p = position.get(id);
      return { x: pad + p.c * (boxW + gapX), y: pad + p.r * (boxH + gapY) };
    };
    const root = svg('svg', {
      viewBox: '0 0 ' + width + ' ' + height,
      role: 'img',
      'aria-label': title,
      class: 'flow-svg',
    });
    // A small graph is not blown up to the page's width (CSSOM styles are allowed by the page's policy; markup's are not).
    root.style.maxWidth = Math.round(width * 1.4) + 'px';
    root.append(svg('title', {}, title));
    for (const e of graph.edges) {
      const a = xy(e.from),
        b = xy(e.to);
      const forward = index.get(e.from) < index.get(e.to) && a.x < b.x;
      let d, lx, ly;
      if (forward) {
        const x1 = a.x + boxW,
          y1 = a.y + boxH / 2,
          x2 = b.x,
          y2 = b.y + boxH / 2;
        d =
          'M' +
          x1 +
          ' ' +
          y1 +
          ' C' +
          (x1 + gapX / 2) +
          ' ' +
          y1 +
          ' ' +
          (x2 - gapX / 2) +
          ' ' +
          y2 +
          ' ' +
          x2 +
          ' ' +
          y2;
        lx = (x1 + x2) / 2;
        ly = (y1 + y2) / 2 - 3;
      } else {
        const x1 = a.x + boxW / 2,
          y1 = a.y + boxH,
          x2 = b.x + boxW / 2,
          y2 = b.y + boxH;
        const depth = Math.max(y1, y2) + 26;
        d = 'M' + x1 + ' ' + y1 + ' C' + x1 + ' ' + depth + ' ' + x2 + ' ' + depth + ' ' + x2 + ' ' + y2;
        lx = (x1 + x2) / 2;
        ly = depth - 4;
      }
      const path = svg('path', {
        class: 'edge',
        d: d,
        'marker-end': 'url(#arrow)',
        'stroke-width': 1 + Math.min(4, Math.log2(e.turns + 1)),
      });
      path.append(svg('title', {}, e.from + ' → ' + e.to + ': ' + e.turns + ' turns'));
      root.append(path);
      root.append(
        svg(
          'text',
          { class: 'edge-label', x: lx, y: ly, 'text-anchor': 'middle', 'data-edge': e.from + '>' + e.to },
          e.turns,
        ),
      );
    }
    const defs = svg('defs');
    const marker = svg('marker', {
      id: 'arrow',
      viewBox: '0 0 10 10',
      refX: 9,
      refY: 5,
      markerUnits: 'userSpaceOnUse',
      markerWidth: 8,
      markerHeight: 8,
      orient: 'auto-start-reverse',
    });
    marker.append(svg('path', { d: 'M0 0 L10 5 L0 10 z', fill: '#8a949e' }));
    defs.append(marker);
    root.prepend(defs);
    for (const n of graph.nodes) {
      const p = xy(n.id);
      const g = svg('g', { class: 'node ' + n.kind, 'data-node': n.id });
      g.append(svg('rect', { x: p.x, y: p.y, width: boxW, height: boxH, rx: n.kind === 'outcome' ? 15 : 4 }));
      const label = n.label.length > 18 ? n.label.slice(0, 17) + '…' : n.label;
      g.append(svg('text', { x: p.x + boxW / 2, y: p.y + boxH / 2 + 4, 'text-anchor': 'middle' }, label));
      g.append(svg('title', {}, n.label));
      root.append(g);
    }
    return root;
  }

  function renderFlow(id, graph) {
    const box = byId(id);
    box.querySelector('h2').textContent = graph.title;
    box
      .querySelector('.diagram')
      .replaceChildren(
        graph.edges.length
          ? flowSvg(graph, graph.title)
          : el('p', { class: 'empty' }, ['no turns with a path in the window']),
      );
    box.querySelector('pre').textContent = graph.mermaid;
  }

  let patterns = null;
  function renderPatterns(p) {
    patterns = p;
    renderCauses(p);
    byId('intents-note').textContent =
      'Intent names recorded in ' +
      whole(p.turns_with_intent_names) +
      ' of ' +
      whole(p.turns) +
      ' turns (older runs only counted them).';
    fillTable(
      'intents',
      ['intent', 'turns', 'answered', 'handed over', 'not answered', 'success'],
      p.intents
        .slice(0, 20)
        .map((i) => [i.intent, i.turns, i.answered, i.handed_over, i.not_answered, percent(i.success_rate)]),
    );
    fillExamplesTable(
      'uncovered',
      ['question (intent)', 'handed over', 'asked', 'example runs'],
      p.uncovered.slice(0, 20).map((u) => [u.intent, u.handed_over, u.asked]),
      (i) => p.uncovered[i].examples,
    );
    renderFlow('flow-paths', p.flows.resolution_paths);
    renderFlow('flow-escalations', p.flows.escalation_flows);
  }

  async function ask(question) {
    const token = sessionStorage.getItem(KEY);
    if (!token) return askForToken('');
    const answer = byId('ask-answer');
    answer.className = '';
    answer.textContent = 'Asking the analysis agent…';
    byId('ask-figures').replaceChildren();
    let response;
    try {
      response = await fetch(dataUrl.replace(/data$/, 'ask'), {
        method: 'POST',
        headers: { Authorization: 'Bearer ' + token, 'Content-Type': 'application/json' },
        body: JSON.stringify({ question: question, since: since.value }),
        cache: 'no-store',
      });
    } catch (err) {
      answer.className = 'error';
      answer.textContent = 'The ingress could not be reached: ' + err.message;
      return;
    }
    const body = await response.json().catch(() => ({}));
    if (!response.ok) {
      const issues = (body.issues || []).map((i) => i.path + ': ' + i.message).join('; ');
      answer.className = 'error';
      answer.textContent = (body.error || 'HTTP ' + response.status) + (issues ? ' — ' + issues : '');
      return;
    }
    answer.textContent = body.answer;
    byId('ask-figures').replaceChildren(
      el('h3', {}, [
        body.figures.length ? 'Figures the answer used' : 'No figures: the answer is not drawn from the run records',
      ]),
      ...body.figures.map((f) =>
        el('details', { class: 'figure', open: '' }, [
          el('summary', {}, [f.tool + '(' + JSON.stringify(f.arguments) + ')']),
          el('pre', {}, [JSON.stringify(f.result, null, 2)]),
        ]),
      ),
    );
  }

  function askForToken(text) {
    byId('report').hidden = true;
    byId('token-form').hidden = false;
    message(text, !!text);
    byId('token').focus();
  }

  async function load() {
    const token = sessionStorage.getItem(KEY);
    if (!token) return askForToken('');
    message('Loading…');
    let response;
    try {
      response = await fetch(dataUrl + '?since=' + encodeURIComponent(since.value), {
        headers: { Authorization: 'Bearer ' + token },
        cache: 'no-store',
      });
    } catch (err) {
      return message('The ingress could not be reached: ' + err.message, true);
    }
    const body = await response.json().catch(() => ({}));
    if (response.status === 401) {
      sessionStorage.removeItem(KEY);
      return askForToken('That token was refused. Enter the operator token (ADMIN_API_TOKEN).');
    }
    if (!response.ok) {
      const issues = (body.issues || []).map((i) => i.path + ': ' + i.message).join('; ');
      return message((body.error || 'HTTP ' + response.status) + (issues ? ' — ' + issues : ''), true);
    }
    render(body);
    message('');
  }

  byId('token-form').addEventListener('submit', (event) => {
    event.preventDefault();
    sessionStorage.setItem(KEY, byId('token').value);
    byId('token').value = '';
    byId('token-form').hidden = true;
    void load();
  });
  byId('cause-by').addEventListener('change', () => patterns && renderCauses(patterns));
  byId('ask-form').addEventListener('submit', (event) => {
    event.preventDefault();
    void ask(byId('ask-question').value);
  });
  since.addEventListener('change', () => {
    const url = new URL(location.href);
    url.searchParams.set('since', since.value);
    history.replaceState(null, '', url.pathname + url.search);
    void load();
  });
  void load();
})();
