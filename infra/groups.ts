import type { QueueKey, TableKey } from './tables.js';

/**
 * Endpoint groups: one Lambda each on AWS, one sub-app each locally. The path prefixes
 * are what API Gateway routes to the group (`ANY <prefix>/{proxy+}`), and what the local
 * server dispatches on, so both route the same way.
 */
export interface GroupDefinition {
  readonly name: string;
  /** Handler module, relative to the repository root. */
  readonly entry: string;
  readonly prefixes: readonly string[];
  /** Exact paths (GET) outside the prefixes, such as `/openapi.json`. */
  readonly exactPaths?: readonly string[];
  /** Tables the group's Lambda may use, and how: the CDK grants exactly these. */
  readonly tables: Partial<Record<TableKey, 'read' | 'readWrite'>>;
  /** Queues the group's Lambda sends to. */
  readonly sendsTo?: readonly QueueKey[];
}

export const GROUPS = [
  {
    name: 'platform',
    entry: 'functions/platform/handler.ts',
    prefixes: ['/api/health'],
    exactPaths: ['/openapi.json', '/docs'],
    tables: {},
  },
  {
    name: 'decisions',
    entry: 'functions/decisions/handler.ts',
    prefixes: ['/api/decisions'],
    // Every authenticated group reads the keys table to check pre-shared keys.
    tables: { decisions: 'readWrite', keys: 'read' },
  },
] as const satisfies readonly GroupDefinition[];

export type GroupName = (typeof GROUPS)[number]['name'];

/** The group that serves a path, or undefined when no group does. */
export function groupForPath(path: string): GroupDefinition | undefined {
  return (GROUPS as readonly GroupDefinition[]).find(
    (g) =>
      g.exactPaths?.includes(path) ||
      g.prefixes.some((p) => path === p || path.startsWith(`${p}/`)),
  );
}
