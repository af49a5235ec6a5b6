import type { CustomizationsSource, CustomizationsStatus } from '../api/types';

/** customizationsBody is the PUT body of the form's fields: trimmed, without empty path and revision; an empty URL clears the setting. */
export function customizationsBody(f: CustomizationsSource): CustomizationsSource {
  const out: CustomizationsSource = { repoURL: f.repoURL.trim() };
  const path = (f.path ?? '').trim().replace(/^\.\/|\/+$/g, '');
  const revision = (f.revision ?? '').trim();
  if (out.repoURL && path && path !== '.') out.path = path;
  if (out.repoURL && revision) out.revision = revision;
  return out;
}

/** settingLabel describes the setting as repository@revision/path, or says there is none. */
export function settingLabel(s: CustomizationsSource | undefined): string {
  if (!s || !s.repoURL) return 'none';
  return `${s.repoURL}@${s.revision || 'HEAD'}${s.path ? `/${s.path}` : ''}`;
}

/** originLabel says what set a worker's source: its flags, which win, or the settings. */
export function originLabel(w: CustomizationsStatus): string {
  switch (w.origin) {
    case 'flags':
      return 'worker flags';
    case 'settings':
      return 'settings';
    default:
      return w.source ? '' : 'argocd-cm only';
  }
}
