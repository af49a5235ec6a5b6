import { useMemo, useState } from 'react';
import { appPath, patch } from '../api/client';
import type { Application, AppView, Source } from '../api/types';
import { diffTexts } from '../lib/diff';
import { formOf, mergePatch, type ParamsForm, type Tool, toolOf, withOptions, withSource } from '../lib/params';
import { toYAML } from '../lib/yaml';
import type { Allowed } from '../session';
import { DiffView } from './DiffView';
import { ErrorMessage, Field, useAction, useToast } from './ui';

const toolNames: Record<Tool, string> = { helm: 'Helm', kustomize: 'Kustomize', directory: 'Directory' };

/**
 * ParamsTab edits a source's tool options (Helm values and parameters,
 * Kustomize images and replicas, directory options), previews the change
 * of the spec as a diff, and saves it as a JSON merge patch.
 */
export function ParamsTab({ project, spec, canUpdate, onSaved }: { project: string; spec: Application; canUpdate: Allowed; onSaved: (v: AppView) => void }) {
  const sources: Source[] = spec.sources?.length ? spec.sources : spec.source ? [spec.source] : [];
  const [index, setIndex] = useState(0);
  const source = sources[index];
  const detected = source ? toolOf(source) : undefined;
  const [chosen, setChosen] = useState<Tool | undefined>(undefined);
  const tool = detected ?? chosen;
  const [form, setForm] = useState<ParamsForm | null>(null);
  const f = form ?? (source ? formOf(source) : null);
  const { error, busy, run } = useAction();
  const toast = useToast();

  const edited = useMemo(() => {
    if (!source || !tool || !f) return { spec, error: null };
    try {
      return { spec: withSource(spec, index, withOptions(source, tool, f)), error: null };
    } catch (e) {
      return { spec, error: e };
    }
  }, [spec, source, index, tool, f]);
  const change = mergePatch(spec as never, edited.spec as never);
  const changed = Object.keys(change).length > 0;

  if (!source || !f) return <p className="empty">The application has no source.</p>;
  const field = (k: keyof ParamsForm) => ({
    id: `param-${k}`,
    value: f[k] as string,
    onChange: (e: { target: { value: string } }) => setForm({ ...f, [k]: e.target.value }),
    disabled: canUpdate === false,
  });
  const save = () =>
    run(async () => {
      const v = await patch<AppView>(appPath(project, spec.name), change, { contentType: 'application/merge-patch+json' });
      toast(`The parameters of ${spec.name} were saved`);
      setForm(null);
      onSaved(v);
    });

  return (
    <form
      className="params"
      aria-label="Parameters"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      {sources.length > 1 && (
        <Field id="param-source" label="Source">
          <select
            id="param-source"
            value={index}
            onChange={(e) => {
              setIndex(Number(e.target.value));
              setForm(null);
              setChosen(undefined);
            }}
          >
            {sources.map((s, i) => (
              <option key={i} value={i}>
                {s.name ?? `${i + 1}: ${s.chart ?? s.path ?? s.repoURL}`}
              </option>
            ))}
          </select>
        </Field>
      )}
      {detected ? (
        <p className="muted">Tool: {toolNames[detected]}</p>
      ) : (
        <Field id="param-tool" label="Tool" hint="The source sets no tool options: the tool is detected from its files. Setting options chooses the tool.">
          <select id="param-tool" value={chosen ?? ''} onChange={(e) => setChosen((e.target.value || undefined) as Tool | undefined)} disabled={canUpdate === false}>
            <option value="">Detected from the files</option>
            {(Object.keys(toolNames) as Tool[]).map((t) => (
              <option key={t} value={t}>
                {toolNames[t]}
              </option>
            ))}
          </select>
        </Field>
      )}
      {tool === 'helm' && (
        <>
          <Field id="param-releaseName" label="Release name" hint="Default: the application's name">
            <input {...field('releaseName')} />
          </Field>
          <Field id="param-parameters" label="Parameters" hint="name=value, one a line (helm --set)">
            <textarea className="code" rows={4} spellCheck={false} {...field('parameters')} />
          </Field>
          <Field id="param-values" label="Values (YAML)">
            <textarea className="code" rows={8} spellCheck={false} {...field('values')} />
          </Field>
          <Field id="param-valueFiles" label="Value files" hint="One a line, relative to the chart, or $ref/path">
            <textarea className="code" rows={2} spellCheck={false} {...field('valueFiles')} />
          </Field>
        </>
      )}
      {tool === 'kustomize' && (
        <>
          <Field id="param-images" label="Images" hint="One a line, as kustomize edit set image takes them: name=newName:tag, name:tag or name@digest">
            <textarea className="code" rows={3} spellCheck={false} {...field('images')} />
          </Field>
          <Field id="param-replicas" label="Replicas" hint="name=count, one a line">
            <textarea className="code" rows={3} spellCheck={false} {...field('replicas')} />
          </Field>
          <Field id="param-namePrefix" label="Name prefix">
            <input {...field('namePrefix')} />
          </Field>
          <Field id="param-nameSuffix" label="Name suffix">
            <input {...field('nameSuffix')} />
          </Field>
          <Field id="param-namespace" label="Namespace">
            <input {...field('namespace')} />
          </Field>
        </>
      )}
      {tool === 'directory' && (
        <>
          <div className="check">
            <input id="param-recurse" type="checkbox" checked={f.recurse} onChange={(e) => setForm({ ...f, recurse: e.target.checked })} disabled={canUpdate === false} />
            <label htmlFor="param-recurse">Recurse into subdirectories</label>
          </div>
          <Field id="param-include" label="Include" hint="A glob of the files to include">
            <input {...field('include')} />
          </Field>
          <Field id="param-exclude" label="Exclude" hint="A glob of the files to exclude">
            <input {...field('exclude')} />
          </Field>
        </>
      )}
      <ErrorMessage error={edited.error} what="Not valid" />
      {changed && (
        <section aria-label="The change of the spec">
          <h3>The change of the spec</h3>
          <DiffView rows={diffTexts(toYAML(spec), toYAML(edited.spec))} leftTitle="Current" rightTitle="Edited" />
        </section>
      )}
      <ErrorMessage error={error} what="The parameters were not saved" />
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={busy || !changed || !!edited.error || canUpdate === false} title={canUpdate === false ? 'Not permitted: applications, update' : undefined}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button type="button" className="btn btn-plain" onClick={() => setForm(null)} disabled={!form}>
          Reset
        </button>
      </div>
    </form>
  );
}
