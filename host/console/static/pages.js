// The tools, plugins and pins pages.
'use strict';

// Tools: the catalog as one caller sees it, and which policy hid or
// changed each tool.
pages.tools = async (main) => {
  const subject = h('input', {name: 'subject', placeholder: 'anyone', size: 16});
  const groups = h('input', {name: 'groups', placeholder: 'none', size: 24});
  const hidden = h('input', {type: 'checkbox', name: 'hidden', checked: true});
  const list = h('div', {});
  const count = h('span', {class: 'count'});
  const form = h('form', {class: 'filters'},
    h('label', {}, 'Caller subject', subject),
    h('label', {}, 'Groups (comma-separated)', groups),
    h('button', {type: 'submit'}, 'Show'),
    h('label', {class: 'check'}, h('span', {}, hidden, ' show hidden tools')));
  main.append(h('div', {class: 'head'}, h('h1', {}, 'Tools', count)), form, list);
  let tools = [];
  function draw() {
    const shown = tools.filter(t => t.exposed);
    count.textContent = `${shown.length} shown, ${tools.length - shown.length} hidden`;
    const rows = tools.filter(t => t.exposed || hidden.checked).map(toolRow);
    list.replaceChildren(rows.length ? table(['Tool', 'From', 'Policies'], rows)
      : empty('No tools', 'No server offers a tool this caller may see.'));
  }
  async function refresh() {
    const p = new URLSearchParams();
    if (subject.value.trim()) p.set('subject', subject.value.trim());
    for (const g of groups.value.split(',').map(x => x.trim()).filter(x => x)) p.append('group', g);
    tools = (await api('GET', '/v1/tools?' + p)).tools || [];
    draw();
  }
  form.addEventListener('submit', ev => { ev.preventDefault(); load(list, refresh); });
  hidden.addEventListener('change', draw);
  await load(list, refresh);
};

function toolRow(t) {
  const title = t.title || (t.annotations && t.annotations.title);
  return h('tr', {class: t.exposed ? '' : 'hidden-tool', dataset: {tool: t.name}},
    h('td', {},
      h('div', {}, h('span', {class: 'name mono'}, t.name), title && h('span', {class: 'muted'}, ' · ', title)),
      t.description && h('div', {class: 'sub'}, t.description.length > 160 ? t.description.slice(0, 160) + '…' : t.description)),
    h('td', {class: 'mono nowrap'}, t.server, h('span', {class: 'muted'}, ' / '), t.tool),
    h('td', {}, h('div', {class: 'chips'},
      t.hiddenBy && tag('hidden by ' + t.hiddenBy, 't-bad'),
      (t.changedBy || []).map(p => tag('changed by ' + p, 't-info')),
      t.exposed && !(t.changedBy || []).length && h('span', {class: 'muted nowrap'}, 'as sent'))));
}

// Plugins: the chain in order, with each plugin's state and counters.
pages.plugins = async (main) => {
  const list = h('div', {});
  let last = [];
  const reload = h('button', {class: 'primary', dataset: {action: 'reload'}, onclick: ev => act(ev.target, async () => {
    const before = new Map(last.map(p => [p.name, p.load]));
    const r = await api('POST', '/v1/plugins:reload');
    const fresh = r.plugins.filter(p => before.get(p.name) !== p.load).map(p => p.name);
    return fresh.length ? 'Reloaded: ' + fresh.join(', ') : 'Reloaded; no plugin had changed';
  }, refresh)}, 'Reload plugins');
  main.append(h('div', {class: 'head'}, h('h1', {}, 'Plugins'), reload), list);
  async function refresh() {
    last = (await api('GET', '/v1/plugins')).plugins || [];
    list.replaceChildren(last.length === 0 ? empty('No plugins', 'Every tool is served as its server sent it.')
      : table(['#', 'State', 'Plugin', 'Hooks', {text: 'Calls', class: 'num'}, {text: 'From hints', class: 'num'},
        {text: 'Failures', class: 'num'}, {text: 'Crashes', class: 'num'}], last.map(pluginRow)));
  }
  await load(list, refresh);
  every(5000, refresh);
};

function pluginRow(p, i) {
  return h('tr', {dataset: {plugin: p.name}},
    h('td', {class: 'muted'}, String(i + 1)),
    h('td', {}, stateLabel(p.state)),
    h('td', {},
      h('div', {class: 'name'}, p.name),
      h('div', {class: 'sub mono', title: 'sha256 ' + p.sha256}, p.source, p.version ? ' ' + p.version : ''),
      p.lastError && h('div', {class: 'error'}, p.lastError, ' ', ago(p.lastErrorAt)),
      p.retryAt && h('div', {class: 'sub'}, 'calls let through again ', clock(p.retryAt))),
    h('td', {}, h('div', {class: 'chips'}, (p.hooks || []).map(x => tag(x)))),
    h('td', {class: 'num'}, String(p.calls)),
    h('td', {class: 'num'}, String(p.reused)),
    h('td', {class: 'num'}, String(p.failures)),
    h('td', {class: 'num'}, String(p.crashes)));
}

// Pins: tools whose definition changed since it was pinned, hidden until
// an operator approves the change.
pages.pins = async (main) => {
  const list = h('div', {});
  main.append(h('div', {class: 'head'}, h('h1', {}, 'Pins')), list);
  async function refresh() {
    const plugins = (await api('GET', '/v1/pins')).pins || [];
    if (plugins.length === 0) {
      list.replaceChildren(empty('No pins', 'No plugin with source = "builtin:pin" runs, so no tool is pinned.'));
      return;
    }
    list.replaceChildren(...plugins.map(p => pinPlugin(p, refresh)));
  }
  await load(list, refresh);
  every(10000, refresh);
};

function pinPlugin(p, refresh) {
  const entries = Object.entries(p.tools || {}).sort(([a], [b]) => a.localeCompare(b));
  const pending = entries.filter(([, e]) => e.pending);
  const approve = (keys, all) => ev => act(ev.target, async () => {
    const r = await api('POST', '/v1/pins', all ? {all: true} : {keys});
    return r.approved.length ? 'Approved: ' + r.approved.join(', ') : 'Nothing was pending';
  }, refresh);
  return h('section', {dataset: {pinPlugin: p.plugin}},
    h('div', {class: 'head'},
      h('h2', {}, `plugin ${p.plugin} `, h('span', {class: 'muted small mono'}, p.file)),
      pending.length > 1 && h('button', {onclick: approve(null, true)}, 'Approve all')),
    pending.length === 0
      ? h('div', {class: 'card'}, empty('Nothing awaits approval', `${entries.length} tools pinned, none changed.`))
      : table(['Tool', 'Pinned', 'Changed', ''], pending.map(([key, e]) => [
        h('tr', {dataset: {pin: key}},
          h('td', {class: 'name mono'}, key),
          h('td', {}, ago(e.pinnedAt)),
          h('td', {}, ago(e.pending.seenAt)),
          h('td', {class: 'actions'}, h('button', {class: 'small primary', dataset: {action: 'approve'}, onclick: approve([key])}, 'Approve'))),
        h('tr', {class: 'detail'}, h('td', {colspan: 4}, h('details', {open: true},
          h('summary', {}, `What changed: pinned ${e.sha256.slice(0, 12)}, now ${e.pending.sha256.slice(0, 12)}`),
          diffView(JSON.stringify(e.definition, null, 2), JSON.stringify(e.pending.definition, null, 2)))))])),
    pending.length > 0 && h('p', {class: 'muted small'},
      `${entries.length - pending.length} other tools pinned and unchanged. A changed tool is hidden from every caller until approved.`));
}

// diffView shows what b adds to and takes from a, line by line, with a
// few lines of context: a changed description reads at once.
function diffView(a, b) {
  const x = a.split('\n'), y = b.split('\n');
  const n = x.length, m = y.length;
  if (n * m > 4e6) return h('div', {class: 'compare'}, pretty(a), pretty(b));
  // L[i][j]: the longest common subsequence of x[i:] and y[j:].
  const L = Array.from({length: n + 1}, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--) {
    for (let j = m - 1; j >= 0; j--) {
      L[i][j] = x[i] === y[j] ? L[i + 1][j + 1] + 1 : Math.max(L[i + 1][j], L[i][j + 1]);
    }
  }
  const lines = [];
  let i = 0, j = 0;
  while (i < n || j < m) {
    if (i < n && j < m && x[i] === y[j]) { lines.push([' ', x[i]]); i++; j++; }
    else if (j >= m || (i < n && L[i + 1][j] >= L[i][j + 1])) lines.push(['-', x[i++]]);
    else lines.push(['+', y[j++]]);
  }
  const near = lines.map((_, k) => lines.slice(Math.max(0, k - 3), k + 4).some(l => l[0] !== ' '));
  const out = [];
  lines.forEach(([op, text], k) => {
    if (near[k]) out.push(h('span', {class: op === '-' ? 'del' : op === '+' ? 'ins' : ''}, op + ' ' + text + '\n'));
    else if (k === 0 || near[k - 1]) out.push(h('span', {class: 'fold'}, '  …\n'));
  });
  return h('pre', {class: 'diff'}, out);
}
