// The talent help center: markdown files split into one searchable passage per "## " section.
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import type { Doc } from '../scenario';

export const KNOWLEDGE_BASE_DIR = path.join(__dirname, 'knowledge-base');

export function parseMarkdownDocs(markdown: string): Doc[] {
  const heading = /^# (.+)$/m.exec(markdown)?.[1]?.trim() ?? '';
  return markdown
    .split(/^## /m)
    .slice(1)
    .map((section) => {
      const [titleLine = '', ...lines] = section.split('\n');
      return {
        title: heading ? `${heading}: ${titleLine.trim()}` : titleLine.trim(),
        body: lines.join(' ').replace(/\s+/g, ' ').trim(),
      };
    })
    .filter((doc) => doc.title && doc.body);
}

export function loadKnowledgeBase(dir = KNOWLEDGE_BASE_DIR): Doc[] {
  return readdirSync(dir)
    .filter((file) => file.endsWith('.md'))
    .sort()
    .flatMap((file) => parseMarkdownDocs(readFileSync(path.join(dir, file), 'utf8')));
}
