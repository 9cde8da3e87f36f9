// mcphost console: the helpers every page uses, and the router. Plain
// browser JavaScript, no framework and no build: each page is a function
// that fills <main> from the admin API (docs/admin-api.md). Text from the
// API only ever goes in through textContent, never as HTML.
'use strict';

const pages = {};

// h builds an element: h('td', {class: 'num'}, 'text', child, ...).
// Attributes starting with "on" are listeners; null and false are skipped.
function h(tag, attrs, ...kids) {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v == null || v === false) continue;
    if (k.startsWith('on')) el.addEventListener(k.slice(2), v);
    else if (k === 'dataset') Object.assign(el.dataset, v);
    else if (k === 'value') el.value = v;
    else el.setAttribute(k, v === true ? '' : v);
  }
  for (const kid of kids.flat(Infinity)) {
    if (kid == null || kid === false) continue;
    el.append(kid instanceof Node ? kid : String(kid));
  }
  return el;
}

class APIError extends Error {
  constructor(status, problem) {
    super((problem && (problem.detail || problem.title)) || 'HTTP ' + status);
    this.status = status;
    this.problem = problem || {};
  }
}

// The session's token, which this page alone holds: the API refuses the
// session cookie without it (other apps on this host get the cookie too).
const consoleToken = (document.querySelector('meta[name="mcphost-console-token"]') || {}).content || '';

// api calls the admin API with the session cookie and the page's token. A
// 401 means the session ended: reloading shows the login page.
async function api(method, path, body, headers) {
  const opts = {method, headers: Object.assign({'X-Mcphost-Console-Token': consoleToken}, headers), credentials: 'same-origin'};
  if (body !== undefined) {
    opts.body = JSON.stringify(body);
    if (!opts.headers['Content-Type']) opts.headers['Content-Type'] = 'application/json';
  }
  const res = await fetch(path, opts);
  if (res.status === 401) {
    location.reload();
    throw new APIError(401, {detail: 'the session ended'});
  }
  const ct = res.headers.get('Content-Type') || '';
  const data = ct.includes('json') ? await res.json() : null;
  if (!res.ok) throw new APIError(res.status, data);
  return data;
}

// flash shows a message for a few seconds (errors longer).
function flash(text, kind) {
  const el = h('div', {class: 'flash ' + (kind || 'ok'), role: kind === 'bad' ? 'alert' : 'status'}, text);
  const box = document.getElementById('flash');
  box.append(el);
  while (box.children.length > 3) box.firstChild.remove();
  setTimeout(() => el.remove(), kind === 'bad' ? 9000 : 4000);
}

// act runs an action from a button: disabled while it runs, its outcome
// flashed, then done() (a refresh).
async function act(button, work, done) {
  button.disabled = true;
  try {
    const msg = await work();
    if (msg) flash(msg, 'ok');
  } catch (e) {
    flash(e.message, 'bad');
  } finally {
    button.disabled = false;
    if (done) await done();
  }
}

// every runs fn every ms milliseconds while its page is shown, the tab is
// visible and no dialog is open; the router stops it on navigation.
let timer = null;
function every(ms, fn) {
  clearInterval(timer);
  timer = setInterval(() => {
    if (document.hidden || document.querySelector('dialog[open]')) return;
    fn().catch(() => {});
  }, ms);
}

// load runs a page's first fetch, showing its error in place.
async function load(where, fn) {
  try {
    await fn();
  } catch (e) {
    where.replaceChildren(empty('Could not load this page', e.message));
  }
}

function empty(title, text) {
  return h('div', {class: 'empty'}, h('strong', {}, title), text);
}

function table(headers, rows) {
  return h('div', {class: 'card'}, h('table', {},
    h('thead', {}, h('tr', {}, headers.map(c =>
      typeof c === 'string' ? h('th', {}, c) : h('th', {class: c.class}, c.text)))),
    h('tbody', {}, rows)));
}

function stateLabel(state) {
  return h('span', {class: 'state s-' + state, dataset: {state}}, state);
}

function tag(text, cls, title) {
  return h('span', {class: 'tag ' + (cls || ''), title}, text);
}

// ago is a time as "12s ago", with the exact time as the element's title.
function ago(iso) {
  if (!iso || iso.startsWith('0001-')) return h('span', {class: 'muted'}, '–');
  const t = new Date(iso);
  const s = Math.max(0, Math.round((Date.now() - t) / 1000));
  const text = s < 60 ? s + 's ago' : s < 3600 ? Math.floor(s / 60) + 'm ago' :
    s < 86400 ? Math.floor(s / 3600) + 'h ago' : Math.floor(s / 86400) + 'd ago';
  return h('span', {title: t.toLocaleString()}, text);
}

function clock(iso) {
  const t = new Date(iso);
  const today = t.toDateString() === new Date().toDateString();
  return h('span', {class: 'mono', title: t.toLocaleString()},
    today ? t.toLocaleTimeString() : t.toLocaleString());
}

function pretty(v) {
  return h('pre', {}, typeof v === 'string' ? v : JSON.stringify(v, null, 2));
}

// dialog opens a modal; build(close) returns its content. The dialog is
// removed from the page when closed.
function dialog(build) {
  const d = h('dialog', {});
  const close = () => d.close();
  d.addEventListener('close', () => d.remove());
  d.append(build(close));
  document.body.append(d);
  d.showModal();
  return d;
}

// confirmed asks before something that cannot be undone, in the page's
// own dialog; it resolves to whether the operator went ahead.
function confirmed(question, verb) {
  return new Promise(resolve => {
    let yes = false;
    const d = dialog(close => h('div', {class: 'body'}, h('h2', {}, question),
      h('div', {class: 'buttons'},
        h('button', {type: 'button', onclick: close}, 'Cancel'),
        h('button', {type: 'button', class: 'primary danger-fill', dataset: {action: 'confirm'},
          onclick: () => { yes = true; close(); }}, verb))));
    d.addEventListener('close', () => resolve(yes));
  });
}

function route() {
  clearInterval(timer);
  const name = location.hash.slice(1) || 'servers';
  const page = pages[name] ? name : 'servers';
  for (const a of document.querySelectorAll('#nav a')) {
    a.classList.toggle('current', a.getAttribute('href') === '#' + page);
  }
  const main = document.getElementById('main');
  main.replaceChildren();
  main.dataset.page = page;
  pages[page](main);
}

window.addEventListener('hashchange', route);
document.addEventListener('DOMContentLoaded', route);
