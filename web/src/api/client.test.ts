import { describe, expect, it, vi } from 'vitest';
import { ApiError, formatProblem, parseProblem, put, query, readCookie } from './client';

describe('problems', () => {
  it('formats an RFC 9457 problem readably', () => {
    expect(formatProblem(403, { title: 'Forbidden', status: 403, detail: 'permission denied: applications, sync, default/web' }))
      .toBe('403 Forbidden: permission denied: applications, sync, default/web');
    expect(formatProblem(400, { title: 'Bad Request', detail: 'repoURL is required', field: 'source.repoURL' }))
      .toBe('400 Bad Request: repoURL is required (field source.repoURL)');
    expect(formatProblem(0, { detail: 'the request failed' })).toBe('The server cannot be reached: the request failed');
  });
  it('parses problems and plain text answers', () => {
    expect(parseProblem(409, 'Conflict', '{"type":"about:blank","title":"Conflict","status":409,"detail":"busy"}').detail).toBe('busy');
    expect(parseProblem(502, 'Bad Gateway', '<html>proxy</html>')).toEqual({ title: 'Bad Gateway', status: 502, detail: '<html>proxy</html>' });
  });
  it('knows endpoints that are not there yet', () => {
    expect(new ApiError(501, { detail: 'the diff is not implemented yet' }).notAvailable).toBe(true);
    expect(new ApiError(404, { detail: 'no such API endpoint: GET /api/v1/x' }).notAvailable).toBe(true);
    expect(new ApiError(404, { detail: 'application not found' }).notAvailable).toBe(false);
  });
});

describe('helpers', () => {
  it('reads cookies', () => {
    expect(readCookie('windlass.csrf', 'a=1; windlass.csrf=abc%3D; b=2')).toBe('abc=');
    expect(readCookie('x', 'a=1')).toBeUndefined();
  });
  it('builds queries without empty values', () => {
    expect(query({ project: 'p', sync: '', health: undefined, limit: 50, a: ['x', 'y'] })).toBe('?project=p&limit=50&a=x&a=y');
    expect(query({})).toBe('');
  });
});

describe('request', () => {
  it('sends a body in the given media type, and throws the problem of a refusal', async () => {
    const seen: RequestInit[] = [];
    vi.stubGlobal('fetch', async (_: string, init: RequestInit) => {
      seen.push(init);
      return new Response(JSON.stringify({ title: 'Bad Request', status: 400, detail: 'repoURL is required', field: 'source.repoURL' }), { status: 400 });
    });
    try {
      const err = await put('/api/v1/applications/web', 'name: web\n', { contentType: 'application/yaml' }).catch((e: unknown) => e);
      expect(err).toBeInstanceOf(ApiError);
      expect((err as ApiError).message).toBe('400 Bad Request: repoURL is required (field source.repoURL)');
      expect((seen[0].headers as Record<string, string>)['Content-Type']).toBe('application/yaml');
      expect(seen[0].body).toBe('name: web\n');
    } finally {
      vi.unstubAllGlobals();
    }
  });
});
