// One way to turn anything thrown into text, for logs, refusals and recorded failures: an Error's message, else the
// value itself. Pure, so workflow code may use it too.
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
