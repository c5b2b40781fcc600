import type { Caller } from '../../shared/auth/caller.js';
import type { Page } from '../../shared/page.js';
import { type Clock, systemClock } from '../../shared/clock.js';
import type { Change } from '../../shared/events/types.js';
import { Invalid, missingField, NotFound, valueError } from '../../shared/errors.js';
import type { ProbeResult, ProbeType, WorkflowConnection, WorkflowEngine } from '../../shared/ports/workflow.js';
import type { SecretBox, Sealed } from '../../shared/secrets.js';
import {
  CONFIG_FIELDS,
  type ConfigField,
  type Connection,
  type ConnectionRequest,
  type CountField,
  type InfrastructureConfig,
  type InfrastructureConfigUpdate,
  isSecretField,
  MAX_EXTRA_BYTES,
  type SecretField,
} from './schemas.js';
import {
  type ConfigItem,
  type ConfigStore,
  type ConfigWrite,
  type ConnectionRecord,
  type ConnectionStore,
  toConnection,
  toInfrastructureConfig,
} from './store.js';
import { jsonBytes } from '../../shared/json.js';

/** Sealed secrets are bound to their field, so one cannot be copied onto the other. */
const configContext = (field: SecretField) => `migration-config:${field}`;
const connectionContext = (connId: string) => `migration-connection:${connId}`;

/** A rule across fields broken: pydantic's `value_error` on the body, without write-only values. */
function ruleBroken(error: string, input: unknown): Invalid {
  return new Invalid([valueError(['body'], error, input)]);
}

const pairBroken = (body: InfrastructureConfigUpdate, leftSet: CountField) => {
  const visible = Object.fromEntries(Object.entries(body).filter(([field]) => !isSecretField(field as ConfigField)));
  return ruleBroken(
    `copy_mappers and copy_bandwidth are set together or both left empty; this update would leave only ${leftSet} set`,
    visible,
  );
};

const other = (field: CountField): CountField => (field === 'copy_mappers' ? 'copy_bandwidth' : 'copy_mappers');

/**
 * The pair rule before the write: both given must agree; one given needs the stored
 * other in the same state (checked by the write's condition, not by a read).
 */
function pairCondition(
  body: InfrastructureConfigUpdate,
  changes: ReadonlyMap<ConfigField, string | number | null>,
): ConfigWrite['requires'] {
  const given = (['copy_mappers', 'copy_bandwidth'] as const).filter((f) => changes.has(f));
  if (given.length === 2) {
    const mappersSet = changes.get('copy_mappers') !== null;
    if (mappersSet !== (changes.get('copy_bandwidth') !== null)) {
      throw pairBroken(body, mappersSet ? 'copy_mappers' : 'copy_bandwidth');
    }
    return undefined;
  }
  if (given.length === 1) {
    const field = given[0]!;
    return { field: other(field), present: changes.get(field) !== null };
  }
  return undefined;
}

/** Migration infrastructure (E3, E4): the configuration, the connection registry, probes. */
export class MigrationService {
  constructor(
    private readonly configs: ConfigStore,
    private readonly connections: ConnectionStore,
    private readonly workflow: WorkflowEngine,
    private readonly box: SecretBox,
    /** The time the service reads: the system's unless given. */
    private readonly clock: Clock = systemClock,
  ) {}

  async getConfig(): Promise<InfrastructureConfig> {
    return toInfrastructureConfig(await this.configs.get());
  }

  /**
   * E3: a partial update in one conditional write, then the changed fields go to the
   * workflow engine (secrets as given: the engine needs them in clear).
   */
  async updateConfig(body: InfrastructureConfigUpdate, caller: Caller): Promise<InfrastructureConfig> {
    const changes = new Map<ConfigField, string | number | null>();
    for (const field of CONFIG_FIELDS) {
      const value = body[field];
      if (value === undefined) continue;
      changes.set(field, value === '' || value === null ? null : value);
    }
    const requires = pairCondition(body, changes);
    const set: ConfigWrite['set'] = {};
    const remove: ConfigField[] = [];
    for (const [field, value] of changes) {
      if (value === null) remove.push(field);
      else set[field] = isSecretField(field) ? await this.box.seal(String(value), configContext(field)) : value;
    }
    const updatedAt = this.clock.iso();
    // What the event says the update was about: every field given (write-only ones by name only).
    const change: Change = {
      type: 'migration.config.updated',
      actor: caller.name,
      at: updatedAt,
      about: { changed_fields: [...changes.keys()] },
    };
    const before = await this.configs.update({ set, remove, updatedBy: caller.name, updatedAt, requires, change });
    if (!before) throw pairBroken(body, requires!.present ? other(requires!.field) : requires!.field);

    const after: ConfigItem = { ...before, ...set, updated_by: caller.name, updated_at: updatedAt };
    for (const field of remove) delete after[field];
    // Every given field is published, changed or not: retrying an update whose publish
    // failed (the configuration was already stored) brings the workflow engine up to date.
    const published = Object.fromEntries(changes);
    if (Object.keys(published).length > 0) await this.workflow.publishConfig(published);
    return toInfrastructureConfig(after);
  }

  /**
   * Creates or replaces a connection; a left-out password keeps the stored one, but a
   * stored password is only kept for the host it was given for: changing the host
   * without giving the password again is 422 `missing` at `["body", "password"]` (the
   * field is required in that case, as a variable without a default is for E2).
   */
  async putConnection(connId: string, req: ConnectionRequest, caller: Caller): Promise<Connection> {
    const extra = req.extra ?? null;
    const bytes = extra === null ? 0 : jsonBytes(extra);
    if (bytes > MAX_EXTRA_BYTES) {
      const error = `extra is ${bytes} bytes as JSON; at most ${MAX_EXTRA_BYTES} are allowed`;
      throw new Invalid([valueError(['body', 'extra'], error, extra)]);
    }
    let password: Sealed | null | undefined;
    if (req.password === null || req.password === '') password = null;
    else if (req.password !== undefined) password = await this.box.seal(req.password, connectionContext(connId));
    const at = this.clock.iso();
    const record = await this.connections.put(
      {
        conn_id: connId,
        conn_type: req.conn_type,
        host: req.host,
        port: req.port ?? null,
        schema: req.schema ?? null,
        login: req.login ?? null,
        extra,
        password,
        at,
      },
      { type: 'migration.connection.updated', actor: caller.name, at },
    );
    if (!record) {
      throw new Invalid([missingField(['body', 'password'], req)]);
    }
    return toConnection(record);
  }

  async listConnections(limit: number, cursor: string | undefined): Promise<Page<Connection>> {
    const page = await this.connections.list(limit, cursor);
    return { items: page.items.map(toConnection), nextCursor: page.nextCursor };
  }

  async getConnection(connId: string): Promise<Connection> {
    const record = await this.connections.get(connId);
    if (!record) throw new NotFound(`No connection ${connId}`);
    return toConnection(record);
  }

  async deleteConnection(connId: string, caller: Caller): Promise<void> {
    const change: Change = { type: 'migration.connection.deleted', actor: caller.name, at: this.clock.iso() };
    const data = (before: ConnectionRecord) => toConnection(before) as unknown as Record<string, unknown>;
    if (!(await this.connections.delete(connId, change, data))) throw new NotFound(`No connection ${connId}`);
  }

  /**
   * E4: the connection from the registry, else the one the workflow engine holds;
   * a failed probe is a result (`ok: false`), not an error. A probe of a registry
   * connection is its event (`migration.connection.tested`, with the probe and its result),
   * unless the connection changed or went while it was probed.
   */
  async testConnection(connId: string, probe: ProbeType, caller: Caller): Promise<ProbeResult> {
    const record = await this.connections.get(connId);
    const connection = record ? await this.withPassword(record) : await this.workflow.getConnection(connId);
    if (!connection) throw new NotFound(`No connection ${connId}`);
    const result = await this.workflow.testConnection(connection, probe);
    const answer = { ok: result.ok, message: result.message };
    if (record) {
      await this.connections.markTested(connId, record.updated_at, {
        type: 'migration.connection.tested',
        actor: caller.name,
        at: this.clock.iso(),
        about: { probe, ...answer },
      });
    }
    return answer;
  }

  private async withPassword(r: ConnectionRecord): Promise<WorkflowConnection> {
    const { created_at: _created, updated_at: _updated, ...connection } = toConnection(r);
    return {
      ...connection,
      password: r.password ? await this.box.open(r.password, connectionContext(r.conn_id)) : null,
    };
  }
}
