// The support leads' report page (`GET /report`): a shell with no data that fetches `/report/data` with the operator
// token and draws the figures, a stacked bar chart of turns per day and the period's flows in inline SVG, without any
// library, and sends a lead's question to the analysis agent (`POST /report/ask`). Its HTML, style and script are the
// files of ./report-page/, served as they are.
import { readFileSync } from 'node:fs';
import path from 'node:path';

/**
 * The page's files: beside this module when it runs from src/, and in the package's src/ingress/report-page/ when it
 * runs compiled from dist/ (the Dockerfile copies them there, as it copies prompts/).
 */
export const REPORT_PAGE_DIR = path.resolve(
  __dirname,
  __dirname.includes(`${path.sep}dist${path.sep}`) ? '../../../src/ingress' : '.',
  'report-page',
);

const read = (file: string) => readFileSync(path.join(REPORT_PAGE_DIR, file), 'utf8');

/** The page, and the two files it loads from its own origin, by the path each is served at, with its type. */
export const REPORT_PAGE_FILES: Record<string, { type: string; body: string }> = {
  '/report': { type: 'html', body: read('index.html') },
  '/report/report.css': { type: 'css', body: read('report.css') },
  '/report/report.js': { type: 'js', body: read('report.js') },
};

/**
 * Only this page's own script and style run, it talks only to its own origin, and nothing can frame it: a reason or a
 * tool name that got past the DOM's text nodes would still find no script to run.
 */
export const REPORT_PAGE_HEADERS = {
  'content-security-policy': [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "connect-src 'self'",
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; '),
  'referrer-policy': 'no-referrer',
  'x-content-type-options': 'nosniff',
};
