import { describe, expect, it } from 'vitest';
import { appendLines, hasLogs, logText, matchLines } from './LogViewer';

const l = (line: string, pod = 'web-1') => ({ pod, line });

describe('matchLines', () => {
  const lines = [l('GET /health 200'), l('ERROR db down'), l('get /index 200')];
  it.each([
    ['', 3],
    ['get', 2],
    ['!get', 1],
    ['!', 3],
  ])('%j keeps %i', (search, n) => {
    expect(matchLines(lines, search)).toHaveLength(n);
  });
});

describe('appendLines', () => {
  it('keeps the last max lines', () => {
    expect(appendLines([l('a'), l('b')], [l('c')], 2).map((x) => x.line)).toEqual(['b', 'c']);
  });
});

describe('logText', () => {
  it('prefixes the pod for a workload', () => {
    expect(logText([l('a'), l('b', 'web-2')], true)).toBe('web-1: a\nweb-2: b\n');
    expect(logText([l('a')], false)).toBe('a\n');
    expect(logText([], false)).toBe('');
  });
});

describe('hasLogs', () => {
  it.each([
    [{ kind: 'Pod', name: 'p' }, true],
    [{ kind: 'Deployment', group: 'apps', name: 'd' }, true],
    [{ kind: 'CronJob', group: 'batch', name: 'c' }, true],
    [{ kind: 'Service', name: 's' }, false],
    [{ kind: 'Deployment', group: 'example.com', name: 'd' }, false],
  ])('%j: %s', (r, want) => {
    expect(hasLogs(r)).toBe(want);
  });
});
