/**
 * Crew schedules (docs/crews.md): every schedule with its next and last
 * fire and its last skipped fire; admins enable and disable them and read the runs each started.
 */
import { useEffect, useState } from 'preact/hooks';
import { get, isAdmin, type Me, message, patch, type Run, type Schedule, seg } from './api.js';
import { Notice, pretty, When } from './format.js';
import { More, usePaged } from './paged.js';

const PAGE = 50;

/** A time, or a dash with what its absence means. */
function Maybe(props: { at: string | null; none: string }) {
  return props.at ? <When at={props.at} /> : <span class="none">{props.none}</span>;
}

function Enabled({ schedule }: { schedule: Schedule }) {
  return (
    <span class={`status status-${schedule.enabled ? 'enabled' : 'disabled'}`}>
      {schedule.enabled ? 'enabled' : 'disabled'}
    </span>
  );
}

/** Enables or disables a schedule: one button, named after what it does and to which schedule. */
function Toggle(props: {
  schedule: Schedule;
  onDone: (after: Schedule, done: string) => void;
  onError: (error: string) => void;
}) {
  const { schedule } = props;
  const [busy, setBusy] = useState(false);
  const enable = !schedule.enabled;
  const flip = async () => {
    setBusy(true);
    try {
      const after = await patch<Schedule>(`/api/crew-schedules/${seg(schedule.id)}`, { enabled: enable });
      props.onDone(
        after,
        enable
          ? `Schedule ${after.name} is enabled: it fires again${after.next_run_at ? `, next at ${new Date(after.next_run_at).toLocaleString()}` : ''}.`
          : `Schedule ${after.name} is disabled: it fires nothing until it is enabled again.`,
      );
    } catch (err) {
      props.onError(`${enable ? 'Enable' : 'Disable'} ${schedule.name}: ${message(err)}`);
    } finally {
      setBusy(false);
    }
  };
  return (
    <button type="button" class="small" disabled={busy} onClick={() => void flip()}>
      {enable ? 'Enable' : 'Disable'}
      <span class="sr-only"> {schedule.name}</span>
    </button>
  );
}

export function SchedulesList(props: { me: Me | undefined }) {
  const list = usePaged<Schedule>('/api/crew-schedules', PAGE);
  const schedules = list.items;
  const [outcome, setOutcome] = useState<{ error?: string; done?: string }>({});
  const admin = isAdmin(props.me);
  document.title = 'Schedules — DPM console';

  const replace = (after: Schedule, done: string) => {
    list.update((all) => all.map((s) => (s.id === after.id ? after : s)));
    setOutcome({ done });
  };

  return (
    <section aria-labelledby="schedules-title" data-view="schedules">
      <h1 id="schedules-title">Schedules</h1>
      <p class="lead">
        Crew runs that start on a schedule, oldest schedule first. A skipped fire started no run: its previous run was
        still unfinished, or its values no longer fit the template.
        {admin ? '' : ' Only admins enable or disable a schedule and see the runs it started.'}
      </p>
      <Notice error={list.error} />
      <Notice {...outcome} />
      {schedules === undefined ? (
        <p aria-busy="true">Loading…</p>
      ) : schedules.length === 0 ? (
        !list.error && <p class="empty">No schedules.</p>
      ) : (
        <div class="scroll">
          <table id="schedules" class="schedules">
            <caption class="sr-only">Crew schedules</caption>
            <thead>
              <tr>
                <th scope="col">Schedule</th>
                <th scope="col">When</th>
                <th scope="col">Status</th>
                <th scope="col">Next fire</th>
                <th scope="col">Last fire</th>
                <th scope="col">Last skipped fire</th>
                {admin && <th scope="col">Actions</th>}
              </tr>
            </thead>
            <tbody>
              {schedules.map((s) => (
                <tr key={s.id}>
                  <th scope="row">
                    <a href={`#/schedules/${seg(s.id)}`}>{s.name}</a>
                  </th>
                  <td>
                    <code>{s.expression}</code>
                    {s.timezone !== 'UTC' && <span class="sub">{s.timezone}</span>}
                  </td>
                  <td>
                    <Enabled schedule={s} />
                  </td>
                  <td>
                    <Maybe at={s.next_run_at} none={s.enabled ? 'none left' : '—'} />
                  </td>
                  <td>
                    <Maybe at={s.last_run_at} none="never" />
                  </td>
                  <td>
                    <Maybe at={s.last_skipped_at} none="none" />
                  </td>
                  {admin && (
                    <td class="row-actions">
                      <Toggle schedule={s} onDone={replace} onError={(e) => setOutcome({ error: e })} />
                      <a href={`#/schedules/${seg(s.id)}`}>
                        Runs<span class="sr-only"> of {s.name}</span>
                      </a>
                    </td>
                  )}
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
      <More list={list} />
    </section>
  );
}

const progress = (run: Run) =>
  `${run.progress.completed_steps} of ${run.progress.total_steps} steps${run.progress.current_step ? `, at ${run.progress.current_step}` : ''}`;

/** One schedule: what it runs and when, and (admins) the runs it started, newest first. */
export function ScheduleView(props: { me: Me | undefined; id: string }) {
  const path = `/api/crew-schedules/${seg(props.id)}`;
  const [schedule, setSchedule] = useState<Schedule | undefined>(undefined);
  const [error, setError] = useState<string | undefined>(undefined);
  const [outcome, setOutcome] = useState<{ error?: string; done?: string }>({});
  const admin = isAdmin(props.me);
  const runs = usePaged<Run>(admin ? `${path}/runs` : undefined, PAGE);
  document.title = `${schedule?.name ?? 'Schedule'} — Schedules — DPM console`;

  useEffect(() => {
    get<Schedule>(path).then(setSchedule, (err: unknown) => setError(message(err)));
  }, [path]);

  if (error) {
    return (
      <section aria-labelledby="schedule-title">
        <p class="back">
          <a href="#/schedules">← Schedules</a>
        </p>
        <h1 id="schedule-title">Schedule {props.id}</h1>
        <Notice error={error} />
      </section>
    );
  }
  if (!schedule) return <p aria-busy="true">Loading the schedule…</p>;

  return (
    <section aria-labelledby="schedule-title" data-view="schedule">
      <p class="back">
        <a href="#/schedules">← Schedules</a>
      </p>
      <h1 id="schedule-title">Schedule {schedule.name}</h1>
      <dl class="facts">
        <dt>Status</dt>
        <dd>
          <Enabled schedule={schedule} />
        </dd>
        <dt>When</dt>
        <dd>
          <code>{schedule.expression}</code> ({schedule.timezone})
        </dd>
        <dt>Next fire</dt>
        <dd>
          <Maybe at={schedule.next_run_at} none={schedule.enabled ? 'none left' : '— (disabled)'} />
        </dd>
        <dt>Last fire</dt>
        <dd>
          <Maybe at={schedule.last_run_at} none="never" />
          {schedule.last_correlation_id && admin && (
            <>
              {' '}
              (
              <a href={`#/runs/${seg(schedule.last_correlation_id)}`}>
                run <code>{schedule.last_correlation_id.slice(0, 8)}</code>
              </a>
              )
            </>
          )}
        </dd>
        <dt>Last skipped fire</dt>
        <dd>
          <Maybe at={schedule.last_skipped_at} none="none" />
        </dd>
        <dt>Overlap</dt>
        <dd>
          {schedule.overlap === 'skip'
            ? 'skip: a fire while the previous run is unfinished starts nothing'
            : 'allow: every fire starts a run'}
        </dd>
        <dt>Template</dt>
        <dd>
          <code>{schedule.template_id}</code>
        </dd>
        <dt>Created by</dt>
        <dd>
          {schedule.created_by}, <When at={schedule.created_at} /> (its runs are theirs)
        </dd>
        <dt>Values</dt>
        <dd>
          <pre class="json inline">{pretty(schedule.values)}</pre>
        </dd>
      </dl>
      {admin && (
        <div class="actions">
          <Toggle
            schedule={schedule}
            onDone={(after, done) => {
              setSchedule(after);
              setOutcome({ done });
            }}
            onError={(e) => setOutcome({ error: e })}
          />
        </div>
      )}
      <Notice {...outcome} />

      <section aria-labelledby="schedule-runs-title">
        <h2 id="schedule-runs-title">Runs it started</h2>
        {props.me === undefined ? (
          <p aria-busy="true">Loading…</p>
        ) : !admin ? (
          <p class="why">Only admins see the runs a schedule started (they carry their values and errors).</p>
        ) : (
          <>
            <Notice error={runs.error} />
            {runs.items === undefined ? (
              <p aria-busy="true">Loading…</p>
            ) : runs.items.length === 0 ? (
              !runs.error && <p class="empty">No runs yet.</p>
            ) : (
              <table id="schedule-runs" class="runs">
                <caption class="sr-only">Runs of schedule {schedule.name}, newest first</caption>
                <thead>
                  <tr>
                    <th scope="col">Run</th>
                    <th scope="col">Status</th>
                    <th scope="col">Progress</th>
                    <th scope="col">Created</th>
                  </tr>
                </thead>
                <tbody>
                  {runs.items.map((run) => (
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
                      <td>
                        <When at={run.created_at} />
                      </td>
                    </tr>
                  ))}
                </tbody>
              </table>
            )}
            <More list={runs} label="More runs" />
          </>
        )}
      </section>
    </section>
  );
}
