/** Keeps the first `limitBytes` of a stream and counts the rest, so a flood costs no memory. */
export class CappedOutput {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  private dropped = 0;

  constructor(private readonly limitBytes: number) {}

  push(chunk: Buffer): void {
    const room = this.limitBytes - this.kept;
    if (room > 0) {
      const part = chunk.length <= room ? chunk : chunk.subarray(0, room);
      this.chunks.push(Buffer.from(part));
      this.kept += part.length;
    }
    this.dropped += Math.max(0, chunk.length - Math.max(room, 0));
  }

  get truncated(): boolean {
    return this.dropped > 0;
  }

  get droppedBytes(): number {
    return this.dropped;
  }

  text(): string {
    const body = Buffer.concat(this.chunks).toString('utf8');
    return this.truncated ? `${body}\n[output cut: ${this.dropped} more bytes]` : body;
  }
}

/** The first `maxChars` characters of a message, marked when cut. */
export function clip(text: string, maxChars = 2_000): string {
  return text.length <= maxChars ? text : `${text.slice(0, maxChars)}… [cut]`;
}
