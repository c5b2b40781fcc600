/**
 * Crew runs: a list filtered by status, template, starter and schedule, paged by cursor (the
 * filters live in the hash, #/runs?status=…&template=…&starter=me&schedule=…&after=…); and
 * one run: its template, values and steps (input, output, duration, status), an approval
 * step's decision with what it lets through, the actions the caller may take, and its run
 * log as a live timeline.
 */
import { useEffect, useRef, useState } from 'preact/hooks';
import {
  type ApprovalItem,
  call,
  FINISHED,
  get,
  isAdmin,
  type Me,
  message,
  post,
  type Run,
  type RunEvent,
  type Schedule,
  seg,
  type Template,
} from './api.js';
import { accessToken } from './auth.js';
import { Notice, pretty, When } from './format.js';
import { answeredAt, type Decided, DecisionOutcome } from './outcome.js';
import { ApprovalContext, duration, Payload, StepList, stepStates } from './steps.js';

const PAGE = 50;

const STATUSES: readonly Run['status'][] = ['pending', 'running', 'waiting', 'succeeded', 'failed', 'cancelled'];

const progress = (run: Run) =>
  `${run.progress.completed_steps} of ${run.progress.total_steps} steps${run.progress.current_step ? `, at ${run.progress.current_step}` : ''}`;

/** Every item of a list (following X-Next-Cursor, at most 10 pages of 1,000). */
async function readAll<T>(path: string): Promise<T[]> {
  const items: T[] = [];
  let cursor: string | undefined;
  for (let page = 0; page < 10; page++) {
    const query = new URLSearchParams({ limit: '1000' });
    if (cursor) query.set('cursor', cursor);
    const { body, headers } = await call<T[]>(`${path}?${query}`);
    items.push(...body);
    cursor = headers.get('x-next-cursor') ?? undefined;
    if (!cursor) break;
  }
  return items;
}

/** Read once per page load (a failure is read again next time). */
function once<T>(read: () => Promise<T>): () => Promise<T> {
  let pending: Promise<T> | undefined;
  return () =>
    (pending ??= read().catch((err: unknown) => {
      pending = undefined;
      throw err;
    }));
}

const templates = once(() => readAll<Template>('/api/crew-templates'));
const schedules = once(() => readAll<Schedule>('/api/crew-schedules'));

interface Filters {
  status: string;
  template: string;
  /** `me`: the admin's own runs (non-admins only ever list their own). */
  starter: string;
  schedule: string;
  /** The cursors of the pages before this one's end: the last one reads this page. */
  after: string[];
}

function readFilters(): Filters {
  const query = new URLSearchParams(location.hash.split('?')[1] ?? '');
  return {
    status: query.get('status') ?? '',
    template: query.get('template') ?? '',
    starter: query.get('starter') === 'me' ? 'me' : '',
    schedule: query.get('schedule') ?? '',
    // Cursors are base64url: a dot never occurs in one.
    after: (query.get('after') ?? '').split('.').filter(Boolean),
  };
}

function filterQuery(f: Filters): string {
  const query = new URLSearchParams();
  if (f.status) query.set('status', f.status);
  if (f.template) query.set('template', f.template);
  if (f.starter) query.set('starter', f.starter);
  if (f.schedule) query.set('schedule', f.schedule);
  if (f.after.length) query.set('after', f.after.join('.'));
  const text = query.toString();
  return text ? `?${text}` : '';
}

export function RunsList(props: { me: Me | undefined }) {
  const admin = isAdmin(props.me);
  const [filters, setFilters] = useState<Filters>(readFilters);
  const [runs, setRuns] = useState<Run[] | undefined>(undefined);
  const [nextCursor, setNextCursor] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [names, setNames] = useState<Map<string, string>>(new Map());
  const [plans, setPlans] = useState<Schedule[]>([]);
  const latest = useRef(0);
  document.title = 'Runs — DPM console';

  // The starter and schedule filters are an admin's; until who signs in is known they wait.
  const ready = props.me !== undefined || (!filters.starter && !filters.schedule);
  const schedule = admin ? filters.schedule : '';
  const starter = admin && !schedule ? filters.starter : '';
  const key = JSON.stringify([filters, admin]);

  useEffect(() => {
    const changed = () => setFilters(readFilters());
    addEventListener('hashchange', changed);
    return () => removeEventListener('hashchange', changed);
  }, []);
  useEffect(() => {
    templates().then(
      (list) => setNames(new Map(list.map((t) => [t.id, t.name]))),
      () => undefined,
    );
  }, []);
  useEffect(() => {
    if (admin) schedules().then(setPlans, () => undefined);
  }, [admin]);

  useEffect(() => {
    if (!ready) return;
    const call_ = ++latest.current;
    const query = new URLSearchParams({ limit: String(PAGE) });
    const cursor = filters.after.at(-1);
    if (cursor) query.set('cursor', cursor);
    let path: string;
    if (schedule) path = `/api/crew-schedules/${seg(schedule)}/runs?${query}`;
    else {
      if (filters.status) query.set('status', filters.status);
      if (filters.template) query.set('template_id', filters.template);
      if (starter) query.set('created_by', starter);
      path = `/api/crew-runs?${query}`;
    }
    setRuns(undefined);
    call<Run[]>(path).then(
      ({ body, headers }) => {
        if (call_ !== latest.current) return;
        setRuns(body);
        setNextCursor(headers.get('x-next-cursor') ?? undefined);
        setError(undefined);
      },
      (err: unknown) => {
        if (call_ !== latest.current) return;
        setRuns([]);
        setNextCursor(undefined);
        setError(message(err));
      },
    );
  }, [key, ready]);

  /** New filters (from the first page), kept in the hash without a new history entry. */
  const apply = (change: Partial<Filters>) => {
    const next = { ...filters, after: [], ...change };
    history.replaceState(history.state, '', `#/runs${filterQuery(next)}`);
    setFilters(next);
  };
  const filtered = filters.status || filters.template || starter || schedule;
  const templateName = (id: string) => names.get(id) ?? id;
  const scheduleName = (id: string) => plans.find((p) => p.id === id)?.name;
  const templateOptions = [...names].sort((a, b) => a[1].localeCompare(b[1]));
  if (filters.template && !names.has(filters.template)) templateOptions.push([filters.template, filters.template]);
  const pageNumber = filters.after.length + 1;

  return (
    <section aria-labelledby="runs-title" data-view="runs">
      <h1 id="runs-title">Runs</h1>
      <p class="lead">
        {schedule
          ? `The runs schedule ${scheduleName(schedule) ?? schedule} started`
          : admin
            ? starter
              ? 'The crew runs you started'
              : 'Every crew run'
            : 'The crew runs you started'}
        , newest first.
      </p>
      <form class="filters" role="search" aria-label="Filter runs" onSubmit={(e) => e.preventDefault()}>
        {!schedule && (
          <>
            <label for="runs-status">Status</label>
            <select id="runs-status" value={filters.status} onChange={(e) => apply({ status: e.currentTarget.value })}>
              <option value="">Any status</option>
              {STATUSES.map((s) => (
                <option key={s} value={s}>
                  {s}
                </option>
              ))}
            </select>
            <label for="runs-template">Template</label>
            <select
              id="runs-template"
              value={filters.template}
              onChange={(e) => apply({ template: e.currentTarget.value })}
            >
              <option value="">Any template</option>
              {templateOptions.map(([id, name]) => (
                <option key={id} value={id}>
                  {name}
                </option>
              ))}
            </select>
          </>
        )}
        {admin && !schedule && (
          <>
            <label for="runs-starter">Started by</label>
            <select id="runs-starter" value={starter} onChange={(e) => apply({ starter: e.currentTarget.value })}>
              <option value="">Anyone</option>
              <option value="me">Me</option>
            </select>
          </>
        )}
        {admin && (
          <>
            <label for="runs-schedule">Schedule</label>
            <select id="runs-schedule" value={schedule} onChange={(e) => apply({ schedule: e.currentTarget.value })}>
              <option value="">Any (or none)</option>
              {plans.map((p) => (
                <option key={p.id} value={p.id}>
                  {p.name}
                </option>
              ))}
              {schedule && !scheduleName(schedule) && <option value={schedule}>{schedule}</option>}
            </select>
          </>
        )}
        {filtered && (
          <button type="button" onClick={() => apply({ status: '', template: '', starter: '', schedule: '' })}>
            Clear filters
          </button>
        )}
      </form>
      {schedule && (
        <p class="hint">A schedule's runs are listed whatever their status; clear the schedule to filter by them.</p>
      )}
      <Notice error={error} />
      {runs === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : runs.length === 0 ? (
        !error && <p class="empty">{filtered ? 'No runs match these filters.' : 'No runs.'}</p>
      ) : (
        <table id="runs" class="runs">
          <caption class="sr-only">Runs, page {pageNumber}</caption>
          <thead>
            <tr>
              <th scope="col">Template</th>
              <th scope="col">Status</th>
              <th scope="col">Started by</th>
              <th scope="col">Schedule</th>
              <th scope="col">Started</th>
              <th scope="col">Duration</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.correlation_id}>
                <td>
                  <a href={`#/runs/${seg(run.correlation_id)}`}>
                    {templateName(run.template_id)} <span class="id">· {run.correlation_id.slice(0, 8)}</span>
                  </a>
                </td>
                <td>
                  <span class={`status status-${run.status}`}>{run.status}</span>
                </td>
                <td>{run.created_by}</td>
                <td>
                  {!run.schedule_id ? (
                    <span class="muted">—</span>
                  ) : admin ? (
                    <a
                      href={`#/runs${filterQuery({ status: '', template: '', starter: '', schedule: run.schedule_id, after: [] })}`}
                      onClick={(e) => {
                        e.preventDefault();
                        apply({ schedule: run.schedule_id ?? '' });
                      }}
                    >
                      {scheduleName(run.schedule_id) ?? <code>{run.schedule_id.slice(0, 8)}</code>}
                    </a>
                  ) : (
                    <code>{run.schedule_id.slice(0, 8)}</code>
                  )}
                </td>
                <td>
                  {run.started_at ? (
                    <When at={run.started_at} />
                  ) : (
                    <span class="muted">
                      queued <When at={run.created_at} />
                    </span>
                  )}
                </td>
                <td>
                  {run.started_at && run.finished_at ? (
                    duration(run.started_at, run.finished_at)
                  ) : (
                    <span class="muted">{FINISHED.includes(run.status) ? '—' : 'not finished'}</span>
                  )}
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {(filters.after.length > 0 || nextCursor) && (
        <nav class="pager" aria-label="Pages of runs">
          <button
            type="button"
            disabled={filters.after.length === 0}
            onClick={() => apply({ ...filters, after: filters.after.slice(0, -1) })}
          >
            ← Previous
          </button>
          <span>Page {pageNumber}</span>
          <button
            type="button"
            disabled={!nextCursor}
            onClick={() => nextCursor && apply({ ...filters, after: [...filters.after, nextCursor] })}
          >
            Next →
          </button>
        </nav>
      )}
    </section>
  );
}

/**
 * The values of `text` (a JSON object) that differ from the run's `original` ones: what a
 * rerun sends (the service keeps the others), or why `text` is not usable.
 */
function changedValues(
  original: Record<string, unknown>,
  text: string,
): { values: Record<string, unknown> } | { error: string } {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch (err) {
    return { error: `the values are not JSON (${message(err)})` };
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed))
    return { error: 'the values must be a JSON object of variable name → value' };
  const values: Record<string, unknown> = {};
  for (const [name, value] of Object.entries(parsed))
    if (!Object.hasOwn(original, name) || JSON.stringify(value) !== JSON.stringify(original[name]))
      values[name] = value;
  return { values };
}

/** Why the caller may not decide the waiting step (a display hint: the server decides), or undefined. */
function whyNotStep(me: Me | undefined, run: Run, role: string | undefined): string | undefined {
  if (run.status !== 'waiting' || !run.progress.current_step)
    return `The run is ${run.status}: no step waits for a decision.`;
  if (!me) return 'Who you are is not known yet.';
  const who = role ? `a person with the ${role} role` : 'an approver';
  if (run.created_by === me.name)
    return `Four-eyes rule: you started this run, so ${who} other than you decides this step.`;
  if (role && !me.roles.includes(role)) return `${who[0]!.toUpperCase()}${who.slice(1)} decides this step.`;
  if (me.credential !== 'bearer' || !me.session) return 'Deciding needs a sign-in session (Bearer token).';
  return undefined;
}

export function RunView(props: { me: Me | undefined; id: string }) {
  const path = `/api/crew-runs/${seg(props.id)}`;
  const [run, setRun] = useState<Run | undefined>(undefined);
  const [events, setEvents] = useState<RunEvent[]>([]);
  const [template, setTemplate] = useState<Template | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [pollError, setPollError] = useState<string | undefined>(undefined);
  const [outcome, setOutcome] = useState<{ error?: string; done?: string }>({});
  // The step decided on this page, and how.
  const [decided, setDecided] = useState<(Decided & { step: string }) | undefined>(undefined);
  const [decideError, setDecideError] = useState<string | undefined>(undefined);
  const [busy, setBusy] = useState(false);
  const [notes, setNotes] = useState('');
  const [fromStep, setFromStep] = useState('');
  // The rerun's values as edited; undefined until edited (the run's own values are shown).
  const [valuesText, setValuesText] = useState<string | undefined>(undefined);
  // Bumped to start following the run log again (after a retry).
  const [follow, setFollow] = useState(0);
  const next = useRef(0);
  document.title = `Run ${props.id.slice(0, 8)} — DPM console`;

  const refresh = async () => {
    const current = await get<Run>(path);
    setRun(current);
    return current;
  };

  useEffect(() => {
    refresh().then(
      (current) => get<Template>(`/api/crew-templates/${seg(current.template_id)}`).then(setTemplate, () => undefined),
      (err: unknown) => setError(message(err)),
    );
  }, [path]);

  // The run log, followed with E13's long poll until the run finishes or the view closes.
  useEffect(() => {
    const stop = new AbortController();
    const followLog = async () => {
      let finished = false;
      while (!stop.signal.aborted) {
        try {
          const res = await fetch(`/api/events/${seg(props.id)}?start=${next.current}&wait=${finished ? 0 : 20}`, {
            headers: authHeaders(),
            signal: stop.signal,
          });
          const body = (await res.json().catch(() => undefined)) as RunEvent[] | { error?: string } | undefined;
          if (!res.ok || !Array.isArray(body)) {
            if (res.status === 429) {
              await sleep(1_000, stop.signal);
              continue;
            }
            setPollError(
              `The run log could not be read (${res.status}${body && 'error' in body ? `: ${body.error}` : ''}).`,
            );
            return;
          }
          setPollError(undefined);
          if (body.length > 0) {
            next.current = body[body.length - 1]!.index + 1;
            setEvents((previous) => [...previous, ...body]);
            const current = await refresh();
            if (FINISHED.includes(current.status)) finished = true;
          } else if (finished) {
            return; // finished and nothing left to read
          } else {
            const current = await refresh();
            if (FINISHED.includes(current.status)) finished = true;
          }
        } catch (err) {
          if (stop.signal.aborted) return;
          setPollError(`The run log could not be read: ${message(err)}`);
          await sleep(2_000, stop.signal);
        }
      }
    };
    void followLog();
    return () => stop.abort();
  }, [path, follow]);

  // For the benchmark: the first time a finished run is shown whole (its template, every event to its end).
  const shownWhole =
    run !== undefined &&
    template !== undefined &&
    FINISHED.includes(run.status) &&
    events.some((e) => e.type === 'run.completed' || e.type === 'run.failed' || e.type === 'run.cancelled');
  useEffect(() => {
    if (shownWhole && performance.getEntriesByName('run-rendered').length === 0) performance.mark('run-rendered');
  }, [shownWhole]);

  const act = async (label: string, request: () => Promise<unknown>, done: string) => {
    setBusy(true);
    setOutcome({});
    try {
      await request();
      setOutcome({ done });
      await refresh();
    } catch (err) {
      setOutcome({ error: `${label}: ${message(err)}` });
    } finally {
      setBusy(false);
    }
  };

  if (error) {
    return (
      <section aria-labelledby="run-title">
        <h1 id="run-title">Run {props.id}</h1>
        <Notice error={error} />
      </section>
    );
  }
  if (!run) return <p aria-busy="true">Loading the run…</p>;

  // The step waiting, or the one decided on this page (the run has moved on since).
  const waitingEvent = [...events]
    .reverse()
    .find((e) => e.type === 'step.waiting' && (!decided || e.step_id === decided.step));
  const role = typeof waitingEvent?.data?.role === 'string' ? waitingEvent.data.role : undefined;
  const prompt = typeof waitingEvent?.data?.prompt === 'string' ? waitingEvent.data.prompt : undefined;
  const stepReason = whyNotStep(props.me, run, role);
  const finished = FINISHED.includes(run.status);
  // Changing a run is its starter's or an admin's; anyone else may only read it (a display
  // hint by name: the server decides by principal), and sees no action they may not take.
  const mayChange = isAdmin(props.me) || run.created_by === props.me?.name;
  // The run's own steps (its template may have changed since it started).
  const stepIds = run.step_ids ??
    template?.steps.map((s) => s.id) ?? [...new Set(events.flatMap((e) => (e.step_id ? [e.step_id] : [])))];
  const steps = stepStates(run, stepIds, template, events);
  // A rerun carries over the outputs of the steps before its first: each must have completed.
  const firstIncomplete = steps.findIndex((s) => !s.completed);
  const decidingStep = decided ? decided.step : run.progress.current_step;
  const showApproval = waitingEvent !== undefined && (decided !== undefined || run.status === 'waiting');
  const decide = async (approve: boolean) => {
    const step = decidingStep ?? '';
    setBusy(true);
    setDecideError(undefined);
    try {
      const { headers } = await call(`${path}/steps/${seg(step)}/decision`, {
        method: 'POST',
        body: { approve, ...(notes.trim() && { notes: notes.trim() }) },
      });
      setDecided({
        step,
        approved: approve,
        what: `step ${step} of this run`,
        by: props.me?.name ?? 'you',
        at: answeredAt(headers),
      });
      await refresh();
    } catch (err) {
      setDecideError(`${approve ? 'Approve' : 'Reject'}: ${message(err)}`);
    } finally {
      setBusy(false);
    }
  };
  const rerun = () => {
    const edited = changedValues(run.values, valuesText ?? pretty(run.values));
    if ('error' in edited) {
      setOutcome({ error: `Rerun: ${edited.error}` });
      return;
    }
    void act(
      'Rerun',
      async () => {
        const started = await post<{ correlation_id: string }>(`${path}/rerun`, {
          from_step: fromStep,
          ...(Object.keys(edited.values).length > 0 && { values: edited.values }),
        });
        location.hash = `#/runs/${seg(started.correlation_id)}`;
      },
      'A new run started.',
    );
  };
  const values = Object.entries(run.values);
  const isThisStep = (i: ApprovalItem) =>
    i.kind === 'crew_step' && i.correlation_id === run.correlation_id && i.step_id === decidingStep;

  return (
    <section aria-labelledby="run-title" data-view="run">
      <p class="back">
        <a href="#/runs">← Runs</a>
      </p>
      <h1 id="run-title">Run of {template?.name ?? run.template_id}</h1>
      <dl class="facts">
        <dt>Template</dt>
        <dd id="run-template">{template?.name ?? <code>{run.template_id}</code>}</dd>
        <dt>Run</dt>
        <dd>
          <code>{run.correlation_id}</code>
        </dd>
        <dt>Status</dt>
        <dd>
          <span id="run-status" class={`status status-${run.status}`}>
            {run.status}
          </span>
        </dd>
        <dt>Progress</dt>
        <dd id="run-progress">{progress(run)}</dd>
        <dt>Started by</dt>
        <dd>
          {run.created_by}, <When at={run.created_at} />
        </dd>
        {run.started_at && run.finished_at && (
          <>
            <dt>Duration</dt>
            <dd id="run-duration">
              {duration(run.started_at, run.finished_at)} (finished <When at={run.finished_at} />)
            </dd>
          </>
        )}
        {run.rerun_of && (
          <>
            <dt>Rerun of</dt>
            <dd>
              <a id="rerun-of" href={`#/runs/${seg(run.rerun_of)}`}>
                <code>{run.rerun_of}</code>
              </a>
            </dd>
          </>
        )}
        {run.schedule_id && (
          <>
            <dt>Started by schedule</dt>
            <dd>
              <code id="schedule-id">{run.schedule_id}</code>
            </dd>
          </>
        )}
        {run.error && (
          <>
            <dt>Error</dt>
            <dd>{run.error}</dd>
          </>
        )}
      </dl>

      <section aria-labelledby="values-title">
        <h2 id="values-title">Values</h2>
        {values.length === 0 ? (
          <p class="empty">The run has no values.</p>
        ) : (
          <table id="run-values" class="values">
            <thead>
              <tr>
                <th scope="col">Variable</th>
                <th scope="col">Value</th>
              </tr>
            </thead>
            <tbody>
              {values.map(([name, value]) => (
                <tr key={name}>
                  <th scope="row">
                    <code>{name}</code>
                  </th>
                  <td>
                    <Payload
                      value={typeof value === 'string' && value !== '' ? value : JSON.stringify(value, null, 2)}
                      label={`value of ${name}`}
                    />
                  </td>
                </tr>
              ))}
            </tbody>
          </table>
        )}
      </section>

      {showApproval && (
        <section aria-labelledby="step-title" class="decide">
          <h2 id="step-title">
            {decided ? `Step ${decidingStep} is decided` : `Step ${decidingStep} waits for a decision`}
          </h2>
          {prompt && <p class="notes">{prompt}</p>}
          <ApprovalContext steps={steps} waiting={waitingEvent} />
          {decided ? (
            <DecisionOutcome decided={decided} isCurrent={isThisStep} />
          ) : stepReason ? (
            <p id="step-why" class="why">
              {stepReason}
            </p>
          ) : (
            <>
              <label for="step-notes">Notes (optional)</label>
              <textarea
                id="step-notes"
                rows={2}
                maxLength={1000}
                value={notes}
                disabled={busy}
                onInput={(e) => setNotes(e.currentTarget.value)}
              />
              <div class="actions">
                <button
                  type="button"
                  id="approve-step"
                  class="primary"
                  disabled={busy}
                  onClick={() => void decide(true)}
                >
                  Approve step
                </button>
                <button type="button" id="reject-step" disabled={busy} onClick={() => void decide(false)}>
                  Reject step
                </button>
              </div>
              <Notice error={decideError} />
            </>
          )}
        </section>
      )}

      {mayChange && (
        <section aria-labelledby="actions-title" class="run-actions">
          <h2 id="actions-title">Actions</h2>
          {!finished ? (
            <div class="actions">
              <button
                type="button"
                id="cancel-run"
                disabled={busy}
                onClick={() => void act('Cancel', () => post(`${path}/cancel`, {}), 'The run is cancelled.')}
              >
                Cancel run
              </button>
            </div>
          ) : (
            <>
              {(run.status === 'failed' || run.status === 'cancelled') && (
                <div class="actions">
                  <button
                    type="button"
                    id="retry-run"
                    disabled={busy}
                    onClick={() =>
                      void act(
                        'Retry',
                        async () => {
                          await post(`${path}/retry`);
                          setFollow((n) => n + 1);
                        },
                        'The run continues.',
                      )
                    }
                  >
                    Retry
                  </button>
                </div>
              )}
              <form
                class="rerun"
                aria-labelledby="rerun-title"
                onSubmit={(e) => {
                  e.preventDefault();
                  rerun();
                }}
              >
                <h3 id="rerun-title">Rerun from a step</h3>
                <p class="hint" id="rerun-hint">
                  A new run of this run's steps: the steps before the one you choose keep their outputs from this run;
                  that step and the ones after it run again with the values below. A value you change reaches only the
                  steps that run again: the outputs carried over are not made again, even from a changed value.
                </p>
                <label for="rerun-step">From step</label>
                <select
                  id="rerun-step"
                  value={fromStep}
                  aria-describedby="rerun-hint"
                  onChange={(e) => setFromStep(e.currentTarget.value)}
                >
                  <option value="">Choose a step</option>
                  {stepIds.map((id, i) => (
                    <option key={id} value={id} disabled={firstIncomplete >= 0 && i > firstIncomplete}>
                      {i + 1}. {id}
                      {firstIncomplete >= 0 && i > firstIncomplete ? ' (an earlier step did not complete)' : ''}
                    </option>
                  ))}
                </select>
                <label for="rerun-values">Values (JSON; only those you change are sent)</label>
                <textarea
                  id="rerun-values"
                  class="code"
                  rows={Math.min(12, Math.max(3, pretty(run.values).split('\n').length))}
                  spellcheck={false}
                  value={valuesText ?? pretty(run.values)}
                  disabled={busy}
                  onInput={(e) => setValuesText(e.currentTarget.value)}
                />
                <button type="submit" id="rerun-run" disabled={!fromStep || busy}>
                  Rerun
                </button>
              </form>
            </>
          )}
          <Notice {...outcome} />
        </section>
      )}

      <section aria-labelledby="steps-title">
        <h2 id="steps-title">Steps</h2>
        <StepList steps={steps} />
      </section>

      <section aria-labelledby="timeline-title">
        <h2 id="timeline-title">Run log</h2>
        <Notice error={pollError} />
        <ol id="timeline" class="timeline" aria-live="polite">
          {events.map((e) => (
            <li key={e.index} data-type={e.type}>
              <span class="index">{e.index}</span> <When at={e.timestamp} /> <strong>{e.type}</strong>
              {e.step_id && <span class="step"> {e.step_id}</span>}
              {e.data?.reused === true && <span class="tag">reused</span>}: {e.message}
            </li>
          ))}
        </ol>
        {!finished && <p class="live">Following the run log as it grows…</p>}
      </section>
    </section>
  );
}

function authHeaders(): Record<string, string> {
  const token = accessToken();
  return token ? { authorization: `Bearer ${token}` } : {};
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener('abort', () => {
      clearTimeout(timer);
      resolve();
    });
  });
}
