// The report page as served: its inline script compiles, the Content-Security-Policy lets exactly it and its style run.
import { createHash } from 'node:crypto';
import { Script } from 'node:vm';
import { REPORT_PAGE, REPORT_PAGE_HEADERS } from '../../src/ingress/report-page';

const inline = (tag: string) => new RegExp(`<${tag}>([\\s\\S]*?)</${tag}>`).exec(REPORT_PAGE)![1]!;
const hash = (text: string) => `'sha256-${createHash('sha256').update(text).digest('base64')}'`;

test('the page’s script is valid JavaScript once out of its TypeScript template (escapes included)', () => {
  expect(() => new Script(inline('script'))).not.toThrow();
  expect(inline('script')).toContain("replace(/\\/+$/, '')");
});

test('the CSP allows the page’s own script and style by hash, its own origin for data, and nothing else', () => {
  const csp = REPORT_PAGE_HEADERS['content-security-policy'];
  expect(csp.split('; ')).toEqual([
    "default-src 'none'",
    `script-src ${hash(inline('script'))}`,
    `style-src ${hash(inline('style'))}`,
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ]);
});

test('data reaches the page only as text: the script never writes markup', () => {
  expect(inline('script')).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
});
