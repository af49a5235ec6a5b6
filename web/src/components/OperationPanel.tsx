import { appPath, post } from '../api/client';
import type { Operation, SyncSummary } from '../api/types';
import { dateTime, duration, resourceLabel, syncNumber, timeAgo } from '../lib/format';
import type { Allowed } from '../session';
import { Badge, Button, ErrorMessage, THead, useAction, useToast } from './ui';

/**
 * progress is the share of the sync done, in percent: the steps before the
 * running one, plus the running step's share of resources with a result.
 */
export function progress(op: Operation): number {
  const steps = op.steps ?? 0;
  if (op.phase === 'Succeeded') return 100;
  if (steps <= 0) return 0;
  const index = Math.min(op.stepIndex ?? 0, steps);
  const step = op.step;
  let part = 0;
  if (step && step.resources > 0) {
    const doneInStep = (op.resources ?? []).filter((r) => (r.phase ?? '') === step.phase && (r.wave ?? 0) === step.wave).length;
    part = Math.min(doneInStep, step.resources) / step.resources;
  }
  return Math.round((100 * (index + part)) / steps);
}

/**
 * OperationPanel shows the running sync live (phase, wave, per-resource
 * progress), or else the outcome of the last one.
 */
export function OperationPanel({
  project,
  app,
  op,
  last,
  canDelete,
}: {
  project: string;
  app: string;
  op?: Operation | null;
  last?: SyncSummary;
  canDelete: Allowed;
}) {
  const toast = useToast();
  const { error, run } = useAction();
  if (!op?.syncID) {
    if (!last) return null;
    return (
      <section className="operation operation-done" aria-label="Last sync">
        <h2 className="sr-only">Last sync</h2>
        <Badge kind="phase" value={last.phase} label="Last sync" />
        <span>
          Last sync {syncNumber(last.id)}
          {last.initiator && <> by {last.initiator}</>}
          {last.finishedAt && (
            <>
              , <time dateTime={last.finishedAt} title={dateTime(last.finishedAt)}>{timeAgo(last.finishedAt)}</time>
            </>
          )}
          {duration(last.startedAt, last.finishedAt) && <> in {duration(last.startedAt, last.finishedAt)}</>}
        </span>
        {last.message && <span className="msg">{last.message}</span>}
      </section>
    );
  }
  const steps = op.steps ?? 0;
  const index = op.stepIndex ?? 0;
  const done = op.resources?.length ?? 0;
  const pct = progress(op);
  const approve = () =>
    run(async () => {
      await post(appPath(project, app, '/confirm-deletion'));
      toast('Deletion confirmed');
    });
  return (
    <section className="operation" aria-label="Operation in progress" aria-live="polite">
      <div className="operation-head">
        <h2>Sync {syncNumber(op.syncID)}</h2>
        <Badge kind="phase" value={op.phase} label="Operation" />
        {op.initiator && <span className="muted">by {op.initiator}</span>}
        {op.startedAt && <span className="muted">started {timeAgo(op.startedAt)}</span>}
      </div>
      {op.step && (
        <p className="operation-step">
          Step {index + 1} of {steps}: {op.step.phase} wave {op.step.wave} ({op.step.resources} resource{op.step.resources === 1 ? '' : 's'})
        </p>
      )}
      {op.waitingFor && op.waitingFor.length > 0 && (
        <div className="notice dep-waits" role="status">
          Waiting for dependencies before the sync starts:
          <ul>
            {op.waitingFor.map((w) => (
              <li key={`${w.app.project}/${w.app.name}`}>
                <strong>{w.app.project === project ? w.app.name : `${w.app.project}/${w.app.name}`}</strong> {w.reason}
              </li>
            ))}
          </ul>
        </div>
      )}
      <progress max={100} value={pct} aria-label="Sync progress">
        {pct}%
      </progress>
      {op.awaitingApproval && op.awaitingApproval.length > 0 && (
        <div className="notice">
          Waiting for approval to prune: {op.awaitingApproval.map(resourceLabel).join(', ')}.{' '}
          <Button variant="danger" allowed={canDelete} denied="applications, delete" hideDenied onClick={approve}>
            Confirm deletion
          </Button>
        </div>
      )}
      <ErrorMessage error={error} />
      {done > 0 && (
        <div className="table-wrap">
          <table className="table compact">
            <caption className="sr-only">Resources of the sync so far</caption>
            <THead cols={['Phase / wave', 'Resource', 'Action', 'Health', 'Message']} />
            <tbody>
              {op.resources!.map((r, i) => (
                <tr key={i} className={r.action === 'failed' ? 'row-warning' : undefined}>
                  <td>
                    {r.phase ?? ''} {r.wave ?? 0}
                    {r.hook && <span className="tag">hook</span>}
                  </td>
                  <td>{resourceLabel(r)}</td>
                  <td>{r.action}</td>
                  <td>{r.health ? <Badge kind="health" value={r.health} /> : ''}</td>
                  <td className="msg">{r.message}</td>
                </tr>
              ))}
            </tbody>
          </table>
        </div>
      )}
    </section>
  );
}
