// The ingress's durable outbox (INGRESS_OUTBOX_DIR): a verified delivery is appended to a journal on disk and synced
// before Intercom gets its 202, and a forwarder hands it to Temporal afterwards, so a burst is acknowledged at the
// speed of the disk and drained at the speed of the server.
import { mkdir, open, readFile, rename, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { PayloadCodec } from '@temporalio/common';
import { temporal } from '@temporalio/proto';
import { z } from 'zod';
import { MissingPayloadKeyError } from '../encryption/payload-codec';
import { errorMessage } from '../observability/error-message';
import { logEvent } from '../observability/log';
import { issuesOf } from '../contract/schemas';
import type { TeamAction } from '../contract/shared';
import type { Trigger } from '../contract/vocabulary';

const TriggerSchema = z.object({
  topic: z.string(),
  notificationId: z.string().min(1),
  receivedAt: z.string(),
}) satisfies z.ZodType<Trigger>;
const TeamActionSchema = z.object({
  notificationId: z.string().min(1),
  action: z.enum(['replied', 'assigned', 'closed']),
  toMelvin: z.boolean().optional(),
  text: z.string().optional(),
  by: z.string().optional(),
  at: z.string().optional(),
}) satisfies z.ZodType<TeamAction>;

/** One delivery to forward, as the webhook built it: a user's message (signal-with-start) or a teammate's action. */
export const OutboxEntry = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('message'),
    conversationId: z.string().min(1),
    trigger: TriggerSchema,
    partId: z.string().optional(),
    message: z.object({ author: z.string().nullable(), text: z.string() }).optional(),
  }),
  z.object({ kind: z.literal('team'), conversationId: z.string().min(1), action: TeamActionSchema }),
]);
export type OutboxEntry = z.infer<typeof OutboxEntry>;

/** `at`: when the delivery was accepted (epoch ms), so an operator sees how long the oldest has waited. */
const JournalLine = z.object({ seq: z.number().int().positive(), at: z.number(), entry: OutboxEntry });
type JournalLine = z.infer<typeof JournalLine>;
/** A line as written with a codec: the entry sealed (base64 of an encrypted Temporal payload), its place in the clear. */
const SealedLine = z.object({ seq: z.number().int().positive(), at: z.number(), sealed: z.string().min(1) });

/** What became of a forwarded entry: Temporal took it, there was nothing to do, or it refused it for good. */
export type Forwarded = 'signalled' | 'ignored';

export class OutboxRejection extends Error {
  override name = 'OutboxRejection';
}

export interface OutboxOptions {
  dir: string;
  /**
   * Hands one entry to Temporal. Resolves when Temporal has it; throws `OutboxRejection` when Temporal refused it in a
   * way no retry can change (the entry goes to rejected.jsonl), anything else to be tried again later.
   */
  forward: (entry: OutboxEntry) => Promise<Forwarded>;
  /** Entries handed to Temporal at once (each a signal-with-start); a conversation's own entries go one at a time. */
  concurrency?: number;
  /**
   * The journal is emptied once everything in it is forwarded and it is larger than this, or was last emptied
   * `compactAfterMs` ago (60 s by default): a forwarded message's text does not stay on disk much longer than that.
   */
  compactBytes?: number;
  compactAfterMs?: number;
  /**
   * The first pause after a forward failed (doubling to 10 s while it keeps failing); 100 ms by default. The pause holds
   * back the entry's own conversation, or every conversation once forwards of two of them have failed in a row.
   */
  firstRetryMs?: number;
  /** How much of the journal recovery reads at once (1 MiB by default; tests make it small). */
  readChunkBytes?: number;
  /** Called once per entry when it leaves the outbox (for the metrics). */
  onForwarded?: (entry: OutboxEntry, outcome: Forwarded | 'rejected') => void;
  /**
   * Seals each entry before it is written (the journal and rejected.jsonl), as Temporal's payloads are sealed: the
   * ingress passes its MELVIN_PAYLOAD_KEYS codec. Lines written without one are still read.
   */
  codec?: PayloadCodec;
}

const JOURNAL = 'journal.jsonl';
const CHECKPOINT = 'forwarded';
const REJECTED = 'rejected.jsonl';
const FIRST_RETRY_MS = 100;
const MAX_RETRY_MS = 10_000;
/** The files hold talents' names and messages: readable by the ingress's own user only (the directory too). */
const PRIVATE_FILE = 0o600;
const PRIVATE_DIR = 0o700;

/**
 * The journal holds lines `{seq, entry}`; the checkpoint file holds the highest `seq` below which every entry has been
 * forwarded. Sequence numbers never restart, so emptying the journal never makes the checkpoint wrong. A crash can send
 * an entry a second time (forwarded, checkpoint not yet written): Intercom redelivers too, and the workflow's ledger
 * ignores a notification it has seen.
 */
export class Outbox {
  private journal!: FileHandle;
  private journalBytes = 0;
  private nextSeq = 1;
  private checkpoint = 0;
  /** Appended and synced, not yet forwarded, in sequence order. */
  private readonly pending: JournalLine[] = [];
  private readonly inFlight = new Set<number>();
  private readonly busyConversations = new Set<string>();
  private readonly done = new Set<number>();
  private waiting: { line: string; resolve: () => void; reject: (err: unknown) => void }[] = [];
  private flushing = false;
  /** The whole forwarder waits until then: forwards of different conversations failed in a row, so Temporal is. */
  private retryAt = 0;
  private retryDelayMs: number;
  /** Conversations whose last forward failed: when they may be tried again, and how long the next failure waits. */
  private readonly heldConversations = new Map<string, { until: number; nextDelayMs: number }>();
  /** Conversations whose forwards failed since the last one that did not. */
  private readonly failingInARow = new Set<string>();
  private retryTimer: NodeJS.Timeout | undefined;
  private checkpointWrite: Promise<void> = Promise.resolve();
  private checkpointQueued = false;
  /** Set by `close`: nothing new is forwarded. */
  private stopping = false;
  private closed = false;
  private readonly concurrency: number;
  private readonly compactBytes: number;
  private readonly compactAfterMs: number;
  private lastCompactedAt = Date.now();
  private compactTimer: NodeJS.Timeout | undefined;

  private constructor(private readonly options: OutboxOptions) {
    this.concurrency = options.concurrency ?? 8;
    this.compactBytes = options.compactBytes ?? 8 * 1024 * 1024;
    this.compactAfterMs = options.compactAfterMs ?? 60_000;
    this.retryDelayMs = options.firstRetryMs ?? FIRST_RETRY_MS;
  }

  /** Opens (or creates) the outbox in `options.dir` and starts forwarding what an earlier process left in it. */
  static async open(options: OutboxOptions): Promise<Outbox> {
    const outbox = new Outbox(options);
    await outbox.recover();
    outbox.pump();
    return outbox;
  }

  /** Entries accepted and not yet forwarded, and how long the oldest has waited. */
  get backlog(): { pending: number; oldestSeconds: number } {
    const oldest = this.pending[0]?.at;
    // Entries forwarded behind one still waiting stay in `pending` until the checkpoint can pass them: not backlog.
    const waiting = this.pending.length - this.done.size;
    return { pending: waiting, oldestSeconds: oldest === undefined ? 0 : (Date.now() - oldest) / 1000 };
  }

  /** Resolves once the entry is on disk (synced): only then may the delivery be acknowledged. */
  async append(entry: OutboxEntry): Promise<void> {
    if (this.closed) throw new Error('the outbox is closed');
    // Sealed before its number is taken: lines must reach the file in the order of their numbers.
    const body = this.options.codec ? { sealed: await seal(this.options.codec, entry) } : { entry };
    if (this.closed) throw new Error('the outbox is closed');
    const line: JournalLine = { seq: this.nextSeq++, at: Date.now(), entry };
    await new Promise<void>((resolve, reject) => {
      this.waiting.push({ line: `${JSON.stringify({ seq: line.seq, at: line.at, ...body })}\n`, resolve, reject });
      void this.flush();
    });
    this.pending.push(line);
    this.pump();
  }

  /** Resolves when every entry accepted so far is forwarded (or rejected); for tests and the bench. */
  async drained(pollMs = 20): Promise<void> {
    while (this.pending.length > 0 || this.waiting.length > 0 || this.flushing) {
      await new Promise((r) => setTimeout(r, pollMs));
    }
    await this.checkpointWrite;
  }

  /**
   * Stops forwarding and closes the journal; what is not forwarded stays in it for the next process. Forwards in
   * flight get `graceMs` to finish, so a clean stop does not send them twice.
   */
  async close(graceMs = 2_000): Promise<void> {
    const until = Date.now() + graceMs;
    this.stopping = true;
    clearTimeout(this.retryTimer);
    clearTimeout(this.compactTimer);
    while ((this.inFlight.size > 0 && Date.now() < until) || this.flushing) await new Promise((r) => setTimeout(r, 5));
    this.closed = true;
    await this.checkpointWrite;
    await this.journal.close();
  }

  private file(name: string): string {
    return path.join(this.options.dir, name);
  }

  /**
   * Reads the checkpoint and the journal; a last line cut short by a crash was never acknowledged and is cut off. A line
   * that no longer parses is moved to rejected.jsonl (synced there first), then the journal is written again without
   * it, so the next start does not reject it a second time.
   */
  private async recover(): Promise<void> {
    await mkdir(this.options.dir, { recursive: true, mode: PRIVATE_DIR });
    const checkpointText = await readFile(this.file(CHECKPOINT), 'utf8').catch((err: NodeJS.ErrnoException) => {
      // Forwarding from the start again is harmless (the workflows ignore what they have seen); stopping is not.
      if (err.code !== 'ENOENT') logEvent('error', 'outbox checkpoint unreadable', { reason: errorMessage(err) });
      return '0';
    });
    this.checkpoint = Number.parseInt(checkpointText, 10) || 0;
    let maxSeq = this.checkpoint;
    const rejected = new Set<number>();
    /** Unsent lines written in the clear (before the ingress had keys): the journal is written again, them sealed. */
    const toSeal = new Set<number>();
    /** Lines already forwarded: a journal written again leaves them out. */
    const forwarded = new Set<number>();
    const onLine = async (raw: string, index: number) => {
      const onDisk = safeJson(raw);
      const json = await this.inTheClear(onDisk, index);
      const parsed = JournalLine.safeParse(json);
      if (!parsed.success) {
        const reason = `unreadable journal line at ${this.file(JOURNAL)} line ${index}`;
        const unread = Unreadable.safeParse(json);
        const why = unread.success ? unread.data.unreadable : JSON.stringify(issuesOf(parsed.error));
        await this.reject(raw, `${reason}: ${why}`);
        logEvent('error', 'outbox journal line unreadable', { reason, rejected_file: this.file(REJECTED) });
        rejected.add(index);
        return;
      }
      maxSeq = Math.max(maxSeq, parsed.data.seq);
      if (parsed.data.seq <= this.checkpoint) forwarded.add(index);
      else {
        this.pending.push(parsed.data);
        if (this.options.codec && !SealedLine.safeParse(onDisk).success) toSeal.add(index);
      }
    };
    let { completeBytes, fileBytes } = await readJournal(this.file(JOURNAL), onLine, this.options.readChunkBytes);
    this.nextSeq = maxSeq + 1;
    if (rejected.size || toSeal.size) {
      completeBytes = await this.rewrite(new Set([...rejected, ...forwarded]), toSeal);
      fileBytes = completeBytes;
    }
    this.journal = await open(this.file(JOURNAL), 'a+', PRIVATE_FILE);
    if (completeBytes !== fileBytes) await this.journal.truncate(completeBytes);
    this.journalBytes = completeBytes;
    // A journal just created (or written again) is only durable once its directory entry is.
    await syncFile(this.options.dir);
  }

  /**
   * A journal line's JSON with its entry in the clear: a sealed line is opened with the codec. A line sealed with a key
   * this process lacks stops the start (the keys are wrong, not the line); one that does not open is returned as it
   * is, to be refused as unreadable.
   */
  private async inTheClear(json: unknown, lineNumber: number): Promise<unknown> {
    const sealed = SealedLine.safeParse(json);
    if (!sealed.success) return json;
    try {
      if (!this.options.codec) throw new MissingPayloadKeyError('the line is sealed, and MELVIN_PAYLOAD_KEYS is unset');
      return { seq: sealed.data.seq, at: sealed.data.at, entry: await unseal(this.options.codec, sealed.data.sealed) };
    } catch (err) {
      if (err instanceof MissingPayloadKeyError) {
        throw new Error(
          `the outbox cannot open ${this.file(JOURNAL)} line ${lineNumber} (${err.message}): it does not start ` +
            'rather than set aside deliveries it acknowledged; give it the key and start again',
          { cause: err },
        );
      }
      return { unreadable: errorMessage(err) };
    }
  }

  /** A line as the journal holds it: sealed when the outbox has a codec. */
  private async lineText(line: JournalLine): Promise<string> {
    const { codec } = this.options;
    return JSON.stringify(codec ? { seq: line.seq, at: line.at, sealed: await seal(codec, line.entry) } : line);
  }

  /**
   * Writes the journal again without the lines numbered in `dropped` and with those in `toSeal` sealed, as
   * `replaceFile` does, a line at a time; its size.
   */
  private async rewrite(dropped: Set<number>, toSeal: Set<number>): Promise<number> {
    const temporary = `${this.file(JOURNAL)}.tmp`;
    const handle = await open(temporary, 'w', PRIVATE_FILE);
    let bytes = 0;
    const keep = async (raw: string, lineNumber: number) => {
      if (dropped.has(lineNumber)) return;
      const text = toSeal.has(lineNumber) ? await this.lineText(JournalLine.parse(safeJson(raw))) : raw;
      await handle.write(`${text}\n`);
      bytes += Buffer.byteLength(text) + 1;
    };
    try {
      await readJournal(this.file(JOURNAL), keep, this.options.readChunkBytes);
      await handle.sync();
    } finally {
      await handle.close();
    }
    await rename(temporary, this.file(JOURNAL));
    return bytes;
  }

  /** Group commit: every append waiting when a flush starts shares its one write and one sync. */
  private async flush(): Promise<void> {
    if (this.flushing) return;
    this.flushing = true;
    try {
      while (this.waiting.length > 0) {
        const batch = this.waiting;
        this.waiting = [];
        try {
          const data = batch.map((w) => w.line).join('');
          await this.journal.appendFile(data);
          await this.journal.datasync();
          this.journalBytes += Buffer.byteLength(data);
          for (const w of batch) w.resolve();
        } catch (err) {
          // Cut off whatever part of the batch reached the file, so the next batch does not follow a broken line.
          await this.journal.truncate(this.journalBytes).catch(() => undefined);
          for (const w of batch) w.reject(err);
        }
      }
    } finally {
      this.flushing = false;
    }
  }

  /**
   * Starts forwarding every pending entry it may: within the concurrency, one at a time per conversation, none of a
   * conversation held back after a failure, none at all while the whole forwarder is paused.
   */
  private pump(): void {
    if (this.stopping) return;
    const now = Date.now();
    // Node's timers run on a monotonic clock in whole milliseconds, so a pause's timer can fire up to a millisecond
    // before Date.now() reaches its end: the rest is waited out, or nothing would wake the forwarder.
    if (this.retryAt > now) return this.wakeIn(this.retryAt - now);
    let firstHoldEnds = Infinity;
    for (const line of this.pending) {
      if (this.inFlight.size >= this.concurrency) return;
      if (this.inFlight.has(line.seq) || this.done.has(line.seq)) continue;
      const conversation = line.entry.conversationId;
      if (this.busyConversations.has(conversation)) continue;
      const held = this.heldConversations.get(conversation);
      if (held && held.until > now) {
        firstHoldEnds = Math.min(firstHoldEnds, held.until);
        continue;
      }
      this.inFlight.add(line.seq);
      this.busyConversations.add(conversation);
      void this.forwardOne(line);
    }
    if (firstHoldEnds < Infinity) this.wakeIn(firstHoldEnds - now);
  }

  private async forwardOne(line: JournalLine): Promise<void> {
    try {
      const outcome = await this.options.forward(line.entry);
      // Closed meanwhile: the journal still holds the entry, and the next process forwards it again (harmlessly).
      if (this.closed) return;
      this.options.onForwarded?.(line.entry, outcome);
      this.answered(line);
      this.settle(line);
    } catch (err) {
      if (err instanceof OutboxRejection) {
        try {
          await this.reject(await this.lineText(line), err.message);
        } catch (writeErr) {
          // Kept nowhere else: the entry stays in the journal and is tried again after a pause; the ingress stays up.
          logEvent('error', 'outbox rejected entry not written', {
            conversation_id: line.entry.conversationId,
            rejected_file: this.file(REJECTED),
            reason: errorMessage(writeErr),
          });
          this.holdBack(line, errorMessage(writeErr), 'the rejected file cannot be written');
          return;
        }
        logEvent('error', 'outbox entry rejected by Temporal', {
          conversation_id: line.entry.conversationId,
          reason: err.message,
          rejected_file: this.file(REJECTED),
        });
        this.options.onForwarded?.(line.entry, 'rejected');
        this.answered(line);
        this.settle(line);
      } else {
        this.holdBack(line, errorMessage(err));
      }
    } finally {
      this.inFlight.delete(line.seq);
      this.busyConversations.delete(line.entry.conversationId);
      this.pump();
    }
  }

  /** Temporal answered for this entry (took it or refused it): its conversation, and the forwarder, are not held back. */
  private answered(line: JournalLine): void {
    this.heldConversations.delete(line.entry.conversationId);
    this.failingInARow.clear();
    this.retryDelayMs = this.options.firstRetryMs ?? FIRST_RETRY_MS;
  }

  /**
   * Forwarding failed: the entry's conversation waits (its order must hold), the others go on, so one entry Temporal
   * cannot take does not hold back every teammate's takeover. Once forwards of two conversations have failed with none
   * succeeding between, the fault is Temporal's (or the disk's), and everything waits, so a dead server is not hammered.
   */
  private holdBack(line: JournalLine, reason: string, why = 'Temporal unavailable'): void {
    const conversation = line.entry.conversationId;
    const now = Date.now();
    const delayMs =
      this.heldConversations.get(conversation)?.nextDelayMs ?? this.options.firstRetryMs ?? FIRST_RETRY_MS;
    this.heldConversations.set(conversation, {
      until: now + delayMs,
      nextDelayMs: Math.min(delayMs * 2, MAX_RETRY_MS),
    });
    this.failingInARow.add(conversation);
    const fields = { conversation_id: conversation, pending: this.pending.length, reason };
    if (this.failingInARow.size < 2) {
      logEvent('warn', `outbox conversation held back: ${why}`, { ...fields, retry_in_ms: delayMs });
      return;
    }
    // Forwards in flight when the pause began fail too: they do not lengthen it.
    if (this.retryAt > now) return;
    const pauseMs = this.retryDelayMs;
    this.retryDelayMs = Math.min(this.retryDelayMs * 2, MAX_RETRY_MS);
    this.retryAt = now + pauseMs;
    logEvent('warn', `outbox forwarding paused: ${why}`, { ...fields, retry_in_ms: pauseMs });
  }

  /** Runs `pump` again in `ms`, in place of any wake-up already set (a pause's end or a retry's). */
  private wakeIn(ms: number): void {
    clearTimeout(this.retryTimer);
    this.retryTimer = setTimeout(() => this.pump(), ms);
  }

  /** An entry is done: the checkpoint moves over every done entry at the front of the queue. */
  private settle(line: JournalLine): void {
    this.done.add(line.seq);
    let advanced = false;
    while (this.pending.length > 0 && this.done.has(this.pending[0]!.seq)) {
      const first = this.pending.shift()!;
      this.done.delete(first.seq);
      this.checkpoint = first.seq;
      advanced = true;
    }
    if (advanced) this.saveCheckpoint();
  }

  /** Writes the checkpoint (a new file renamed over the old, so it is never half written), then empties a big journal. */
  private saveCheckpoint(): void {
    // One write waiting is enough: it writes the checkpoint as it is when it starts, not as it was when asked.
    if (this.checkpointQueued) return;
    this.checkpointQueued = true;
    this.checkpointWrite = this.checkpointWrite.then(async () => {
      this.checkpointQueued = false;
      const seq = this.checkpoint;
      try {
        // Not synced: a checkpoint lost to a power cut only sends a few entries again, which is harmless.
        await replaceFile(this.file(CHECKPOINT), String(seq), { sync: false });
        const empty = this.pending.length === 0 && this.waiting.length === 0 && !this.flushing;
        if (!empty || seq !== this.nextSeq - 1 || this.journalBytes === 0 || this.closed) return;
        const dueInMs = this.lastCompactedAt + this.compactAfterMs - Date.now();
        if (this.journalBytes <= this.compactBytes && dueInMs > 0) {
          // Idle with forwarded lines on disk: they go when their time is up, even if nothing else comes.
          clearTimeout(this.compactTimer);
          this.compactTimer = setTimeout(() => this.saveCheckpoint(), dueInMs).unref();
          return;
        }
        // Holds the flush lock: an append must not reach the file between the check and the truncation.
        this.flushing = true;
        try {
          await this.journal.truncate(0);
          this.journalBytes = 0;
          this.lastCompactedAt = Date.now();
        } finally {
          this.flushing = false;
          void this.flush();
        }
      } catch (err) {
        // The next checkpoint writes it again; until then a restart forwards a few entries twice, which is harmless.
        logEvent('warn', 'outbox checkpoint not written', { reason: errorMessage(err) });
      }
    });
  }

  /**
   * Keeps what was refused in rejected.jsonl, synced: once the checkpoint passes it and the journal is emptied, that line
   * is the only copy left for an operator.
   */
  private async reject(raw: string, reason: string): Promise<void> {
    const handle = await open(this.file(REJECTED), 'a', PRIVATE_FILE);
    try {
      await handle.appendFile(`${JSON.stringify({ at: new Date().toISOString(), reason, raw })}\n`);
      await handle.sync();
    } finally {
      await handle.close();
    }
  }
}

/**
 * Hands each complete, non-empty line of the journal (without its newline) to `onLine` with its line number, reading
 * `chunkBytes` at a time: a journal may be larger than one string can hold. A last line without its newline is left
 * out (`completeBytes` < `fileBytes`). No journal is an empty one; a journal that cannot be read is an error that says
 * so: taken for empty, its unsent entries would be cut off by the next compaction.
 */
async function readJournal(
  file: string,
  onLine: (raw: string, lineNumber: number) => Promise<void>,
  chunkBytes = 1 << 20,
): Promise<{ completeBytes: number; fileBytes: number }> {
  let handle: FileHandle;
  let completeBytes = 0;
  let fileBytes = 0;
  try {
    handle = await open(file, 'r');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { completeBytes, fileBytes };
    throw unreadable(file, err);
  }
  try {
    const chunk = Buffer.alloc(chunkBytes);
    let carry: Buffer[] = [];
    let lineNumber = 0;
    for (;;) {
      const { bytesRead } = await handle.read(chunk, 0, chunkBytes, null).catch((err: unknown) => {
        throw unreadable(file, err);
      });
      if (bytesRead === 0) break;
      fileBytes += bytesRead;
      let start = 0;
      for (let at = chunk.indexOf(10, 0); at !== -1 && at < bytesRead; at = chunk.indexOf(10, start)) {
        const line = carry.length ? Buffer.concat([...carry, chunk.subarray(start, at)]) : chunk.subarray(start, at);
        carry = [];
        lineNumber += 1;
        completeBytes += line.length + 1;
        if (line.length) await onLine(line.toString('utf8'), lineNumber);
        start = at + 1;
      }
      if (start < bytesRead) carry.push(Buffer.from(chunk.subarray(start, bytesRead)));
    }
    return { completeBytes, fileBytes };
  } finally {
    await handle.close();
  }
}

function unreadable(file: string, err: unknown): Error {
  return new Error(
    `the outbox cannot read ${file} (${errorMessage(err)}): it does not start rather than take the journal for ` +
      'empty and lose the deliveries it acknowledged; fix the file or the disk and start again',
    { cause: err },
  );
}

/** Flushes a file, or a directory's entries, to disk. */
async function syncFile(file: string): Promise<void> {
  const handle = await open(file, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
}

/**
 * Writes `text` to a new file (synced unless told not to), then renames it over `file`: a crash leaves the old file or
 * the new one, whole.
 */
async function replaceFile(file: string, text: string, options = { sync: true }): Promise<void> {
  const temporary = `${file}.tmp`;
  const handle = await open(temporary, 'w', PRIVATE_FILE);
  try {
    await handle.writeFile(text);
    if (options.sync) await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, file);
}

/** The entry as the base64 of a Temporal payload the codec sealed: one key list, and its rotation, for both stores. */
async function seal(codec: PayloadCodec, entry: OutboxEntry): Promise<string> {
  const plain = { metadata: { encoding: JSON_PLAIN }, data: Buffer.from(JSON.stringify(entry)) };
  const [sealed] = await codec.encode([plain]);
  return Buffer.from(temporal.api.common.v1.Payload.encode(sealed!).finish()).toString('base64');
}

async function unseal(codec: PayloadCodec, text: string): Promise<unknown> {
  const payload = temporal.api.common.v1.Payload.decode(Buffer.from(text, 'base64'));
  const [opened] = await codec.decode([payload]);
  return JSON.parse(Buffer.from(opened!.data ?? new Uint8Array()).toString('utf8'));
}

const JSON_PLAIN = new TextEncoder().encode('json/plain');

/** What `safeJson` and `inTheClear` give for a line that is not JSON, or a sealed line that does not open: why. */
const Unreadable = z.object({ unreadable: z.string() });

function safeJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    return { unreadable: errorMessage(err) };
  }
}
