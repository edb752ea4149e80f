// The floor's one activity: a step that does nothing, so a turn made of it costs only Temporal's dispatch and history.
export async function step(): Promise<void> {}
