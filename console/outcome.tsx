/**
 * After a decision (a decision version or a crew run's approval step): one outcome line,
 * what was decided, by whom and when, and the next item of the inbox (GET /api/approvals).
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import { type ApprovalItem, get, message, seg } from './api.js';
import { When } from './format.js';

export interface Decided {
  approved: boolean;
  /** What was decided, e.g. "step sign_off of this run". */
  what: string;
  /** The signed-in person's name. */
  by: string;
  /** When (ISO 8601): the service's time of the answer. */
  at: string;
}

/** The time of an answer (its Date header), else the browser's. */
export function answeredAt(headers: Headers): string {
  const date = Date.parse(headers.get('date') ?? '');
  return new Date(Number.isNaN(date) ? Date.now() : date).toISOString();
}

export const itemHref = (item: ApprovalItem) =>
  item.kind === 'decision_version'
    ? `#/decisions/${seg(item.workspace)}/${seg(item.key)}/${item.version}`
    : `#/runs/${seg(item.correlation_id)}`;

export const itemLabel = (item: ApprovalItem) =>
  item.kind === 'decision_version'
    ? `${item.workspace}/${item.key} version ${item.version}`
    : `${item.template_name}: step ${item.step_id}`;

export function DecisionOutcome(props: { decided: Decided; isCurrent: (item: ApprovalItem) => boolean }) {
  const { decided } = props;
  // undefined while reading; null when nothing else waits.
  const [next, setNext] = useState<ApprovalItem | null | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    // The buttons pressed are gone: the keyboard goes on from the outcome.
    box.current?.focus();
    // Oldest first; the item just decided may still be listed for a moment: left out.
    get<ApprovalItem[]>('/api/approvals?limit=10').then(
      (items) => setNext(items.find((i) => !props.isCurrent(i)) ?? null),
      (err: unknown) => setError(message(err)),
    );
  }, []);
  return (
    <div id="decision-outcome" class={decided.approved ? 'outcome' : 'outcome rejected'} ref={box} tabIndex={-1}>
      <p role="status" class={decided.approved ? 'done' : 'decided'}>
        {decided.approved ? 'Approved' : 'Rejected'}: {decided.what}, by {decided.by} on <When at={decided.at} />.
      </p>
      {error ? (
        <p class="why">
          The next item could not be found ({error}). Go to the <a href="#/inbox">inbox</a>.
        </p>
      ) : next === undefined ? (
        <p aria-busy="true">Looking for the next item in your inbox…</p>
      ) : next === null ? (
        <p id="inbox-done">
          Your <a href="#/inbox">inbox</a> is empty: nothing else waits for your decision.
        </p>
      ) : (
        <p>
          <a id="next-in-inbox" class="next-link" href={itemHref(next)}>
            Next in inbox: {itemLabel(next)}
          </a>
        </p>
      )}
    </div>
  );
}
