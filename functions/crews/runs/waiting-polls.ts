import { TooManyRequests } from '../../../shared/errors.js';

/** Fair use: E13 long polls that may wait at once, per principal and per process. */
export const WAITING_POLLS_PER_PRINCIPAL = 10;
export const WAITING_POLLS_PER_PROCESS = 500;

/**
 * The E13 long polls waiting in this process, so that one caller cannot hold any number of
 * them. On the local platform every poll waits in one process; on AWS a Lambda instance
 * serves one request at a time, and the crews function's reserved concurrency bounds them
 * instead (infra/aws/stages.ts).
 */
export class WaitingPolls {
  /** By principal: a Map (principals come from tokens). */
  private readonly byPrincipal = new Map<string, number>();
  private total = 0;

  constructor(
    private readonly perPrincipal = WAITING_POLLS_PER_PRINCIPAL,
    private readonly perProcess = WAITING_POLLS_PER_PROCESS,
  ) {}

  /**
   * A place for one more waiting poll of `principal` (TooManyRequests when there is none);
   * the answer gives it back, once, however the poll ends.
   */
  take(principal: string): () => void {
    const held = this.byPrincipal.get(principal) ?? 0;
    if (held >= this.perPrincipal)
      throw new TooManyRequests(`At most ${this.perPrincipal} long polls of one caller may wait at once`);
    if (this.total >= this.perProcess) throw new TooManyRequests('Too many long polls are waiting; try again');
    this.byPrincipal.set(principal, held + 1);
    this.total++;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.total--;
      const left = (this.byPrincipal.get(principal) ?? 1) - 1;
      if (left > 0) this.byPrincipal.set(principal, left);
      else this.byPrincipal.delete(principal);
    };
  }

  /** How many polls wait in this process. */
  get waiting(): number {
    return this.total;
  }
}
