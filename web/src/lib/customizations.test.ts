import { describe, expect, it } from 'vitest';
import { customizationsBody, originLabel, settingLabel } from './customizations';

describe('customizations', () => {
  it.each([
    [{ repoURL: ' https://git.example.com/lib.git ', path: ' resource_customizations/ ', revision: ' v1 ' }, { repoURL: 'https://git.example.com/lib.git', path: 'resource_customizations', revision: 'v1' }],
    [{ repoURL: 'https://git.example.com/lib.git', path: './', revision: '' }, { repoURL: 'https://git.example.com/lib.git' }],
    [{ repoURL: 'https://git.example.com/lib.git', path: '.', revision: '' }, { repoURL: 'https://git.example.com/lib.git' }],
    [{ repoURL: '  ', path: 'x', revision: 'main' }, { repoURL: '' }],
  ])('sends %j as %j', (form, want) => {
    expect(customizationsBody(form)).toEqual(want);
  });
  it('labels the setting', () => {
    expect(settingLabel(undefined)).toBe('none');
    expect(settingLabel({ repoURL: '' })).toBe('none');
    expect(settingLabel({ repoURL: 'https://g/lib.git' })).toBe('https://g/lib.git@HEAD');
    expect(settingLabel({ repoURL: 'https://g/lib.git', path: 'rc', revision: 'v2' })).toBe('https://g/lib.git@v2/rc');
  });
  it('labels the origin', () => {
    expect(originLabel({ worker: 'w', origin: 'flags', source: '/lib', actionKinds: 0 })).toBe('worker flags');
    expect(originLabel({ worker: 'w', origin: 'settings', source: 'x', actionKinds: 0 })).toBe('settings');
    expect(originLabel({ worker: 'w', actionKinds: 0 })).toBe('argocd-cm only');
  });
});
