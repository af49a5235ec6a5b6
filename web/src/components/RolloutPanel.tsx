import { useCallback, useEffect, useState } from 'react';
import { ApiError, get, post } from '../api/client';
import type { ApplicationSet, RolloutStatus } from '../api/types';
import { appSetPath, rolloutControls, rolloutRunning, selectorLabel, splitRef, stepProgress } from '../lib/appsets';
import { appURL, Link } from '../router';
import { Badge, Button, Dialog, DialogActions, ErrorMessage, Field, Spinner, useAction, useToast } from './ui';

/** pollMs is how often a rollout that can still move is read again. */
const pollMs = 2000;

type Steps = NonNullable<NonNullable<ApplicationSet['spec']['strategy']>['rollingSync']>['steps'];

/**
 * RolloutPanel shows a set's progressive rollout step by step, read again
 * while it can move (and when version changes), with pause, resume and
 * abort for callers who may update the set.
 */
export function RolloutPanel({ set, canUpdate, version }: { set: ApplicationSet; canUpdate: boolean | undefined; version: string }) {
  const name = set.metadata.name;
  const [rollout, setRollout] = useState<RolloutStatus | null | undefined>(undefined);
  const [error, setError] = useState<unknown>(null);
  const [tick, setTick] = useState(0);
  const [aborting, setAborting] = useState(false);
  const { busy, run, error: actionError } = useAction();
  const toast = useToast();
  const load = useCallback(
    (signal?: AbortSignal) =>
      get<RolloutStatus>(appSetPath(name, '/rollout'), { signal }).then(
        (r) => {
          setRollout(r);
          setError(null);
        },
        (e) => {
          if (signal?.aborted) return;
          if (e instanceof ApiError && e.status === 404 && !e.notAvailable) setRollout(null);
          else setError(e);
        },
      ),
    [name],
  );
  useEffect(() => {
    const ac = new AbortController();
    load(ac.signal);
    return () => ac.abort();
  }, [load, version, tick]);
  const running = rollout ? rolloutRunning(rollout.phase) : false;
  useEffect(() => {
    if (!running) return undefined;
    const t = window.setInterval(() => document.visibilityState === 'visible' && setTick((n) => n + 1), pollMs);
    return () => window.clearInterval(t);
  }, [running]);

  const control = (verb: 'pause' | 'resume' | 'abort', reason?: string) =>
    run(async () => {
      const st = await post<RolloutStatus>(appSetPath(name, `/rollout/${verb}`), reason ? { reason } : undefined);
      setRollout(st);
      toast(`Rollout ${verb === 'pause' ? 'paused' : verb === 'resume' ? 'resumed' : 'aborted'}`);
    });

  const strategy = set.spec.strategy;
  return (
    <section className="rollout" aria-labelledby="rollout-title">
      <div className="section-head">
        <h2 id="rollout-title">Rollout</h2>
        {rollout && <Badge kind="phase" value={rollout.phase} label="Rollout" />}
        {rollout && (
          <span className="muted">
            to <code>{rollout.target}</code>
          </span>
        )}
        <div className="spacer" />
        {rollout && rolloutRunning(rollout.phase) && (
          <RolloutControls
            phase={rollout.phase}
            canUpdate={canUpdate}
            busy={busy}
            onPause={() => control('pause')}
            onResume={() => control('resume')}
            onAbort={() => setAborting(true)}
          />
        )}
      </div>
      <ErrorMessage error={error} what="The rollout could not be read" />
      <ErrorMessage error={actionError} what="The rollout did not change" />
      {rollout === undefined && !error && <Spinner label="Reading the rollout…" />}
      {rollout === null && (
        <p className="empty">
          {strategy?.type === 'RollingSync'
            ? 'This set rolls out with RollingSync; no rollout has started yet.'
            : 'This set has no progressive rollout: its apps sync as their own policies say.'}
        </p>
      )}
      {rollout && <RolloutSteps rollout={rollout} steps={strategy?.rollingSync?.steps} />}
      {aborting && (
        <AbortDialog
          name={name}
          onClose={() => setAborting(false)}
          onAbort={async (reason) => {
            await control('abort', reason);
            setAborting(false);
          }}
        />
      )}
    </section>
  );
}

/** RolloutControls are pause, resume and abort, each enabled in the phases it applies to. */
export function RolloutControls({
  phase,
  canUpdate,
  busy,
  onPause,
  onResume,
  onAbort,
}: {
  phase: string;
  canUpdate: boolean | undefined;
  busy: boolean;
  onPause: () => void;
  onResume: () => void;
  onAbort: () => void;
}) {
  const can = rolloutControls(phase);
  const denied = 'applicationsets, update';
  return (
    <div className="rollout-controls" role="group" aria-label="Rollout controls">
      <Button icon="pause" allowed={canUpdate} denied={denied} disabled={busy || !can.pause} onClick={onPause} title={can.pause ? undefined : `A ${phase} rollout cannot be paused`}>
        Pause
      </Button>
      <Button icon="sync" variant="primary" allowed={canUpdate} denied={denied} disabled={busy || !can.resume} onClick={onResume} title={can.resume ? undefined : `A ${phase} rollout cannot be resumed`}>
        Resume
      </Button>
      <Button icon="stop" variant="danger" allowed={canUpdate} denied={denied} disabled={busy || !can.abort} onClick={onAbort}>
        Abort
      </Button>
    </div>
  );
}

/** RolloutSteps shows each step: its selector, phase, progress and apps; the halting app stands out. */
export function RolloutSteps({ rollout, steps }: { rollout: RolloutStatus; steps?: Steps }) {
  return (
    <>
      {rollout.message && (
        <p className={`rollout-message${rollout.phase === 'Halted' || rollout.phase === 'Failed' ? ' rollout-bad' : ''}`} role={rollout.phase === 'Halted' ? 'alert' : undefined}>
          {rollout.haltedBy && (
            <>
              Halted by <AppRef refStr={rollout.haltedBy} />:{' '}
            </>
          )}
          {rollout.message}
        </p>
      )}
      <ol className="rollout-steps">
        {rollout.steps.map((s, i) => {
          const p = stepProgress(s.apps);
          const current = i === rollout.step && rolloutRunning(rollout.phase);
          return (
            <li key={i} className={`rollout-step step-${s.phase.toLowerCase()}${current ? ' step-current' : ''}`} aria-current={current ? 'step' : undefined} data-step={i + 1}>
              <div className="step-head">
                <strong>Step {i + 1}</strong>
                <Badge kind="phase" value={s.phase} label={`Step ${i + 1}`} />
                {steps?.[i] && <span className="muted">{selectorLabel(steps[i].matchExpressions)}</span>}
                <span className="muted">
                  · {p.done} of {p.total} healthy · up to {s.maxUpdate} at once
                </span>
              </div>
              {s.apps.length === 0 ? (
                <p className="muted step-empty">No app matches this step.</p>
              ) : (
                <ul className="step-apps">
                  {s.apps.map((a) => {
                    const ref = `${a.project}/${a.name}`;
                    return (
                      <li key={ref} className={ref === rollout.haltedBy ? 'step-app halted-by' : 'step-app'} data-app={ref}>
                        <AppRef refStr={ref} />
                        <Badge kind="phase" value={a.phase} label="App" />
                        {(a.attempt ?? 0) > 1 && <span className="muted">try {a.attempt}</span>}
                        {a.message && <span className="step-app-msg">{a.message}</span>}
                      </li>
                    );
                  })}
                </ul>
              )}
            </li>
          );
        })}
      </ol>
      {rollout.unmatched?.length ? (
        <p className="muted">
          No step selects {rollout.unmatched.length === 1 ? 'this app' : 'these apps'}, so the rollout never syncs {rollout.unmatched.length === 1 ? 'it' : 'them'}:{' '}
          {rollout.unmatched.map((r, i) => (
            <span key={r}>
              {i > 0 && ', '}
              <AppRef refStr={r} />
            </span>
          ))}
        </p>
      ) : null}
    </>
  );
}

function AppRef({ refStr }: { refStr: string }) {
  const { project, name } = splitRef(refStr);
  return (
    <Link to={appURL(project, name)} title={refStr}>
      {name}
    </Link>
  );
}

function AbortDialog({ name, onClose, onAbort }: { name: string; onClose: () => void; onAbort: (reason: string) => Promise<void> }) {
  const [reason, setReason] = useState('');
  return (
    <Dialog title={`Abort the rollout of ${name}`} open onClose={onClose}>
      <form
        onSubmit={(e) => {
          e.preventDefault();
          onAbort(reason);
        }}
      >
        <p>The rollout ends: no later step syncs. Syncs already started go on.</p>
        <Field id="abort-reason" label="Reason (optional)">
          <input id="abort-reason" value={reason} onChange={(e) => setReason(e.target.value)} />
        </Field>
        <DialogActions onCancel={onClose} label="Abort the rollout" variant="danger" icon="stop" />
      </form>
    </Dialog>
  );
}
