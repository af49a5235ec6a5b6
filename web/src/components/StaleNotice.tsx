import type { Stale } from '../api/types';
import { dateTime, timeAgo } from '../lib/format';

/**
 * StaleNotice says that the status on screen is the last known one: the
 * server answers it while the workflow engine (Temporal or its database)
 * does not answer. Nothing for a fresh answer.
 */
export function StaleNotice({ stale, now = Date.now() }: { stale?: Stale; now?: number }) {
  if (!stale) return null;
  const age = timeAgo(stale.asOf, now);
  return (
    <p className="notice notice-stale" role="status">
      <span>
        <strong>Workflow engine unavailable since {dateTime(stale.unavailableSince)}</strong>
        {`; status as of ${dateTime(stale.asOf)}${age ? ` (${age})` : ''}. Syncs and changes are refused until it is back; nothing is lost.`}
      </span>
    </p>
  );
}
