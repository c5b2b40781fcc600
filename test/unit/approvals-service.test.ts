import { describe, expect, it } from 'vitest';
import { ApprovalService, type InboxSources } from '../../functions/approvals/service.js';
import type { RunItem } from '../../functions/crews/runs/run-store.js';
import type { VersionItem } from '../../functions/decisions/store.js';
import type { Caller } from '../../shared/auth/caller.js';
import { ManualClock } from '../../shared/clock.js';
import { InvalidCursor, type Positioned } from '../../shared/aws/pagination.js';

/**
 * The approvers' inbox (docs/reviewing.md) over fakes of its two sparse indexes: what is listed
 * for whom, the merged order, paging, and what it reads (its cost follows what waits).
 */

const NOW = Date.parse('2026-11-26T12:00:00.000Z');
const at = (minute: number) => new Date(Date.parse('2026-11-26T10:00:00.000Z') + minute * 60_000).toISOString();
const caller = (name: string, roles: string[], via: 'bearer' | 'psk' = 'bearer'): Caller => ({
  principal: `p:${name}`,
  name,
  roles: new Set(roles),
  via,
});

function version(key: string, minute: number, author: string, submitter: string): Positioned<VersionItem> {
  return {
    position: `${at(minute)}#d#ws#${key}#0000000001`,
    item: {
      workspace: 'ws',
      key,
      version: 1,
      content_sha: 'a'.repeat(64),
      status: 'submitted',
      notes: null,
      created_by: author,
      created_by_principal: `p:${author}`,
      created_at: at(0),
      submitted_by: submitter,
      submitted_by_principal: `p:${submitter}`,
      submitted_at: at(minute),
      approved_by: null,
      approved_at: null,
      source_instance: null,
      source_version: null,
      content: null,
      history: [],
    },
  };
}

function run(id: string, minute: number, role: string, starter: string, expiresMinute = 600): Positioned<RunItem> {
  return {
    position: `${at(minute)}#c#${id}`,
    item: {
      correlation_id: id,
      template_id: 'tpl',
      template_name: 'Release',
      status: 'waiting',
      values: {},
      created_by: starter,
      created_by_principal: `p:${starter}`,
      created_at: at(0),
      started_at: at(0),
      finished_at: null,
      event_count: 4,
      error: null,
      steps: [],
      expires_at: 0,
      waiting: { step_id: 'gate', role, prompt: 'go?', since: at(minute), expires_at: at(expiresMinute) },
    } as RunItem,
  };
}

/**
 * Fake indexes that count their reads: each `*After` is one Query of at most `limit`, and of
 * at most `perRead` (DynamoDB's 1 MB stop: fewer items than asked for). As DynamoDB, a read
 * that stopped at either says more may follow (LastEvaluatedKey), even when nothing does.
 */
function sources(versions: Positioned<VersionItem>[], runs: Positioned<RunItem>[], perRead = Infinity) {
  const reads: string[] = [];
  const after = <T>(all: Positioned<T>[], from: string, limit: number) => {
    const rest = all.filter((p) => p.position > from);
    const stop = Math.min(limit, perRead);
    const items = rest.slice(0, stop);
    return { items, more: items.length === stop };
  };
  const fake: InboxSources = {
    decisions: {
      submittedAfter: async (from, limit) => {
        reads.push('decisions');
        return after(versions, from, limit);
      },
    },
    runs: {
      waitingAfter: async (role, from, limit) => {
        reads.push(`runs:${role}`);
        return after(
          runs.filter((r) => r.item.waiting?.role === role),
          from,
          limit,
        );
      },
    },
  };
  return { fake, reads };
}

const ids = (items: { kind: string; key?: string; correlation_id?: string }[]) =>
  items.map((i) => (i.kind === 'decision_version' ? i.key : i.correlation_id));

describe('ApprovalService.list', () => {
  const versions = [
    version('v1', 1, 'carol', 'carol'),
    version('own', 2, 'alice', 'alice'),
    version('v3', 4, 'carol', 'bob'),
    version('by-alice', 5, 'carol', 'alice'),
  ];
  const runs = [
    run('r1', 3, 'approver', 'carol'),
    run('r-own', 6, 'approver', 'alice'),
    run('r-ops', 7, 'ops', 'carol'),
    run('r-expired', 8, 'approver', 'carol', 60),
  ];

  it('lists what the caller may decide, oldest first across kinds and roles', async () => {
    const { fake } = sources(versions, runs);
    const service = new ApprovalService(fake, new ManualClock(NOW));
    const page = await service.list(caller('alice', ['approver', 'ops']), { limit: 100 });
    expect(ids(page.items)).toEqual(['v1', 'r1', 'v3', 'r-ops']);
    expect(page.nextCursor).toBeUndefined();
    // bob: his own submission is out, alice's are his to decide
    const bob = await service.list(caller('bob', ['approver']), { limit: 100 });
    expect(ids(bob.items)).toEqual(['v1', 'own', 'r1', 'by-alice', 'r-own']);
  });

  it('reads nothing for a caller without roles, and only the kind asked for', async () => {
    const { fake, reads } = sources(versions, runs);
    const service = new ApprovalService(fake, new ManualClock(NOW));
    expect((await service.list(caller('carol', []), { limit: 100 })).items).toEqual([]);
    expect((await service.list(caller('dana', ['admin']), { limit: 100, kind: 'decision_version' })).items).toEqual([]);
    // no role: nothing read; admin without approver, versions only: nothing read either
    expect(reads).toEqual([]);
    const steps = await service.list(caller('alice', ['approver', 'ops']), { limit: 100, kind: 'crew_step' });
    expect(ids(steps.items)).toEqual(['r1', 'r-ops']);
    expect(reads).toEqual(['runs:approver', 'runs:ops']);
  });

  it('pages by cursor without repeating or skipping, and a key sees the same list', async () => {
    const { fake } = sources(versions, runs);
    const service = new ApprovalService(fake, new ManualClock(NOW));
    const seen: (string | undefined)[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 10; i++) {
      const page = await service.list(caller('alice', ['approver', 'ops'], 'psk'), { limit: 1, cursor });
      seen.push(...ids(page.items));
      cursor = page.nextCursor;
      if (!cursor) break;
    }
    expect(seen).toEqual(['v1', 'r1', 'v3', 'r-ops']);
  });

  it('reads its sources in batches of the page plus one, skipping what the caller may not decide', async () => {
    // 30 of alice's own submissions before the one she may decide
    const many = [
      ...Array.from({ length: 30 }, (_, i) => version(`own-${String(i).padStart(2, '0')}`, i, 'alice', 'alice')),
      version('theirs', 40, 'carol', 'carol'),
    ];
    const { fake, reads } = sources(many, []);
    const page = await new ApprovalService(fake, new ManualClock(NOW)).list(caller('alice', ['approver']), {
      limit: 10,
      kind: 'decision_version',
    });
    expect(ids(page.items)).toEqual(['theirs']);
    expect(reads).toEqual(['decisions', 'decisions', 'decisions']); // 11 + 11 + 9 items
  });

  it('reads on after a short read that is not the end (DynamoDB stops a Query at 1 MB)', async () => {
    // 25 versions of alice's own, then 5 she may decide; every read stops after 3 items
    const many = [
      ...Array.from({ length: 25 }, (_, i) => version(`own-${String(i).padStart(2, '0')}`, i, 'alice', 'alice')),
      ...Array.from({ length: 5 }, (_, i) => version(`theirs-${i}`, 30 + i, 'carol', 'carol')),
    ];
    const shortRuns = Array.from({ length: 4 }, (_, i) => run(`r${i}`, 40 + i, 'approver', 'carol'));
    const { fake, reads } = sources(many, shortRuns, 3);
    const service = new ApprovalService(fake, new ManualClock(NOW));
    const page = await service.list(caller('alice', ['approver']), { limit: 100 });
    expect(ids(page.items)).toEqual([
      ...Array.from({ length: 5 }, (_, i) => `theirs-${i}`),
      ...shortRuns.map((r) => r.item.correlation_id),
    ]);
    expect(page.nextCursor).toBeUndefined();
    // 30 items 3 a read, and an empty last read (the 10th stopped at 3: more may follow)
    expect(reads.filter((r) => r === 'decisions')).toHaveLength(11);
    expect(reads.filter((r) => r === 'runs:approver')).toHaveLength(2); // 3, then 1
    // and page by page, the same list
    const seen: (string | undefined)[] = [];
    let cursor: string | undefined;
    for (let i = 0; i < 20 && (i === 0 || cursor); i++) {
      const next = await service.list(caller('alice', ['approver']), { limit: 2, cursor });
      seen.push(...ids(next.items));
      cursor = next.nextCursor;
    }
    expect(seen).toEqual(ids(page.items));
  });

  it('refuses a cursor it did not hand out', async () => {
    const { fake } = sources([], []);
    const service = new ApprovalService(fake, new ManualClock(NOW));
    for (const cursor of [
      'nope',
      Buffer.from('{"after":5}').toString('base64url'),
      Buffer.from('[]').toString('base64url'),
    ]) {
      await expect(service.list(caller('alice', ['approver']), { limit: 5, cursor })).rejects.toBeInstanceOf(
        InvalidCursor,
      );
    }
  });
});

describe('ApprovalService.me', () => {
  it('answers the caller with sorted roles and whether it is a session', () => {
    const service = new ApprovalService(sources([], []).fake);
    expect(service.me(caller('alice', ['ops', 'approver']))).toEqual({
      name: 'alice',
      principal: 'p:alice',
      roles: ['approver', 'ops'],
      credential: 'bearer',
      session: true,
    });
    expect(service.me(caller('alice', [], 'psk'))).toMatchObject({ credential: 'psk', session: false });
  });
});
