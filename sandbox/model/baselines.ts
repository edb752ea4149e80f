// Two baseline agents for the evaluation: drafts a good set of expectations must fail. One recites every record the
// talent has, whatever was asked; one hands every message to the team. The sandbox model answers Melvin's drafts with
// them while one is set (its plans and coverage stay its own), so they run through the whole of Melvin.
import { z } from 'zod';
import { spokenAmount, spokenDate } from './reasoning';

export const BaselineAgent = z.enum(['recite_all', 'always_hand_over']);
export type BaselineAgent = z.infer<typeof BaselineAgent>;

type Fields = Record<string, unknown>;

const isDate = (value: unknown): value is string => typeof value === 'string' && /^\d{4}-\d{2}-\d{2}/.test(value);

/** A record in a sentence: each of its values a reply would state, its ids left out. */
function recited(record: Fields): string | null {
  const parts: string[] = [];
  for (const [key, value] of Object.entries(record)) {
    if (key === 'id' || key.endsWith('_id')) continue;
    if (key === 'amount' && typeof value === 'number') parts.push(spokenAmount(value, record.currency ?? 'USD'));
    else if (isDate(value)) parts.push(`${key.replace(/_/g, ' ')} ${spokenDate(value)}`);
    else if (value && typeof value === 'object' && !Array.isArray(value)) {
      const inner = recited(value as Fields);
      if (inner) parts.push(inner);
    } else if (typeof value === 'string' && key !== 'currency') parts.push(value.replace(/_/g, ' '));
  }
  return parts.length ? parts.join(', ') : null;
}

/** Every record in the data: each object in a list. */
function records(value: unknown, into: Fields[] = []): Fields[] {
  if (Array.isArray(value)) {
    for (const item of value) {
      if (item && typeof item === 'object' && !Array.isArray(item)) into.push(item as Fields);
      else records(item, into);
    }
  } else if (value && typeof value === 'object') Object.values(value).forEach((v) => records(v, into));
  return into;
}

/** The draft a baseline agent writes from the data document Melvin sent. */
export function baselineDraft(agent: BaselineAgent, context: Record<string, unknown>): unknown {
  if (agent === 'always_hand_over') {
    return {
      text: 'A person from the team will answer.',
      response_type: 'ROUTE_TO_TEAM',
      route: { kind: 'no_safe_answer', explanation: 'This baseline hands every message to the team.' },
      open_intents: [],
      suggested_action: null,
    };
  }
  const data = Object.values((context.tool_data ?? {}) as Record<string, { data?: unknown; success?: boolean }>);
  const lines = data.flatMap((t) => (t.success === false ? [] : records(t.data))).flatMap((r) => recited(r) ?? []);
  return {
    text: lines.length
      ? `Here is everything on your account: ${lines.join('; ')}.`
      : 'I found nothing on your account.',
    response_type: 'REPLY',
    route: null,
    open_intents: [],
    suggested_action: null,
  };
}
