// Load: conversations delivered through the ingress within a window, against sandbox services with realistic latency.
import { readFileSync } from 'node:fs';
import { Harness, percentile } from '../harness/harness';
import { check, seconds, type Report } from '../harness/report';

/** The process's peak resident set (VmHWM), in MiB; Linux only. */
function peakRssMiB(pid: number | undefined): number {
  if (!pid) return NaN;
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const kb = Number(/^VmHWM:\s+(\d+) kB$/m.exec(status)?.[1]);
  return Math.round(kb / 1024);
}

export async function load(options: {
  conversations: number;
  windowMs: number;
  llm: [number, number];
  tools: [number, number];
}): Promise<Report> {
  const harness = new Harness({ latency: { llm: options.llm, tools: options.tools } });
  await harness.start();
  try {
    const conversations = Array.from({ length: options.conversations }, () => harness.addConversation('payment'));
    const firstDelivery = Date.now();
    const gap = options.windowMs / options.conversations;
    await Promise.all(
      conversations.map(
        (c, i) =>
          new Promise<void>((resolve, reject) => setTimeout(() => harness.deliver(c).then(resolve, reject), i * gap)),
      ),
    );
    const deliveredWithin = Date.now() - firstDelivery;
    await harness.waitForAll(600_000);
    const peak = peakRssMiB(harness.workerPid);
    const outcomes = await harness.outcomes();
    const completed = outcomes.filter((o) => o.closed && o.correct);
    const turnMs = new Map(
      outcomes.map((o) => [o.id, (o.closeTime ?? NaN) - conversations.find((c) => c.id === o.id)!.deliveredAt!]),
    );
    const lastClose = Math.max(...outcomes.map((o) => o.closeTime ?? 0));

    const ratios: number[] = [];
    for (const c of conversations) {
      const critical = harness.criticalPathMs(c);
      if (critical > 0) ratios.push(turnMs.get(c.id)! / critical);
    }
    const turns = [...turnMs.values()].filter(Number.isFinite);
    const acks = conversations.map((c) => c.ackMs!);
    const ms = (value: number) => `${Math.round(value)} ms`;
    return {
      experiment: 'load',
      figures: [
        ['conversations delivered', `${options.conversations} in ${seconds(deliveredWithin)}`],
        ['sandbox latency', `LLM ${options.llm.join('–')} ms a call, tools ${options.tools.join('–')} ms`],
        ['completed with the right status', `${completed.length} / ${options.conversations}`],
        ['throughput', `${(completed.length / ((lastClose - firstDelivery) / 1000)).toFixed(1)} turns/s`],
        [
          'turn latency p50 / p95 / p99',
          `${ms(percentile(turns, 50))} / ${ms(percentile(turns, 95))} / ${ms(percentile(turns, 99))}`,
        ],
        ['ingress ack p50 / p99', `${ms(percentile(acks, 50))} / ${ms(percentile(acks, 99))}`],
        ['worker peak RSS', `${peak} MiB`],
        [
          'turn latency ÷ sandbox critical path, p50 / p95',
          `${percentile(ratios, 50).toFixed(2)} / ${percentile(ratios, 95).toFixed(2)}`,
        ],
      ],
      checks: [
        check(
          `${options.conversations} conversations delivered within ${seconds(options.windowMs + 2000)}`,
          deliveredWithin <= options.windowMs + 2000,
        ),
        check('every conversation completed with the right status', completed.length === options.conversations),
      ],
    };
  } finally {
    await harness.stop();
  }
}
