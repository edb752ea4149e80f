// The emulator's own HTML bodies and plain-text rendering (`display_as=plaintext`), written apart from Melvin's, so
// Melvin's reading of Intercom's text is tested against a rendering it did not write.

const NAMED_ENTITIES: Record<string, string> = {
  amp: '&',
  lt: '<',
  gt: '>',
  quot: '"',
  apos: "'",
  nbsp: '\u00a0',
  hellip: '…',
  mdash: '—',
  ndash: '–',
};

/** Block elements end a line; Intercom's plain-text view puts each paragraph, list item and break on its own line. */
const LINE_ENDING_TAG = /<\s*(br\s*\/?|\/\s*(p|div|li|h[1-6]|blockquote|pre))\s*>/gi;

function decodeEntity(entity: string, body: string): string {
  if (body.startsWith('#x') || body.startsWith('#X')) return String.fromCodePoint(Number.parseInt(body.slice(2), 16));
  if (body.startsWith('#')) return String.fromCodePoint(Number.parseInt(body.slice(1), 10));
  return NAMED_ENTITIES[body] ?? entity;
}

/**
 * A part body as plain text: one line per paragraph, break or list item, tags dropped, entities decoded, runs of
 * spaces kept as one, and no blank lines.
 */
export function renderPlaintext(html: string): string {
  return html
    .replace(LINE_ENDING_TAG, '\n')
    .replace(/<[^>]+>/g, '')
    .replace(/&(#x[0-9a-f]+|#\d+|[a-z]+);/gi, (entity, body: string) => decodeEntity(entity, body))
    .split('\n')
    .map((line) => line.replace(/[ \t\u00a0]+/g, ' ').trim())
    .filter((line) => line !== '')
    .join('\n');
}

function escape(text: string): string {
  return text.replace(/[&<>"']/g, (char) => `&#${char.codePointAt(0)};`);
}

/** What the Messenger stores for text a person typed: a `<p>` per line, characters that are markup escaped. */
export function typedTextToHtml(text: string): string {
  return text
    .split(/\r?\n/)
    .filter((line) => line.trim() !== '')
    .map((line) => `<p>${escape(line.trim())}</p>`)
    .join('');
}
