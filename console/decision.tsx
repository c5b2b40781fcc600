/** A decision version: its content, its diff against the published version, its history, the decision. */
import { useEffect, useState } from 'preact/hooks';
import {
  type ApprovalItem,
  call,
  type Diff,
  get,
  type Me,
  message,
  seg,
  type Transition,
  type Version,
} from './api.js';
import { Notice, pretty, When } from './format.js';
import { answeredAt, type Decided, DecisionOutcome } from './outcome.js';

interface Loaded {
  version: Version;
  diff: Diff | undefined;
  diffError: string | undefined;
  history: Transition[];
  inInbox: boolean;
}

/**
 * Why the caller may not decide, or undefined when they may. The inbox says who may decide
 * (the server applies the rules); the rest only explains it. Names are a display hint: the
 * four-eyes rule compares principals on the server.
 */
function whyNot(me: Me | undefined, loaded: Loaded): string | undefined {
  const { version } = loaded;
  if (loaded.inInbox) return undefined;
  if (version.status !== 'submitted') {
    return `This version is ${version.status}: only a submitted version can be approved or rejected.`;
  }
  if (!me) return 'Who you are is not known yet.';
  if (!me.roles.includes('approver')) return 'You do not hold the approver role.';
  if (me.credential !== 'bearer' || !me.session) return 'Deciding needs a sign-in session (Bearer token).';
  if (version.created_by === me.name || version.submitted_by === me.name) {
    const what = version.created_by === me.name ? 'created' : 'submitted';
    return `Four-eyes rule: you ${what} this version, so another approver must decide.`;
  }
  return 'This version is not in your inbox: you may not decide it.';
}

/** A diff's changes as a table: what it takes to turn one version's content into another's. */
export function DiffTable(props: { id: string; caption: string; changes: Diff['changes'] }) {
  return (
    <table id={props.id} class="diff">
      <caption class="sr-only">{props.caption}</caption>
      <thead>
        <tr>
          <th scope="col">Change</th>
          <th scope="col">Path</th>
          <th scope="col">Old value</th>
          <th scope="col">New value</th>
        </tr>
      </thead>
      <tbody>
        {props.changes.map((c) => (
          <tr key={`${c.op}:${c.path}`} class={`op-${c.op}`}>
            <td>{c.op}</td>
            <td>
              <code>{c.path || '(whole content)'}</code>
            </td>
            <td>{'old' in c ? <pre>{pretty(c.old)}</pre> : '—'}</td>
            <td>{'new' in c ? <pre>{pretty(c.new)}</pre> : '—'}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}

export function DecisionView(props: { me: Me | undefined; workspace: string; dkey: string; version: number }) {
  const base = `/api/decisions/${seg(props.workspace)}/${seg(props.dkey)}/versions/${props.version}`;
  const [loaded, setLoaded] = useState<Loaded | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [notes, setNotes] = useState('');
  const [busy, setBusy] = useState(false);
  const [failure, setFailure] = useState<string | undefined>(undefined);
  const [decided, setDecided] = useState<Decided | undefined>(undefined);

  /** `kept`: the diff read before a decision, kept (once approved, the version is the published one). */
  const load = async (kept?: Pick<Loaded, 'diff' | 'diffError'>) => {
    try {
      const [version, history, inbox] = await Promise.all([
        get<Version>(base),
        get<Transition[]>(`${base}/history`),
        get<ApprovalItem[]>('/api/approvals?kind=decision_version&limit=1000').catch(() => [] as ApprovalItem[]),
      ]);
      let diff = kept?.diff;
      let diffError = kept?.diffError;
      if (!kept) {
        try {
          diff = await get<Diff>(`${base}/diff?against=published`);
        } catch (err) {
          diffError = message(err);
        }
      }
      const inInbox = inbox.some(
        (i) =>
          i.kind === 'decision_version' &&
          i.workspace === props.workspace &&
          i.key === props.dkey &&
          i.version === props.version,
      );
      setLoaded({ version, diff, diffError, history, inInbox });
      setError(undefined);
    } catch (err) {
      setError(message(err));
    }
  };
  useEffect(() => void load(), [base]);

  const title = `${props.workspace}/${props.dkey} version ${props.version}`;
  document.title = `${title} — DPM console`;

  const decide = async (action: 'approve' | 'reject') => {
    setBusy(true);
    setFailure(undefined);
    try {
      const text = notes.trim();
      const { body, headers } = await call<Version>(`${base}/${action}`, {
        method: 'POST',
        body: text ? { notes: text } : undefined,
      });
      setDecided({
        approved: action === 'approve',
        what: action === 'approve' ? title : `${title} (now ${body.status})`,
        by: props.me?.name ?? body.approved_by ?? 'you',
        at: body.approved_at ?? answeredAt(headers),
      });
      setNotes('');
      await load(loaded);
    } catch (err) {
      setFailure(message(err));
    } finally {
      setBusy(false);
    }
  };

  if (error) {
    return (
      <section aria-labelledby="decision-title">
        <h1 id="decision-title">{title}</h1>
        <Notice error={error} />
      </section>
    );
  }
  if (!loaded) return <p aria-busy="true">Loading {title}…</p>;
  const { version, diff, history } = loaded;
  const reason = decided ? undefined : whyNot(props.me, loaded);
  const isThis = (i: ApprovalItem) =>
    i.kind === 'decision_version' &&
    i.workspace === props.workspace &&
    i.key === props.dkey &&
    i.version === props.version;
  return (
    <section aria-labelledby="decision-title" data-view="decision">
      <p class="back">
        <a href="#/inbox">← Inbox</a>
      </p>
      <h1 id="decision-title">{title}</h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd id="version-status">{version.status}</dd>
        <dt>Created by</dt>
        <dd>
          {version.created_by}, <When at={version.created_at} />
        </dd>
        {version.submitted_by && (
          <>
            <dt>Submitted by</dt>
            <dd>
              {version.submitted_by}
              {version.submitted_at && (
                <>
                  , <When at={version.submitted_at} />
                </>
              )}
            </dd>
          </>
        )}
        {version.approved_by && (
          <>
            <dt>Approved by</dt>
            <dd>
              {version.approved_by}
              {version.approved_at && (
                <>
                  , <When at={version.approved_at} />
                </>
              )}
            </dd>
          </>
        )}
      </dl>

      <section aria-labelledby="decide-title" class="decide">
        <h2 id="decide-title">Decision</h2>
        {decided ? (
          <DecisionOutcome decided={decided} isCurrent={isThis} />
        ) : (
          <>
            <label for="decision-notes">Notes (optional)</label>
            <textarea
              id="decision-notes"
              rows={3}
              maxLength={1000}
              value={notes}
              disabled={reason !== undefined || busy}
              onInput={(e) => setNotes(e.currentTarget.value)}
            />
            <div class="actions">
              <button
                type="button"
                class="primary"
                id="approve"
                disabled={reason !== undefined || busy}
                aria-describedby={reason ? 'decide-why' : undefined}
                onClick={() => void decide('approve')}
              >
                Approve
              </button>
              <button
                type="button"
                id="reject"
                disabled={reason !== undefined || busy}
                aria-describedby={reason ? 'decide-why' : undefined}
                onClick={() => void decide('reject')}
              >
                Reject
              </button>
            </div>
            {reason && (
              <p id="decide-why" class="why">
                {reason}
              </p>
            )}
            <Notice error={failure} />
          </>
        )}
      </section>

      <section aria-labelledby="diff-title">
        <h2 id="diff-title">
          Changes against{' '}
          {diff?.from
            ? decided?.approved
              ? `version ${diff.from.version}, published before this decision`
              : `the published version ${diff.from.version}`
            : 'the published version'}
        </h2>
        {loaded.diffError ? (
          <Notice error={loaded.diffError} />
        ) : diff && diff.from === null ? (
          <p>No version is published yet: all of the content below is new.</p>
        ) : null}
        {diff && diff.from?.version === version.version && <p>This version is the published one.</p>}
        {diff && diff.changes.length === 0 && !diff.truncated && diff.from?.version !== version.version && (
          <p>No changes: the content equals the published version.</p>
        )}
        {diff?.truncated && (
          <p>
            Only the first {diff.changes.length} changes are shown: there are more (at least {diff.change_count}), past
            what one answer holds (1,000 changes or 1 MiB).
          </p>
        )}
        {diff && diff.changes.length > 0 && diff.from !== null && (
          <DiffTable id="diff" caption="Changes from the published version" changes={diff.changes} />
        )}
      </section>

      <section aria-labelledby="content-title">
        <h2 id="content-title">Content</h2>
        <pre id="version-content" class="json" tabIndex={0}>
          {pretty(version.content)}
        </pre>
      </section>

      <section aria-labelledby="history-title">
        <h2 id="history-title">History</h2>
        <ol id="history" class="history">
          {history.map((t, i) => (
            <li key={i}>
              <When at={t.at} />: <strong>{t.action}</strong> by {t.by} ({t.from ?? 'new'} → {t.to})
              {t.notes && <span class="notes"> “{t.notes}”</span>}
            </li>
          ))}
        </ol>
      </section>
    </section>
  );
}
