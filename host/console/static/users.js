// The users page: the config file's keys (read-only) and the users kept
// in the store, with the actions of /v1/users: add, edit, disable, enable,
// a new key, rotate, revoke, remove. A new key is shown once, in a dialog.
// Every user's secrets (caller.secrets.NAME) are set and deleted in
// another: listed by name, never shown.
'use strict';

pages.users = async (main) => {
  const list = h('div', {});
  main.append(h('div', {class: 'head'},
    h('h1', {}, 'Users'),
    h('button', {class: 'primary', dataset: {action: 'add-user'}, onclick: () => userForm(null, refresh)}, 'Add user')), list);
  async function refresh() {
    const data = await api('GET', '/v1/users');
    list.replaceChildren(data.users.length === 0
      ? empty('No users', 'Add one here, or a key block to listen.auth in the config file.')
      : table(['State', 'User', 'Groups', 'Keys', ''], data.users.map(u => userRow(u, refresh))));
  }
  await load(list, refresh);
  every(5000, refresh);
};

function userPath(subject) {
  return '/v1/users/' + encodeURIComponent(subject);
}

function userRow(u, refresh) {
  const stored = u.source === 'store';
  const state = u.problem ? 'problem' : u.disabled ? 'disabled' : 'enabled';
  const run = (label, fn, cls) => h('button', {class: 'small ' + (cls || ''), dataset: {action: label.toLowerCase()},
    onclick: (ev) => act(ev.target, fn, refresh)}, label);
  const attrs = Object.entries(u.attributes || {}).map(([k, v]) => k + '=' + v).join(', ');
  return h('tr', {dataset: {user: u.subject, state}},
    h('td', {}, stateLabel(state)),
    h('td', {},
      h('div', {}, h('span', {class: 'name'}, u.subject), ' ', tag(u.source, 'src-' + u.source,
        stored ? 'added at run time' : 'a key of listen.auth in the config file: edit it there')),
      attrs && h('div', {class: 'sub mono'}, attrs),
      u.problem && h('div', {class: 'error'}, u.problem)),
    h('td', {}, h('div', {class: 'chips'}, (u.groups || []).map(g => tag(g)))),
    h('td', {}, h('div', {class: 'keys'}, (u.keys || []).map(k => h('div', {class: 'key', dataset: {key: k.id || k.name}},
      h('span', {class: 'mono'}, k.id || k.name), k.id && k.name && h('span', {class: 'muted'}, ' ', k.name),
      k.created && h('span', {class: 'muted small'}, ' ', ago(k.created)),
      stored && h('span', {class: 'key-actions'}, ' ',
        h('button', {class: 'small', dataset: {action: 'rotate'}, onclick: ev => act(ev.target, async () => {
          const r = await api('POST', userPath(u.subject) + '/keys', {name: k.name || '', replaces: k.id});
          showKey(r);
          return `${u.subject}: key ${k.id} replaced by ${r.key.id}`;
        }, refresh)}, 'Rotate'),
        run('Revoke', async () => {
          if (!await confirmed(`Revoke key ${k.id} of ${u.subject}? It stops at once, and the sessions it opened are closed.`, 'Revoke')) return '';
          await api('DELETE', userPath(u.subject) + '/keys/' + encodeURIComponent(k.id));
          return `${u.subject}: key ${k.id} revoked`;
        }, 'danger')))))),
    h('td', {class: 'actions'},
      h('button', {class: 'small', dataset: {action: 'secrets'}, onclick: () => secretsDialog(u.subject)}, 'Secrets'),
      stored && [
        h('button', {class: 'small', dataset: {action: 'new-key'}, onclick: ev => act(ev.target, async () => {
          const r = await api('POST', userPath(u.subject) + '/keys', {});
          showKey(r);
          return '';
        }, refresh)}, 'New key'),
        h('button', {class: 'small', dataset: {action: 'edit'}, onclick: () => userForm(u, refresh)}, 'Edit'),
        run(u.disabled ? 'Enable' : 'Disable', async () => {
          await api('PATCH', userPath(u.subject), {disabled: !u.disabled});
          return `${u.subject} ${u.disabled ? 'enabled' : 'disabled: its keys are refused and its sessions closed'}`;
        }),
        run('Remove', async () => {
          if (!await confirmed(`Remove ${u.subject} and its keys? They stop at once.`, 'Remove')) return '';
          await api('DELETE', userPath(u.subject));
          return `${u.subject} removed`;
        }, 'danger')]));
}

// secretsDialog lists a caller's secrets by name, with a form to set one
// (a new value replaces the old; their upstream sessions that read it
// restart) and a button to delete each. Values are written, never read.
function secretsDialog(subject) {
  dialog(close => {
    const path = userPath(subject) + '/secrets';
    const list = h('div', {class: 'secrets'});
    const status = h('div', {class: 'result'});
    const name = h('input', {id: 's-name', name: 'name', type: 'text', spellcheck: 'false', placeholder: 'GITHUB_TOKEN'});
    const value = h('input', {id: 's-value', name: 'value', type: 'password', autocomplete: 'off'});
    async function refresh() {
      const data = await api('GET', path);
      list.replaceChildren(data.secrets.length === 0
        ? h('p', {class: 'muted'}, 'No secrets.')
        : table(['Secret', 'Updated', ''], data.secrets.map(s => h('tr', {dataset: {secret: s.name}},
          h('td', {class: 'mono'}, s.name),
          h('td', {class: 'muted small'}, ago(s.updated)),
          h('td', {class: 'actions'}, h('button', {type: 'button', class: 'small danger', dataset: {action: 'delete-secret'},
            onclick: ev => act(ev.target, async () => {
              await api('DELETE', path + '/' + encodeURIComponent(s.name));
              return `${subject}: secret ${s.name} deleted`;
            }, refresh)}, 'Delete'))))));
    }
    const form = h('form', {method: 'dialog', novalidate: true},
      h('h2', {}, `Secrets of ${subject}`),
      h('p', {class: 'muted small'}, 'Servers read them as ${caller.secrets.NAME}. mcphost keeps them sealed and never shows them again; a change restarts this caller\'s upstream sessions that read the secret.'),
      list,
      h('div', {class: 'fields'},
        h('div', {class: 'field'}, h('label', {for: 's-name'}, 'Name'), name),
        h('div', {class: 'field'}, h('label', {for: 's-value'}, 'Value'), value)),
      status,
      h('div', {class: 'buttons'},
        h('span', {class: 'spacer'}),
        h('button', {type: 'button', onclick: close}, 'Done'),
        h('button', {type: 'submit', class: 'primary', dataset: {action: 'set-secret'}}, 'Set')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      const button = form.querySelector('[type=submit]');
      button.disabled = true;
      try {
        await api('PUT', path + '/' + encodeURIComponent(name.value.trim()), {value: value.value});
        flash(`${subject}: secret ${name.value.trim()} set`);
        name.value = '';
        value.value = '';
        status.replaceChildren();
        await refresh();
      } catch (e) {
        status.replaceChildren(h('div', {class: 'error', role: 'alert'}, e.message));
      } finally {
        button.disabled = false;
      }
    });
    load(list, refresh);
    return form;
  });
}

// showKey shows a key just made: the only time it is shown.
function showKey(r) {
  dialog(close => h('div', {class: 'body', dataset: {newKey: r.key.id}},
    h('h2', {}, `New key for ${r.user.subject}`),
    h('p', {}, 'Copy it now: it is shown this once. mcphost keeps only its SHA-256.'),
    h('pre', {class: 'new-key mono'}, r.key.key),
    h('p', {class: 'muted small'}, 'Clients send it as Authorization: Bearer <key>.'),
    h('div', {class: 'buttons'}, h('button', {type: 'button', class: 'primary', onclick: close}, 'Done'))));
}

// userForm adds a user (u null) or edits a stored one's groups and
// attributes.
function userForm(u, refresh) {
  dialog(close => {
    const status = h('div', {class: 'result'});
    const field = (name, label, input, hint) => h('div', {class: 'field'}, h('label', {for: 'u-' + name}, label), input,
      hint && h('div', {class: 'hint'}, hint), h('div', {class: 'field-error', dataset: {field: name}}));
    const subject = h('input', {id: 'u-subject', name: 'subject', type: 'text', spellcheck: 'false', value: u ? u.subject : '', readonly: !!u});
    const groups = h('input', {id: 'u-groups', name: 'groups', type: 'text', spellcheck: 'false', value: u ? (u.groups || []).join(', ') : ''});
    const attrs = h('textarea', {id: 'u-attributes', name: 'attributes', rows: 2, spellcheck: 'false',
      value: u ? Object.entries(u.attributes || {}).map(([k, v]) => k + '=' + v).join('\n') : ''});
    const keyName = h('input', {id: 'u-keyName', name: 'keyName', type: 'text', spellcheck: 'false'});
    const form = h('form', {method: 'dialog', novalidate: true},
      h('h2', {}, u ? 'Edit ' + u.subject : 'Add a user'),
      h('div', {class: 'fields'},
        field('subject', 'Subject', subject, 'who the caller is, as policies see it'),
        field('groups', 'Groups', groups, 'comma-separated'),
        field('attributes', 'Attributes', attrs, 'name=value, one per line'),
        !u && field('keyName', 'Key label', keyName, 'optional, such as the machine the key is for')),
      status,
      h('div', {class: 'buttons'},
        h('span', {class: 'spacer'}),
        h('button', {type: 'button', onclick: close}, 'Cancel'),
        h('button', {type: 'submit', class: 'primary', dataset: {action: 'save-user'}}, u ? 'Save' : 'Add')));
    form.addEventListener('submit', async (ev) => {
      ev.preventDefault();
      for (const e of form.querySelectorAll('.field-error')) e.textContent = '';
      const body = {
        groups: groups.value.split(',').map(x => x.trim()).filter(x => x),
        attributes: {},
      };
      for (const line of attrs.value.split('\n').map(x => x.trim()).filter(x => x)) {
        const i = line.indexOf('=');
        body.attributes[i < 0 ? line : line.slice(0, i).trim()] = i < 0 ? '' : line.slice(i + 1);
      }
      const button = form.querySelector('[type=submit]');
      button.disabled = true;
      try {
        if (u) {
          await api('PATCH', userPath(u.subject), body, {'Content-Type': 'application/merge-patch+json'});
          close();
          flash(`${u.subject} saved; sessions opened before the change are closed`);
        } else {
          body.subject = subject.value.trim();
          if (keyName.value.trim()) body.keyName = keyName.value.trim();
          const r = await api('POST', '/v1/users', body);
          close();
          showKey(r);
        }
        await refresh();
      } catch (e) {
        const unplaced = [];
        for (const fe of (e.problem.errors || [])) {
          const top = (fe.field || '').split(/[.[]/)[0];
          const slot = form.querySelector(`.field-error[data-field="${CSS.escape(top)}"]`);
          if (slot) slot.textContent = (fe.field !== top ? fe.field + ': ' : '') + fe.detail;
          else unplaced.push((fe.field ? fe.field + ': ' : '') + fe.detail);
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
