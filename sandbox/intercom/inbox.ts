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
});

export function inboxRouter(
  emulator: IntercomEmulator,
  talentUsers: () => { email: string; name: string }[],
): express.Router {
  const router = express.Router();
  router.use('/inbox/api', express.json({ limit: '100kb' }));

  router.get('/inbox', (_req, res) => {
    res.type('html').send(INBOX_HTML);
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
    emulator.seed({
      id,
      contact: { id: contactId, email: parsed.data.email, name: parsed.data.name },
      parts: [{ author: 'user', type: 'comment', body: parsed.data.body }],
    });
    const delivery = await emulator.emit('conversation.user.created', id);
    res.json({ id, delivery });
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
  .badge.success { background: #d4f5dd; } .badge.ROUTE_TO_TEAM, .badge.VALIDATION_FAILED { background: #ffe7b3; }
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
</style>
</head>
<body>
<aside>
  <h1>Melvin sandbox inbox</h1>
  <div id="new">
    <label>Talent <select id="new-talent"></select></label>
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
    text.textContent = p.text;
    div.append(who, text);
    return div;
  }));
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
  const created = await api('/conversations', { email, name, body });
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
