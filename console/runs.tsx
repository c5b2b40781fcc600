/** Crew runs: the caller's (an admin's: all), and one run with its run log as a live timeline. */
import { useEffect, useRef, useState } from 'preact/hooks';
import { call, FINISHED, get, type Me, message, post, type Run, type RunEvent, seg, type Template } from './api.js';
import { accessToken } from './auth.js';
import { Notice, pretty, When } from './format.js';

const PAGE = 50;

const progress = (run: Run) =>
  `${run.progress.completed_steps} of ${run.progress.total_steps} steps${run.progress.current_step ? `, at ${run.progress.current_step}` : ''}`;

export function RunsList(props: { me: Me | undefined }) {
  const [runs, setRuns] = useState<Run[] | undefined>(undefined);
  const [cursor, setCursor] = useState<string | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  document.title = 'Runs — DPM console';

  const load = async (after: string | undefined, previous: Run[]) => {
    try {
      const query = new URLSearchParams({ limit: String(PAGE) });
      if (after) query.set('cursor', after);
      const { body, headers } = await call<Run[]>(`/api/crew-runs?${query}`);
      setRuns([...previous, ...body]);
      setCursor(headers.get('x-next-cursor') ?? undefined);
      setError(undefined);
    } catch (err) {
      setError(message(err));
      setRuns(previous);
    }
  };
  useEffect(() => void load(undefined, []), []);

  return (
    <section aria-labelledby="runs-title" data-view="runs">
      <h1 id="runs-title">Runs</h1>
      <p class="lead">
        {props.me?.roles.includes('admin') ? 'Every crew run' : 'The crew runs you started'}, newest first.
      </p>
      <Notice error={error} />
      {runs === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : runs.length === 0 ? (
        <p class="empty">No runs.</p>
      ) : (
        <table id="runs" class="runs">
          <thead>
            <tr>
              <th scope="col">Run</th>
              <th scope="col">Status</th>
              <th scope="col">Progress</th>
              <th scope="col">Started by</th>
              <th scope="col">Created</th>
            </tr>
          </thead>
          <tbody>
            {runs.map((run) => (
              <tr key={run.correlation_id}>
                <td>
                  <a href={`#/runs/${seg(run.correlation_id)}`}>
                    <code>{run.correlation_id}</code>
                  </a>
                </td>
                <td>
                  <span class={`status status-${run.status}`}>{run.status}</span>
                </td>
                <td>{progress(run)}</td>
                <td>{run.created_by}</td>
                <td>
                  <When at={run.created_at} />
                </td>
              </tr>
            ))}
          </tbody>
        </table>
      )}
      {cursor && (
        <button type="button" onClick={() => void load(cursor, runs ?? [])}>
          More
        </button>
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
  if (role && !me.roles.includes(role)) return `This step needs the ${role} role, which you do not hold.`;
  if (me.credential !== 'bearer' || !me.session) return 'Deciding needs a sign-in session (Bearer token).';
  if (run.created_by === me.name) return 'Four-eyes rule: you started this run, so another person must decide.';
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

  const waitingEvent = [...events].reverse().find((e) => e.type === 'step.waiting');
  const role = typeof waitingEvent?.data?.role === 'string' ? waitingEvent.data.role : undefined;
  const prompt = typeof waitingEvent?.data?.prompt === 'string' ? waitingEvent.data.prompt : undefined;
  const stepReason = whyNotStep(props.me, run, role);
  const finished = FINISHED.includes(run.status);
  // Changing a run is its starter's or an admin's; an approver may only read it (a display
  // hint by name: the server decides by principal).
  const mayChange = props.me?.roles.includes('admin') === true || run.created_by === props.me?.name;
  // The run's own steps (its template may have changed since it started).
  const steps = run.step_ids ??
    template?.steps.map((s) => s.id) ?? [...new Set(events.flatMap((e) => (e.step_id ? [e.step_id] : [])))];
  // A rerun carries over the outputs of the steps before its first: each must have completed.
  const completed = new Set(events.flatMap((e) => (e.type === 'step.completed' && e.step_id ? [e.step_id] : [])));
  const firstIncomplete = steps.findIndex((id) => !completed.has(id));
  const step = run.progress.current_step;
  const rerunnable = mayChange && finished;
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

  return (
    <section aria-labelledby="run-title" data-view="run">
      <p class="back">
        <a href="#/runs">← Runs</a>
      </p>
      <h1 id="run-title">Run of {template?.name ?? run.template_id}</h1>
      <dl class="facts">
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

      {run.status === 'waiting' && (
        <section aria-labelledby="step-title" class="decide">
          <h2 id="step-title">Step {step} waits for a decision</h2>
          {prompt && <p class="notes">{prompt}</p>}
          <label for="step-notes">Notes (optional)</label>
          <textarea
            id="step-notes"
            rows={2}
            maxLength={1000}
            value={notes}
            disabled={stepReason !== undefined || busy}
            onInput={(e) => setNotes(e.currentTarget.value)}
          />
          <div class="actions">
            {([true, false] as const).map((approve) => (
              <button
                key={String(approve)}
                type="button"
                id={approve ? 'approve-step' : 'reject-step'}
                class={approve ? 'primary' : undefined}
                disabled={stepReason !== undefined || busy}
                aria-describedby={stepReason ? 'step-why' : undefined}
                onClick={() =>
                  void act(
                    approve ? 'Approve' : 'Reject',
                    () =>
                      post(`${path}/steps/${seg(step ?? '')}/decision`, {
                        approve,
                        ...(notes.trim() && { notes: notes.trim() }),
                      }),
                    approve ? `Step ${step} approved.` : `Step ${step} rejected.`,
                  )
                }
              >
                {approve ? 'Approve step' : 'Reject step'}
              </button>
            ))}
          </div>
          {stepReason && (
            <p id="step-why" class="why">
              {stepReason}
            </p>
          )}
        </section>
      )}

      <section aria-labelledby="actions-title" class="run-actions">
        <h2 id="actions-title">Actions</h2>
        <div class="actions">
          <button
            type="button"
            id="cancel-run"
            disabled={!mayChange || finished || busy}
            onClick={() => void act('Cancel', () => post(`${path}/cancel`, {}), 'The run is cancelled.')}
          >
            Cancel run
          </button>
          <button
            type="button"
            id="retry-run"
            disabled={!mayChange || !(run.status === 'failed' || run.status === 'cancelled') || busy}
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
            A new run of this run's steps: the steps before the one you choose keep their outputs from this run; that
            step and the ones after it run again with the values below.
          </p>
          <label for="rerun-step">From step</label>
          <select
            id="rerun-step"
            value={fromStep}
            disabled={!rerunnable}
            aria-describedby="rerun-hint"
            onChange={(e) => setFromStep(e.currentTarget.value)}
          >
            <option value="">Choose a step</option>
            {steps.map((id, i) => (
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
            disabled={!rerunnable || busy}
            onInput={(e) => setValuesText(e.currentTarget.value)}
          />
          <button type="submit" id="rerun-run" disabled={!rerunnable || !fromStep || busy}>
            Rerun
          </button>
        </form>
        {!mayChange ? (
          <p class="why">
            Only the run's starter ({run.created_by}) or an admin may cancel, retry or rerun it; you may read it and
            decide its approval steps.
          </p>
        ) : (
          !finished && <p class="why">Retry and rerun are for a finished run.</p>
        )}
        <Notice {...outcome} />
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
