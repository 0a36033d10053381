/**
 * Wait on a condition, never on a fixed sleep: polls `check` until it returns a truthy
 * value (which is returned) or the generous deadline passes, then fails with `message`.
 */
export async function waitFor<T>(
  check: () => T | Promise<T>,
  { timeoutMs = 30_000, intervalMs = 20, message = 'condition' }: { timeoutMs?: number; intervalMs?: number; message?: string } = {},
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
      throw new Error(`timed out after ${timeoutMs} ms waiting for ${message} (last: ${last instanceof Error ? last.message : JSON.stringify(last)})`);
    }
    await new Promise((r) => setTimeout(r, intervalMs));
  }
}
