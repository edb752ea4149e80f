// The report page as served: its HTML loads only its own style and script, its script compiles and never writes markup,
// and the Content-Security-Policy lets only the page's own origin's script and style run.
import { Script } from 'node:vm';
import { REPORT_PAGE_FILES, REPORT_PAGE_HEADERS } from '../../src/ingress/report-page';

const page = REPORT_PAGE_FILES['/report']!.body;
const script = REPORT_PAGE_FILES['/report/report.js']!.body;

test('the page loads its style and script from the routes that serve them, and nothing else', () => {
  const loads = [...page.matchAll(/<(?:script|link)\b[^>]*(?:src|href)="([^"]+)"/g)].map((m) => m[1]);
  expect(loads).toEqual(['/report/report.css', '/report/report.js']);
  expect(Object.keys(REPORT_PAGE_FILES)).toEqual(['/report', ...loads]);
  // No inline script or style, which the policy would refuse.
  expect(page).not.toMatch(/<script>|<style|\sstyle=|\son[a-z]+=/);
});

test('the page’s script is valid JavaScript', () => {
  expect(() => new Script(script)).not.toThrow();
  expect(script).toContain("replace(/\\/+$/, '')");
});

test('the CSP allows the page’s own script and style, its own origin for data, and nothing else', () => {
  const csp = REPORT_PAGE_HEADERS['content-security-policy'];
  expect(csp.split('; ')).toEqual([
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ]);
});

test('data reaches the page only as text: the script never writes markup', () => {
  expect(script).not.toMatch(/innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(|new Function/);
});
