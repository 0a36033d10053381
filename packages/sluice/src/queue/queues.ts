/** Queue policies: stored in the database so every process reads the same caps. */
import type { Db } from '../db/db.js';
import { QueueNotFoundError, ValidationError } from '../errors.js';
import type { Queue, QueuePolicy } from '../types.js';
import type { SendPolicies } from './send-policies.js';
import { toQueue } from './rows.js';
import { policyRow, validateQueueName } from './validate.js';

export class Queues {
  constructor(
    private readonly db: Db,
    private readonly ready: () => Promise<void>,
    /** Every queue row read is noted there: what sends need of it (send-policies.ts). */
    private readonly policies: SendPolicies,
  ) {}

  private queueOf(row: any): Queue {
    const queue = toQueue(row);
    this.policies.note(queue);
    return queue;
  }

  /** Create the queue or replace its whole policy (absent limits mean "no limit"). */
  async put(name: string, policy: QueuePolicy = {}): Promise<Queue> {
    const row = { ...policyRow(policy), name: validateQueueName(name) };
    await this.ready();
    const deadLetterQueue = policy.deadLetterQueue;
    if (deadLetterQueue) {
      if (deadLetterQueue === name) throw new ValidationError('a queue cannot be its own dead-letter queue', 'deadLetterQueue');
      const [dlq] = await this.db.run('QueueGet', [deadLetterQueue]);
      if (!dlq) throw new ValidationError(`dead-letter queue "${deadLetterQueue}" does not exist; create it first`, 'deadLetterQueue');
    }
    const [put] = await this.db.run('QueuePut', [JSON.stringify(row)]);
    // Workers waiting on a limit that was just raised (a cap, a rate) claim at once.
    await this.db.run('QueueNotify', [name]);
    return this.queueOf(put);
  }

  async get(name: string): Promise<Queue | null> {
    validateQueueName(name);
    await this.ready();
    const [row] = await this.db.run('QueueGet', [name]);
    return row ? this.queueOf(row) : null;
  }

  async list(): Promise<Queue[]> {
    await this.ready();
    return (await this.db.run('QueueList')).map((row) => this.queueOf(row));
  }

  /** Stop claims on the queue; sends are still accepted. */
  pause(name: string): Promise<Queue> {
    return this.setPaused(name, true);
  }

  resume(name: string): Promise<Queue> {
    return this.setPaused(name, false);
  }

  private async setPaused(name: string, paused: boolean): Promise<Queue> {
    validateQueueName(name);
    await this.ready();
    const [row] = await this.db.run('QueueSetPaused', [name, paused]);
    if (!row) throw new QueueNotFoundError(name);
    if (!paused) await this.db.run('QueueNotify', [name]);
    return this.queueOf(row);
  }
}
