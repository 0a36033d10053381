/** `base`, or `base #2`, `base #3`… when tests share a name: ids must be unique and stable. */
export function uniqueId(taken: Record<string, unknown>, base: string): string {
  if (!Object.hasOwn(taken, base)) return base;
  for (let n = 2; ; n++) {
    const id = `${base} #${n}`;
    if (!Object.hasOwn(taken, id)) return id;
  }
}
