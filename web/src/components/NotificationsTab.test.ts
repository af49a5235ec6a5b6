import { describe, expect, it } from 'vitest';
import type { NotificationRecord } from '../api/types';
import { destination } from './NotificationsTab';

const rec = (service: string, recipient?: string): NotificationRecord => ({
  time: '2026-01-01T00:00:00Z',
  key: 'k',
  trigger: 'on-deployed',
  template: 'app-deployed',
  service,
  recipient,
  result: 'Sent',
});

describe('destination', () => {
  it.each([
    { name: 'with a recipient', r: rec('slack', 'ops'), want: 'slack:ops' },
    { name: 'a service without one', r: rec('github'), want: 'github' },
  ])('$name', ({ r, want }) => {
    expect(destination(r)).toBe(want);
  });
});
