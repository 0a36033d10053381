/**
 * The worker's side of the cap-slot protocol, in one place (the table's side is
 * sql/functions/slots.sql; docs/reference.md draws both). Only jobs of a capped queue
 * that ran in a slot of the cap, and jobs claimed ahead that wait for one, pass here.
 *
 * A slot whose job completed here, until the table knows:
 *
 *   (running) ──completion buffered──▶ in hand ──taken by a statement──▶ writing ──written──▶ freed,
 *                                        │  ▲                               │                or moved
 *                                        │  └──────statement failed─────────┘
 *                                        └──a waiting job starts in it (handOver)──▶ handed over
 *
 * A job started in a slot in hand, until its move is written:
 *
 *   handed over ──taken by a statement──▶ moving ──written, moved──▶ kept (its slot now)
 *        ▲                                  │  └──written, refused──▶ lost (aborted; failed as SlotLost)
 *        └──────statement failed────────────┘
 *   handed over ──the completer gives up (database unreachable)──▶ lost
 *
 * Guarantees:
 * - Slots held never fall below handlers running: a waiting job starts only in a slot in
 *   hand (its completion not written yet, so the table still counts it), and the move is
 *   written in the same statement as that completion (the completer takes every
 *   completion with the moves).
 * - A completion of a job whose move is in a statement in flight waits for that statement
 *   (`holdsBack`): written alone, it could take its row before the move did, find no slot
 *   to pass on, and fail the job that took its place as SlotLost.
 * - A handed-over job learns its move's outcome through the promise `handOver` returns;
 *   nothing calls back into the executor.
 *
 * Only the completer writes; the executor asks `slotsInHand` and calls `handOver`.
 */
/** A job waiting for a slot, started in a slot in hand: the slot moves to it. */
export interface Move {
  id: string;
  token: string;
}

/** What a job started in a slot in hand gets: how long the slot's lease may be trusted, and its move's outcome. */
export interface HandOver {
  /** The earliest lease deadline (local monotonic ms) of the jobs whose slots are in hand. */
  deadline: number;
  /** True once the move is written and the job holds the slot; false if it was refused or given up on. */
  moved: Promise<boolean>;
}

interface Pending {
  move: Move;
  settle: (moved: boolean) => void;
}

export class SlotLedger {
  /** Slots in hand: buffered completions of jobs that held a slot, by job id, with their lease deadlines. */
  private readonly inHand = new Map<string, number>();
  /**
   * The earliest of their deadlines; NaN once a slot at it was released, found again when
   * asked (a hand-over per job must not scan a thousand slots in hand).
   */
  private earliest = Infinity;
  /** Hand-overs whose moves no statement carries yet, in the order they were made. */
  private handedOver: Pending[] = [];
  /** Hand-overs whose moves a statement in flight carries, by job id. */
  private readonly moving = new Map<string, Pending>();

  /** Slots in hand no waiting job has taken over yet. */
  get slotsInHand(): number {
    return this.inHand.size - this.handedOver.length;
  }

  /** A completion of a job that held a slot is buffered: its slot is in hand until a statement takes it. */
  hold(jobId: string, deadline: number): void {
    this.inHand.set(jobId, deadline);
    if (deadline < this.earliest) this.earliest = deadline;
  }

  /** A statement took this completion: its slot is no longer in hand (back with `hold` if the statement fails). */
  release(jobId: string): void {
    if (this.inHand.get(jobId) === this.earliest) this.earliest = Number.NaN;
    this.inHand.delete(jobId);
  }

  /** A waiting job starts in a slot in hand (there must be one: `slotsInHand > 0`). */
  handOver(move: Move): HandOver {
    if (this.slotsInHand <= 0) throw new Error('no slot in hand to hand over');
    let settle!: (moved: boolean) => void;
    const moved = new Promise<boolean>((resolve) => (settle = resolve));
    this.handedOver.push({ move, settle });
    if (Number.isNaN(this.earliest)) {
      this.earliest = Infinity;
      for (const d of this.inHand.values()) if (d < this.earliest) this.earliest = d;
    }
    return { deadline: this.earliest, moved };
  }

  /** Moves waiting for a statement. */
  get movesWaiting(): number {
    return this.handedOver.length;
  }

  /** The moves for a statement about to be sent: moving until `written` or `unwritten`. */
  takeMoves(): Move[] {
    const taken = this.handedOver;
    this.handedOver = [];
    for (const p of taken) this.moving.set(p.move.id, p);
    return taken.map((p) => p.move);
  }

  /** Whether a completion of one of these jobs must wait: its move is in a statement in flight. */
  holdsBack(jobs: readonly { id: string }[]): boolean {
    if (this.moving.size === 0) return false;
    return jobs.some((j) => this.moving.has(j.id));
  }

  /** The statement carrying `moves` is over: `moved` hold their slots, the others lost them. */
  written(moves: readonly Move[], moved: ReadonlySet<string>): void {
    for (const m of moves) {
      const p = this.moving.get(m.id);
      if (!p) continue;
      this.moving.delete(m.id);
      p.settle(moved.has(m.id));
    }
  }

  /** The statement carrying `moves` failed: they wait for the next one, in front. */
  unwritten(moves: readonly Move[]): void {
    const back: Pending[] = [];
    for (const m of moves) {
      const p = this.moving.get(m.id);
      if (!p) continue;
      this.moving.delete(m.id);
      back.push(p);
    }
    this.handedOver = [...back, ...this.handedOver];
  }

  /** Nothing more will be written (the completer gave up): every slot in hand is dropped, every waiting move lost. */
  giveUp(): void {
    this.inHand.clear();
    this.earliest = Infinity;
    const lost = this.handedOver;
    this.handedOver = [];
    for (const p of lost) p.settle(false);
  }
}
