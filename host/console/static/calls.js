// The calls page: recent tools/call requests from the audit log
// (GET /v1/audit), each with every plugin's decision, filterable; and, when
// the audit block records them, the changes policies made to listings.
// Without an audit log the API answers 409 (404 before it had one), and
// the page says so.
'use strict';

const outcomes = ['ok', 'tool_error', 'upstream_error', 'timeout', 'denied', 'answered', 'unknown_tool', 'invalid', 'quota'];

pages.calls = async (main) => {
  const f = {
    server: h('select', {name: 'server'}, h('option', {value: ''}, 'any')),
    tool: h('input', {name: 'tool', placeholder: 'any', size: 14}),
    subject: h('input', {name: 'subject', placeholder: 'anyone', size: 14}),
    outcome: h('select', {name: 'outcome'}, h('option', {value: ''}, 'any'), outcomes.map(o => h('option', {value: o}, o))),
    kind: h('select', {name: 'kind'}, h('option', {value: 'call'}, 'calls'), h('option', {value: 'listing'}, 'listings'),
      h('option', {value: ''}, 'both')),
  };
  const form = h('form', {class: 'filters'},
    h('label', {}, 'Server', f.server), h('label', {}, 'Tool', f.tool),
    h('label', {}, 'Caller', f.subject), h('label', {}, 'Outcome', f.outcome), h('label', {}, 'Kind', f.kind),
    h('button', {type: 'submit'}, 'Filter'));
  const list = h('div', {});
  const more = h('div', {class: 'buttons'});
  main.append(h('div', {class: 'head'}, h('h1', {}, 'Calls')), form, list, more);
  api('GET', '/v1/servers').then(d => f.server.append(...d.servers.map(s => h('option', {value: s.name}, s.name)))).catch(() => {});

  let rows = [];
  let cursor = ''; // the next page's, if any
  let paged = false; // older calls shown: the refresh would drop them
  let open = new Set();
  function query(before) {
    const p = new URLSearchParams({limit: '50'});
    for (const k of ['server', 'tool', 'subject', 'outcome', 'kind']) if (f[k].value.trim()) p.set(k, f[k].value.trim());
    if (before) p.set('before', before);
    return api('GET', '/v1/audit?' + p);
  }
  function draw() {
    list.replaceChildren(rows.length === 0 ? h('div', {class: 'card'}, empty('No calls', 'No tools/call matches these filters yet.'))
      : table(['Time', 'Caller', 'Tool', 'Outcome', 'Decisions', {text: 'Time taken', class: 'num'}],
        rows.flatMap(e => callRows(e, open))));
    more.replaceChildren(cursor ? h('button', {onclick: ev => act(ev.target, async () => {
      const r = await query(cursor);
      rows = rows.concat(r.entries || []);
      cursor = r.next;
      paged = true;
      draw();
    })}, 'Older calls') : '');
  }
  async function refresh() {
    try {
      const r = await query();
      rows = r.entries || [];
      cursor = r.next;
      paged = false;
      draw();
    } catch (e) {
      if (e.status !== 404 && e.status !== 409) throw e;
      clearInterval(timer);
      list.replaceChildren(h('div', {class: 'card', dataset: {audit: 'off'}}, empty('Audit log not enabled',
        e.status === 409 ? e.message : 'This mcphost has no audit log to show calls from.')));
      form.remove();
    }
  }
  list.addEventListener('click', ev => {
    const tr = ev.target.closest('tr.clickable');
    if (!tr || ev.target.closest('a, button, details')) return;
    const id = tr.dataset.call;
    if (open.has(id)) open.delete(id); else open.add(id);
    draw();
  });
  form.addEventListener('submit', ev => { ev.preventDefault(); open = new Set(); load(list, refresh); });
  await load(list, refresh);
  // Only the newest page refreshes, so reading older calls is not undone.
  every(5000, async () => { if (!paged) await refresh(); });
};

const verbs = {allow: 'allowed', deny: 'denied', rewrite: 'rewrote', respond: 'answered', changed: 'changed',
  unchanged: 'left as is', skipped: 'skipped'};

function decisionChip(d) {
  if (d.tools) return tag(`${d.plugin} hid ${d.tools.length === 1 ? d.tools[0] : d.tools.length + ' tools'}`, 'a-deny', d.tools.join(', '));
  const text = `${d.plugin} ${verbs[d.action] || d.action}`;
  const why = [d.hook, d.reason, d.paths && d.paths.join(', '), d.error].filter(x => x).join(' · ');
  return tag(text, 'a-' + d.action, why);
}

function callRows(e, open) {
  const c = e.caller || {};
  const ds = e.decisions || [];
  // The decisions that matter first: a denial and its reason read at a glance.
  const deciding = ds.find(d => d.action === 'deny' || d.action === 'respond');
  const isOpen = open.has(e.id);
  const row = h('tr', {class: 'clickable' + (isOpen ? ' open' : ''), dataset: {call: e.id, outcome: e.outcome}},
    h('td', {}, clock(e.time)),
    h('td', {}, c.subject || h('span', {class: 'muted'}, 'anonymous'),
      c.client && h('div', {class: 'sub'}, c.client)),
    h('td', {}, h('div', {class: 'name mono'}, e.kind === 'listing' ? 'tools/list' : e.name),
      e.server && h('div', {class: 'sub mono'}, e.server + ' / ' + e.tool)),
    h('td', {}, tag(e.outcome, 'o-' + e.outcome)),
    h('td', {},
      h('div', {class: 'chips'}, ds.filter(d => d.action !== 'unchanged').map(decisionChip)),
      deciding && deciding.reason && h('div', {class: 'sub'}, deciding.reason),
      e.quota && h('div', {class: 'sub'}, 'refused by quota ' + e.quota)),
    h('td', {class: 'num'}, ms(e.durationMs)));
  if (!isOpen) return [row];
  return [row, h('tr', {class: 'detail'}, h('td', {colspan: 6}, callDetail(e)))];
}

function callDetail(e) {
  const c = e.caller || {};
  return h('div', {},
    h('dl', {class: 'kv'},
      h('dt', {}, 'Caller'), h('dd', {}, [c.subject || 'anonymous', c.groups && c.groups.length ? ' in ' + c.groups.join(', ') : '',
        c.method ? ` (${c.method})` : ''].join('')),
      c.session && [h('dt', {}, 'Session'), h('dd', {class: 'mono'}, c.session)],
      h('dt', {}, 'Time'), h('dd', {}, `${ms(e.durationMs)} in all: ${ms(e.upstreamMs)} upstream, ${ms(e.policyMs)} in policies`),
      h('dt', {}, 'Sizes'), h('dd', {}, `${e.requestBytes || 0} bytes in, ${e.responseBytes || 0} bytes out`)),
    h('h2', {}, 'Decisions, in chain order'),
    (e.decisions || []).length === 0 ? h('p', {class: 'muted'}, 'No policy saw this call.')
      : h('table', {}, h('tbody', {}, e.decisions.map(d => h('tr', {},
        h('td', {class: 'mono'}, d.hook), h('td', {class: 'name'}, d.plugin), h('td', {}, tag(verbs[d.action] || d.action, 'a-' + d.action)),
        h('td', {}, d.reason || '', d.paths && h('div', {class: 'sub mono'}, d.paths.join(', ')),
          d.error && h('div', {class: 'error'}, d.error)))))),
    e.arguments !== undefined && [h('h2', {}, 'Arguments'), pretty(e.arguments)],
    e.result !== undefined && [h('h2', {}, 'Result'), pretty(e.result)]);
}

function ms(v) {
  if (v == null) return '–';
  return v < 10 ? v.toFixed(1) + ' ms' : v < 1000 ? Math.round(v) + ' ms' : (v / 1000).toFixed(2) + ' s';
}
