/**
 * The decisions browser: workspaces and their keys (GET /api/decisions), a key's versions
 * with their status, and the diff between any two of its versions.
 */
import { useEffect, useState } from 'preact/hooks';
import { type DecisionKey, type Diff, get, message, seg, type VersionSummary } from './api.js';
import { DiffTable } from './decision.js';
import { Notice, When } from './format.js';
import { More, usePaged } from './paged.js';

const PAGE = 50;
const VERSIONS_PAGE = 100;

const keyHref = (workspace: string, key: string) => `#/decisions/${seg(workspace)}/${seg(key)}`;
const versionHref = (workspace: string, key: string, version: number) => `${keyHref(workspace, key)}/${version}`;

/** Consecutive items of one workspace (the list is ordered by workspace, then key). */
function byWorkspace(items: DecisionKey[]): [string, DecisionKey[]][] {
  const groups: [string, DecisionKey[]][] = [];
  for (const item of items) {
    const last = groups.at(-1);
    if (last && last[0] === item.workspace) last[1].push(item);
    else groups.push([item.workspace, [item]]);
  }
  return groups;
}

export function DecisionsList(props: { workspace: string | undefined }) {
  const list = usePaged<DecisionKey>(
    props.workspace ? `/api/decisions?${new URLSearchParams({ workspace: props.workspace })}` : '/api/decisions',
    PAGE,
  );
  const items = list.items;
  const [filter, setFilter] = useState(props.workspace ?? '');
  document.title = props.workspace ? `${props.workspace} — Decisions — DPM console` : 'Decisions — DPM console';
  useEffect(() => setFilter(props.workspace ?? ''), [props.workspace]);

  return (
    <section aria-labelledby="decisions-title" data-view="decisions">
      <h1 id="decisions-title">Decisions{props.workspace && <span class="count"> in {props.workspace}</span>}</h1>
      <p class="lead">Every decision key by workspace, with its newest and its published version.</p>
      <form
        class="filters"
        role="search"
        aria-label="Decisions"
        onSubmit={(e) => {
          e.preventDefault();
          const workspace = filter.trim();
          location.hash = workspace ? `#/decisions/${seg(workspace)}` : '#/decisions';
        }}
      >
        <label for="decisions-workspace">Workspace</label>
        <input
          id="decisions-workspace"
          type="search"
          value={filter}
          placeholder="all workspaces"
          spellcheck={false}
          onInput={(e) => setFilter(e.currentTarget.value)}
        />
        <button type="submit">Filter</button>
        {props.workspace && <a href="#/decisions">All workspaces</a>}
      </form>
      <Notice error={list.error} />
      {items === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : items.length === 0 ? (
        !list.error && (
          <p class="empty">{props.workspace ? `No decisions in workspace ${props.workspace}.` : 'No decisions yet.'}</p>
        )
      ) : (
        byWorkspace(items).map(([workspace, keys]) => (
          <section key={workspace} aria-labelledby={`ws-${workspace}`} class="workspace">
            <h2 id={`ws-${workspace}`}>
              {props.workspace ? (
                workspace
              ) : (
                <a href={`#/decisions/${seg(workspace)}`} title={`Only workspace ${workspace}`}>
                  {workspace}
                </a>
              )}
            </h2>
            <table class="decisions">
              <caption class="sr-only">Decision keys of workspace {workspace}</caption>
              <thead>
                <tr>
                  <th scope="col">Key</th>
                  <th scope="col">Newest version</th>
                  <th scope="col">Published</th>
                  <th scope="col">Updated</th>
                </tr>
              </thead>
              <tbody>
                {keys.map((k) => (
                  <tr key={k.key}>
                    <th scope="row">
                      <a href={keyHref(k.workspace, k.key)}>{k.key}</a>
                    </th>
                    <td>
                      <a href={versionHref(k.workspace, k.key, k.latest_version)}>version {k.latest_version}</a>{' '}
                      <span class={`status status-${k.latest_status}`}>{k.latest_status}</span>
                    </td>
                    <td>
                      {k.published_version === null ? (
                        <span class="none">none</span>
                      ) : (
                        <a href={versionHref(k.workspace, k.key, k.published_version)}>version {k.published_version}</a>
                      )}
                    </td>
                    <td>
                      <When at={k.updated_at} />
                    </td>
                  </tr>
                ))}
              </tbody>
            </table>
          </section>
        ))
      )}
      <More list={list} />
    </section>
  );
}

/** The published version: the newest approved one. */
const publishedOf = (versions: VersionSummary[]) =>
  versions.reduce<number | undefined>(
    (p, v) => (v.status === 'approved' && (p ?? 0) < v.version ? v.version : p),
    undefined,
  );

/** What to compare first: the newest version against the published one, else the one before it. */
function defaults(versions: VersionSummary[]): { from: string; to: string } {
  const latest = versions.at(-1)!.version;
  const published = publishedOf(versions);
  if (published !== undefined && published !== latest) return { from: 'published', to: String(latest) };
  return { from: versions.length > 1 ? String(versions.at(-2)!.version) : 'published', to: String(latest) };
}

const named = (from: string, published: number | undefined) =>
  from === 'published'
    ? published === undefined
      ? 'the published version'
      : `the published version (${published})`
    : `version ${from}`;

export function DecisionKeyView(props: { workspace: string; dkey: string }) {
  const base = `/api/decisions/${seg(props.workspace)}/${seg(props.dkey)}`;
  const list = usePaged<VersionSummary>(`${base}/versions`, VERSIONS_PAGE);
  const versions = list.items;
  const [from, setFrom] = useState('');
  const [to, setTo] = useState('');
  const [diff, setDiff] = useState<{ diff?: Diff; error?: string; from: string; to: string } | undefined>(undefined);
  const [comparing, setComparing] = useState(false);
  const title = `${props.workspace}/${props.dkey}`;
  document.title = `${title} — Decisions — DPM console`;

  const compare = async (f: string, t: string) => {
    setComparing(true);
    try {
      const answer = await get<Diff>(`${base}/versions/${seg(t)}/diff?against=${seg(f)}`);
      setDiff({ diff: answer, from: f, to: t });
    } catch (err) {
      setDiff({ error: message(err), from: f, to: t });
    } finally {
      setComparing(false);
    }
  };

  // The first page read: the first comparison, without waiting to be asked.
  useEffect(() => {
    if (!versions?.length || from) return;
    const first = defaults(versions);
    setFrom(first.from);
    setTo(first.to);
    void compare(first.from, first.to);
  }, [versions]);

  const back = (
    <p class="back">
      <a href={`#/decisions/${seg(props.workspace)}`}>← Decisions in {props.workspace}</a>
    </p>
  );
  if (versions === undefined)
    return (
      <>
        {back}
        <p aria-busy="true">Loading {title}…</p>
      </>
    );
  const published = publishedOf(versions);
  const shown = diff?.diff;
  return (
    <section aria-labelledby="key-title" data-view="decision-key">
      {back}
      <h1 id="key-title">{title}</h1>
      <Notice error={list.error} />
      <section aria-labelledby="versions-title">
        <h2 id="versions-title">Versions</h2>
        {versions.length === 0 ? (
          !list.error && <p class="empty">No versions.</p>
        ) : (
          <table id="versions" class="versions">
            <caption class="sr-only">Versions of {title}, oldest first</caption>
            <thead>
              <tr>
                <th scope="col">Version</th>
                <th scope="col">Status</th>
                <th scope="col">Created by</th>
                <th scope="col">Created</th>
                <th scope="col">Notes</th>
              </tr>
            </thead>
            <tbody>
              {versions.map((v) => (
                <tr key={v.version}>
                  <th scope="row">
                    <a href={versionHref(props.workspace, props.dkey, v.version)}>version {v.version}</a>
                  </th>
                  <td>
                    <span class={`status status-${v.status}`}>{v.status}</span>
                    {v.version === published && <span class="tag">published</span>}
                  </td>
                  <td>{v.created_by}</td>
                  <td>
                    <When at={v.created_at} />
                  </td>
                  <td class="notes">{v.notes ?? ''}</td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
        <More list={list} label="More versions" />
      </section>

      {versions.length > 0 && (
        <section aria-labelledby="compare-title">
          <h2 id="compare-title">Compare two versions</h2>
          <form
            class="filters compare"
            aria-labelledby="compare-title"
            onSubmit={(e) => {
              e.preventDefault();
              void compare(from, to);
            }}
          >
            <label for="compare-from">From</label>
            <select id="compare-from" value={from} onChange={(e) => setFrom(e.currentTarget.value)}>
              <option value="published">
                {published === undefined ? 'the published version (none yet)' : `the published version (${published})`}
              </option>
              {versions.map((v) => (
                <option key={v.version} value={String(v.version)}>
                  version {v.version} ({v.status})
                </option>
              ))}
            </select>
            <label for="compare-to">To</label>
            <select id="compare-to" value={to} onChange={(e) => setTo(e.currentTarget.value)}>
              {versions.map((v) => (
                <option key={v.version} value={String(v.version)}>
                  version {v.version} ({v.status})
                </option>
              ))}
            </select>
            <button type="submit" class="primary" disabled={comparing}>
              Show changes
            </button>
          </form>
          {diff && (
            <section aria-labelledby="changes-title" aria-busy={comparing}>
              <h3 id="changes-title">
                Changes from {named(diff.from, published)} to version {diff.to}
              </h3>
              <Notice error={diff.error} />
              {shown && shown.from === null && <p>No version is published yet: there is nothing to compare with.</p>}
              {shown && shown.from !== null && shown.changes.length === 0 && !shown.truncated && (
                <p>No changes: the two contents are equal.</p>
              )}
              {shown?.truncated && (
                <p>
                  Only the first {shown.changes.length} changes are shown: there are more (at least {shown.change_count}
                  ), past what one answer holds (1,000 changes or 1 MiB).
                </p>
              )}
              {shown && shown.from !== null && shown.changes.length > 0 && (
                <DiffTable
                  id="compare-diff"
                  caption={`Changes from ${named(diff.from, published)} to version ${diff.to}`}
                  changes={shown.changes}
                />
              )}
            </section>
          )}
        </section>
      )}
    </section>
  );
}
