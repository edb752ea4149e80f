// One way to turn anything thrown into text, for logs, refusals and recorded failures: its message, else the value
// itself. Read by shape, not `instanceof`: Node's file and `fetch` errors can come from another realm's `Error`. Pure,
// so workflow code may use it too.
export function errorMessage(err: unknown): string {
  return err && typeof err === 'object' && 'message' in err ? String(err.message) : String(err);
}
