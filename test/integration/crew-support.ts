import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { DynamoDBDocumentClient } from '@aws-sdk/lib-dynamodb';
import { expect } from 'vitest';
import { emulatorOptions } from '../../shared/aws/client-options.js';
import { api, slug } from './helpers.js';
import { provided } from './provided.js';

/**
 * A document client of its own on the suite's DynamoDB Local that records the name of each
 * command it sends (a store built on it: what one delivery costs, in order); `destroy` when done.
 */
export function countingClient(): { db: DynamoDBDocumentClient; calls: string[]; destroy: () => void } {
  const base = new DynamoDBClient(emulatorOptions({ region: 'us-east-1', endpoint: provided('dynamodbEndpoint') }));
  const calls: string[] = [];
  base.middlewareStack.add(
    (next, context) => async (args) => {
      calls.push(context.commandName ?? '?');
      return next(args);
    },
    { step: 'initialize', name: 'countCalls' },
  );
  return { db: DynamoDBDocumentClient.from(base), calls, destroy: () => base.destroy() };
}

/** An E13 event as the crew tests read it. */
export type CrewEventSeen = {
  index: number;
  type: string;
  step_id?: string;
  timestamp: string;
  data?: Record<string, any>;
};

/** Declares a crew template of `steps` as `admin` (a Bearer token); answers its id. */
export async function crewTemplate(admin: string, steps: unknown[], prefix = 'crew'): Promise<string> {
  const res = await api('/api/crew-templates', { method: 'POST', token: admin, body: { name: slug(prefix), steps } });
  expect(res.status, res.text).toBe(201);
  return res.body.id as string;
}

/** Runs a template (E2, no values) as `starter`; answers the correlation id. */
export async function startRun(templateId: string, starter: string): Promise<string> {
  const res = await api(`/api/crew-templates/${templateId}/run`, {
    method: 'POST',
    token: starter,
    body: { values: {} },
  });
  expect(res.status, res.text).toBe(202);
  return res.body.correlation_id as string;
}

/** Every event of a run so far, read as `reader`. */
export const runEvents = async (id: string, reader: string): Promise<CrewEventSeen[]> =>
  (await api<CrewEventSeen[]>(`/api/events/${id}?start=0`, { token: reader })).body;

/** `[type, step_id]` of each event (null without a step). */
export const kindsOf = (events: readonly { type: string; step_id?: string }[]) =>
  events.map((e) => [e.type, e.step_id ?? null]);
