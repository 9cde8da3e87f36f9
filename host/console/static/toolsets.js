// The toolsets page: each toolset's endpoint, what it takes and what its
// tools cost in tokens, with the actions of /v1/toolsets for the stored
// ones (add, edit, remove); then every server's catalog in bytes and
// tokens, before policies and after them (GET /v1/tools:stats).
'use strict';

pages.toolsets = async (main) => {
  const list = h('div', {});
  const sizes = h('div', {});
  main.append(h('div', {class: 'head'},
    h('h1', {}, 'Toolsets'),
    h('button', {class: 'primary', dataset: {action: 'add-toolset'}, onclick: () => toolsetForm(null, refresh)}, 'Add toolset')),
    list, h('div', {class: 'head'}, h('h2', {}, 'Catalog size')), sizes);
  async function refresh() {
    const [data, stats] = await Promise.all([api('GET', '/v1/toolsets'), api('GET', '/v1/tools:stats')]);
    const size = new Map((stats.toolsets || []).map(r => [r.name, r]));
    list.replaceChildren(data.toolsets.length === 0
      ? empty('No toolsets', 'Add one here, or a toolset block to the config file: each is served at /mcp/NAME.')
      : table(['Toolset', 'Takes', 'Exposure', {text: 'Tools', class: 'num'}, {text: 'Tokens', class: 'num'}, ''],
        data.toolsets.map(t => toolsetRow(t, size.get(t.name), refresh))));
    sizes.replaceChildren(table(['Server', {text: 'Tools', class: 'num'}, {text: 'Bytes', class: 'num'}, {text: 'Tokens', class: 'num'},
      {text: 'After policies', class: 'num'}, {text: 'Saved', class: 'num'}], [...stats.servers, stats.total].map(sizeRow)),
    h('p', {class: 'muted small'}, `Tokens of ${stats.encoding}, counted on each tool's MCP definition. `,
      'Toolsets and "after policies" are as a caller without identity sees them; mcphost tools --stats and GET /v1/tools:stats take a caller.'));
  }
  await load(list, refresh);
  every(10000, refresh);
};

function toolsetPath(name) {
  return '/v1/toolsets/' + encodeURIComponent(name);
}

// tokensOf says a row's tokens after policies, and before when they differ.
function tokensOf(r) {
  if (!r) return '–';
  const after = r.after.tokens.toLocaleString();
  return r.before.tokens === r.after.tokens ? after : `${after} (of ${r.before.tokens.toLocaleString()})`;
}

function toolsetRow(t, size, refresh) {
  const stored = t.source === 'store';
  const takes = [
    t.servers && t.servers.length && h('div', {}, h('span', {class: 'muted'}, 'servers '), t.servers.join(', ')),
    t.tools && t.tools.length && h('div', {class: 'mono'}, h('span', {class: 'muted'}, 'tools '), t.tools.join(', ')),
    t.exclude && t.exclude.length && h('div', {class: 'mono'}, h('span', {class: 'muted'}, 'except '), t.exclude.join(', ')),
  ].filter(x => x);
  return h('tr', {dataset: {toolset: t.name}},
    h('td', {},
      h('div', {}, h('span', {class: 'name'}, t.name), ' ', tag(t.source, 'src-' + t.source,
        stored ? 'added at run time' : 'a toolset block of the config file: edit it there')),
      h('div', {class: 'sub mono'}, '/mcp/' + t.name),
      t.description && h('div', {class: 'sub'}, t.description),
      t.problem && h('div', {class: 'error'}, t.problem)),
    h('td', {}, takes.length ? takes : h('span', {class: 'muted'}, 'every tool')),
    h('td', {}, t.exposure || 'list', t.always && t.always.length && h('div', {class: 'sub mono'}, 'always ', t.always.join(', '))),
    h('td', {class: 'num'}, size ? String(size.after.tools) : '–'),
    h('td', {class: 'num', dataset: {tokens: size ? size.after.tokens : ''}}, tokensOf(size)),
    h('td', {class: 'actions'}, stored && [
      h('button', {class: 'small', dataset: {action: 'edit'}, onclick: () => toolsetForm(t, refresh)}, 'Edit'),
      h('button', {class: 'small danger', dataset: {action: 'remove'}, onclick: ev => act(ev.target, async () => {
        if (!await confirmed(`Remove toolset ${t.name}? Its endpoint answers 404 at once.`, 'Remove')) return '';
        await api('DELETE', toolsetPath(t.name));
        return `${t.name} removed`;
      }, refresh)}, 'Remove')]));
}

function sizeRow(r) {
  const saved = r.before.tokens ? Math.round((r.before.tokens - r.after.tokens) * 100 / r.before.tokens) + '%' : '–';
  return h('tr', {class: r.name === 'total' ? 'total' : '', dataset: {server: r.name}},
    h('td', {class: 'name'}, r.name),
    h('td', {class: 'num'}, String(r.before.tools)),
    h('td', {class: 'num'}, r.before.bytes.toLocaleString()),
    h('td', {class: 'num'}, r.before.tokens.toLocaleString()),
    h('td', {class: 'num', dataset: {after: r.after.tokens}}, `${r.after.tokens.toLocaleString()} tokens, ${r.after.tools} tools`),
    h('td', {class: 'num'}, saved));
}

// toolsetForm adds a toolset (t null) or replaces a stored one.
function toolsetForm(t, refresh) {
  dialog(close => {
    const status = h('div', {class: 'result'});
    const field = (name, label, input, hint) => h('div', {class: 'field'}, h('label', {for: 'ts-' + name}, label), input,
      hint && h('div', {class: 'hint'}, hint), h('div', {class: 'field-error', dataset: {field: name}}));
    const text = (name, value, readonly) => h('input', {id: 'ts-' + name, name, type: 'text', spellcheck: 'false', value: value || '', readonly});
    const list = v => (v || []).join(', ');
    const name = text('name', t && t.name, !!t);
    const description = text('description', t && t.description);
    const servers = text('servers', t && list(t.servers));
    const tools = text('tools', t && list(t.tools));
    const exclude = text('exclude', t && list(t.exclude));
    const always = text('always', t && list(t.always));
    const exposure = h('select', {id: 'ts-exposure', name: 'exposure'},
      ['list', 'search', 'code'].map(e => h('option', {value: e, selected: (t ? t.exposure || 'list' : 'list') === e}, e)));
    const form = h('form', {method: 'dialog', novalidate: true},
      h('h2', {}, t ? 'Edit ' + t.name : 'Add a toolset'),
      h('div', {class: 'fields'},
        field('name', 'Name', name, 'served at /mcp/NAME: letters, digits, - _ .'),
        field('description', 'Description', description, 'what it is for'),
        field('servers', 'Servers', servers, 'comma-separated; every server when empty'),
        field('tools', 'Tools', tools, 'globs over tool names at their server, such as read_*; every tool when empty'),
        field('exclude', 'Except', exclude, 'globs of tools to leave out'),
        field('exposure', 'Exposure', exposure, 'list lists every tool; search and code list a search or code tool'),
        field('always', 'Always listed', always, 'exposed names or patterns; with exposure search or code')),
      status,
      h('div', {class: 'buttons'},
        h('span', {class: 'spacer'}),
        h('button', {type: 'button', onclick: close}, 'Cancel'),
        h('button', {type: 'submit', class: 'primary', dataset: {action: 'save-toolset'}}, t ? 'Save' : 'Add')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
      const split = el => el.value.split(',').map(x => x.trim()).filter(x => x);
      const body = {description: description.value.trim(), servers: split(servers), tools: split(tools),
        exclude: split(exclude), always: split(always), exposure: exposure.value};
      const button = form.querySelector('[type=submit]');
      button.disabled = true;
      try {
        const n = name.value.trim();
        await api('PUT', toolsetPath(n), body, t && t.version ? {'If-Match': `"v${t.version}"`} : undefined);
        close();
        flash(`${n} saved: served at /mcp/${n}`);
        await refresh();
      } catch (e) {
        const unplaced = [];
        for (const fe of (e.problem.errors || [])) {
          const slot = form.querySelector(`.field-error[data-field="${CSS.escape(fe.field || '')}"]`);
          if (slot) slot.textContent = fe.detail;
          else unplaced.push((fe.field ? fe.field + ': ' : '') + fe.detail);
        }
        status.replaceChildren(h('div', {class: 'error', role: 'alert'}, e.message,
          unplaced.length > 0 && h('ul', {}, unplaced.map(x => h('li', {}, x)))));
      } finally {
        button.disabled = false;
      }
    });
    return form;
  });
}
