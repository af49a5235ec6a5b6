import { describe, expect, it } from 'vitest';
import { returnPath, ssoLoginURL } from './Login';

describe('login', () => {
  it.each([
    ['/applications/default/web?tab=history', '/applications/default/web?tab=history'],
    ['', '/applications'],
    ['https://evil.example.com/', '/applications'],
    ['//evil.example.com/', '/applications'],
    ['/api/v1/session', '/applications'],
    ['/login', '/applications'],
  ])('returns to %j as %j', (ret, want) => {
    expect(returnPath(new URLSearchParams({ return: ret }))).toBe(want);
  });
  it('builds the SSO login URL', () => {
    expect(ssoLoginURL({ enabled: true }, '/settings')).toBe('/api/v1/sso/login?return=%2Fsettings');
    expect(ssoLoginURL({ enabled: true, loginURL: '/api/v1/sso/login' }, '/x')).toBe('/api/v1/sso/login?return=%2Fx');
    expect(ssoLoginURL({ enabled: true, loginURL: '/sso?a=1' }, '/x')).toBe('/sso?a=1&return=%2Fx');
    expect(ssoLoginURL({ enabled: true, loginURL: 'https://elsewhere/' }, '/x')).toBe('/api/v1/sso/login?return=%2Fx');
  });
});
