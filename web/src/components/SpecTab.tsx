import { useState } from 'react';
import { appPath, put } from '../api/client';
import type { AppView, Application } from '../api/types';
import { diffTexts } from '../lib/diff';
import { toYAML } from '../lib/yaml';
import { DiffView } from './DiffView';
import type { Allowed } from '../session';
import { Button, ErrorMessage, useAction, useToast } from './ui';

/**
 * SpecTab shows the app's spec as YAML and edits it: Save PUTs the text
 * as YAML (Windlass's form or an Argo CD Application), and a refusal
 * shows the server's problem, naming the field.
 */
export function SpecTab({ project, spec, canUpdate, onSaved }: { project: string; spec: Application; canUpdate: Allowed; onSaved: (v: AppView) => void }) {
  const current = toYAML(spec);
  const [text, setText] = useState<string | null>(null);
  const [preview, setPreview] = useState(false);
  const { error, busy, run, setError } = useAction();
  const toast = useToast();
  const save = () =>
    run(async () => {
      const v = await put<AppView>(appPath(project, spec.name), text ?? '', { contentType: 'application/yaml' });
      toast(`The spec of ${spec.name} was saved`);
      setText(null);
      setPreview(false);
      onSaved(v);
    });
  if (text === null) {
    return (
      <div className="spec-tab">
        <div className="actions">
          <Button icon="edit" allowed={canUpdate} denied="applications, update" onClick={() => setText(current)}>
            Edit spec
          </Button>
        </div>
        <pre className="code-block" tabIndex={0} aria-label="The application's spec">
          {current}
        </pre>
      </div>
    );
  }
  return (
    <form
      className="spec-tab"
      aria-label="Edit the spec"
      onSubmit={(e) => {
        e.preventDefault();
        save();
      }}
    >
      <label htmlFor="spec-yaml" className="sr-only">
        The spec as YAML
      </label>
      <textarea id="spec-yaml" className="code" rows={Math.min(40, Math.max(12, text.split('\n').length + 2))} value={text} onChange={(e) => setText(e.target.value)} spellCheck={false} />
      <div className="check">
        <input id="spec-preview" type="checkbox" checked={preview} onChange={(e) => setPreview(e.target.checked)} />
        <label htmlFor="spec-preview">Show the change</label>
      </div>
      {preview && <DiffView rows={diffTexts(current, text)} leftTitle="Current" rightTitle="Edited" />}
      <ErrorMessage error={error} what="The spec was not saved" />
      <div className="form-actions">
        <button type="submit" className="btn btn-primary" disabled={busy || text === current}>
          {busy ? 'Saving…' : 'Save'}
        </button>
        <button
          type="button"
          className="btn btn-plain"
          onClick={() => {
            setText(null);
            setError(null);
          }}
        >
          Cancel
        </button>
      </div>
    </form>
  );
}
