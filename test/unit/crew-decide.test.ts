import { describe, expect, it } from 'vitest';
import {
  abandon,
  type Appended,
  attemptEnded,
  currentAttempt,
  type DecideInput,
  decide,
  type Next,
  stepBudgetMs,
  timeoutOf,
  timerSpent,
} from '../../functions/crews/worker/decide.js';
import type { RunLogEntry, RunLogEntryType } from '../../functions/crews/runs/run-schemas.js';
import type { Step } from '../../functions/crews/templates/template-schemas.js';
import type { StepOutcome } from '../../functions/crews/worker/steps.js';
import type { RunItem } from '../../functions/crews/runs/run-store.js';
import { type RenderContext, render } from '../../functions/crews/templates/templating.js';

/*
 * decide (decide.ts) is pure: every test gives it a run, a log and `now` (epoch ms), and
 * checks what it appends and what it tells the runner to do next. `play` below does the
 * runner's part without I/O, so scenarios of several calls read as a run goes.
 */

const ID = 'c'.repeat(36);
const T0 = Date.parse('2026-03-01T10:00:00.000Z');
const NOW = T0 + 5_000;
const iso = (ms: number) => new Date(ms).toISOString();
const LIMIT = { key: 'slot-key', max: 2 } as const;

// ---- steps ----------------------------------------------------------------------------------

const renderStep = (id: string, template = id): Step => ({ id, kind: 'render', template });
const waitStep = (id: string, seconds: number): Step => ({ id, kind: 'wait', seconds });
const httpStep = (id: string): Step => ({ id, kind: 'http', method: 'GET', url: 'http://orders.test/1' });
const llmStep = (id: string): Step => ({ id, kind: 'llm', prompt: 'Summarize' });
const approvalStep = (id: string, prompt: string, role = 'legal', timeout_seconds = 3_600): Step => ({
  id,
  kind: 'approval',
  prompt,
  role,
  timeout_seconds,
});

// ---- the run and its log --------------------------------------------------------------------

interface Spec {
  readonly type: RunLogEntryType;
  readonly at?: number;
  readonly step_id?: string;
  readonly data?: Record<string, unknown>;
}

const ev = (type: RunLogEntryType, more: Omit<Spec, 'type'> = {}): Spec => ({ type, ...more });
const stepEv = (type: RunLogEntryType, step_id: string, more: Omit<Spec, 'type' | 'step_id'> = {}): Spec => ({
  type,
  step_id,
  ...more,
});
const completed = (step_id: string, output: unknown, more: Omit<Spec, 'type' | 'step_id' | 'data'> = {}): Spec =>
  stepEv('step.completed', step_id, { data: { output }, ...more });

/** A log of the specs at indexes 0, 1, ... (timestamps T0 unless given). */
function logOf(specs: readonly Spec[]): RunLogEntry[] {
  return specs.map((s, index) => ({
    index,
    correlation_id: ID,
    type: s.type,
    timestamp: iso(s.at ?? T0),
    ...(s.step_id ? { step_id: s.step_id } : {}),
    message: s.type,
    ...(s.data ? { data: s.data } : {}),
  }));
}

function makeRun(steps: Step[], over: Partial<RunItem> = {}): RunItem {
  return {
    correlation_id: ID,
    template_id: 'tpl',
    status: 'pending',
    values: {},
    created_by: 'ada',
    created_at: iso(T0 - 1_000),
    started_at: null,
    finished_at: null,
    event_count: 1,
    error: null,
    steps,
    expires_at: 0,
    ...over,
  };
}

interface World {
  run: RunItem;
  log: RunLogEntry[];
}

/** A run whose log is `run.queued` then `specs`; its event count is the log's length. */
function world(steps: Step[], specs: readonly Spec[] = [], over: Partial<RunItem> = {}): World {
  const log = logOf([ev('run.queued'), ...specs]);
  return { run: makeRun(steps, { event_count: log.length, ...over }), log };
}

/** A run that started at T0 (status running), with `specs` after its `run.started`. */
function started(steps: Step[], specs: readonly Spec[] = [], over: Partial<RunItem> = {}): World {
  return world(steps, [ev('run.started'), ...specs], { status: 'running', started_at: iso(T0), ...over });
}

/** What the runner does with an answer's `append`: the entries go on the log, their fields onto the run. */
function apply(w: World, append: readonly Appended[]): void {
  for (const { entry, fields } of append) {
    // Indexes are consecutive from the run's event count.
    expect(entry.index).toBe(w.run.event_count);
    w.log.push(entry);
    w.run = { ...w.run, ...fields, event_count: w.run.event_count + 1 };
  }
}

/** One call to decide with the world as it stands; its entries applied to the world. */
function once(w: World, input: Omit<DecideInput, 'run' | 'log'>) {
  const decision = decide({ run: w.run, log: w.log, ...input });
  apply(w, decision.append);
  return decision;
}

// ---- the runner's part, played purely ---------------------------------------------------------

interface Script {
  readonly now: number;
  /** How long each executed step takes on the driver's clock. */
  readonly stepMs?: number;
  /** Each step's outcome; a render step without one renders its template. */
  readonly outcomes?: Readonly<Record<string, StepOutcome | 'timed-out'>>;
  /** What taking a slot gives (default: a slot). */
  readonly slot?: 'held' | { readonly retryAt: number; readonly position: number };
  readonly remainingMs?: number;
  readonly stopping?: boolean;
}

interface Played {
  /** The kind of each answer, in order. */
  readonly trace: Next['kind'][];
  readonly appended: Appended[];
  readonly executed: { step: string; ctx: RenderContext; io: boolean; timesOutAt?: number }[];
  /** The answer that ended the delivery. */
  readonly next: Next;
}

/** Does what decide answers until the delivery ends, as CrewRunner.advance does. */
function play(w: World, script: Script): Played {
  let now = script.now;
  const trace: Next['kind'][] = [];
  const appended: Appended[] = [];
  const executed: Played['executed'] = [];
  let asked: Pick<DecideInput, 'slot' | 'executed'> = {};
  for (let call = 0; call < 100; call++) {
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now,
      ...asked,
      ...(script.remainingMs !== undefined ? { remainingMs: script.remainingMs } : {}),
      ...(script.stopping ? { stopping: true } : {}),
    });
    apply(w, append);
    appended.push(...append);
    trace.push(next.kind);
    asked = {};
    const slot = script.slot ?? 'held';
    switch (next.kind) {
      case 'take-slot':
        asked = { slot: slot === 'held' ? 'held' : { retryAt: slot.retryAt } };
        break;
      case 'count-line':
        if (slot === 'held') throw new Error('count-line with a slot held');
        asked = { slot: { retryAt: slot.retryAt, position: slot.position } };
        break;
      case 'execute': {
        const { step, ctx, io } = next;
        executed.push({
          step: step.id,
          ctx,
          io,
          ...(next.timesOutAt !== undefined ? { timesOutAt: next.timesOutAt } : {}),
        });
        const outcome =
          script.outcomes?.[step.id] ??
          (step.kind === 'render' ? { ok: true as const, output: render(step.template, ctx) } : undefined);
        if (!outcome) throw new Error(`no outcome for step ${step.id}`);
        now += script.stepMs ?? 0;
        asked = {
          executed:
            outcome === 'timed-out' ? { step_id: step.id, timedOut: true } : { step_id: step.id, outcome: outcome },
        };
        break;
      }
      default:
        return { trace, appended, executed, next };
    }
  }
  throw new Error('the delivery never ended');
}

const types = (appended: readonly Appended[]) =>
  appended.map(({ entry }) => (entry.step_id ? `${entry.type}:${entry.step_id}` : entry.type));
const changes = (appended: readonly Appended[]) => appended.flatMap((a) => (a.change ? [a.change] : []));

/** An entry decide writes: at `now` (NOW unless given). */
const written = (
  index: number,
  type: RunLogEntryType,
  message: string,
  more: { step_id?: string; data?: Record<string, unknown> } = {},
  at = NOW,
): RunLogEntry => ({ index, correlation_id: ID, type, timestamp: iso(at), message, ...more });

const change = (type: string, at: number | string = NOW) => ({
  type,
  actor: null,
  at: typeof at === 'string' ? at : iso(at),
});

// ---- tests ----------------------------------------------------------------------------------

describe('decide: a run of render steps', () => {
  const steps = [renderStep('a', 'Hello {{name}}'), renderStep('b', '{{steps.a.output}}!')];
  const values = { name: 'Ada' };

  it('runs from run.started to run.completed in one delivery, each entry whole', () => {
    const w = world(steps, [], { values });
    const played = play(w, { now: NOW });

    expect(played.trace).toEqual(['execute', 'execute', 'finish']);
    expect(played.next).toEqual({ kind: 'finish', ending: 'completed' });
    expect(played.appended).toEqual([
      {
        entry: written(1, 'run.started', 'Run started'),
        fields: { status: 'running', started_at: iso(NOW) },
        change: change('crew.run.started'),
      },
      {
        entry: written(2, 'step.started', 'Step a (render) started', {
          step_id: 'a',
          data: { input: { text: 'Hello Ada' } },
        }),
        fields: { current_step: 'a' },
      },
      {
        entry: written(3, 'step.completed', 'Step a completed', { step_id: 'a', data: { output: 'Hello Ada' } }),
        fields: { completed_steps: 1, current_step: null },
      },
      {
        entry: written(4, 'step.started', 'Step b (render) started', {
          step_id: 'b',
          data: { input: { text: 'Hello Ada!' } },
        }),
        fields: { current_step: 'b' },
      },
      {
        entry: written(5, 'step.completed', 'Step b completed', { step_id: 'b', data: { output: 'Hello Ada!' } }),
        fields: { completed_steps: 2, current_step: null },
      },
      {
        entry: written(6, 'run.completed', 'Run completed', { data: { outputs: { a: 'Hello Ada', b: 'Hello Ada!' } } }),
        fields: { status: 'succeeded', finished_at: iso(NOW) },
        change: change('crew.run.succeeded'),
      },
    ]);
    // Only the entries with a status change carry one.
    expect(played.appended.map((a) => 'change' in a)).toEqual([true, false, false, false, false, true]);
    expect(w.run).toMatchObject({
      status: 'succeeded',
      started_at: iso(NOW),
      finished_at: iso(NOW),
      completed_steps: 2,
      current_step: null,
      event_count: 7,
    });
  });

  it('executes render steps without I/O, with the values and the earlier outputs', () => {
    const played = play(world(steps, [], { values }), { now: NOW });
    expect(played.executed).toEqual([
      { step: 'a', ctx: { values, outputs: {} }, io: false },
      { step: 'b', ctx: { values, outputs: { a: 'Hello Ada' } }, io: false },
    ]);
  });

  it('answers the first step to execute on the first call, with run.started and step.started', () => {
    const w = world(steps, [], { values });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append.map((a) => a.entry)).toEqual([
      written(1, 'run.started', 'Run started'),
      written(2, 'step.started', 'Step a (render) started', { step_id: 'a', data: { input: { text: 'Hello Ada' } } }),
    ]);
    expect(next).toEqual({ kind: 'execute', step: steps[0], ctx: { values, outputs: {} }, io: false });
    expect('timesOutAt' in next).toBe(false);
  });

  it('reads no log entry for the index: a run just queued may come without its run.queued', () => {
    const { append } = decide({ run: makeRun(steps, { values }), log: [], now: NOW });
    expect(append.map((a) => [a.entry.index, a.entry.type])).toEqual([
      [1, 'run.started'],
      [2, 'step.started'],
    ]);
  });

  it('numbers entries from run.event_count, one after the other', () => {
    const w = world(steps, [], { values, event_count: 12 });
    const { append } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append.map((a) => a.entry.index)).toEqual([12, 13]);
  });

  it('stamps each entry with now as ISO 8601, to the millisecond', () => {
    const { append } = decide({ run: makeRun(steps), log: [], now: T0 + 1_234 });
    expect(append.map((a) => a.entry.timestamp)).toEqual(['2026-03-01T10:00:01.234Z', '2026-03-01T10:00:01.234Z']);
    expect(append[0]!.fields).toEqual({ status: 'running', started_at: '2026-03-01T10:00:01.234Z' });
  });

  it('gives a step without output (undefined) the output null in run.completed', () => {
    const w = started([renderStep('a')], [stepEv('step.started', 'a'), stepEv('step.completed', 'a')]);
    const { append } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append.map((a) => a.entry.data)).toEqual([{ outputs: { a: null } }]);
  });
});

describe('decide: steps with I/O', () => {
  it.each([
    ['wait', waitStep('s', 1), { seconds: 1 }],
    ['http', httpStep('s'), { method: 'GET', url: 'http://orders.test/1', headers: {} }],
    ['llm', llmStep('s'), { text: 'Summarize' }],
  ] as const)('executes a %s step with I/O, its step.started written first with its input', (kind, step, input) => {
    const w = started([step]);
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append).toEqual([
      {
        entry: written(2, 'step.started', `Step s (${kind}) started`, { step_id: 's', data: { input } }),
        fields: { current_step: 's' },
      },
    ]);
    expect(next).toEqual({ kind: 'execute', step, ctx: { values: {}, outputs: {} }, io: true });
    expect('timesOutAt' in next).toBe(false);
  });

  it.each([
    ['wait', waitStep('s', 1)],
    ['http', httpStep('s')],
    ['llm', llmStep('s')],
  ] as const)('passes a %s step the run deadline when run_timeout_seconds is set', (_kind, step) => {
    const w = world([step], [], { run_timeout_seconds: 120 });
    const { next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(next).toEqual({
      kind: 'execute',
      step,
      ctx: { values: {}, outputs: {} },
      io: true,
      timesOutAt: NOW + 120_000,
    });
  });

  it('passes a render step the deadline too (it runs without I/O)', () => {
    const w = world([renderStep('a')], [], { run_timeout_seconds: 30 });
    const { next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(next).toMatchObject({ kind: 'execute', io: false, timesOutAt: NOW + 30_000 });
  });

  it('executes a started step without outcome again (its worker died), writing nothing, with the same deadline', () => {
    const w = started([httpStep('h')], [stepEv('step.started', 'h')], {
      current_step: 'h',
      run_timeout_seconds: 60,
    });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append).toEqual([]);
    expect(next).toEqual({
      kind: 'execute',
      step: httpStep('h'),
      ctx: { values: {}, outputs: {} },
      io: true,
      timesOutAt: T0 + 60_000,
    });
  });

  it('plays a mixed run: the I/O steps get their outcomes, the outputs flow on', () => {
    const steps = [
      httpStep('h'),
      waitStep('w', 0.5),
      llmStep('l'),
      renderStep('r', '{{steps.h.output}}/{{steps.l.output}}'),
    ];
    const w = world(steps);
    const played = play(w, {
      now: NOW,
      stepMs: 100,
      outcomes: {
        h: { ok: true, output: { status: 200, body: 'o' } },
        w: { ok: true, output: null },
        l: { ok: true, output: 'summary' },
      },
    });
    expect(played.trace).toEqual(['execute', 'execute', 'execute', 'execute', 'finish']);
    expect(played.executed.map((e) => [e.step, e.io])).toEqual([
      ['h', true],
      ['w', true],
      ['l', true],
      ['r', false],
    ]);
    expect(played.appended.at(-1)!.entry).toEqual(
      written(
        10,
        'run.completed',
        'Run completed',
        {
          data: {
            outputs: { h: { status: 200, body: 'o' }, w: null, l: 'summary', r: '{"status":200,"body":"o"}/summary' },
          },
        },
        NOW + 400,
      ),
    );
    // Entries are stamped with the time of the call that appends them.
    expect(played.appended.map((a) => a.entry.timestamp)).toEqual([
      iso(NOW),
      iso(NOW),
      iso(NOW + 100),
      iso(NOW + 100),
      iso(NOW + 200),
      iso(NOW + 200),
      iso(NOW + 300),
      iso(NOW + 300),
      iso(NOW + 400),
      iso(NOW + 400),
    ]);
  });
});

describe('decide: approval steps', () => {
  const ap = approvalStep('ap', 'Check {{steps.a.output}} for {{name}}');
  const steps = [renderStep('a'), ap, renderStep('c', 'after {{steps.ap.output}}')];
  const expiresAt = iso(NOW + 3_600_000);
  /** Started at T0, step a done, the approval waiting since T0 (expires T0 + 1 h). */
  const waitingSpecs = [
    stepEv('step.started', 'a'),
    completed('a', 'draft'),
    stepEv('step.started', 'ap'),
    stepEv('step.waiting', 'ap', {
      data: { prompt: 'Check draft for Ada', role: 'legal', expires_at: iso(T0 + 3_600_000) },
    }),
  ];
  const waitingOver: Partial<RunItem> = {
    values: { name: 'Ada' },
    status: 'waiting',
    completed_steps: 1,
    current_step: 'ap',
    approval_roles: ['legal'],
  };

  it('waits the first time: step.started, then step.waiting with the prompt rendered, and the timer of its expiry', () => {
    const w = started(steps, [stepEv('step.started', 'a'), completed('a', 'draft')], {
      values: { name: 'Ada' },
      completed_steps: 1,
    });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    const prompt = 'Check draft for Ada';
    expect(append).toEqual([
      {
        entry: written(4, 'step.started', 'Step ap (approval) started', {
          step_id: 'ap',
          data: { input: { prompt } },
        }),
        fields: { current_step: 'ap' },
      },
      {
        entry: written(5, 'step.waiting', "Step ap waits for a decision by a person with the role 'legal'", {
          step_id: 'ap',
          // The next step's input as it would be sent now: the approval's own output is not known yet.
          data: {
            prompt,
            role: 'legal',
            expires_at: expiresAt,
            next: { step_id: 'c', kind: 'render', input: { text: 'after {{steps.ap.output}}' } },
          },
        }),
        fields: {
          status: 'waiting',
          current_step: 'ap',
          waiting: { step_id: 'ap', role: 'legal', prompt, since: iso(NOW), expires_at: expiresAt },
          approval_roles: ['legal'],
        },
        change: change('crew.run.waiting'),
      },
    ]);
    expect(next).toEqual({
      kind: 'wait-decision',
      timer: { step_id: 'ap', expires_at: expiresAt },
      dueAt: NOW + 3_600_000,
    });
  });

  it('plays a fresh run up to the wait: one delivery, then the run is waiting', () => {
    const w = world(steps, [], { values: { name: 'Ada' } });
    const played = play(w, { now: NOW });
    expect(played.trace).toEqual(['execute', 'wait-decision']);
    expect(types(played.appended)).toEqual([
      'run.started',
      'step.started:a',
      'step.completed:a',
      'step.started:ap',
      'step.waiting:ap',
    ]);
    expect(changes(played.appended)).toEqual([change('crew.run.started'), change('crew.run.waiting')]);
    expect(w.run).toMatchObject({
      status: 'waiting',
      current_step: 'ap',
      completed_steps: 1,
      approval_roles: ['legal'],
    });
  });

  it("takes the role 'approver' when the step names none, added to the roles already there", () => {
    const noRole = { id: 'ap', kind: 'approval', prompt: 'Go?', timeout_seconds: 60 } as Step;
    const w = started([noRole], [], { approval_roles: ['legal'] });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    const waiting = append[1]!;
    expect(waiting.entry.message).toBe("Step ap waits for a decision by a person with the role 'approver'");
    expect(waiting.entry.data).toEqual({ prompt: 'Go?', role: 'approver', expires_at: iso(NOW + 60_000), next: null });
    expect(waiting.fields).toMatchObject({
      approval_roles: ['legal', 'approver'],
      waiting: { role: 'approver', expires_at: iso(NOW + 60_000) },
    });
    expect(next).toEqual({
      kind: 'wait-decision',
      timer: { step_id: 'ap', expires_at: iso(NOW + 60_000) },
      dueAt: NOW + 60_000,
    });
  });

  it('lists a role once in approval_roles', () => {
    const w = started([approvalStep('ap', 'Go?', 'legal')], [], { approval_roles: ['legal', 'ops'] });
    const { append } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append[1]!.fields?.approval_roles).toEqual(['legal', 'ops']);
  });

  it('comes back before the expiry with no decision: waits again, writing nothing', () => {
    const w = started(steps, waitingSpecs, waitingOver);
    const now = T0 + 3_600_000 - 1;
    expect(decide({ run: w.run, log: w.log, now })).toEqual({
      append: [],
      next: {
        kind: 'wait-decision',
        timer: { step_id: 'ap', expires_at: iso(T0 + 3_600_000) },
        dueAt: T0 + 3_600_000,
      },
    });
  });

  it.each([0, 1, 86_400_000])('fails the step at its expiry or after (+%i ms): step.failed then run.failed', (late) => {
    const w = started(steps, waitingSpecs, waitingOver);
    const now = T0 + 3_600_000 + late;
    const error = 'no decision by 2026-03-01T11:00:00.000Z: the approval expired';
    expect(decide({ run: w.run, log: w.log, now })).toEqual({
      append: [
        {
          entry: written(6, 'step.failed', `Step ap failed: ${error}`, { step_id: 'ap', data: { error } }, now),
        },
        {
          entry: written(7, 'run.failed', 'Run failed at step ap', { data: { error } }, now),
          fields: { status: 'failed', finished_at: iso(now), error },
          change: change('crew.run.failed', now),
        },
      ],
      next: { kind: 'finish', ending: 'failed', step_id: 'ap', error },
    });
  });

  it('goes on after an approval as the decision endpoint leaves the run (running): the next step starts', () => {
    const output = { approved: true, by: 'bea', notes: null };
    const w = started(steps, [...waitingSpecs, completed('ap', output)], {
      ...waitingOver,
      status: 'running',
      completed_steps: 2,
      current_step: null,
    });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append).toEqual([
      {
        entry: written(7, 'step.started', 'Step c (render) started', {
          step_id: 'c',
          data: { input: { text: 'after {"approved":true,"by":"bea","notes":null}' } },
        }),
        fields: { current_step: 'c' },
      },
    ]);
    expect(next).toEqual({
      kind: 'execute',
      step: steps[2],
      ctx: { values: { name: 'Ada' }, outputs: { a: 'draft', ap: output } },
      io: false,
    });
  });

  it('goes on after an approval from a run still waiting: status back to running, with crew.run.started', () => {
    const output = { approved: true, by: 'bea', notes: 'ok' };
    const w = started(steps, [...waitingSpecs, completed('ap', output)], waitingOver);
    const played = play(w, { now: NOW });
    expect(played.appended[0]).toEqual({
      entry: written(7, 'step.started', 'Step c (render) started', {
        step_id: 'c',
        data: { input: { text: 'after {"approved":true,"by":"bea","notes":"ok"}' } },
      }),
      fields: { status: 'running', started_at: iso(T0), current_step: 'c' },
      // The change is stamped with the run's started_at it keeps (see the report: a doubt).
      change: change('crew.run.started', T0),
    });
    expect(types(played.appended)).toEqual(['step.started:c', 'step.completed:c', 'run.completed']);
    expect(played.appended[1]!.entry.data).toEqual({ output: 'after {"approved":true,"by":"bea","notes":"ok"}' });
    expect(played.appended[1]!.fields).toEqual({ completed_steps: 3, current_step: null });
    expect(played.next).toEqual({ kind: 'finish', ending: 'completed' });
  });

  it('completes a run whose last step was approved', () => {
    const output = { approved: true, by: 'bea', notes: null };
    const w = started([renderStep('a'), ap], [...waitingSpecs, completed('ap', output)], {
      ...waitingOver,
      status: 'running',
      completed_steps: 2,
      current_step: null,
    });
    expect(decide({ run: w.run, log: w.log, now: NOW })).toEqual({
      append: [
        {
          entry: written(7, 'run.completed', 'Run completed', { data: { outputs: { a: 'draft', ap: output } } }),
          fields: { status: 'succeeded', finished_at: iso(NOW) },
          change: change('crew.run.succeeded'),
        },
      ],
      next: { kind: 'finish', ending: 'completed' },
    });
  });

  it('ends a rejected approval (its step.failed written) with run.failed only', () => {
    const error = 'rejected by bea: not now';
    const w = started(steps, [...waitingSpecs, stepEv('step.failed', 'ap', { data: { error } })], waitingOver);
    expect(decide({ run: w.run, log: w.log, now: NOW })).toEqual({
      append: [
        {
          entry: written(7, 'run.failed', 'Run failed at step ap', { data: { error } }),
          fields: { status: 'failed', finished_at: iso(NOW), error },
          change: change('crew.run.failed'),
        },
      ],
      next: { kind: 'finish', ending: 'failed', step_id: 'ap', error },
    });
  });

  it("takes 'step failed' as the error of a step.failed without one", () => {
    const w = started([renderStep('a')], [stepEv('step.started', 'a'), stepEv('step.failed', 'a')]);
    expect(decide({ run: w.run, log: w.log, now: NOW }).next).toEqual({
      kind: 'finish',
      ending: 'failed',
      step_id: 'a',
      error: 'step failed',
    });
  });

  it('is done with a rejection written with its run.failed (as the decision endpoint writes it)', () => {
    const error = 'rejected by bea';
    const w = started(
      steps,
      [...waitingSpecs, stepEv('step.failed', 'ap', { data: { error } }), ev('run.failed', { data: { error } })],
      { ...waitingOver, status: 'failed' },
    );
    expect(decide({ run: w.run, log: w.log, now: NOW })).toEqual({ append: [], next: { kind: 'done' } });
  });

  it('asks for no slot while an approval waits, nor to fail it at its expiry', () => {
    const w = started(steps, waitingSpecs, { ...waitingOver, limit: LIMIT });
    expect(decide({ run: w.run, log: w.log, now: NOW }).next.kind).toBe('wait-decision');
    const expired = decide({ run: w.run, log: w.log, now: T0 + 3_600_000 });
    expect(expired.next).toMatchObject({ kind: 'finish', ending: 'failed', step_id: 'ap' });
    expect(types(expired.append)).toEqual(['step.failed:ap', 'run.failed']);
  });

  it('takes a slot before an approval first waits (the run holds one until it waits)', () => {
    const w = started(steps, [stepEv('step.started', 'a'), completed('a', 'draft')], {
      values: { name: 'Ada' },
      limit: LIMIT,
    });
    expect(once(w, { now: NOW })).toEqual({ append: [], next: { kind: 'take-slot' } });
    const held = once(w, { now: NOW, slot: 'held' });
    expect(types(held.append)).toEqual(['step.started:ap', 'step.waiting:ap']);
    expect(held.next.kind).toBe('wait-decision');
  });
});

describe('decide: the run deadline (run_timeout_seconds)', () => {
  const timedOutEntries = (first: number, now: number, seconds = 60) => {
    const error = `timed out after ${seconds} s`;
    return [
      {
        entry: written(
          first,
          'run.timed_out',
          `Run timed out: unfinished ${seconds} s after it started`,
          {
            data: { timeout_seconds: seconds },
          },
          now,
        ),
      },
      {
        entry: written(first + 1, 'run.failed', `Run failed: ${error}`, { data: { error } }, now),
        fields: { status: 'failed', finished_at: iso(now), error },
        change: change('crew.run.failed', now),
      },
    ];
  };
  const timedOutNext = { kind: 'finish', ending: 'timed-out', error: 'timed out after 60 s', timeout_seconds: 60 };

  it('counts nothing before the run starts: a run queued for long starts, its deadline from now', () => {
    const w = world([httpStep('h')], [], { run_timeout_seconds: 60 });
    const now = T0 + 10 * 3_600_000;
    const { append, next } = decide({ run: w.run, log: w.log, now });
    expect(types(append)).toEqual(['run.started', 'step.started:h']);
    expect(next).toMatchObject({ kind: 'execute', timesOutAt: now + 60_000 });
  });

  it('goes on just before the deadline', () => {
    const w = started([httpStep('h')], [stepEv('step.started', 'h')], { run_timeout_seconds: 60 });
    const { append, next } = decide({ run: w.run, log: w.log, now: T0 + 59_999 });
    expect(append).toEqual([]);
    expect(next).toMatchObject({ kind: 'execute', timesOutAt: T0 + 60_000 });
  });

  it.each([0, 1, 3_600_000])('ends the run at its deadline or after (+%i ms): run.timed_out, run.failed', (late) => {
    const w = started([httpStep('h')], [stepEv('step.started', 'h')], { run_timeout_seconds: 60 });
    const now = T0 + 60_000 + late;
    expect(decide({ run: w.run, log: w.log, now })).toEqual({
      append: timedOutEntries(3, now),
      next: timedOutNext,
    });
  });

  it('ends a started run overdue before its first step', () => {
    const w = started([renderStep('a')], [], { run_timeout_seconds: 60 });
    expect(decide({ run: w.run, log: w.log, now: T0 + 60_000 })).toEqual({
      append: timedOutEntries(2, T0 + 60_000),
      next: timedOutNext,
    });
  });

  it('ends the run when the runner abandoned its step at the deadline (timedOut), the step left started', () => {
    const w = started([httpStep('h'), renderStep('r')], [stepEv('step.started', 'h')], { run_timeout_seconds: 60 });
    const now = T0 + 60_000;
    expect(decide({ run: w.run, log: w.log, now, executed: { step_id: 'h', timedOut: true } })).toEqual({
      append: timedOutEntries(3, now),
      next: timedOutNext,
    });
  });

  it('plays a step timing out: execute, then the run ends timed out', () => {
    const w = world([waitStep('w', 60)], [], { run_timeout_seconds: 60 });
    const played = play(w, { now: NOW, stepMs: 60_000, outcomes: { w: 'timed-out' } });
    expect(played.trace).toEqual(['execute', 'finish']);
    expect(played.executed).toEqual([
      { step: 'w', ctx: { values: {}, outputs: {} }, io: true, timesOutAt: NOW + 60_000 },
    ]);
    expect(types(played.appended)).toEqual(['run.started', 'step.started:w', 'run.timed_out', 'run.failed']);
    expect(played.next).toEqual(timedOutNext);
    expect(w.run).toMatchObject({ status: 'failed', error: 'timed out after 60 s', finished_at: iso(NOW + 60_000) });
  });

  it('completes a run whose last step completes after the deadline', () => {
    const w = started([httpStep('h')], [stepEv('step.started', 'h')], { run_timeout_seconds: 60 });
    const now = T0 + 120_000;
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now,
      executed: { step_id: 'h', outcome: { ok: true, output: 'x' } },
    });
    expect(types(append)).toEqual(['step.completed:h', 'run.completed']);
    expect(append[1]!.fields).toEqual({ status: 'succeeded', finished_at: iso(now) });
    expect(next).toEqual({ kind: 'finish', ending: 'completed' });
  });

  it('writes the outcome of a step that completes after the deadline, then ends the run timed out before the next', () => {
    const w = started([httpStep('h'), renderStep('r')], [stepEv('step.started', 'h')], { run_timeout_seconds: 60 });
    const now = T0 + 60_000;
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now,
      executed: { step_id: 'h', outcome: { ok: true, output: 'x' } },
    });
    expect(append).toEqual([
      {
        entry: written(3, 'step.completed', 'Step h completed', { step_id: 'h', data: { output: 'x' } }, now),
        fields: { completed_steps: 1, current_step: null },
      },
      ...timedOutEntries(4, now),
    ]);
    expect(next).toEqual(timedOutNext);
  });

  describe('during an approval', () => {
    const ap = approvalStep('ap', 'Go?', 'legal', 3_600);
    const waiting = [
      stepEv('step.started', 'ap'),
      stepEv('step.waiting', 'ap', { data: { prompt: 'Go?', role: 'legal', expires_at: iso(T0 + 3_600_000) } }),
    ];

    it('comes back at the deadline when it is before the expiry', () => {
      const w = started([ap], [], { run_timeout_seconds: 600 });
      expect(decide({ run: w.run, log: w.log, now: NOW }).next).toEqual({
        kind: 'wait-decision',
        timer: { step_id: 'ap', expires_at: iso(NOW + 3_600_000) },
        dueAt: T0 + 600_000,
      });
    });

    it('comes back at the expiry when it is before the deadline', () => {
      const w = started([ap], [], { run_timeout_seconds: 7_200 });
      expect(decide({ run: w.run, log: w.log, now: NOW }).next).toEqual({
        kind: 'wait-decision',
        timer: { step_id: 'ap', expires_at: iso(NOW + 3_600_000) },
        dueAt: NOW + 3_600_000,
      });
    });

    it('keeps the sooner of the two when it comes back early', () => {
      const w = started([ap], waiting, { status: 'waiting', current_step: 'ap', run_timeout_seconds: 600 });
      expect(decide({ run: w.run, log: w.log, now: T0 + 300_000 })).toEqual({
        append: [],
        next: { kind: 'wait-decision', timer: { step_id: 'ap', expires_at: iso(T0 + 3_600_000) }, dueAt: T0 + 600_000 },
      });
    });

    it('times the run out when the deadline passes while it waits (not an expiry)', () => {
      const w = started([ap], waiting, { status: 'waiting', current_step: 'ap', run_timeout_seconds: 600 });
      expect(decide({ run: w.run, log: w.log, now: T0 + 600_000 })).toEqual({
        append: timedOutEntries(4, T0 + 600_000, 600),
        next: { kind: 'finish', ending: 'timed-out', error: 'timed out after 600 s', timeout_seconds: 600 },
      });
    });
  });

  describe('a retried run', () => {
    const RETRIED = T0 + 100_000;
    const retriedSpecs = [
      stepEv('step.started', 'a'),
      stepEv('step.failed', 'a', { data: { error: 'HTTP 500' } }),
      ev('run.failed', { data: { error: 'HTTP 500' } }),
      ev('run.retried', { at: RETRIED }),
    ];

    it('counts its deadline from its first step.started after run.retried, not from run.started', () => {
      const w = started([httpStep('a')], retriedSpecs, { status: 'pending', run_timeout_seconds: 60 });
      const now = T0 + 200_000;
      const { append, next } = decide({ run: w.run, log: w.log, now });
      expect(types(append)).toEqual(['step.started:a']);
      expect(next).toMatchObject({ kind: 'execute', timesOutAt: now + 60_000 });
    });

    it('times out that long after that step.started', () => {
      const T1 = T0 + 200_000;
      const w = started([httpStep('a')], [...retriedSpecs, stepEv('step.started', 'a', { at: T1 })], {
        run_timeout_seconds: 60,
        current_step: 'a',
      });
      expect(decide({ run: w.run, log: w.log, now: T1 + 59_999 }).next).toMatchObject({
        kind: 'execute',
        timesOutAt: T1 + 60_000,
      });
      expect(decide({ run: w.run, log: w.log, now: T1 + 60_000 }).next).toEqual(timedOutNext);
    });
  });
});

describe('decide: a step outcome', () => {
  it('writes which provider and model answered an llm step, and its token usage, beside the output', () => {
    const w = started([llmStep('l')], [stepEv('step.started', 'l')], { current_step: 'l' });
    const model = { provider: 'bedrock' as const, model: 'm-1', usage: { input_tokens: 12, output_tokens: 5 } };
    const { append } = decide({
      run: w.run,
      log: w.log,
      now: NOW,
      executed: { step_id: 'l', outcome: { ok: true, output: 'the reply', model } },
    });
    expect(append[0]!.entry).toEqual(
      written(3, 'step.completed', 'Step l completed', { step_id: 'l', data: { output: 'the reply', ...model } }),
    );
  });

  const steps = [renderStep('a'), httpStep('b'), renderStep('c', '{{steps.a.output}}+{{steps.b.output}}')];

  it('writes step.completed with the output and the steps completed so far, then goes on', () => {
    const w = started(steps, [stepEv('step.started', 'a'), completed('a', 'A'), stepEv('step.started', 'b')], {
      completed_steps: 1,
      current_step: 'b',
    });
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now: NOW,
      executed: { step_id: 'b', outcome: { ok: true, output: { status: 200, body: 'B' } } },
    });
    expect(append).toEqual([
      {
        entry: written(5, 'step.completed', 'Step b completed', {
          step_id: 'b',
          data: { output: { status: 200, body: 'B' } },
        }),
        fields: { completed_steps: 2, current_step: null },
      },
      {
        entry: written(6, 'step.started', 'Step c (render) started', {
          step_id: 'c',
          data: { input: { text: 'A+{"status":200,"body":"B"}' } },
        }),
        fields: { current_step: 'c' },
      },
    ]);
    expect(next).toEqual({
      kind: 'execute',
      step: steps[2],
      ctx: { values: {}, outputs: { a: 'A', b: { status: 200, body: 'B' } } },
      io: false,
    });
  });

  it("counts a rerun's reused steps among the completed ones", () => {
    const w = world(
      steps,
      [
        stepEv('step.completed', 'a', { data: { output: 'A', reused: true } }),
        ev('run.started'),
        stepEv('step.started', 'b'),
      ],
      {
        status: 'running',
        started_at: iso(T0),
      },
    );
    const { append } = decide({
      run: w.run,
      log: w.log,
      now: NOW,
      executed: { step_id: 'b', outcome: { ok: true, output: 'B' } },
    });
    expect(append[0]!.fields).toEqual({ completed_steps: 2, current_step: null });
  });

  it('completes the run after its last step: run.completed with every output', () => {
    const w = started(
      steps,
      [
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        completed('b', 'B'),
        stepEv('step.started', 'c'),
      ],
      { completed_steps: 2, current_step: 'c' },
    );
    expect(
      decide({ run: w.run, log: w.log, now: NOW, executed: { step_id: 'c', outcome: { ok: true, output: 'A+B' } } }),
    ).toEqual({
      append: [
        {
          entry: written(7, 'step.completed', 'Step c completed', { step_id: 'c', data: { output: 'A+B' } }),
          fields: { completed_steps: 3, current_step: null },
        },
        {
          entry: written(8, 'run.completed', 'Run completed', { data: { outputs: { a: 'A', b: 'B', c: 'A+B' } } }),
          fields: { status: 'succeeded', finished_at: iso(NOW) },
          change: change('crew.run.succeeded'),
        },
      ],
      next: { kind: 'finish', ending: 'completed' },
    });
  });

  it('fails the run with a failed outcome: step.failed, then run.failed', () => {
    const w = started(steps, [stepEv('step.started', 'a'), completed('a', 'A'), stepEv('step.started', 'b')], {
      completed_steps: 1,
      current_step: 'b',
    });
    const error = 'HTTP 503 from orders.test';
    expect(
      decide({ run: w.run, log: w.log, now: NOW, executed: { step_id: 'b', outcome: { ok: false, error } } }),
    ).toEqual({
      append: [
        { entry: written(5, 'step.failed', `Step b failed: ${error}`, { step_id: 'b', data: { error } }) },
        {
          entry: written(6, 'run.failed', 'Run failed at step b', { data: { error } }),
          fields: { status: 'failed', finished_at: iso(NOW), error },
          change: change('crew.run.failed'),
        },
      ],
      next: { kind: 'finish', ending: 'step-failed', step_id: 'b', error },
    });
  });

  it('plays a failing step: the run stops there, later steps never start', () => {
    const w = world(steps);
    const played = play(w, { now: NOW, outcomes: { b: { ok: false, error: 'boom' } } });
    expect(played.trace).toEqual(['execute', 'execute', 'finish']);
    expect(types(played.appended)).toEqual([
      'run.started',
      'step.started:a',
      'step.completed:a',
      'step.started:b',
      'step.failed:b',
      'run.failed',
    ]);
    expect(played.next).toEqual({ kind: 'finish', ending: 'step-failed', step_id: 'b', error: 'boom' });
    expect(w.run).toMatchObject({ status: 'failed', error: 'boom', completed_steps: 1, current_step: 'b' });
  });
});

describe('decide: a concurrency limit (run.limit)', () => {
  const steps = [renderStep('a'), httpStep('b')];

  it('never asks for a slot without a limit', () => {
    const played = play(world(steps), { now: NOW, outcomes: { b: { ok: true, output: 'B' } } });
    expect(played.trace).toEqual(['execute', 'execute', 'finish']);
  });

  it('takes a slot before the run starts, and before each step; writes nothing to ask', () => {
    const w = world(steps, [], { limit: LIMIT });
    expect(decide({ run: w.run, log: w.log, now: NOW })).toEqual({ append: [], next: { kind: 'take-slot' } });
    const played = play(w, { now: NOW, outcomes: { b: { ok: true, output: 'B' } } });
    expect(played.trace).toEqual(['take-slot', 'execute', 'take-slot', 'execute', 'finish']);
    expect(types(played.appended)).toEqual([
      'run.started',
      'step.started:a',
      'step.completed:a',
      'step.started:b',
      'step.completed:b',
      'run.completed',
    ]);
  });

  it('counts the line when refused, then writes run.throttled with the position and waits for the retry', () => {
    const w = world(steps, [], { limit: LIMIT });
    expect(once(w, { now: NOW, slot: { retryAt: NOW + 30_000 } })).toEqual({
      append: [],
      next: { kind: 'count-line' },
    });
    expect(once(w, { now: NOW, slot: { retryAt: NOW + 30_000, position: 3 } })).toEqual({
      append: [
        {
          entry: written(
            1,
            'run.throttled',
            'Run waits for a slot of its concurrency limit (2 at once): position 3 in line',
            {
              data: { position: 3 },
            },
          ),
        },
      ],
      next: { kind: 'wait-slot', at: NOW + 30_000 },
    });
    expect(w.run.status).toBe('pending');
  });

  it('plays a refusal: take-slot, count-line, wait-slot; a second refusal right after writes no second run.throttled', () => {
    const w = world(steps, [], { limit: LIMIT, run_timeout_seconds: 60 });
    const first = play(w, { now: NOW, slot: { retryAt: NOW + 30_000, position: 1 } });
    expect(first.trace).toEqual(['take-slot', 'count-line', 'wait-slot']);
    expect(types(first.appended)).toEqual(['run.throttled']);
    // Not started: no deadline yet, the retry alone.
    expect(first.next).toEqual({ kind: 'wait-slot', at: NOW + 30_000 });

    const again = play(w, { now: NOW + 30_000, slot: { retryAt: NOW + 60_000, position: 1 } });
    expect(again.trace).toEqual(['take-slot', 'wait-slot']);
    expect(again.appended).toEqual([]);
    expect(again.next).toEqual({ kind: 'wait-slot', at: NOW + 60_000 });

    const held = play(w, { now: NOW + 60_000, outcomes: { b: { ok: true, output: 'B' } } });
    expect(types(held.appended)).toEqual([
      'run.started',
      'step.started:a',
      'step.completed:a',
      'step.started:b',
      'step.completed:b',
      'run.completed',
    ]);
    expect(held.appended[0]!.fields).toEqual({ status: 'running', started_at: iso(NOW + 60_000) });
  });

  it('sends a started run refused between steps back to pending (crew.run.queued), waiting until the retry or the deadline', () => {
    const specs = [stepEv('step.started', 'a'), completed('a', 'A')];
    const over: Partial<RunItem> = { limit: LIMIT, run_timeout_seconds: 60, completed_steps: 1 };
    const w = started(steps, specs, over);
    const late = decide({ run: w.run, log: w.log, now: NOW, slot: { retryAt: T0 + 90_000, position: 1 } });
    expect(late).toEqual({
      append: [
        {
          entry: written(
            4,
            'run.throttled',
            'Run waits for a slot of its concurrency limit (2 at once): position 1 in line',
            {
              data: { position: 1 },
            },
          ),
          fields: { status: 'pending' },
          change: change('crew.run.queued'),
        },
      ],
      next: { kind: 'wait-slot', at: T0 + 60_000 },
    });
    const soon = started(steps, specs, over);
    expect(
      decide({ run: soon.run, log: soon.log, now: NOW, slot: { retryAt: T0 + 30_000, position: 1 } }).next,
    ).toEqual({
      kind: 'wait-slot',
      at: T0 + 30_000,
    });
  });

  it('starts the next step of a run sent back to pending once it has a slot: running again, started_at kept', () => {
    const w = started(
      steps,
      [stepEv('step.started', 'a'), completed('a', 'A'), ev('run.throttled', { data: { position: 1 } })],
      {
        limit: LIMIT,
        status: 'pending',
        completed_steps: 1,
      },
    );
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW, slot: 'held' });
    expect(append).toEqual([
      {
        entry: written(5, 'step.started', 'Step b (http) started', {
          step_id: 'b',
          data: { input: { method: 'GET', url: 'http://orders.test/1', headers: {} } },
        }),
        fields: { status: 'running', started_at: iso(T0), current_step: 'b' },
        change: change('crew.run.started', T0),
      },
    ]);
    expect(next).toMatchObject({ kind: 'execute', io: true, ctx: { values: {}, outputs: { a: 'A' } } });
  });

  it('leaves the status of a run whose step is under way when refused (a step resumed after its worker died)', () => {
    const w = started(steps, [stepEv('step.started', 'a'), completed('a', 'A'), stepEv('step.started', 'b')], {
      limit: LIMIT,
      current_step: 'b',
    });
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW, slot: { retryAt: NOW + 5_000, position: 2 } });
    expect(append).toEqual([
      {
        entry: written(
          5,
          'run.throttled',
          'Run waits for a slot of its concurrency limit (2 at once): position 2 in line',
          {
            data: { position: 2 },
          },
        ),
      },
    ]);
    expect(next).toEqual({ kind: 'wait-slot', at: NOW + 5_000 });
    // With a slot: the step runs again, no second step.started.
    apply(w, append);
    expect(w.run.status).toBe('running');
    expect(decide({ run: w.run, log: w.log, now: NOW + 5_000, slot: 'held' })).toMatchObject({
      append: [],
      next: { kind: 'execute', step: steps[1] },
    });
  });

  it('sends a run going on after an approval back to pending when every slot is taken', () => {
    const ap = approvalStep('ap', 'Go?');
    const w = started(
      [ap, renderStep('c')],
      [
        stepEv('step.started', 'ap'),
        stepEv('step.waiting', 'ap', { data: { prompt: 'Go?', role: 'legal', expires_at: iso(T0 + 3_600_000) } }),
        completed('ap', { approved: true, by: 'bea', notes: null }),
      ],
      { limit: LIMIT, completed_steps: 1, current_step: null },
    );
    const played = play(w, { now: NOW, slot: { retryAt: NOW + 1_000, position: 1 } });
    expect(played.trace).toEqual(['take-slot', 'count-line', 'wait-slot']);
    expect(played.appended.map((a) => [a.entry.type, a.fields, a.change])).toEqual([
      ['run.throttled', { status: 'pending' }, change('crew.run.queued')],
    ]);
  });
});

describe('decide: a cancelled run', () => {
  const steps = [renderStep('a'), httpStep('b'), approvalStep('ap', 'Go?')];
  const cases: [string, Spec[]][] = [
    ['before it started', [ev('run.cancelled')]],
    [
      'mid-step',
      [
        ev('run.started'),
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        ev('run.cancelled'),
      ],
    ],
    [
      'during an approval',
      [
        ev('run.started'),
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        completed('b', 'B'),
        stepEv('step.started', 'ap'),
        stepEv('step.waiting', 'ap', { data: { prompt: 'Go?', role: 'legal', expires_at: iso(T0 + 3_600_000) } }),
        ev('run.cancelled'),
      ],
    ],
  ];

  it.each(cases)('is done, appending nothing, when cancelled %s', (_when, specs) => {
    const w = world(steps, specs, { status: 'cancelled', limit: LIMIT, run_timeout_seconds: 60 });
    // Whatever else is asked: no slot taken, no deadline, no stop.
    for (const input of [
      { now: NOW },
      { now: T0 + 86_400_000 },
      { now: NOW, slot: 'held' as const },
      { now: NOW, stopping: true },
      { now: NOW, remainingMs: 0 },
    ]) {
      expect(decide({ run: w.run, log: w.log, ...input })).toEqual({ append: [], next: { kind: 'done' } });
    }
  });

  it('writes no outcome of a step that finished after the run was cancelled', () => {
    const w = world(steps, cases[1]![1], { status: 'cancelled' });
    for (const executed of [
      { step_id: 'b', outcome: { ok: true as const, output: 'B' } },
      { step_id: 'b', outcome: { ok: false as const, error: 'aborted' } },
      { step_id: 'b', timedOut: true as const },
    ]) {
      expect(decide({ run: w.run, log: w.log, now: NOW, executed })).toEqual({ append: [], next: { kind: 'done' } });
    }
  });

  it('is done with a run that completed or failed', () => {
    for (const last of ['run.completed', 'run.failed'] as const) {
      const w = started([renderStep('a')], [stepEv('step.started', 'a'), completed('a', 'A'), ev(last)]);
      expect(decide({ run: w.run, log: w.log, now: NOW })).toEqual({ append: [], next: { kind: 'done' } });
    }
  });
});

describe('decide: a retried run', () => {
  const steps = [renderStep('a'), httpStep('b'), renderStep('c', '{{steps.a.output}}{{steps.b.output}}')];

  it('runs the failed step again after run.retried: running again, started_at kept, earlier outputs kept', () => {
    const w = started(
      steps,
      [
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        stepEv('step.failed', 'b', { data: { error: 'HTTP 500' } }),
        ev('run.failed', { data: { error: 'HTTP 500' } }),
        ev('run.retried', { at: T0 + 100_000 }),
      ],
      { status: 'pending', completed_steps: 1 },
    );
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append).toEqual([
      {
        entry: written(8, 'step.started', 'Step b (http) started', {
          step_id: 'b',
          data: { input: { method: 'GET', url: 'http://orders.test/1', headers: {} } },
        }),
        fields: { status: 'running', started_at: iso(T0), current_step: 'b' },
        change: change('crew.run.started', T0),
      },
    ]);
    expect(next).toEqual({ kind: 'execute', step: steps[1], ctx: { values: {}, outputs: { a: 'A' } }, io: true });
  });

  it('plays a retried run to its end: the steps before keep their outputs and count', () => {
    const w = started(
      steps,
      [
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        stepEv('step.failed', 'b', { data: { error: 'HTTP 500' } }),
        ev('run.failed', { data: { error: 'HTTP 500' } }),
        ev('run.retried'),
      ],
      { status: 'pending', completed_steps: 1 },
    );
    const played = play(w, { now: NOW, outcomes: { b: { ok: true, output: 'B' } } });
    expect(types(played.appended)).toEqual([
      'step.started:b',
      'step.completed:b',
      'step.started:c',
      'step.completed:c',
      'run.completed',
    ]);
    expect(played.appended.map((a) => a.fields?.completed_steps).filter((n) => n !== undefined)).toEqual([2, 3]);
    expect(played.appended.at(-1)!.entry.data).toEqual({ outputs: { a: 'A', b: 'B', c: 'AB' } });
    expect(w.run).toMatchObject({ status: 'succeeded', started_at: iso(T0), event_count: 13 });
  });

  it('starts a retried run that never started (cancelled in line): run.started at now', () => {
    const w = world(steps, [ev('run.cancelled'), ev('run.retried')], { status: 'pending', started_at: null });
    const { append } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append.map((a) => [a.entry.type, a.fields])).toEqual([
      ['run.started', { status: 'running', started_at: iso(NOW) }],
      ['step.started', { current_step: 'a' }],
    ]);
  });

  it('gives started_at now to a retried run that has none (as stored before it was kept)', () => {
    const w = started(steps, [stepEv('step.started', 'a'), ev('run.cancelled'), ev('run.retried')], {
      status: 'pending',
      started_at: null,
    });
    const { append } = decide({ run: w.run, log: w.log, now: NOW });
    expect(append.map((a) => [a.entry.type, a.fields, a.change])).toEqual([
      ['step.started', { status: 'running', started_at: iso(NOW), current_step: 'a' }, change('crew.run.started')],
    ]);
  });

  it('runs the step under way at a timeout again', () => {
    const w = started(
      steps,
      [
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        ev('run.timed_out'),
        ev('run.failed'),
        ev('run.retried'),
      ],
      { status: 'pending', completed_steps: 1, run_timeout_seconds: 60 },
    );
    const now = T0 + 3_600_000;
    const { append, next } = decide({ run: w.run, log: w.log, now });
    expect(types(append)).toEqual(['step.started:b']);
    expect(next).toEqual({
      kind: 'execute',
      step: steps[1],
      ctx: { values: {}, outputs: { a: 'A' } },
      io: true,
      timesOutAt: now + 60_000,
    });
  });

  it('runs the step under way at a cancel again', () => {
    const w = started(
      steps,
      [
        stepEv('step.started', 'a'),
        completed('a', 'A'),
        stepEv('step.started', 'b'),
        ev('run.cancelled'),
        ev('run.retried'),
      ],
      { status: 'pending', completed_steps: 1 },
    );
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(types(append)).toEqual(['step.started:b']);
    expect(next).toMatchObject({ kind: 'execute', step: steps[1] });
  });

  it('asks an approval again after a retry, with a new expiry', () => {
    const ap = approvalStep('ap', 'Go?', 'legal', 60);
    const w = started(
      [ap],
      [
        stepEv('step.started', 'ap'),
        stepEv('step.waiting', 'ap', { data: { prompt: 'Go?', role: 'legal', expires_at: iso(T0 + 60_000) } }),
        stepEv('step.failed', 'ap', { data: { error: 'rejected by bea' } }),
        ev('run.failed', { data: { error: 'rejected by bea' } }),
        ev('run.retried'),
      ],
      { status: 'pending', approval_roles: ['legal'] },
    );
    const now = T0 + 600_000;
    const { append, next } = decide({ run: w.run, log: w.log, now });
    expect(types(append)).toEqual(['step.started:ap', 'step.waiting:ap']);
    expect(append[1]!.entry.data).toEqual({ prompt: 'Go?', role: 'legal', expires_at: iso(now + 60_000), next: null });
    expect(next).toEqual({
      kind: 'wait-decision',
      timer: { step_id: 'ap', expires_at: iso(now + 60_000) },
      dueAt: now + 60_000,
    });
  });
});

describe('decide: a rerun', () => {
  const steps = [renderStep('a', 'a'), renderStep('b', '{{steps.a.output}}b'), renderStep('c', '{{steps.b.output}}c')];
  const earlier: Record<string, string> = { a: 'A', b: 'AB' };

  it.each([
    [0, { a: 'a', b: 'ab', c: 'abc' }],
    [1, { a: 'A', b: 'Ab', c: 'Abc' }],
    [2, { a: 'A', b: 'AB', c: 'ABc' }],
  ])('from step %i: skips the reused steps, whose outputs feed the later ones', (from, outputs) => {
    const reused = steps
      .slice(0, from)
      .map((s) => stepEv('step.completed', s.id, { data: { output: earlier[s.id], reused: true } }));
    const w = world(steps, reused);
    const played = play(w, { now: NOW });
    expect(types(played.appended)).toEqual([
      'run.started',
      ...steps.slice(from).flatMap((s) => [`step.started:${s.id}`, `step.completed:${s.id}`]),
      'run.completed',
    ]);
    expect(played.appended[0]!.entry.index).toBe(1 + from);
    expect(played.executed.map((e) => e.step)).toEqual(steps.slice(from).map((s) => s.id));
    expect(played.executed[0]!.ctx.outputs).toEqual(
      Object.fromEntries(steps.slice(0, from).map((s) => [s.id, earlier[s.id]])),
    );
    expect(played.appended.map((a) => a.fields?.completed_steps).filter((n) => n !== undefined)).toEqual(
      [1, 2, 3].slice(from),
    );
    expect(played.appended.at(-1)!.entry.data).toEqual({ outputs });
  });

  it('completes a rerun whose every step is reused', () => {
    const w = world(
      steps,
      steps.map((s) => stepEv('step.completed', s.id, { data: { output: s.id, reused: true } })),
    );
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW });
    expect(types(append)).toEqual(['run.started', 'run.completed']);
    expect(append[1]!.entry.data).toEqual({ outputs: { a: 'a', b: 'b', c: 'c' } });
    expect(next).toEqual({ kind: 'finish', ending: 'completed' });
  });
});

describe('decide: stopping and the time left in a delivery', () => {
  const startedRun = (step: Step) => started([step]);

  it('stops before a step when the process is stopping, writing nothing', () => {
    const w = started([renderStep('a'), httpStep('b')], [stepEv('step.started', 'a'), completed('a', 'A')]);
    expect(decide({ run: w.run, log: w.log, now: NOW, stopping: true })).toEqual({
      append: [],
      next: { kind: 'stop' },
    });
  });

  it('stops with a step started and not finished left as it is', () => {
    const w = started([httpStep('b')], [stepEv('step.started', 'b')]);
    expect(decide({ run: w.run, log: w.log, now: NOW, stopping: true })).toEqual({
      append: [],
      next: { kind: 'stop' },
    });
  });

  it('writes the outcome of the step just executed, then stops', () => {
    const w = started([renderStep('a'), httpStep('b')], [stepEv('step.started', 'a')]);
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now: NOW,
      stopping: true,
      executed: { step_id: 'a', outcome: { ok: true, output: 'A' } },
    });
    expect(types(append)).toEqual(['step.completed:a']);
    expect(next).toEqual({ kind: 'stop' });
  });

  it('writes run.started of a run not started yet before it stops (what is gathered is written)', () => {
    const w = world([renderStep('a')]);
    const { append, next } = decide({ run: w.run, log: w.log, now: NOW, stopping: true });
    expect(types(append)).toEqual(['run.started']);
    expect(next).toEqual({ kind: 'stop' });
  });

  it.each([
    ['wait 2.5 s', 7_500, waitStep('s', 2.5), 'execute'],
    ['wait 0 s', 5_000, waitStep('s', 0), 'execute'],
    ['http', 15_000, httpStep('s'), 'execute'],
    ['llm', 65_000, llmStep('s'), 'execute'],
    ['render', 5_000, renderStep('s'), 'execute'],
    ['approval', 5_000, approvalStep('s', 'Go?'), 'wait-decision'],
  ] as const)('continues a %s step later with less than its budget (%i ms) left', (_name, budget, step, then) => {
    expect(stepBudgetMs(step)).toBe(budget);
    const short = startedRun(step);
    expect(decide({ run: short.run, log: short.log, now: NOW, remainingMs: budget - 1 })).toEqual({
      append: [],
      next: { kind: 'continue-later' },
    });
    const enough = startedRun(step);
    expect(decide({ run: enough.run, log: enough.log, now: NOW, remainingMs: budget }).next.kind).toBe(then);
  });

  it('continues later with the outcome just executed written', () => {
    const w = started([renderStep('a'), llmStep('b')], [stepEv('step.started', 'a')]);
    const { append, next } = decide({
      run: w.run,
      log: w.log,
      now: NOW,
      remainingMs: 64_999,
      executed: { step_id: 'a', outcome: { ok: true, output: 'A' } },
    });
    expect(types(append)).toEqual(['step.completed:a']);
    expect(next).toEqual({ kind: 'continue-later' });
  });

  it('plays a delivery out of time: it goes on in the next one from where it stopped', () => {
    const w = world([renderStep('a'), llmStep('b')]);
    const first = play(w, { now: NOW, remainingMs: 10_000 });
    expect(first.trace).toEqual(['execute', 'continue-later']);
    expect(types(first.appended)).toEqual(['run.started', 'step.started:a', 'step.completed:a']);
    const second = play(w, { now: NOW + 1_000, remainingMs: 900_000, outcomes: { b: { ok: true, output: 'B' } } });
    expect(second.trace).toEqual(['execute', 'finish']);
    expect(types(second.appended)).toEqual(['step.started:b', 'step.completed:b', 'run.completed']);
  });
});

describe('currentAttempt', () => {
  it('is the whole log of a run never retried', () => {
    const log = logOf([ev('run.queued'), ev('run.started'), ev('run.failed')]);
    expect(currentAttempt(log)).toEqual(log);
  });

  it('is what follows the last run.retried', () => {
    const log = logOf([
      ev('run.queued'),
      ev('run.failed'),
      ev('run.retried'),
      stepEv('step.started', 'a'),
      ev('run.cancelled'),
      ev('run.retried'),
      stepEv('step.started', 'b'),
    ]);
    expect(currentAttempt(log).map((e) => e.index)).toEqual([6]);
    expect(currentAttempt(log.slice(0, 6))).toEqual([]);
    expect(currentAttempt([])).toEqual([]);
  });

  it('tells whether the latest attempt ended (attemptEnded)', () => {
    const failed = logOf([ev('run.queued'), ev('run.failed')]);
    expect(attemptEnded(failed)).toBe(true);
    expect(attemptEnded(logOf([ev('run.queued'), ev('run.failed'), ev('run.retried')]))).toBe(false);
    expect(attemptEnded(logOf([ev('run.queued'), ev('run.cancelled')]))).toBe(true);
    expect(attemptEnded(logOf([ev('run.queued'), ev('run.started'), ev('run.timed_out')]))).toBe(false);
  });
});

describe('timeoutOf', () => {
  const log = logOf([
    ev('run.queued'),
    ev('run.started', { at: T0 + 1_000 }),
    stepEv('step.started', 'a', { at: T0 + 2_000 }),
  ]);

  it('is run_timeout_seconds after run.started', () => {
    expect(timeoutOf({ run_timeout_seconds: 30 }, log)).toBe(T0 + 31_000);
  });

  it('is undefined without a timeout (absent or 0) or before the start', () => {
    expect(timeoutOf({}, log)).toBeUndefined();
    expect(timeoutOf({ run_timeout_seconds: 0 }, log)).toBeUndefined();
    expect(timeoutOf({ run_timeout_seconds: 30 }, log.slice(0, 1))).toBeUndefined();
  });

  it("is counted from a retried attempt's first step.started", () => {
    const retried = logOf([
      ev('run.queued'),
      ev('run.started', { at: T0 }),
      ev('run.failed'),
      ev('run.retried', { at: T0 + 50_000 }),
      stepEv('step.started', 'b', { at: T0 + 60_000 }),
      stepEv('step.completed', 'b'),
      stepEv('step.started', 'c', { at: T0 + 80_000 }),
    ]);
    expect(timeoutOf({ run_timeout_seconds: 10 }, currentAttempt(retried))).toBe(T0 + 70_000);
    expect(timeoutOf({ run_timeout_seconds: 10 }, currentAttempt(retried.slice(0, 4)))).toBeUndefined();
  });
});

describe('timerSpent', () => {
  const EXP = iso(T0 + 3_600_000);
  const timer = { step_id: 'ap', expires_at: EXP };
  const waiting = stepEv('step.waiting', 'ap', { data: { expires_at: EXP } });
  const base = [ev('run.queued'), ev('run.started'), stepEv('step.started', 'ap'), waiting];

  it('has its wait to end while the step waits undecided', () => {
    expect(timerSpent(logOf(base), timer)).toBe(false);
  });

  it('is spent when its wait is not in the attempt: none, another step, another expiry', () => {
    expect(timerSpent(logOf([ev('run.queued'), ev('run.started')]), timer)).toBe(true);
    expect(timerSpent(logOf(base), { step_id: 'other', expires_at: EXP })).toBe(true);
    expect(timerSpent(logOf(base), { step_id: 'ap', expires_at: iso(T0 + 60_000) })).toBe(true);
    const retried = logOf([...base, ev('run.cancelled'), ev('run.retried')]);
    expect(timerSpent(currentAttempt(retried), timer)).toBe(true);
  });

  it('continues a decided step with nothing after its outcome (the decision message may be lost)', () => {
    expect(timerSpent(logOf([...base, completed('ap', { approved: true })]), timer)).toBe(false);
    expect(timerSpent(logOf([...base, stepEv('step.failed', 'ap')]), timer)).toBe(false);
  });

  it('is spent once the run went on after the outcome', () => {
    expect(timerSpent(logOf([...base, completed('ap', {}), stepEv('step.started', 'next')]), timer)).toBe(true);
    expect(timerSpent(logOf([...base, stepEv('step.failed', 'ap'), ev('run.failed')]), timer)).toBe(true);
  });

  it("counts no other step's outcome as the wait's", () => {
    expect(timerSpent(logOf([...base, completed('other', 'x'), ev('run.throttled')]), timer)).toBe(false);
  });
});

describe('abandon', () => {
  it('fails a run whose attempt has not ended, at the index after its log', () => {
    const w = started([httpStep('h')], [stepEv('step.started', 'h')]);
    const now = T0 + 777;
    const error = 'The run was abandoned after repeated failures: lambda crashed';
    expect(abandon({ run: w.run, log: w.log, now }, 'lambda crashed')).toEqual({
      append: [
        {
          entry: written(3, 'run.failed', error, { data: { error } }, now),
          fields: { status: 'failed', finished_at: iso(now), error },
          change: change('crew.run.failed', now),
        },
      ],
      next: { kind: 'finish', ending: 'failed', error },
    });
  });

  it('fails a retried run again', () => {
    const w = started([httpStep('h')], [ev('run.failed'), ev('run.retried')], { status: 'pending' });
    expect(abandon({ run: w.run, log: w.log, now: NOW }, 'x').append.map((a) => a.entry.index)).toEqual([4]);
  });

  it('does nothing to a run that ended', () => {
    for (const end of ['run.completed', 'run.failed', 'run.cancelled'] as const) {
      const w = started([httpStep('h')], [ev(end)]);
      expect(abandon({ run: w.run, log: w.log, now: NOW }, 'x')).toEqual({ append: [], next: { kind: 'done' } });
    }
  });
});
