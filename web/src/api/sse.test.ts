import { describe, expect, it } from 'vitest';
import { parseSSE } from './sse';

describe('parseSSE', () => {
  it.each([
    ['one event', 'event: log\ndata: {"a":1}\n\n', [{ event: 'log', data: '{"a":1}' }], ''],
    ['a comment is dropped', ': keep-alive\n\nevent: log\ndata: x\n\n', [{ event: 'log', data: 'x' }], ''],
    ['an unfinished event stays for the next chunk', 'event: log\ndata: x\n\nevent: log\nda', [{ event: 'log', data: 'x' }], 'event: log\nda'],
    ['CRLF and several data lines', 'data: a\r\ndata: b\r\n\r\n', [{ event: 'message', data: 'a\nb' }], ''],
  ])('%s', (_, text, events, rest) => {
    expect(parseSSE(text)).toEqual({ events, rest });
  });
});
