import { describe, expect, it } from 'vitest';
import { repoRequest, tlsSummary } from './Settings';

describe('repository form', () => {
  it('sends only the fields that are set', () => {
    expect(repoRequest({ url: 'https://charts.example/', type: 'helm', project: '', password: 'pw', insecure: false, passCredentials: true })).toEqual({
      url: 'https://charts.example/',
      type: 'helm',
      password: 'pw',
      passCredentials: true,
    });
  });

  it('summarises TLS and proxy settings without secrets', () => {
    expect(tlsSummary({ url: 'u', hasPassword: true, hasToken: false, hasSSHKey: false, hasClientCert: true, hasCA: true, proxy: 'http://p:3128' })).toBe(
      'client cert, CA, proxy http://p:3128',
    );
    expect(tlsSummary({ url: 'u', hasPassword: false, hasToken: false, hasSSHKey: false })).toBe('—');
    expect(tlsSummary({ url: 'u', hasPassword: false, hasToken: false, hasSSHKey: false, githubAppID: 12, githubAppInstallationID: 34, hasGithubAppPrivateKey: true })).toBe(
      'GitHub App 12 installation 34',
    );
  });
});
