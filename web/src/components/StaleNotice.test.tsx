import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { dateTime } from '../lib/format';
import { StaleNotice } from './StaleNotice';

describe('StaleNotice', () => {
  it('shows nothing for a fresh answer', () => {
    expect(renderToStaticMarkup(<StaleNotice />)).toBe('');
  });

  it('says since when the engine is down and how old the status is', () => {
    const stale = { unavailableSince: '2026-11-27T14:00:00Z', asOf: '2026-11-27T13:59:30Z' };
    const html = renderToStaticMarkup(<StaleNotice stale={stale} now={Date.parse('2026-11-27T14:05:30Z')} />);
    expect(html).toContain('role="status"');
    expect(html).toContain(`Workflow engine unavailable since ${dateTime(stale.unavailableSince)}`);
    expect(html).toContain(`status as of ${dateTime(stale.asOf)}`);
    expect(html).toContain('6 min ago');
  });
});
