import { describe, expect, it } from 'vitest';
import { duration, keyValues, shortSHA, syncNumber, timeAgo } from './format';

describe('format', () => {
  it('shortens full SHAs only', () => {
    expect(shortSHA('0123456789abcdef0123456789abcdef01234567')).toBe('0123456');
    expect(shortSHA('main')).toBe('main');
    expect(shortSHA(undefined)).toBe('');
    expect(shortSHA('sha256:' + 'abcd1234'.repeat(8))).toBe('sha256:abcd1234');
    expect(shortSHA('sha512:' + 'ef'.repeat(64))).toBe('sha512:efefefef');
    // A tag or a ref with a colon is not a digest.
    expect(shortSHA('sha256:latest')).toBe('sha256:latest');
    expect(shortSHA('refs/pull/42/head')).toBe('refs/pull/42/head');
  });
  it('says how long ago', () => {
    const now = Date.parse('2026-01-01T12:00:00Z');
    expect(timeAgo('2026-01-01T11:58:00Z', now)).toBe('2 min ago');
    expect(timeAgo('2026-01-01T11:59:58Z', now)).toBe('just now');
    expect(timeAgo('0001-01-01T00:00:00Z', now)).toBe('');
  });
  it('lists labels sorted by key', () => {
    expect(keyValues({ tier: 'web', team: 'payments', 'example.com/x': '' })).toEqual(['example.com/x=', 'team=payments', 'tier=web']);
    expect(keyValues(undefined)).toEqual([]);
  });
  it('measures durations', () => {
    expect(duration('2026-01-01T12:00:00Z', '2026-01-01T12:01:05Z')).toBe('1 m 5 s');
    expect(duration('2026-01-01T12:00:00Z', '2026-01-01T12:00:00.250Z')).toBe('250 ms');
    expect(duration('2026-01-01T12:00:00Z', undefined)).toBe('');
  });
  it('numbers syncs', () => {
    expect(syncNumber('sync/default/web/12')).toBe('#12');
  });
});
