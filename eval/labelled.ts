// The labelled figures: how Plan's reading of the talent's tone agrees with what a person labelled each scenario with.
import type { TryRecord } from './tries';

export interface Detection {
  /** Tries labelled as a complaint that Plan read as one, of those labelled so (recall's parts). */
  found: number;
  labelled: number;
  /** Tries Plan read as a complaint that were labelled so, of those it read so (precision's parts). */
  right: number;
  read: number;
}

export interface ToneFigures {
  tries: number;
  complaints: Detection;
  /** Tries whose urgency Plan read as labelled, of those with an urgency label. */
  urgency: { right: number; labelled: number };
  /** The tries Plan read differently from their label, for a reader to look at. */
  misread: string[];
}

export function toneFigures(tries: TryRecord[]): ToneFigures {
  const labelled = tries.filter((t) => t.labels?.tone && t.tone_read !== undefined);
  const complaints: Detection = { found: 0, labelled: 0, right: 0, read: 0 };
  const urgency = { right: 0, labelled: 0 };
  const misread: string[] = [];
  for (const t of labelled) {
    const label = t.labels!.tone!;
    const read = t.tone_read ?? { complains: false, urgency: 'normal' };
    if (label.complains) complaints.labelled += 1;
    if (read.complains) complaints.read += 1;
    if (label.complains && read.complains) {
      complaints.found += 1;
      complaints.right += 1;
    }
    let ok = label.complains === read.complains;
    if (label.urgency) {
      urgency.labelled += 1;
      if (label.urgency === read.urgency) urgency.right += 1;
      else ok = false;
    }
    if (!ok) misread.push(`${t.scenario} (try ${t.try})`);
  }
  return { tries: labelled.length, complaints, urgency, misread };
}
