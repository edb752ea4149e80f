// Gates let the scenario runner act "after a node": the sandbox holds one request until the runner has sent its signal.
import type { RequestHandler } from 'express';

/**
 * `at: kind` holds the first request of that kind; `after: kind` holds the first request of any kind that arrives after
 * a response of that kind was sent. Kinds are `intercom:<operation>`, `mcp:<tool>`, `llm:<step>` and `validation`;
 * a gate's kind matches by prefix, so `mcp` is any tool call.
 */
export interface GateSpec {
  at?: string;
  after?: string;
}

export class Gates {
  private armed: (GateSpec & { triggered: boolean }) | undefined;
  /** Requests in flight right now, by kind: what a crash at this moment would interrupt. */
  private readonly active = new Map<string, number>();
  private held: { kind: string; release: () => void } | undefined;

  arm(spec: GateSpec): void {
    if (!spec.at === !spec.after) throw new Error('a gate needs exactly one of "at" and "after"');
    this.release();
    this.armed = { ...spec, triggered: false };
  }

  status(): { armed: GateSpec | null; held: string | null } {
    return {
      armed: this.armed ? { at: this.armed.at, after: this.armed.after } : null,
      held: this.held?.kind ?? null,
    };
  }

  inFlight(): Record<string, number> {
    return Object.fromEntries([...this.active].filter(([, count]) => count > 0));
  }

  /** Lets the held request go on and disarms the gate. */
  release(): void {
    this.held?.release();
    this.held = undefined;
    this.armed = undefined;
  }

  /** Resolves when the request may proceed: at once, or when the runner releases it. */
  enter(kind: string): Promise<void> {
    const gate = this.armed;
    if (!gate || this.held) return Promise.resolve();
    const matches = gate.at ? kind.startsWith(gate.at) : gate.triggered;
    if (!matches) return Promise.resolve();
    return new Promise((resolve) => {
      this.held = { kind, release: resolve };
    });
  }

  exit(kind: string): void {
    if (this.armed?.after && kind.startsWith(this.armed.after)) this.armed.triggered = true;
  }

  /** Express middleware for a service: `kindOf` names the request, or returns undefined for requests gates ignore. */
  middleware(kindOf: (req: Parameters<RequestHandler>[0]) => string | undefined): RequestHandler {
    return (req, res, next) => {
      const kind = kindOf(req);
      if (!kind) return next();
      this.active.set(kind, (this.active.get(kind) ?? 0) + 1);
      res.on('close', () => this.active.set(kind, (this.active.get(kind) ?? 1) - 1));
      res.on('finish', () => this.exit(kind));
      this.enter(kind).then(() => next(), next);
    };
  }
}
