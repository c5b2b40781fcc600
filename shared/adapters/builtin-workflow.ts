import type { ProbeResult, ProbeType, WorkflowConnection, WorkflowEngine } from '../ports/workflow.js';
import { probeConnection } from './probes.js';

export interface BuiltinWorkflowOptions {
  /** S3 endpoint for `s3` connections that name none (the local object store). */
  readonly s3Endpoint?: string;
  /** Probe timeout; default 5 s (docs/data-and-catalog.md). */
  readonly timeoutMs?: number;
}

/**
 * The built-in workflow engine: the configuration and the connections live in this
 * service's own store, so there is nothing to publish and no engine-held connection;
 * E4 probes the connection from here.
 */
export class BuiltinWorkflow implements WorkflowEngine {
  constructor(private readonly options: BuiltinWorkflowOptions = {}) {}

  async publishConfig(_changes: Readonly<Record<string, string | number | null>>): Promise<void> {}

  async getConnection(_connId: string): Promise<WorkflowConnection | undefined> {
    return undefined;
  }

  testConnection(connection: WorkflowConnection, probe: ProbeType): Promise<ProbeResult> {
    return probeConnection(connection, probe, this.options);
  }
}
