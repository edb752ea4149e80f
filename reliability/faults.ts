// Experiments where something breaks mid-run: the worker killed with SIGKILL, the Temporal server restarted, and the
// services Melvin depends on failing. Every run must still end with the right status, and exactly one reply where due.
import type { GateSpec } from '../sandbox/gates';
import { pause, waitFor } from '../sandbox/wait';
import { Harness, type Outcome } from '../harness/harness';
import { check, seconds, type Report } from '../harness/report';

const LATENCY = { llm: [200, 500] as [number, number], tools: [50, 150] as [number, number] };

/** Waits until the sandbox has a request whose kind starts with `prefix` in flight. */
function whenInFlight(harness: Harness, prefix: string): Promise<boolean> {
  return waitFor(
    `a ${prefix} request in flight`,
    () => Object.keys(harness.sandbox.gates.inFlight()).some((kind) => kind.startsWith(prefix)),
    { timeoutMs: 60_000, intervalMs: 10 },
  );
}

/** Starts delivering `conversations` in the background, `gapMs` apart. */
function deliverAll(harness: Harness, gapMs: number): Promise<void> {
  return (async () => {
    for (const conversation of harness.conversations) {
      await harness.deliver(conversation);
      await pause(gapMs);
    }
  })();
}

function outcomeChecks(outcomes: Outcome[]) {
  const duplicateReplies = outcomes.reduce((n, o) => n + Math.max(0, o.replies - 1), 0);
  const duplicateNotes = outcomes.reduce((n, o) => n + Math.max(0, o.escalationNotes - 1, o.repeatedNotes), 0);
  const completed = outcomes.filter((o) => o.closed).length;
  const wrong = outcomes
    .filter((o) => !o.correct)
    .map(
      (o) =>
        `${o.id}: ${o.status}, ${o.replies} replies, ${o.escalationNotes} notes` +
        (o.escalation ? ` (${o.escalation})` : ''),
    );
  return {
    figures: [
      ['runs completed / started', `${completed} / ${outcomes.length}`],
      ['runs with the right status and side effects', `${outcomes.length - wrong.length} / ${outcomes.length}`],
      ['duplicate replies', duplicateReplies],
      ['duplicate notes (escalation, or any note posted twice)', duplicateNotes],
    ] as Report['figures'],
    checks: [
      check('every run completed', completed === outcomes.length),
      check('every run ended right', wrong.length === 0, wrong.slice(0, 3).join('; ')),
      check('no reply or note posted twice', duplicateReplies === 0 && duplicateNotes === 0),
    ],
  };
}

const slowest = (outcomes: Outcome[]) =>
  Math.max(...outcomes.map((o) => (o.closeTime && o.startTime ? o.closeTime - o.startTime : Infinity)));

/** Holds the next request matching `spec` at the sandbox's gate and resolves with its kind once it is held. */
function holdAt(harness: Harness, spec: GateSpec): Promise<string> {
  harness.sandbox.gates.arm(spec);
  return waitFor(`a request at the gate ${JSON.stringify(spec)}`, () => harness.sandbox.gates.status().held, {
    timeoutMs: 60_000,
    intervalMs: 10,
  });
}

/**
 * Kills the worker with SIGKILL while a chosen request is in flight (held at the sandbox's gate): a model call, a
 * tool call, a reply (which the sandbox then accepts: the case a naive retry double-posts), and the first write after
 * a reply; then restarts it.
 */
export async function workerCrash(options: { conversations: number; kills: number }): Promise<Report> {
  const harness = new Harness({ latency: LATENCY });
  await harness.start();
  try {
    for (let i = 0; i < options.conversations; i++) harness.addConversation(i % 3 === 2 ? 'human' : 'payment');
    const delivering = deliverAll(harness, 50);
    const moments: GateSpec[] = [
      { at: 'llm:' },
      { at: 'mcp:' },
      { at: 'intercom:reply' },
      { after: 'intercom:reply' },
      { at: 'llm:draft' },
    ];
    const kills: { at: number; during: string }[] = [];
    for (let k = 0; k < options.kills; k++) {
      const spec = moments[k % moments.length]!;
      const held = await holdAt(harness, spec);
      await harness.killWorker();
      kills.push({ at: Date.now(), during: spec.after ? `after ${spec.after} (${held})` : held });
      harness.sandbox.gates.release();
      await harness.startWorker();
    }
    await delivering;
    await harness.waitForAll(240_000);
    const outcomes = await harness.outcomes();
    const allClosed = Math.max(...outcomes.map((o) => o.closeTime ?? Infinity));
    const recovery = allClosed - kills.at(-1)!.at;
    const { figures, checks } = outcomeChecks(outcomes);
    return {
      experiment: 'worker kill -9',
      figures: [
        ['conversations', options.conversations],
        ['kills (what was in flight)', kills.map((k) => k.during || 'idle').join(' · ')],
        ...figures,
        ['recovery: last kill → every run closed', seconds(recovery)],
      ],
      checks,
    };
  } finally {
    await harness.stop();
  }
}

/** Stops the Temporal dev server mid-run (its SQLite file kept) and starts it again. */
export async function serverRestart(options: { conversations: number; downMs: number }): Promise<Report> {
  const harness = new Harness({ latency: LATENCY });
  await harness.start();
  try {
    for (let i = 0; i < options.conversations; i++) harness.addConversation(i % 4 === 3 ? 'human' : 'payment');
    await deliverAll(harness, 20);
    await whenInFlight(harness, 'llm:');
    const stopped = Date.now();
    await harness.restartTemporal(options.downMs);
    const restarted = Date.now();
    await harness.waitForAll(240_000);
    const outcomes = await harness.outcomes();
    const { figures, checks } = outcomeChecks(outcomes);
    return {
      experiment: 'Temporal server restart',
      figures: [
        ['conversations', options.conversations],
        ['server down (stop → serving again)', seconds(restarted - stopped)],
        ...figures,
        ['restart → every run closed', seconds(Math.max(...outcomes.map((o) => o.closeTime ?? Infinity)) - restarted)],
      ],
      checks,
    };
  } finally {
    await harness.stop();
  }
}

/**
 * Three outages, one after another: 30% of Intercom calls fail (429 until X-RateLimit-Reset, 5xx, timeouts, and replies
 * answered 500 after they were posted); the MCP server is stopped during Gather and started again; the model endpoint
 * is down for `llmDownMs`.
 */
export async function dependencyFaults(options: {
  conversations: number;
  llmDownMs: number;
  boundMs: number;
}): Promise<Report> {
  const harness = new Harness({ latency: LATENCY });
  await harness.start();
  const figures: Report['figures'] = [];
  const checks: Report['checks'] = [];
  const phase = async (name: string, count: number, during: () => Promise<string>) => {
    const start = harness.conversations.length;
    for (let i = 0; i < count; i++) harness.addConversation(i % 5 === 4 ? 'human' : 'payment');
    const conversations = harness.conversations.slice(start);
    const delivering = (async () => {
      for (const c of conversations) await harness.deliver(c);
    })();
    const what = await during();
    await delivering;
    await harness.waitForAll(options.boundMs + 60_000, conversations);
    const outcomes = await harness.outcomes(conversations);
    const result = outcomeChecks(outcomes);
    const slowestMs = slowest(outcomes);
    figures.push(
      [`${name}: fault`, what],
      ...result.figures.map(([l, v]) => [`${name}: ${l}`, v] as [string, string | number]),
    );
    figures.push([`${name}: slowest run (bound ${seconds(options.boundMs)})`, seconds(slowestMs)]);
    checks.push(...result.checks.map((c) => ({ ...c, label: `${name}: ${c.label}` })));
    checks.push(check(`${name}: every run ended within ${seconds(options.boundMs)}`, slowestMs <= options.boundMs));
  };
  try {
    const reply = [
      { status: 429, retry_after_s: 1 },
      { status: 503 },
      { status: 500, after_accept: true },
      { delay_ms: 13_000 },
    ];
    const others = [{ status: 429, retry_after_s: 1 }, { status: 502 }, { delay_ms: 13_000 }];
    await phase('Intercom', options.conversations, async () => {
      harness.sandbox.intercom.faults.setRandom(0.3, {
        fetch: others,
        contact: others,
        reply,
        note: others,
        update: others,
        snooze: others,
      });
      return '30% of calls: 429 + X-RateLimit-Reset, 5xx, 13 s timeouts, reply 500 after accept';
    });
    harness.sandbox.intercom.faults.set({});
    const faultCount = harness.sandbox.intercom.requests.filter((r) => r.status >= 400).length;
    figures.push(['Intercom: calls that failed', faultCount]);

    await phase('MCP', Math.max(5, Math.round(options.conversations / 2)), async () => {
      await whenInFlight(harness, 'mcp:');
      await harness.sandbox.mcpService.stop();
      await pause(3_000);
      await harness.sandbox.mcpService.start();
      return 'server stopped during Gather, started 3 s later';
    });

    await phase('LLM', Math.max(5, Math.round(options.conversations / 2)), async () => {
      await whenInFlight(harness, 'llm:');
      await harness.sandbox.model.stop();
      await pause(options.llmDownMs);
      await harness.sandbox.model.start();
      return `endpoint down for ${seconds(options.llmDownMs)}`;
    });
    return { experiment: 'dependency faults', figures, checks };
  } finally {
    await harness.stop();
  }
}
