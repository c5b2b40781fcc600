/** The inbox: what the signed-in person may decide now (GET /api/approvals), oldest first. */
import { useEffect, useState } from 'preact/hooks';
import { type ApprovalItem, call, message, seg } from './api.js';
import { When } from './format.js';

type Kind = '' | 'decision_version' | 'crew_step';

const PAGE = 50;

export function Inbox() {
  const [kind, setKind] = useState<Kind>('');
  const [items, setItems] = useState<ApprovalItem[] | undefined>(undefined);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [loading, setLoading] = useState(false);

  const load = async (after: string | undefined, previous: ApprovalItem[]) => {
    setLoading(true);
    setError(undefined);
    try {
      const query = new URLSearchParams({ limit: String(PAGE) });
      if (kind) query.set('kind', kind);
      if (after) query.set('cursor', after);
      const { body, headers } = await call<ApprovalItem[]>(`/api/approvals?${query}`);
      setItems([...previous, ...body]);
      setCursor(headers.get('x-next-cursor') ?? undefined);
    } catch (err) {
      setError(message(err));
      setItems(previous);
    } finally {
      setLoading(false);
    }
  };

  useEffect(() => {
    setItems(undefined);
    void load(undefined, []);
  }, [kind]);

  const count = items === undefined ? undefined : `${items.length}${cursor ? '+' : ''}`;
  document.title = count === undefined ? 'Inbox — DPM console' : `(${count}) Inbox — DPM console`;
  useEffect(() => {
    // The console's first paint, for the benchmark: the inbox with its items.
    if (items !== undefined && performance.getEntriesByName('inbox-rendered').length === 0) {
      performance.mark('inbox-rendered');
    }
  }, [items]);

  return (
    <section aria-labelledby="inbox-title" data-view="inbox">
      <h1 id="inbox-title">Inbox{count !== undefined && <span class="count"> ({count})</span>}</h1>
      <p class="lead">What waits for your decision, oldest first.</p>
      <div class="filters">
        <label for="inbox-kind">Kind</label>
        <select id="inbox-kind" value={kind} onChange={(e) => setKind(e.currentTarget.value as Kind)}>
          <option value="">Everything</option>
          <option value="decision_version">Decision versions</option>
          <option value="crew_step">Crew run steps</option>
        </select>
      </div>
      {error && (
        <p role="alert" class="error">
          {error}
        </p>
      )}
      {items === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : items.length === 0 && !error ? (
        <p id="inbox-empty" class="empty">
          Nothing waits for you.
        </p>
      ) : (
        <ul id="inbox-list" class="items">
          {items.map((item) => (
            <li
              key={
                item.kind === 'decision_version'
                  ? `${item.workspace}/${item.key}/${item.version}`
                  : `${item.correlation_id}/${item.step_id}`
              }
            >
              <InboxItem item={item} />
            </li>
          ))}
        </ul>
      )}
      {cursor && (
        <button type="button" disabled={loading} onClick={() => void load(cursor, items ?? [])}>
          {loading ? 'Loading…' : 'More'}
        </button>
      )}
    </section>
  );
}

function InboxItem({ item }: { item: ApprovalItem }) {
  if (item.kind === 'decision_version') {
    return (
      <article class="item" data-kind="decision_version">
        <h2>
          <a href={`#/decisions/${seg(item.workspace)}/${seg(item.key)}/${item.version}`}>
            {item.workspace}/{item.key} version {item.version}
          </a>
        </h2>
        <p>
          Decision version, created by {item.created_by}, submitted by {item.submitted_by ?? '—'}
          {item.submitted_at && (
            <>
              , <When at={item.submitted_at} />
            </>
          )}
        </p>
        {item.notes && <p class="notes">“{item.notes}”</p>}
      </article>
    );
  }
  return (
    <article class="item" data-kind="crew_step">
      <h2>
        <a href={`#/runs/${seg(item.correlation_id)}`}>
          {item.template_name}: step {item.step_id}
        </a>
      </h2>
      <p>
        Crew run approval ({item.role}), started by {item.started_by}, waiting since <When at={item.waiting_since} />,
        expires <When at={item.expires_at} />
      </p>
      <p class="notes">{item.prompt}</p>
    </article>
  );
}
