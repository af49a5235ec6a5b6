import type { AppCondition } from '../api/types';
import { ordered, severity, summary, worst } from '../lib/conditions';

/**
 * ConditionsNotice shows the app's conditions (the last compare's
 * warnings and errors, such as rendered kinds that are excluded), worst
 * first, under a count. Nothing for none.
 */
export function ConditionsNotice({ conditions }: { conditions?: AppCondition[] }) {
  if (!conditions?.length) return null;
  const level = worst(conditions);
  return (
    <section className={`conditions conditions-${level}`} role={level === 'error' ? 'alert' : 'status'} aria-label="Conditions">
      <p className="conditions-summary">
        <strong>{summary(conditions)}</strong> from the last compare
      </p>
      <ul>
        {ordered(conditions).map((c, i) => (
          <li key={i} data-condition={c.type} data-severity={severity(c.type)}>
            <strong>{c.type}</strong>: {c.message}
          </li>
        ))}
      </ul>
    </section>
  );
}
