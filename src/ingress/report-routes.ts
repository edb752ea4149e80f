// The support leads' report: its page, its figures over a window of runs, and questions answered by the analysis agent.
import type { Client } from '@temporalio/client';
import express from 'express';
import type OpenAI from 'openai';
import { issuesOf } from '../contract/schemas';
import { errorMessage } from '../observability/error-message';
import { logEvent } from '../observability/log';
import { AnalysisFailed, AnalysisRequest, askAnalysis } from '../reports/analysis';
import { Since } from '../reports/figures';
import type { TemporalUi } from '../reports/patterns';
import { loadAnalysisData, loadReport } from '../reports/visibility';
import type { OperatorCheck } from './operator-routes';
import { REPORT_PAGE_FILES, REPORT_PAGE_HEADERS } from './report-page';

/** What the report needs: Temporal's visibility, the Temporal UI its example runs link to, the analysis agent's model. */
export interface ReportOptions {
  client: Client;
  /** Origins of the Temporal UI allowed to call the codec endpoint from a browser (TEMPORAL_UI_ORIGIN); none if omitted. */
  temporalUiOrigins?: readonly string[];
  /** The report's analysis agent (`POST /report/ask`): its model endpoint; absent, that endpoint answers 503. */
  analysis?: { openai: OpenAI; model: string };
}

/** `GET /report` (and its style and script), `GET /report/data` and `POST /report/ask`. */
export function reportRoutes(options: ReportOptions, operatorAllowed: OperatorCheck): express.Router {
  const router = express.Router();
  // Example runs link to the first Temporal UI allowed to call the codec endpoint: the one leads use.
  const firstUi = options.temporalUiOrigins?.[0];
  const temporalUi: TemporalUi | undefined = firstUi
    ? { url: firstUi, namespace: options.client.options.namespace }
    : undefined;

  // The page is a shell with no data in it, so it needs no token; it asks for one and fetches the figures below with it.
  for (const [route, file] of Object.entries(REPORT_PAGE_FILES)) {
    router.get(route, (_req, res) => {
      res.set(REPORT_PAGE_HEADERS).type(file.type).send(file.body);
    });
  }
  router.get('/report/data', async (req, res) => {
    if (!operatorAllowed(req, res)) return;
    const since = Since.prefault('7d').safeParse(req.query.since);
    if (!since.success) {
      return res.status(400).json({
        error: 'invalid since',
        issues: issuesOf(since.error).map((i) => ({ ...i, path: i.path === '(root)' ? 'since' : `since.${i.path}` })),
      });
    }
    try {
      const report = await loadReport(options.client, since.data, new Date(), temporalUi);
      res.set('cache-control', 'no-store').json(report);
    } catch (err) {
      logEvent('error', 'report not built: Temporal visibility failed', {
        error: errorMessage(err),
      });
      res.status(503).json({ error: 'Temporal visibility could not be read; try again' });
    }
  });

  // A lead's question in words, answered by the analysis agent from the window's runs. Read-only and answered while the
  // lead waits, so it runs here rather than as a Temporal activity: nothing to retry durably, nothing to undo.
  router.post('/report/ask', express.json({ limit: '8kb' }), async (req, res) => {
    if (!operatorAllowed(req, res)) return;
    const request = AnalysisRequest.safeParse(req.body ?? {});
    if (!request.success) {
      return res.status(400).json({ error: 'invalid question', issues: issuesOf(request.error) });
    }
    if (!options.analysis) {
      return res.status(503).json({
        error: 'the analysis agent is not configured: set ANALYSIS_OPENAI_API_KEY or OPENAI_API_KEY on the ingress',
      });
    }
    let data;
    try {
      data = await loadAnalysisData(options.client, request.data.since, new Date(), temporalUi);
    } catch (err) {
      logEvent('error', 'question not answered: Temporal visibility failed', { error: errorMessage(err) });
      return res.status(503).json({ error: 'Temporal visibility could not be read; try again' });
    }
    try {
      const answer = await askAnalysis({ ...options.analysis, question: request.data.question, data });
      logEvent('info', 'report question answered', { rounds: answer.rounds, tools: answer.figures.length });
      res.set('cache-control', 'no-store').json(answer);
    } catch (err) {
      const why = err instanceof AnalysisFailed ? err.message : `the model endpoint failed: ${errorMessage(err)}`;
      logEvent('error', 'report question not answered', { error: why });
      res.status(502).json({ error: `the analysis agent could not answer: ${why}` });
    }
  });
  return router;
}
