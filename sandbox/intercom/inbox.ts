// The inbox page: every emulated conversation with its parts, notes, Melvin Status and snooze, refreshed live; a
// message typed here is added as the user's and sent to the ingress as a webhook, so a person can talk to Melvin.
import express from 'express';
import { z } from 'zod';
import { renderPlaintext } from './plaintext';
import type { IntercomEmulator } from './emulator';

/** A message typed by a user, in the inbox or sent by the scenario runner. */
export const NewMessage = z.strictObject({ body: z.string().trim().min(1).max(10_000) });
const NewConversation = z.strictObject({
  email: z.email(),
  name: z.string().trim().min(1).max(200),
  body: z.string().trim().min(1).max(10_000),
  /** The conversation's `Melvin Reply Mode` attribute; auto leaves it unset. */
  reply_mode: z.enum(['auto', 'approve', 'shadow']).default('auto'),
});
/** A lead's decision on the draft waiting in a conversation; Melvin's operator API checks its fields and says what is wrong. */
const Decision = z.looseObject({ decision: z.string() });

/** Melvin's operator API, which the inbox calls with a lead's decision on a draft. */
export interface OperatorApi {
  url: string;
  token: string;
}

export function inboxRouter(
  emulator: IntercomEmulator,
  talentUsers: () => { email: string; name: string }[],
  operatorApi?: OperatorApi,
): express.Router {
  const router = express.Router();
  router.use('/inbox/api', express.json({ limit: '100kb' }));

  router.get('/inbox', (_req, res) => {
    res.type('html').send(INBOX_HTML);
  });

  // Mermaid draws the run map Melvin's escalation notes end with; served from the package, never from a CDN.
  router.get('/inbox/mermaid.min.js', (_req, res) => {
    res.sendFile(require.resolve('mermaid/dist/mermaid.min.js'));
  });

  router.get('/inbox/api/talent', (_req, res) => {
    res.json(talentUsers().map(({ email, name }) => ({ email, name })));
  });

  router.get('/inbox/api/conversations', (_req, res) => {
    res.json(
      emulator.conversationIds().map((id) => {
        const c = emulator.mustGet(id);
        const contact = emulator.contacts.get(c.contacts.contacts[0]?.id ?? '');
        return {
          id,
          contact: contact?.name ?? '',
          updated_at: c.updated_at,
          melvin_status: c.custom_attributes['Melvin Status'] ?? null,
          snoozed_until: c.snoozed_until,
        };
      }),
    );
  });

  router.get('/inbox/api/conversations/:id', (req, res) => {
    const c = emulator.conversations.get(req.params.id);
    if (!c) return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const parts = [
      { id: c.source.id, part_type: 'comment', author: c.source.author, body: c.source.body, created_at: c.created_at },
      ...c.conversation_parts.conversation_parts,
    ];
    res.json({
      id: c.id,
      contact: emulator.contacts.get(c.contacts.contacts[0]?.id ?? '') ?? null,
      melvin_status: c.custom_attributes['Melvin Status'] ?? null,
      snoozed_until: c.snoozed_until,
      state: c.state,
      parts: parts.map((p) => ({
        id: p.id,
        part_type: p.part_type,
        author_type: p.author.type,
        author_name: p.author.name,
        // Melvin posts through the API as its admin, so only the admin id tells its parts from a teammate's.
        melvin: p.author.id === emulator.options.adminId,
        text: renderPlaintext(p.body ?? ''),
        created_at: p.created_at,
      })),
      deliveries: emulator.deliveries.filter((d) => d.conversation_id === c.id),
    });
  });

  router.post('/inbox/api/conversations/:id/messages', async (req, res) => {
    const parsed = NewMessage.safeParse(req.body);
    if (!parsed.success) return res.status(400).json({ error: z.prettifyError(parsed.error) });
    if (!emulator.conversations.has(req.params.id))
      return res.status(404).json({ error: `no conversation ${req.params.id}` });
    const { part, delivery } = await emulator.userReplies(req.params.id, parsed.data.body);
    res.json({ part_id: part.id, delivery });
  });

  router.post('/inbox/api/conversations', async (req, res) => {
    const parsed = NewConversation.safeParse(req.body);
    if (!parsed.success) return res.status(400).json({ error: z.prettifyError(parsed.error) });
    // Numbered from the clock, not from a fixed start: after a restart of `npm start`, Temporal still holds the earlier
    // conversations' workflows, and a reused id would join the old conversation.
    let next = Date.now();
    while (emulator.conversations.has(String(next))) next += 1;
    const id = String(next);
    const contactId = `c-${parsed.data.email.replace(/[^a-z0-9]/gi, '-')}`;
    const { reply_mode: mode } = parsed.data;
    emulator.seed({
      id,
      contact: { id: contactId, email: parsed.data.email, name: parsed.data.name },
      parts: [{ author: 'user', type: 'comment', body: parsed.data.body }],
      attributes: mode === 'auto' ? {} : { 'Melvin Reply Mode': mode },
    });
    const delivery = await emulator.emit('conversation.user.created', id);
    res.json({ id, delivery });
  });

  /** A lead approves, edits or rejects Melvin's draft: passed to Melvin's operator API, whose answer is shown as is. */
  router.post('/inbox/api/conversations/:id/decision', async (req, res) => {
    const parsed = Decision.safeParse(req.body);
    if (!parsed.success) return res.status(400).json({ error: z.prettifyError(parsed.error) });
    if (!operatorApi) return res.status(503).json({ error: 'this sandbox has no Melvin operator API to send to' });
    try {
      const response = await fetch(`${operatorApi.url}/conversations/${encodeURIComponent(req.params.id)}/decision`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${operatorApi.token}` },
        body: JSON.stringify({ ...parsed.data, requestedBy: 'Support Team (sandbox inbox)' }),
        signal: AbortSignal.timeout(10_000),
      });
      res.status(response.status).json((await response.json().catch(() => ({}))) as unknown);
    } catch (err) {
      res
        .status(502)
        .json({ error: `Melvin's operator API did not answer: ${err instanceof Error ? err.message : err}` });
    }
  });

  return router;
}

const INBOX_HTML = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Melvin sandbox inbox</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; display: grid; grid-template-columns: 300px 1fr; height: 100vh; }
  aside { border-right: 1px solid #ddd; overflow-y: auto; background: #fafafa; }
  aside h1 { font-size: 16px; margin: 12px; }
  .conversation { padding: 8px 12px; border-bottom: 1px solid #eee; cursor: pointer; }
  .conversation.selected { background: #e8f0fe; }
  .badge { display: inline-block; padding: 1px 6px; border-radius: 8px; font-size: 12px; background: #eee; }
  .badge.success { background: #d4f5dd; } .badge.ROUTE_TO_TEAM, .badge.NO_SAFE_ANSWER, .badge.SENSITIVE_REQUEST, .badge.FRUSTRATED, .badge.VALIDATION_FAILED { background: #ffe7b3; }
  .badge.error, .badge.RESPONSE_FAILED, .badge.MESSAGE_FAILED { background: #ffd1d1; }
  main { display: flex; flex-direction: column; height: 100vh; }
  header { padding: 12px; border-bottom: 1px solid #ddd; }
  #thread { flex: 1; overflow-y: auto; padding: 12px; }
  .part { max-width: 70%; margin: 6px 0; padding: 8px 10px; border-radius: 10px; white-space: pre-wrap; }
  .part .who { font-size: 11px; color: #666; }
  .part.user, .part.lead { background: #f1f1f1; }
  .part.bot, .part.admin { background: #dbe9ff; margin-left: auto; }
  .part.note { background: #fff6d6; margin-left: auto; border: 1px dashed #d9b84c; }
  .part.event { background: none; color: #888; font-size: 12px; margin: 2px auto; text-align: center; }
  form { display: flex; gap: 8px; padding: 12px; border-top: 1px solid #ddd; }
  textarea { flex: 1; min-height: 48px; }
  #new { padding: 12px; border-bottom: 1px solid #ddd; display: grid; gap: 6px; }
  .decision { display: grid; gap: 6px; margin-top: 8px; white-space: normal; }
  .decision textarea, .decision input { width: 100%; box-sizing: border-box; }
  .decision .answer { font-size: 12px; color: #555; }
  .run-map { white-space: normal; background: #fff; border-radius: 6px; margin-top: 6px; padding: 4px; overflow-x: auto; }
  .run-map svg { max-width: 100%; height: auto; }
</style>
<script src="/inbox/mermaid.min.js"></script>
</head>
<body>
<aside>
  <h1>Melvin sandbox inbox</h1>
  <div id="new">
    <label>Talent <select id="new-talent"></select></label>
    <label>Melvin replies <select id="new-mode">
      <option value="auto">on its own</option>
      <option value="approve">after a lead approves</option>
      <option value="shadow">never (shadow: drafts as notes)</option>
    </select></label>
    <textarea id="new-body" placeholder="Start a new conversation as this talent"></textarea>
    <button id="new-send" type="button">Start conversation</button>
  </div>
  <div id="conversations"></div>
</aside>
<main>
  <header><strong id="title">Pick or start a conversation</strong>
    · Melvin Status: <span id="status" class="badge">—</span> · Snoozed until: <span id="snooze">—</span></header>
  <div id="thread"></div>
  <form id="composer"><textarea id="message" placeholder="Reply as the user…"></textarea><button id="send">Send</button></form>
</main>
<script>
let selected = new URLSearchParams(location.search).get('conversation');
const $ = (id) => document.getElementById(id);
async function api(path, body) {
  const res = await fetch('/inbox/api' + path, body ? { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) } : {});
  return res.json();
}
function badge(el, status) { el.textContent = status || '—'; el.className = 'badge ' + (status || ''); }
async function refresh() {
  const list = await api('/conversations');
  $('conversations').replaceChildren(...list.map((c) => {
    const div = document.createElement('div');
    div.className = 'conversation' + (c.id === selected ? ' selected' : '');
    div.dataset.id = c.id;
    const status = document.createElement('span');
    badge(status, c.melvin_status);
    div.append('#' + c.id + ' · ' + c.contact + ' ', status);
    div.onclick = () => { selected = c.id; history.replaceState(null, '', '?conversation=' + c.id); refresh(); };
    return div;
  }));
  if (!selected) return;
  const c = await api('/conversations/' + selected);
  if (c.error) return;
  $('title').textContent = '#' + c.id + ' · ' + (c.contact ? c.contact.name + ' <' + c.contact.email + '>' : '');
  badge($('status'), c.melvin_status);
  $('snooze').textContent = c.snoozed_until ? new Date(c.snoozed_until * 1000).toLocaleTimeString() : '—';
  // The form is drawn once per draft: a refresh must not wipe what a lead is typing.
  // A draft waits while Melvin's approval note is its latest part: a reply or a note after it means it was decided.
  const latest = c.parts.filter((p) => p.melvin && (p.part_type === 'note' || p.part_type === 'comment')).at(-1);
  const newest = latest && latest.part_type === 'note' && latest.text.startsWith(APPROVAL_NOTE) ? latest.id : null;
  if (newest === waitingDraft && document.querySelector('.decision')) {
    document.querySelector('.decision .answer').textContent = decisionAnswer;
    if (c.parts.length === Number($('thread').dataset.parts)) return;
  }
  if (newest !== waitingDraft) decisionAnswer = '';
  waitingDraft = newest;
  $('thread').dataset.parts = String(c.parts.length);
  $('thread').replaceChildren(...c.parts.map((p) => {
    const div = document.createElement('div');
    const kind = p.part_type === 'note' ? 'note' : p.part_type === 'comment' ? p.author_type : 'event';
    div.className = 'part ' + kind + (p.melvin ? ' melvin' : '');
    div.dataset.partType = p.part_type;
    div.dataset.author = p.author_type;
    const who = document.createElement('div');
    who.className = 'who';
    who.textContent = kind === 'event' ? p.part_type + ' by ' + p.author_name : (p.author_name || p.author_type) + (kind === 'note' ? ' (internal note)' : '');
    const text = document.createElement('div');
    text.className = 'text';
    const map = RUN_MAP.exec(p.text);
    text.textContent = map ? p.text.slice(0, map.index) : p.text;
    div.append(who, text);
    if (map) div.append(runMap(p.id, map[1]));
    if (p.id === waitingDraft) div.append(decisionForm(c.id, p.text));
    return div;
  }));
}
// Melvin's escalation notes end with the run's path as a Mermaid flowchart, drawn once per part and kept (null while
// it is being drawn, or when it cannot be).
const RUN_MAP = /\\n?How Melvin got here:\\n\`\`\`mermaid\\n([\\s\\S]*?)\\n\`\`\`\\s*$/;
const drawnMaps = new Map();
if (window.mermaid) mermaid.initialize({ startOnLoad: false, securityLevel: 'strict' });
function runMap(partId, source) {
  const box = document.createElement('div');
  box.className = 'run-map';
  box.title = 'How Melvin got here';
  // Until it is drawn, or when it cannot be, the map shows as its source.
  box.textContent = source;
  if (drawnMaps.get(partId)) {
    box.innerHTML = drawnMaps.get(partId);
  } else if (window.mermaid && !drawnMaps.has(partId)) {
    drawnMaps.set(partId, null);
    mermaid.render('run-map-' + partId, source).then(
      ({ svg }) => { drawnMaps.set(partId, svg); box.innerHTML = svg; },
      () => {},
    );
  }
  return box;
}
// Melvin's note asking for approval carries its draft after its first line.
const APPROVAL_NOTE = "\u270b Melvin's draft waits for a lead";
let waitingDraft = null;
let decisionAnswer = '';
function decisionForm(conversationId, noteText) {
  const form = document.createElement('div');
  form.className = 'decision';
  const edit = document.createElement('textarea');
  edit.className = 'edit-text';
  edit.value = noteText.split('\\n').slice(1).join('\\n');
  const reason = document.createElement('input');
  reason.className = 'reject-reason';
  reason.placeholder = 'Why reject? (needed to reject)';
  const answer = document.createElement('div');
  answer.className = 'answer';
  answer.textContent = decisionAnswer;
  const button = (label, cls, body) => {
    const b = document.createElement('button');
    b.type = 'button';
    b.textContent = label;
    b.className = cls;
    b.onclick = async () => {
      const res = await api('/conversations/' + conversationId + '/decision', body());
      // The operator API names what was wrong (a reject without a reason, no draft waiting); it is shown as said.
      const issues = (res.issues || []).map((i) => i.path + ': ' + i.message).join('; ');
      decisionAnswer = res.error ? 'Not sent: ' + res.error + (issues ? ' (' + issues + ')' : '') : 'Sent: ' + label.toLowerCase();
      refresh();
    };
    return b;
  };
  const buttons = document.createElement('div');
  buttons.append(
    button('Approve', 'approve', () => ({ decision: 'approve' })), ' ',
    button('Send edited', 'edit', () => ({ decision: 'edit', text: edit.value })), ' ',
    button('Reject', 'reject', () => ({ decision: 'reject', reason: reason.value })),
  );
  form.append(edit, reason, buttons, answer);
  return form;
}
$('composer').onsubmit = async (e) => {
  e.preventDefault();
  const body = $('message').value.trim();
  if (!selected || !body) return;
  $('message').value = '';
  await api('/conversations/' + selected + '/messages', { body });
  refresh();
};
$('new-send').onclick = async () => {
  const [email, name] = $('new-talent').value.split('|');
  const body = $('new-body').value.trim();
  if (!body) return;
  $('new-body').value = '';
  const created = await api('/conversations', { email, name, body, reply_mode: $('new-mode').value });
  selected = created.id;
  history.replaceState(null, '', '?conversation=' + selected);
  refresh();
};
api('/talent').then((users) => {
  $('new-talent').replaceChildren(...users.map((u) => { const o = document.createElement('option'); o.value = u.email + '|' + u.name; o.textContent = u.name + ' <' + u.email + '>'; return o; }));
});
refresh();
setInterval(refresh, 1000);
</script>
</body>
</html>`;
