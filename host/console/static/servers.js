// The servers page: every server with its state, last error and stderr
// tail, and the actions of the admin API: test, reconnect, disconnect,
// add, edit, remove.
'use strict';

pages.servers = async (main) => {
  const list = h('div', {});
  main.append(h('div', {class: 'head'},
    h('h1', {}, 'Servers'),
    h('button', {class: 'primary', dataset: {action: 'add'}, onclick: () => serverForm(null, refresh)}, 'Add server')), list);
  async function refresh() {
    const data = await api('GET', '/v1/servers');
    list.replaceChildren(data.servers.length === 0
      ? empty('No servers', 'Add one here, or in the config file.')
      : table(['State', 'Server', 'Transport', {text: 'Tools', class: 'num'}, 'Since', {text: 'Reconnects', class: 'num'}, ''],
        data.servers.map(s => serverRow(s, refresh))));
  }
  await load(list, refresh);
  every(3000, refresh);
};

// splitError separates the stderr tail the host appends to a stdio
// server's last error.
function splitError(err) {
  if (!err) return ['', ''];
  const i = err.indexOf('; stderr: ');
  return i < 0 ? [err, ''] : [err.slice(0, i), err.slice(i + 10)];
}

function serverRow(s, refresh) {
  const st = s.status || {};
  const state = s.problem ? 'problem' : (st.state || 'unknown');
  const [err, failedStderr] = splitError(st.error);
  const stderr = st.stderr || failedStderr;
  const where = s.url || [s.command].concat(s.args || []).join(' ');
  const run = (label, fn, cls) => h('button', {class: 'small ' + (cls || ''), dataset: {action: label.toLowerCase()},
    onclick: (ev) => act(ev.target, fn, refresh)}, label);
  const stored = s.source === 'store';
  return h('tr', {dataset: {server: s.name, state}},
    h('td', {}, stateLabel(state)),
    h('td', {},
      h('div', {}, h('span', {class: 'name'}, s.name), ' ', tag(s.source, 'src-' + s.source,
        stored ? 'added at run time (version ' + s.version + ')' : 'defined in the config file')),
      h('div', {class: 'sub mono'}, where),
      st.authUrl && h('div', {class: 'sub'}, 'Waiting for a login: ', h('a', {href: st.authUrl, target: '_blank', rel: 'noopener'}, 'authorize')),
      // oauth mode per_user: each caller logs in for themself.
      st.users && h('div', {class: 'sub'}, `Per-user logins: ${st.users.authorized} authorized, ${st.users.authorizing} waiting`),
      s.problem && h('div', {class: 'error'}, s.problem),
      // Only a failure is an error; "disconnected by an operator" is news.
      err && h('div', {class: ['failed', 'unauthorized'].includes(state) ? 'error' : 'sub'}, err),
      stderr && h('details', {}, h('summary', {}, 'stderr'), h('pre', {}, stderr))),
    h('td', {}, s.transport || st.transport),
    h('td', {class: 'num'}, st.state ? st.tools : '–'),
    h('td', {class: 'nowrap'}, ago(st.since)),
    h('td', {class: 'num'}, st.reconnects ?? '–'),
    h('td', {class: 'actions'},
      h('button', {class: 'small', dataset: {action: 'test'}, onclick: () => testDialog(definition(s))}, 'Test'),
      run('Reconnect', async () => {
        const r = await api('POST', `/v1/servers/${encodeURIComponent(s.name)}/reconnect`);
        return `${s.name}: ${r.status ? r.status.state : 'reconnecting'}`;
      }),
      st.state && st.state !== 'disconnected' && run('Disconnect', async () => {
        await api('POST', `/v1/servers/${encodeURIComponent(s.name)}/disconnect`);
        return `${s.name} disconnected; it stays off until you reconnect it`;
      }),
      stored && h('button', {class: 'small', dataset: {action: 'edit'}, onclick: () => serverForm(s, refresh)}, 'Edit'),
      stored && run('Remove', async () => {
        if (!await confirmed(`Remove ${s.name}? Its tools leave the catalog at once.`, 'Remove')) return '';
        await api('DELETE', `/v1/servers/${encodeURIComponent(s.name)}`, undefined, {'If-Match': `"v${s.version}"`});
        return `${s.name} removed`;
      }, 'danger')));
}

// definition is a server as the API takes it: without the fields it adds.
function definition(s) {
  const d = Object.assign({}, s);
  for (const k of ['source', 'version', 'created', 'updated', 'status', 'problem']) delete d[k];
  return d;
}

// The form's fields: JSON name, label, kind, hint, and the transports
// they are for (all when absent).
const serverFields = [
  ['name', 'Name', 'text', 'letters, digits, - and _; its tools are exposed as name__tool'],
  ['transport', 'Transport', ['stdio', 'streamable-http', 'sse']],
  ['command', 'Command', 'text', 'the program to run', 'stdio'],
  ['args', 'Arguments', 'lines', 'one per line; ******** keeps a stored secret arg', 'stdio'],
  ['env', 'Environment', 'pairs', 'NAME=value, one per line; ******** keeps a stored value', 'stdio'],
  ['cwd', 'Directory', 'text', '', 'stdio'],
  ['url', 'URL', 'text', 'the server\'s endpoint', 'http'],
  ['headers', 'Headers', 'pairs', 'Name=value, one per line; ******** keeps a stored value', 'http'],
  ['connect_timeout', 'Connect timeout', 'text', 'such as 30s (the default)'],
  ['timeout', 'Call timeout', 'text'],
];

function fieldValue(kind, v) {
  if (v == null) return '';
  if (kind === 'lines') return v.join('\n');
  if (kind === 'pairs') return Object.entries(v).map(([k, x]) => k + '=' + x).join('\n');
  return v;
}

// readFields turns the form into a definition; empty fields, and those of
// another transport, are null, so that a merge patch removes them.
function readFields(form) {
  const d = {};
  for (const [name, , kind] of serverFields) {
    const raw = form.elements[name].closest('.field').hidden ? '' : form.elements[name].value.trim();
    if (raw === '') d[name] = null;
    else if (kind === 'lines') d[name] = raw.split('\n').map(x => x.trim()).filter(x => x);
    else if (kind === 'pairs') {
      d[name] = {};
      for (const line of raw.split('\n').map(x => x.trim()).filter(x => x)) {
        const i = line.indexOf('=');
        d[name][i < 0 ? line : line.slice(0, i).trim()] = i < 0 ? '' : line.slice(i + 1);
      }
    } else d[name] = raw;
  }
  return d;
}

function compact(d) {
  const out = {};
  for (const [k, v] of Object.entries(d)) if (v != null) out[k] = v;
  return out;
}

// serverForm adds a server (s null) or edits a stored one with a merge
// patch sent with its ETag, so a change made meanwhile is not overwritten.
function serverForm(s, refresh) {
  dialog(close => {
    const status = h('div', {class: 'result'});
    const form = h('form', {method: 'dialog', novalidate: true},
      h('h2', {}, s ? 'Edit ' + s.name : 'Add a server'),
      h('div', {class: 'fields'}, serverFields.map(([name, label, kind, hint, only]) => {
        const id = 'f-' + name;
        const v = s ? fieldValue(kind, s[name]) : (name === 'transport' ? 'stdio' : '');
        const input = Array.isArray(kind)
          ? h('select', {id, name}, (kind.includes(v) || !v ? kind : kind.concat(v)).map(o => h('option', {value: o, selected: o === v}, o)))
          : kind === 'lines' || kind === 'pairs'
            ? h('textarea', {id, name, rows: 2, spellcheck: 'false', value: v})
            : h('input', {id, name, type: 'text', spellcheck: 'false', value: v, readonly: s && name === 'name'});
        return h('div', {class: 'field', dataset: {only: only || ''}}, h('label', {for: id}, label), input,
          hint && h('div', {class: 'hint'}, hint), h('div', {class: 'field-error', dataset: {field: name}}));
      })),
      status,
      h('div', {class: 'buttons'},
        h('button', {type: 'button', dataset: {action: 'test-form'}, onclick: () => testInto(status, compact(readFields(form)))}, 'Test'),
        h('span', {class: 'spacer'}),
        h('button', {type: 'button', onclick: close}, 'Cancel'),
        h('button', {type: 'submit', class: 'primary', dataset: {action: 'save'}}, s ? 'Save' : 'Add')));
    // Show the fields of the chosen transport only.
    const transport = form.elements.transport;
    const showFields = () => {
      const kind = transport.value === 'stdio' ? 'stdio' : 'http';
      for (const f of form.querySelectorAll('.field')) f.hidden = f.dataset.only !== '' && f.dataset.only !== kind;
    };
    transport.addEventListener('change', showFields);
    showFields();
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
      const d = readFields(form);
      const button = form.querySelector('[type=submit]');
      button.disabled = true;
      status.replaceChildren(h('span', {class: 'muted'}, s ? 'Saving…' : 'Adding and connecting…'));
      try {
        let r;
        if (s) {
          delete d.name;
          // A merge patch merges objects: a variable or header taken out
          // of the form must be sent as null to be removed.
          for (const [name, , kind] of serverFields) {
            if (kind !== 'pairs' || !d[name] || !s[name]) continue;
            for (const k of Object.keys(s[name])) if (!(k in d[name])) d[name][k] = null;
          }
          r = await api('PATCH', `/v1/servers/${encodeURIComponent(s.name)}`, d,
            {'Content-Type': 'application/merge-patch+json', 'If-Match': `"v${s.version}"`});
        } else {
          r = await api('POST', '/v1/servers', compact(d));
        }
        close();
        flash(`${r.name}: ${r.status ? r.status.state : 'saved'}`);
        await refresh();
      } catch (e) {
        // Every field error the API found, each beside its field (a nested
        // one, headers.X, beside its top field), the rest listed below.
        const filled = new Set(), unplaced = [];
        for (const fe of (e.problem.errors || [])) {
          const field = fe.field || '';
          const top = field.split('.')[0];
          const slot = form.querySelector(`.field-error[data-field="${CSS.escape(field)}"]`) ||
            form.querySelector(`.field-error[data-field="${CSS.escape(top)}"]`);
          const text = (field !== top ? field + ': ' : '') + fe.detail;
          if (!slot) {
            unplaced.push((field ? field + ': ' : '') + fe.detail);
          } else if (filled.has(slot)) {
            slot.textContent += ' ' + text;
          } else {
            filled.add(slot);
            slot.textContent = text;
          }
        }
        status.replaceChildren(h('div', {class: 'error', role: 'alert'}, e.message,
          unplaced.length > 0 && h('ul', {}, unplaced.map(t => h('li', {}, t)))));
      } finally {
        button.disabled = false;
      }
    });
    return form;
  });
}

function testDialog(def) {
  dialog(close => {
    const out = h('div', {class: 'result'});
    testInto(out, def);
    return h('div', {class: 'body'}, h('h2', {}, 'Test ' + def.name), out,
      h('div', {class: 'buttons'}, h('button', {type: 'button', onclick: close}, 'Close')));
  });
}

// testInto connects to a definition without adding it and shows what the
// server offers, or where and why it failed.
async function testInto(out, def) {
  out.replaceChildren(h('span', {class: 'muted'}, 'Connecting…'));
  try {
    const r = await api('POST', '/v1/servers:test', def);
    const t = r.timing || {};
    const info = r.serverInfo || {};
    out.replaceChildren(h('div', {dataset: {test: r.ok ? 'ok' : 'failed'}},
      h('p', {}, r.ok ? tag('connected', 't-ok') : tag('failed at ' + r.stage, 't-bad'),
        ' ', h('span', {class: 'muted'}, `in ${Math.round(t.totalMs || 0)} ms`)),
      r.ok && h('dl', {class: 'kv'},
        h('dt', {}, 'Server'), h('dd', {}, `${info.name || '?'} ${info.version || ''}`),
        h('dt', {}, 'Protocol'), h('dd', {}, r.protocolVersion),
        h('dt', {}, 'Tools'), h('dd', {}, (r.tools || []).map(x => x.name).join(', ') || 'none'),
        h('dt', {}, 'Prompts'), h('dd', {}, String((r.prompts || []).length)),
        h('dt', {}, 'Resources'), h('dd', {}, String((r.resources || []).length))),
      r.error && h('div', {class: 'error'}, r.error),
      r.stderr && h('details', {open: true}, h('summary', {}, 'stderr'), h('pre', {}, r.stderr))));
  } catch (e) {
    out.replaceChildren(h('div', {class: 'error', role: 'alert', dataset: {test: 'refused'}}, e.message));
  }
}
