/**
 * A run's steps as its run log tells them (E13): each step's input (`step.started`), output
 * (`step.completed`), failure, duration and status, and what an approval step shows its
 * approver: the outputs before it and the input the next step will send (`step.waiting`).
 * Older runs lack some of these data: what is absent is left out.
 */
import { useState } from 'preact/hooks';
import type { Run, RunEvent, Template } from './api.js';
import { pretty, When } from './format.js';

/** How much of an input or output shows before "Show all". */
const SHOWN_BYTES = 2048;

export type StepStatus = 'not started' | 'running' | 'waiting' | 'succeeded' | 'reused' | 'failed' | 'cancelled';

export interface StepState {
  id: string;
  kind: string | undefined;
  status: StepStatus;
  started?: RunEvent;
  waiting?: RunEvent;
  completed?: RunEvent;
  failed?: RunEvent;
}

const record = (value: unknown): Record<string, unknown> | undefined =>
  value && typeof value === 'object' && !Array.isArray(value) ? (value as Record<string, unknown>) : undefined;

/** Each of the run's steps in order, from its latest attempt (a retry starts a step again). */
export function stepStates(run: Run, ids: readonly string[], template: Template | undefined, events: RunEvent[]) {
  const states = new Map<string, StepState>();
  const kinds = new Map(template?.steps.map((s) => [s.id, s.kind]));
  const state = (id: string) => {
    let found = states.get(id);
    if (!found) {
      found = { id, kind: kinds.get(id), status: 'not started' };
      states.set(id, found);
    }
    return found;
  };
  for (const e of events) {
    if (!e.step_id) continue;
    const s = state(e.step_id);
    if (e.type === 'step.started') {
      Object.assign(s, { started: e, waiting: undefined, completed: undefined, failed: undefined });
      // The message names the kind: "Step <id> (<kind>) started".
      s.kind ??= /\(([a-z]+)\) started$/.exec(e.message)?.[1];
    } else if (e.type === 'step.waiting') s.waiting = e;
    else if (e.type === 'step.completed') s.completed = e;
    else if (e.type === 'step.failed') s.failed = e;
  }
  const order = [...ids, ...[...states.keys()].filter((id) => !ids.includes(id))];
  return order.map((id) => {
    const s = state(id);
    s.status = s.completed
      ? s.completed.data?.reused === true
        ? 'reused'
        : 'succeeded'
      : s.failed
        ? 'failed'
        : s.waiting && run.status === 'waiting'
          ? 'waiting'
          : s.started
            ? run.status === 'cancelled' || run.status === 'failed'
              ? 'cancelled'
              : 'running'
            : 'not started';
    return s;
  });
}

/** A duration in words: 850 ms, 4.2 s, 3 min 5 s, 2 h 10 min. */
export function duration(from: string, to: string): string | undefined {
  const ms = Date.parse(to) - Date.parse(from);
  if (!Number.isFinite(ms) || ms < 0) return undefined;
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  const minutes = Math.floor(ms / 60_000);
  if (minutes < 60) return `${minutes} min ${Math.floor((ms % 60_000) / 1000)} s`;
  return `${Math.floor(minutes / 60)} h ${minutes % 60} min`;
}

const kib = (bytes: number) => `${(bytes / 1024).toFixed(bytes < 10 * 1024 ? 1 : 0)} KiB`;

/** A value as text: strings as they are, anything else as indented JSON. */
const asText = (value: unknown) => (typeof value === 'string' ? value : pretty(value));

/** Text shown up to SHOWN_BYTES, with its size and a "Show all" button when longer. */
export function Payload(props: { value: unknown; label: string }) {
  const [all, setAll] = useState(false);
  const text = asText(props.value);
  const bytes = new TextEncoder().encode(text).length;
  const cut = !all && bytes > SHOWN_BYTES;
  return (
    <div class="payload">
      <pre tabIndex={0} aria-label={props.label}>
        {cut ? `${text.slice(0, SHOWN_BYTES)}…` : text}
      </pre>
      {cut && (
        <p class="size">
          … ({kib(bytes)}){' '}
          <button type="button" class="small" aria-label={`Show all of ${props.label}`} onClick={() => setAll(true)}>
            Show all
          </button>
        </p>
      )}
    </div>
  );
}

/** What a step reads, by kind; an unknown shape as JSON. */
export function StepInput(props: { kind: string | undefined; input: unknown; label: string }) {
  const input = record(props.input);
  if (!input) return <Payload value={props.input} label={props.label} />;
  if (props.kind === 'http' && typeof input.method === 'string' && typeof input.url === 'string') {
    const headers = record(input.headers) ?? {};
    const request = [
      `${input.method} ${input.url}`,
      ...Object.entries(headers).map(([name, value]) => `${name}: ${String(value)}`),
      ...(input.body !== undefined && input.body !== null ? ['', asText(input.body)] : []),
    ].join('\n');
    return <Payload value={request} label={props.label} />;
  }
  if (props.kind === 'llm' && typeof input.text === 'string') {
    return (
      <>
        {typeof input.system === 'string' && (
          <>
            <p class="part">System</p>
            <Payload value={input.system} label={`${props.label}, system`} />
          </>
        )}
        <Payload value={input.text} label={props.label} />
      </>
    );
  }
  if (props.kind === 'render' && typeof input.text === 'string')
    return <Payload value={input.text} label={props.label} />;
  if (props.kind === 'wait' && typeof input.seconds === 'number') return <p>Waits {input.seconds} s.</p>;
  if (props.kind === 'approval' && typeof input.prompt === 'string')
    return <Payload value={input.prompt} label={props.label} />;
  return <Payload value={input} label={props.label} />;
}

function ModelLine({ data }: { data: Record<string, unknown> | undefined }) {
  if (!data || (typeof data.model !== 'string' && typeof data.provider !== 'string')) return null;
  const usage = record(data.usage);
  return (
    <p class="model">
      Answered by {[data.provider, data.model].filter((v) => typeof v === 'string').join(' / ')}
      {usage && typeof usage.input_tokens === 'number' && typeof usage.output_tokens === 'number' && (
        <>
          {' '}
          ({usage.input_tokens} tokens in, {usage.output_tokens} out)
        </>
      )}
    </p>
  );
}

/** The run's steps, each collapsible (open: the one waiting, running or failed). */
export function StepList(props: { steps: StepState[] }) {
  return (
    <ol id="steps" class="steps">
      {props.steps.map((s, i) => {
        const end = s.completed ?? s.failed;
        const took = s.started && end ? duration(s.started.timestamp, end.timestamp) : undefined;
        const input = s.started?.data && 'input' in s.started.data ? s.started.data.input : undefined;
        const output = s.completed?.data && 'output' in s.completed.data ? s.completed.data.output : undefined;
        const open = s.status === 'waiting' || s.status === 'failed' || s.status === 'running';
        return (
          <li key={s.id} data-step={s.id} data-status={s.status}>
            <details open={open}>
              <summary>
                <span class="n">{i + 1}.</span> <code>{s.id}</code>
                {s.kind && <span class="kind">{s.kind}</span>}{' '}
                <span class={`status status-${s.status === 'reused' ? 'succeeded' : s.status.replace(' ', '-')}`}>
                  {s.status}
                </span>
                {took && <span class="took"> {took}</span>}
              </summary>
              <div class="step-body">
                {s.started && (
                  <p class="when">
                    Started <When at={s.started.timestamp} />
                    {end && (
                      <>
                        , ended <When at={end.timestamp} />
                      </>
                    )}
                  </p>
                )}
                {s.status === 'reused' && <p class="when">Its output is carried over from the run this one reruns.</p>}
                {input !== undefined && (
                  <>
                    <h3>Input</h3>
                    <StepInput kind={s.kind} input={input} label={`input of step ${s.id}`} />
                  </>
                )}
                {s.waiting && typeof s.waiting.data?.role === 'string' && (
                  <p>
                    {s.status === 'waiting' ? 'Waits' : 'Waited'} for a person with the role{' '}
                    <strong>{s.waiting.data.role}</strong>
                    {typeof s.waiting.data.expires_at === 'string' && (
                      <>
                        {' '}
                        until <When at={s.waiting.data.expires_at} />
                      </>
                    )}
                    .
                  </p>
                )}
                {s.completed && (
                  <>
                    <h3>Output</h3>
                    <Payload value={output ?? null} label={`output of step ${s.id}`} />
                    <ModelLine data={s.completed.data} />
                  </>
                )}
                {s.failed && (
                  <>
                    <h3>Error</h3>
                    <p class="error">{String(s.failed.data?.error ?? s.failed.message)}</p>
                  </>
                )}
                {!s.started && !s.completed && <p class="empty">Not started.</p>}
              </div>
            </details>
          </li>
        );
      })}
    </ol>
  );
}

/**
 * What an approver reads before deciding: the outputs of the steps before the waiting one,
 * and the input the next step will send when approved (`step.waiting` data `next`).
 */
export function ApprovalContext(props: { steps: StepState[]; waiting: RunEvent }) {
  const at = props.steps.findIndex((s) => s.id === props.waiting.step_id);
  const before = props.steps.slice(0, at < 0 ? 0 : at).filter((s) => s.completed);
  const data = props.waiting.data ?? {};
  const next = 'next' in data ? record(data.next) : undefined;
  return (
    <div class="context">
      <h3 id="before-title">What the steps before it produced</h3>
      {before.length === 0 ? (
        <p class="empty">No step before it produced an output.</p>
      ) : (
        <ul class="outputs" aria-labelledby="before-title">
          {before.map((s) => (
            <li key={s.id}>
              <p class="part">
                <code>{s.id}</code>
                {s.kind && <span class="kind">{s.kind}</span>}
              </p>
              <Payload value={s.completed?.data?.output ?? null} label={`output of step ${s.id}`} />
            </li>
          ))}
        </ul>
      )}
      <h3 id="next-title">What the next step will send</h3>
      {next && typeof next.step_id === 'string' ? (
        <div role="group" aria-labelledby="next-title" class="next">
          <p class="part">
            <code>{next.step_id}</code>
            {typeof next.kind === 'string' && <span class="kind">{next.kind}</span>}
          </p>
          <StepInput
            kind={typeof next.kind === 'string' ? next.kind : undefined}
            input={next.input}
            label={`input of the next step ${next.step_id}`}
          />
        </div>
      ) : 'next' in data && data.next === null ? (
        <p class="empty">This is the run's last step: nothing runs after it.</p>
      ) : (
        <p class="empty">The run log does not say (a run from before this was recorded).</p>
      )}
    </div>
  );
}
