/**
 * Wait on a condition, never on a fixed sleep: polls `check` until it returns a truthy
 * value (which is returned) or the generous deadline passes, then fails with `message`,
 * the last value seen and, when given, `detail()`: what the state was at the deadline,
 * so a failure on a loaded machine says why it was stuck.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  {
    timeoutMs = 30_000,
    intervalMs = 20,
    message = 'condition',
    detail,
  }: { timeoutMs?: number; intervalMs?: number; message?: string; detail?: () => unknown } = {},
): Promise<NonNullable<T>> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value) return value as NonNullable<T>;
      last = value;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) {
      let state = '';
      if (detail) {
        try {
          state = `; state: ${JSON.stringify(await detail())}`;
        } catch (err) {
          state = `; state unavailable: ${(err as Error).message}`;
        }
      }
      throw new Error(
        `timed out after ${timeoutMs} ms waiting for ${message} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})${state}`,
      );
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
