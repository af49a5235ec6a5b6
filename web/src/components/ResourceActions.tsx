import { useEffect, useState } from 'react';
import { appPath, get, post } from '../api/client';
import type { ActionsView, ResourceAction, ResourceKey, RunActionView } from '../api/types';
import { resourceLabel } from '../lib/format';
import { appObject, useCan } from '../session';
import { ErrorMessage, Spinner, useAction, useToast } from './ui';

/** resourceParams names one resource in the query of the per-resource endpoints. */
export function resourceParams(r: ResourceKey): Record<string, string | undefined> {
  return { group: r.group || undefined, kind: r.kind, namespace: r.namespace || undefined, name: r.name };
}

/**
 * actionParams is the params object of a run: each parameter's typed
 * value, or its default when left empty; unknown names are dropped.
 */
export function actionParams(a: ResourceAction, values: Record<string, string>): Record<string, string> | undefined {
  const out: Record<string, string> = {};
  for (const p of a.params ?? []) {
    const v = (values[p.name] ?? '').trim() || p.default;
    if (v !== undefined && v !== '') out[p.name] = v;
  }
  return Object.keys(out).length ? out : undefined;
}

/**
 * ResourceActions lists a live resource's actions (the built-ins of its
 * kind and the Lua ones of the workers) and runs one, with its parameters,
 * showing what it changed or the server's refusal.
 */
export function ResourceActions({ project, app, item }: { project: string; app: string; item: ResourceKey }) {
  const [list, setList] = useState<{ data?: ActionsView; error?: unknown }>({});
  const [open, setOpen] = useState<string | null>(null);
  const [values, setValues] = useState<Record<string, string>>({});
  const [result, setResult] = useState<RunActionView | null>(null);
  const { error, busy, run, setError } = useAction();
  const toast = useToast();
  const path = appPath(project, app, '/resource/actions', resourceParams(item));
  const [tick, setTick] = useState(0);
  useEffect(() => {
    let live = true;
    get<ActionsView>(path).then(
      (data) => live && setList({ data }),
      (err) => live && setList({ error: err }),
    );
    return () => {
      live = false;
    };
  }, [path, tick]);

  const actions = list.data?.actions ?? [];
  const rbacAction = (a: ResourceAction) => `action/${item.group ?? ''}/${item.kind}/${a.name}`;
  const allowed = useCan(actions.map((a) => ({ resource: 'applications', action: rbacAction(a), object: appObject(project, app) })));

  if (list.error) return <ErrorMessage error={list.error} what="The actions could not be listed" />;
  if (!list.data) return <Spinner />;
  if (actions.length === 0) return <p className="empty">{item.kind} has no actions.</p>;
  const chosen = actions.find((a) => a.name === open);
  const start = (a: ResourceAction) => {
    setOpen(a.name);
    setValues(Object.fromEntries((a.params ?? []).map((p) => [p.name, p.default ?? ''])));
    setResult(null);
    setError(null);
  };
  const submit = (a: ResourceAction) =>
    run(async () => {
      const r = await post<RunActionView>(path, { action: a.name, params: actionParams(a, values) });
      setResult(r);
      setOpen(null);
      setTick((n) => n + 1);
      toast(`Action ${a.name} ran on ${item.name}`);
    });

  return (
    <div className="resource-actions">
      <ul className="action-list" role="menu" aria-label={`Actions of ${item.name}`}>
        {actions.map((a, i) => (
          <li key={a.name} role="none">
            <button
              type="button"
              role="menuitem"
              className="btn"
              disabled={a.disabled || busy || allowed[i] === false}
              title={
                allowed[i] === false
                  ? `Not permitted: applications, ${rbacAction(a)}`
                  : a.disabled
                    ? 'It would change nothing on this resource as it is'
                    : a.source === 'lua'
                      ? 'A Lua action of the resource customizations'
                      : undefined
              }
              onClick={() => ((a.params ?? []).length ? start(a) : submit(a))}
            >
              {a.name}
              {(a.params ?? []).length > 0 && '…'}
            </button>
          </li>
        ))}
      </ul>
      {chosen && (
        <form
          className="action-form"
          aria-label={`Run ${chosen.name}`}
          onSubmit={(e) => {
            e.preventDefault();
            submit(chosen);
          }}
        >
          {(chosen.params ?? []).map((p) => (
            <div className="field" key={p.name}>
              <label htmlFor={`action-param-${p.name}`}>{p.name}</label>
              <input
                id={`action-param-${p.name}`}
                value={values[p.name] ?? ''}
                placeholder={p.default}
                inputMode={p.type === 'number' || p.type === 'integer' ? 'numeric' : undefined}
                onChange={(e) => setValues({ ...values, [p.name]: e.target.value })}
              />
            </div>
          ))}
          <div className="form-actions">
            <button type="submit" className="btn btn-primary" disabled={busy}>
              Run {chosen.name}
            </button>
            <button type="button" className="btn btn-plain" onClick={() => setOpen(null)}>
              Cancel
            </button>
          </div>
        </form>
      )}
      {busy && <Spinner label="Running…" />}
      <ErrorMessage error={error} what="The action failed" />
      {result && (
        <div className="notice action-result" role="status">
          {result.action} changed:{' '}
          {result.changes.length === 0
            ? 'nothing'
            : result.changes.map((c, i) => (
                <span key={i}>
                  {i > 0 && ', '}
                  {c.operation === 'create' ? 'created' : 'patched'} {resourceLabel(c.resource)}
                </span>
              ))}
        </div>
      )}
    </div>
  );
}
