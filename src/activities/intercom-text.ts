// Melvin's text as Intercom HTML, and the form in which a posted body is compared with what Intercom shows of it.

function escapeHtml(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

/** Paragraphs become `<p>`, single line breaks `<br>`, so the user sees the reply laid out as written. */
export function textToHtml(text: string): string {
  return text
    .trim()
    .split(/\n{2,}/)
    .map((paragraph) => `<p>${escapeHtml(paragraph).replace(/\n/g, '<br>')}</p>`)
    .join('');
}

/** The form two plain-text bodies are compared in when checking whether a reply or note was already posted. */
export function comparableText(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'", apos: "'", nbsp: ' ' };

/** An Intercom HTML body as plain text, for what a webhook carries (Melvin fetches bodies as plain text already). */
export function htmlToText(html: string): string {
  return html
    .replace(/<br\s*\/?>/gi, '\n')
    .replace(/<\/p>\s*/gi, '\n\n')
    .replace(/<[^>]*>/g, '')
    .replace(/&(amp|lt|gt|quot|#39|apos|nbsp);/g, (_, name: string) => ENTITIES[name] ?? '')
    .replace(/\n{3,}/g, '\n\n')
    .trim();
}

/** A part's text as Melvin shows it: its words, then the names of its files, which Melvin cannot open. */
export function partText(
  body: string | null | undefined,
  attachments: { name?: string | null }[] | null | undefined,
): string {
  const text = (body ?? '').trim();
  const files = (attachments ?? []).map((a) => a.name?.trim() || 'a file');
  if (!files.length) return text;
  const list = `[attachment${files.length > 1 ? 's' : ''}: ${files.join(', ')}]`;
  return text ? `${text}\n${list}` : list;
}
