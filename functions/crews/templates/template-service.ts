import { randomUUID } from 'node:crypto';
import type { Caller } from '../../../shared/auth/caller.js';
import type { Page } from '../../../shared/page.js';
import { type Clock, systemClock } from '../../../shared/clock.js';
import { Conflict, Invalid, NotFound } from '../../../shared/errors.js';
import { logger } from '../../../shared/logger.js';
import { templateLimits, withoutLimits } from '../runs/run-limits.js';
import type { CrewTemplate, TemplateRequest } from './template-schemas.js';
import { BUILT_IN_AUTHOR, BUILT_IN_TEMPLATES } from './built-in-templates.js';
import { declarationIssues } from './declaration.js';
import type { TemplateStore } from './template-store.js';

export interface TemplateSettings {
  /**
   * Make the built-in templates before the first crew-type call of this process (a Lambda,
   * which no start-up step runs); the local platform makes them when it starts instead.
   */
  readonly builtInsOnFirstUse?: boolean;
  /** The time the service reads (the templates' timestamps): the system's unless given. */
  readonly clock?: Clock;
}

/** Crew templates (docs/crews.md): declared, read, replaced and deleted; the built-in ones made once. */
export class TemplateService {
  /** Whether this process made the built-in templates yet (builtInsMade). */
  private builtIns: Promise<void> | undefined;
  private readonly clock: Clock;

  constructor(
    private readonly templates: TemplateStore,
    private readonly settings: TemplateSettings = {},
  ) {
    this.clock = settings.clock ?? systemClock;
  }

  async createTemplate(req: TemplateRequest, caller: Caller): Promise<CrewTemplate> {
    this.checkDeclaration(req);
    const at = this.clock.iso();
    const template: CrewTemplate = {
      id: randomUUID(),
      name: req.name,
      description: req.description ?? null,
      variables: req.variables,
      steps: req.steps,
      ...templateLimits(req),
      created_by: caller.name,
      created_at: at,
      updated_at: at,
    };
    await this.templates.create(template, { type: 'crew.template.created', actor: caller.name, at });
    return template;
  }

  listTemplates(limit: number, cursor: string | undefined): Promise<Page<CrewTemplate>> {
    return this.templates.list(limit, cursor);
  }

  async getTemplate(id: string): Promise<CrewTemplate> {
    const template = await this.templates.get(id);
    if (!template) throw new NotFound(`No crew template ${id}`);
    return template;
  }

  /** The template `id`, or undefined when there is none (a run's template may be gone). */
  findTemplate(id: string): Promise<CrewTemplate | undefined> {
    return this.templates.get(id);
  }

  async replaceTemplate(id: string, req: TemplateRequest, caller: Caller): Promise<CrewTemplate> {
    this.checkDeclaration(req);
    const current = await this.getTemplate(id);
    const at = this.clock.iso();
    const template: CrewTemplate = {
      ...withoutLimits(current),
      name: req.name,
      description: req.description ?? null,
      variables: req.variables,
      steps: req.steps,
      ...templateLimits(req),
      updated_at: at,
    };
    const change = { type: 'crew.template.updated', actor: caller.name, at } as const;
    if (!(await this.templates.replace(template, change))) throw new NotFound(`No crew template ${id}`);
    return template;
  }

  async deleteTemplate(id: string, caller: Caller): Promise<void> {
    const change = { type: 'crew.template.deleted', actor: caller.name, at: this.clock.iso() } as const;
    if (!(await this.templates.delete(id, change))) throw new NotFound(`No crew template ${id}`);
  }

  /**
   * The template a crew type names. Template names are not unique (E2 runs by id): a name
   * that several templates have is refused (409) rather than resolved by a guess, so a run
   * never starts a template its caller did not mean.
   */
  async templateNamed(name: string): Promise<CrewTemplate> {
    const found = await this.templates.named(name, 2);
    const [template, another] = found;
    if (!template) throw new NotFound(`No crew type '${name}': no crew template has that name`);
    if (another)
      throw new Conflict(
        `Crew type '${name}' is ambiguous: several crew templates have that name (${template.id}, ${another.id}, ...); ` +
          'rename or delete all but one, or run one by id (POST /api/crew-templates/{template_id}/run)',
      );
    return template;
  }

  /**
   * Creates each built-in template (docs/sdk.md) that is missing, and answers the names it
   * created. Missing means that no template has its name: one an admin replaced (PUT keeps
   * the id) or made instead under that name stays as it is. Each is one conditional put on
   * its fixed id, so processes starting at once make one each.
   */
  async ensureBuiltInTemplates(): Promise<string[]> {
    const created = await Promise.all(
      BUILT_IN_TEMPLATES.map(async (builtIn) => {
        if ((await this.templates.named(builtIn.name, 1)).length > 0) return undefined;
        const at = this.clock.iso();
        const template: CrewTemplate = {
          ...builtIn,
          created_by: BUILT_IN_AUTHOR,
          created_at: at,
          updated_at: at,
        };
        const change = { type: 'crew.template.created', actor: null, at } as const;
        return (await this.templates.createIfAbsent(template, change)) ? builtIn.name : undefined;
      }),
    );
    return created.filter((name): name is string => name !== undefined);
  }

  /**
   * With `builtInsOnFirstUse`, ensureBuiltInTemplates once per process before its first
   * crew-type call: on AWS, where no start-up step runs the crews Lambda, once per cold start.
   * Not at module init, which would make every cold start wait for DynamoDB. A failure is
   * logged and tried again at the next call, which goes on.
   */
  async builtInsMade(): Promise<void> {
    if (!this.settings.builtInsOnFirstUse) return;
    this.builtIns ??= this.ensureBuiltInTemplates().then(
      (created) => {
        if (created.length > 0) logger.info('created the built-in crew templates', { created });
      },
      (err: unknown) => {
        this.builtIns = undefined;
        logger.error('could not create the built-in crew templates', { error: err as Error });
      },
    );
    return this.builtIns;
  }

  private checkDeclaration(req: TemplateRequest): void {
    const issues = declarationIssues(req);
    if (issues.length > 0) throw new Invalid(issues);
  }
}
