// Comparing a secret a caller sent with the one configured, in constant time, so the answer's timing tells nothing.
import { timingSafeEqual } from 'node:crypto';

export function sameSecret(given: string, wanted: string): boolean {
  const a = Buffer.from(given);
  const b = Buffer.from(wanted);
  return a.length === b.length && timingSafeEqual(a, b);
}
