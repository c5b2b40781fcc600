import { describe, expect, it } from 'vitest';
import { dropLapsed, holds, lapsedEntries, liveEntries, MAX_DROPPED } from '../../shared/aws/leased-slots.js';

const NOW = 1_000_000;

describe('leased slots: the rules of a lease', () => {
  it('a lease holds until its end, not at it', () => {
    expect(holds(NOW + 1, NOW)).toBe(true);
    expect(holds(NOW, NOW)).toBe(false);
    expect(holds(NOW - 1, NOW)).toBe(false);
    expect(holds(undefined, NOW)).toBe(false);
  });

  it('counts the live entries and lists the lapsed ones with their lease ends, in the order stored', () => {
    const holders = { a: NOW + 5, b: NOW, c: NOW - 10, d: NOW + 1 };
    expect(liveEntries(holders, (u) => u, NOW)).toEqual(['a', 'd']);
    expect(lapsedEntries(holders, (u) => u, NOW)).toEqual([
      ['b', NOW],
      ['c', NOW - 10],
    ]);
  });

  it('leaves out the entry the write takes itself, and works on entries that are objects', () => {
    const entries = { 'e#0': { holder: 'm1', until: NOW - 1 }, 'e#1': { holder: 'm2', until: NOW - 2 } };
    expect(lapsedEntries(entries, (e) => e.until, NOW, 'e#0')).toEqual([['e#1', NOW - 2]]);
  });

  it('drops at most MAX_DROPPED entries in one write', () => {
    const many = Object.fromEntries(Array.from({ length: MAX_DROPPED + 7 }, (_, i) => [`r${i}`, NOW - i]));
    const dropped = lapsedEntries(many, (u) => u, NOW);
    expect(dropped).toHaveLength(MAX_DROPPED);
    expect(dropped[0]).toEqual(['r0', NOW]);
  });
});

describe('leased slots: dropping lapsed entries in a write', () => {
  it('conditions each drop on the lease end read, with the names as placeholders', () => {
    const drops = dropLapsed([
      ['run-1', NOW - 1],
      ['x" OR 1=1', NOW - 2],
    ]);
    expect(drops).toEqual({
      conditions: ['#holders.#d0 = :d0', '#holders.#d1 = :d1'],
      removes: ['#holders.#d0', '#holders.#d1'],
      names: { '#d0': 'run-1', '#d1': 'x" OR 1=1' },
      values: { ':d0': NOW - 1, ':d1': NOW - 2 },
    });
  });

  it("compares an object entry's lease end field", () => {
    expect(dropLapsed([['e#1', NOW - 2]], '#until').conditions).toEqual(['#holders.#d0.#until = :d0']);
  });

  it('nothing to drop: no condition, no REMOVE', () => {
    expect(dropLapsed([])).toEqual({ conditions: [], removes: [], names: {}, values: {} });
  });
});
