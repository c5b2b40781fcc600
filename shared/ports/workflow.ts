/** A workflow connection (Airflow's model): how the migration DAGs reach a system. */
export interface WorkflowConnection {
  readonly conn_id: string;
  readonly conn_type: string;
  readonly host: string;
  readonly port?: number | null;
  readonly schema?: string | null;
  readonly login?: string | null;
  /** Write-only: never returned by the API, never logged. */
  readonly password?: string | null;
  readonly extra?: Record<string, unknown> | null;
}

/** How E4 probes a connection (docs/data-and-catalog.md). */
export const PROBE_TYPES = ['generic', 'ssh', 'smtp', 'http', 's3'] as const;
export type ProbeType = (typeof PROBE_TYPES)[number];

export interface ProbeResult {
  readonly ok: boolean;
  /** What a person can act on: refused, timed out, DNS failure, bad banner, auth failure... */
  readonly message: string;
}

/**
 * The workflow engine the migration configuration drives. Built-in: the configuration
 * and connections live in this service and E4 probes from here. Airflow: changed fields
 * become Airflow Variables, connections are Airflow's, and E4 asks Airflow to test.
 */
export interface WorkflowEngine {
  /** Publishes changed configuration fields (field name → new value; null when cleared). */
  publishConfig(changes: Readonly<Record<string, string | number | null>>): Promise<void>;
  /** A connection the engine itself holds (with its password), or undefined. */
  getConnection(connId: string): Promise<WorkflowConnection | undefined>;
  testConnection(connection: WorkflowConnection, probe: ProbeType): Promise<ProbeResult>;
}
