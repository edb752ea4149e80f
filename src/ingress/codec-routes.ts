// The remote codec endpoint on the ingress: the Temporal UI and CLI send encrypted payloads to /codec/decode (or
// plain ones to /codec/encode) and get them back through Melvin's payload codec, for operators only.
import { createHmac } from 'node:crypto';
import type { Payload, PayloadCodec } from '@temporalio/common';
import express, { type Request, type Response } from 'express';
import { z } from 'zod';
import { errorMessage } from '../observability/error-message';
import { issuesOf } from '../contract/schemas';
import { sameSecret } from './secrets';

const Base64 = z.string().regex(/^[A-Za-z0-9+/]*={0,2}$/, 'must be base64');

/** The remote codec protocol's body: the proto3 JSON of a `Payloads` message, whose bytes are base64. */
export const CodecRequest = z.object({
  payloads: z.array(z.object({ metadata: z.record(z.string(), Base64).nullish(), data: Base64.nullish() })).max(10_000),
});
export type CodecRequest = z.infer<typeof CodecRequest>;

/**
 * The credential of the codec endpoint's path form (`/codec/<token>/decode`), for the Temporal UI, which sends no
 * Authorization header unless it has its own login. Derived from ADMIN_API_TOKEN rather than equal to it: the UI hands
 * its codec endpoint to every browser that opens it, and a leak then lets someone decode, not escalate or reply.
 */
export function codecPathToken(adminApiToken: string): string {
  return createHmac('sha256', adminApiToken).update('melvin codec endpoint').digest('base64url');
}

/** What the Temporal UI is given as its codec endpoint (`--ui-codec-endpoint`, or its `codec.endpoint` setting). */
export function codecEndpointUrl(ingressUrl: string, adminApiToken: string): string {
  return `${ingressUrl.replace(/\/+$/, '')}/codec/${codecPathToken(adminApiToken)}`;
}

/**
 * A codec request's largest body: a page of the UI's event history, or a CLI's whole history, in base64 JSON. It is
 * read only once the caller is known to hold a token.
 */
export const MAX_CODEC_BODY_BYTES = 4 * 1024 * 1024;

const toPayload = (p: CodecRequest['payloads'][number]): Payload => ({
  metadata: Object.fromEntries(Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v, 'base64')])),
  data: Buffer.from(p.data ?? '', 'base64'),
});

const toJson = (p: Payload) => ({
  metadata: Object.fromEntries(
    Object.entries(p.metadata ?? {}).map(([k, v]) => [k, Buffer.from(v).toString('base64')]),
  ),
  data: Buffer.from(p.data ?? new Uint8Array()).toString('base64'),
});

async function chain(
  codecs: readonly PayloadCodec[],
  payloads: Payload[],
  step: (codec: PayloadCodec, payloads: Payload[]) => Promise<Payload[]>,
): Promise<Payload[]> {
  for (const codec of codecs) payloads = await step(codec, payloads);
  return payloads;
}

export interface CodecRouteOptions {
  /** The codecs of the ingress's own Temporal client: the endpoint decodes exactly what the workers encode. */
  codecs: readonly PayloadCodec[];
  adminApiToken?: string;
  /** Origins whose pages (the Temporal UI) may call the endpoint from a browser. */
  allowedOrigins: readonly string[];
  /** The operator API's bearer check, for callers that can send a header (the Temporal CLI's --codec-auth). */
  operatorAllowed: (req: Request, res: Response) => boolean;
}

export function codecRoutes(options: CodecRouteOptions): express.Router {
  const router = express.Router();
  const pathToken = options.adminApiToken ? codecPathToken(options.adminApiToken) : undefined;

  // CORS on every answer, refusals included, so the UI can show why; the preflight carries no credentials and grants
  // nothing by itself.
  router.use('/codec', (req, res, next) => {
    const origin = req.header('origin');
    if (origin && options.allowedOrigins.includes(origin)) {
      res.set({
        'access-control-allow-origin': origin,
        'access-control-allow-methods': 'POST, OPTIONS',
        'access-control-allow-headers': 'authorization, content-type, x-namespace',
        'access-control-max-age': '600',
        vary: 'origin',
      });
    }
    if (req.method === 'OPTIONS') return res.status(204).end();
    next();
  });

  /** Checks the caller before the body is read, so nobody without a token makes the ingress parse megabytes. */
  const guard =
    (allowed: (req: Request, res: Response) => boolean): express.RequestHandler =>
    (req, res, next) => {
      if (allowed(req, res)) next();
    };

  const handle =
    (direction: 'encode' | 'decode'): express.RequestHandler =>
    async (req, res) => {
      const body = CodecRequest.safeParse(req.body);
      if (!body.success) {
        return res.status(400).json({
          error: 'the body must be {"payloads":[{"metadata":{…},"data":"<base64>"}]}',
          issues: issuesOf(body.error),
        });
      }
      const payloads = body.data.payloads.map(toPayload);
      try {
        // Encoding runs the codecs in order and decoding in reverse, as the SDK does.
        const result =
          direction === 'encode'
            ? await chain(options.codecs, payloads, (codec, p) => codec.encode(p))
            : await chain([...options.codecs].reverse(), payloads, (codec, p) => codec.decode(p));
        res.set('cache-control', 'no-store').json({ payloads: result.map(toJson) });
      } catch (err) {
        res.status(400).json({ error: errorMessage(err) });
      }
    };

  const pathTokenAllowed = (req: Request, res: Response): boolean => {
    if (!pathToken) {
      res.status(503).json({ error: 'the codec endpoint is disabled: ADMIN_API_TOKEN is not set' });
      return false;
    }
    if (!sameSecret(String(req.params.token), pathToken)) {
      res.status(401).json({ error: 'the codec endpoint path carries no valid token' });
      return false;
    }
    return true;
  };

  const json = express.json({ limit: MAX_CODEC_BODY_BYTES });
  for (const direction of ['encode', 'decode'] as const) {
    router.post(`/codec/${direction}`, guard(options.operatorAllowed), json, handle(direction));
  }
  // The path token travels in URLs to every browser that opens the UI, so it only decodes: producing ciphertext under
  // the production key takes the operator token itself.
  router.post('/codec/:token/decode', guard(pathTokenAllowed), json, handle('decode'));
  return router;
}
