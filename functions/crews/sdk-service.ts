import type { ChatModel } from '../../shared/ports/llm.js';
import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { readableRun } from './runs/run-access.js';
import type { RunService } from './runs/run-service.js';
import type { RunStore } from './runs/run-store.js';
import type { CrewResult, CrewType } from './sdk-schemas.js';
import type { TemplateService } from './templates/template-service.js';
import { isRecord } from '../../shared/pydantic/lax.js';

/** The NX1 SDK's crews client (docs/sdk.md) over the template and run services: crew types, run_crew, get_crew_result. */
export class CrewsSdk {
  constructor(
    private readonly templates: Pick<TemplateService, 'builtInsMade' | 'listTemplates' | 'templateNamed'>,
    private readonly runs: Pick<RunService, 'startRunOf'>,
    private readonly store: Pick<RunStore, 'get' | 'logEntries' | 'allLogEntries'>,
    /** The model that answers `llm` steps; undefined when none is configured. */
    private readonly model?: Pick<ChatModel, 'provider' | 'model'>,
  ) {}

  /**
   * The SDK's crew types (docs/sdk.md): every template, oldest first, as a crew type of its
   * name.
   */
  async crewTypes(limit: number, cursor: string | undefined): Promise<Page<CrewType>> {
    await this.templates.builtInsMade();
    const page = await this.templates.listTemplates(limit, cursor);
    return {
      items: page.items.map((t) => ({
        crew_type: t.name,
        template_id: t.id,
        description: t.description,
        inputs: t.variables.map((v) => v.name),
        model: this.model ? { provider: this.model.provider, model: this.model.model } : null,
      })),
      nextCursor: page.nextCursor,
    };
  }

  /** The SDK's `run_crew`: E2 on the template named `crewType`, `taskInput` as its values. */
  async runCrew(
    crewType: string,
    taskInput: Record<string, unknown>,
    caller: Caller,
  ): Promise<{ correlation_id: string }> {
    await this.templates.builtInsMade();
    return this.runs.startRunOf(
      await this.templates.templateNamed(crewType),
      taskInput,
      caller,
      undefined,
      'task_input',
    );
  }

  /**
   * The SDK's `get_crew_result`, readable as the run is (its starter, an admin, an eligible
   * approver). A run that succeeded: its `run.completed` event, its last (one GetItem and one
   * Query of one item). Otherwise the outputs so far from its `step.completed` events (one
   * Query per 1000 events). `run.completed` holds every output whole: MAX_STEPS outputs of
   * at most MAX_OUTPUT_BYTES fit in it (limits.ts), so none is ever replaced by a note.
   */
  async crewResult(correlationId: string, caller: Caller): Promise<CrewResult> {
    const run = await readableRun(this.store, correlationId, caller);
    let outputs: Record<string, unknown> | undefined;
    if (run.status === 'succeeded') {
      const [last] = await this.store.logEntries(correlationId, run.event_count - 1, 1);
      const completed = last?.type === 'run.completed' ? last.data?.outputs : undefined;
      if (isRecord(completed)) outputs = completed;
    }
    if (!outputs) {
      outputs = Object.create(null) as Record<string, unknown>;
      for (const entry of await this.store.allLogEntries(correlationId))
        if (entry.type === 'step.completed' && entry.step_id !== undefined)
          outputs[entry.step_id] = entry.data?.output ?? null;
    }
    const lastStep = run.steps.at(-1)?.id;
    return {
      correlation_id: run.correlation_id,
      status: run.status,
      result:
        run.status === 'succeeded' && lastStep !== undefined && Object.hasOwn(outputs, lastStep)
          ? outputs[lastStep]
          : null,
      outputs,
      error: run.error ?? null,
    };
  }
}
