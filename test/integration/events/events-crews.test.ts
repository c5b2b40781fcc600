import { randomUUID } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { adminToken, api, token } from '../helpers.js';
import { eventsOf as feedEvents, expectNothingMore } from '../event-feed.js';

// docs/events-and-webhooks.md rows of crews: crew.template.created/.updated/.deleted (crew-templates/{id}),
// crew.run.queued/.started/.succeeded/.failed (crew-runs/{correlation_id}).

let admin: string;
let otherAdmin: string;
let user: string;

beforeAll(async () => {
  admin = await adminToken('crew-events-admin');
  otherAdmin = await adminToken('crew-events-admin-2');
  user = await token('crew-events-user');
});

const eventsOf = (subject: string, count: number) => feedEvents(subject, count, admin);

const template = (name: string, steps: unknown[] = [{ id: 'a', kind: 'render', template: 'hi {{who}}' }]) => ({
  name,
  variables: [{ name: 'who', required: true }],
  steps,
});

describe('crew template events', () => {
  it('created, updated and deleted, each with the caller and the template as GET answered it', async () => {
    const created = await api('/api/crew-templates', { method: 'POST', token: admin, body: template('ev-1') });
    expect(created.status).toBe(201);
    const id = created.body.id as string;
    const subject = `crew-templates/${id}`;
    // refused: not an admin (403), a bad declaration (422), an unknown template (404)
    expect((await api(`/api/crew-templates/${id}`, { method: 'PUT', token: user, body: template('x') })).status).toBe(
      403,
    );
    const bad = template('x', [{ id: 'a', kind: 'render', template: '{{nobody}}' }]);
    expect((await api(`/api/crew-templates/${id}`, { method: 'PUT', token: admin, body: bad })).status).toBe(422);
    expect((await api(`/api/crew-templates/${randomUUID()}`, { method: 'DELETE', token: admin })).status).toBe(404);
    const updated = await api(`/api/crew-templates/${id}`, {
      method: 'PUT',
      token: otherAdmin,
      body: template('ev-2'),
    });
    expect(updated.status).toBe(200);
    const before = await api(`/api/crew-templates/${id}`, { token: user });
    expect((await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin })).status).toBe(204);
    expect((await api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin })).status).toBe(404);

    const events = await eventsOf(subject, 3);
    // A deleted template's id never comes back: no later change can mark the end. The store's
    // own record says that the refused deletion after it made no event.
    await expectNothingMore(subject, events, { table: 'crewTemplates', key: { id }, is: 'gone' });
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.crew.template.created', 1, 'crew-events-admin'],
      ['dpm.crew.template.updated', 2, 'crew-events-admin-2'],
      ['dpm.crew.template.deleted', 3, 'crew-events-admin'],
    ]);
    expect(events[0]!.data).toEqual(created.body);
    expect(events[1]!.data).toEqual(updated.body);
    expect(events[2]!.data).toEqual(before.body);
    expect(events[1]!.time).toBe(updated.body.updated_at);
  });

  it('a template deleted twice at once: one deletion, one event', async () => {
    const id = (await api('/api/crew-templates', { method: 'POST', token: admin, body: template('ev-race') })).body.id;
    const statuses = await Promise.all(
      [0, 1, 2].map(() => api(`/api/crew-templates/${id}`, { method: 'DELETE', token: admin }).then((r) => r.status)),
    );
    expect(statuses.sort()).toEqual([204, 404, 404]);
    const events = await eventsOf(`crew-templates/${id}`, 2);
    expect(events.map((e) => e.type)).toEqual(['dpm.crew.template.created', 'dpm.crew.template.deleted']);
    // the store's own record: nothing more than these two (a deletion's event is written with it)
    await expectNothingMore(`crew-templates/${id}`, events, { table: 'crewTemplates', key: { id }, is: 'gone' });
  });
});

describe('crew run events', () => {
  it('queued by the starter, then started and succeeded by the service, with the run as GET answers it', async () => {
    const id = (await api('/api/crew-templates', { method: 'POST', token: admin, body: template('ev-run') })).body.id;
    // refused: a missing required variable starts nothing
    expect(
      (await api(`/api/crew-templates/${id}/run`, { method: 'POST', token: user, body: { values: {} } })).status,
    ).toBe(422);
    const started = await api(`/api/crew-templates/${id}/run`, {
      method: 'POST',
      token: user,
      body: { values: { who: 'ada' } },
    });
    expect(started.status).toBe(202);
    const correlation = started.body.correlation_id as string;
    const events = await eventsOf(`crew-runs/${correlation}`, 3);
    expect(events.map((e) => [e.type, e.sequence, e.actor])).toEqual([
      ['dpm.crew.run.queued', 1, 'crew-events-user'],
      ['dpm.crew.run.started', 2, null],
      ['dpm.crew.run.succeeded', 3, null],
    ]);
    expect(events[0]!.data).toMatchObject({
      status: 'pending',
      values: { who: 'ada' },
      created_by: 'crew-events-user',
    });
    const run = await api(`/api/crew-runs/${correlation}`, { token: user });
    expect(events[2]!.data).toEqual(run.body);
    expect(events[2]!.time).toBe(run.body.finished_at);
    expect(events[1]!.time).toBe(run.body.started_at);
  });

  it('failed, when a step fails', async () => {
    const id = (
      await api('/api/crew-templates', {
        method: 'POST',
        token: admin,
        body: template('ev-fail', [
          { id: 'x', kind: 'http', method: 'GET', url: 'http://not-allowed.invalid/{{who}}' },
        ]),
      })
    ).body.id;
    const correlation = (
      await api(`/api/crew-templates/${id}/run`, { method: 'POST', token: user, body: { values: { who: 'ada' } } })
    ).body.correlation_id as string;
    const events = await eventsOf(`crew-runs/${correlation}`, 3);
    expect(events.map((e) => e.type)).toEqual(['dpm.crew.run.queued', 'dpm.crew.run.started', 'dpm.crew.run.failed']);
    expect(events[2]!.data).toMatchObject({ status: 'failed', error: expect.any(String) });
  });
});
