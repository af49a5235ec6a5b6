import { useEffect, useRef, useState } from 'react';
import { ApiError, describeError, parseProblem, UNAUTHENTICATED_EVENT } from './client';

export type StreamState = 'connecting' | 'live' | 'reconnecting' | 'closed';

/**
 * useEventStream subscribes to a Server-Sent Events endpoint (same origin,
 * with the session cookie) and calls onEvent for each named event. The
 * browser reconnects by itself; the state says whether the stream is live.
 * A null url subscribes to nothing.
 */
export function useEventStream(
  url: string | null,
  events: string[],
  onEvent: (event: string, data: string) => void,
): StreamState {
  const [state, setState] = useState<StreamState>('connecting');
  const handler = useRef(onEvent);
  handler.current = onEvent;
  const names = events.join(',');
  useEffect(() => {
    if (!url || typeof EventSource === 'undefined') {
      setState('closed');
      return undefined;
    }
    setState('connecting');
    const es = new EventSource(url, { withCredentials: true });
    es.onopen = () => setState('live');
    es.onerror = () => setState(es.readyState === EventSource.CLOSED ? 'closed' : 'reconnecting');
    const listeners = names.split(',').map((name) => {
      const l = (e: MessageEvent<string>) => handler.current(name, e.data);
      es.addEventListener(name, l as EventListener);
      return [name, l] as const;
    });
    return () => {
      listeners.forEach(([name, l]) => es.removeEventListener(name, l as EventListener));
      es.close();
    };
  }, [url, names]);
  return state;
}

export interface SSEvent {
  event: string;
  data: string;
}

/**
 * parseSSE splits a Server-Sent Events text into complete events and the
 * unfinished rest (to prepend to the next chunk). Comments (keep-alives)
 * and events without data are dropped.
 */
export function parseSSE(text: string): { events: SSEvent[]; rest: string } {
  const events: SSEvent[] = [];
  const blocks = text.replace(/\r\n?/g, '\n').split('\n\n');
  const rest = blocks.pop() ?? '';
  for (const block of blocks) {
    let event = 'message';
    const data: string[] = [];
    for (const line of block.split('\n')) {
      if (line === '' || line.startsWith(':')) continue;
      const i = line.indexOf(':');
      const field = i < 0 ? line : line.slice(0, i);
      const value = i < 0 ? '' : line.slice(i + 1).replace(/^ /, '');
      if (field === 'event') event = value;
      else if (field === 'data') data.push(value);
    }
    if (data.length) events.push({ event, data: data.join('\n') });
  }
  return { events, rest };
}

/**
 * readEventStream GETs an event stream with fetch (unlike EventSource it
 * sees the server's problem on a refusal, and does not reconnect when a
 * finite stream ends) and calls onEvent for each event until the stream
 * ends or the signal aborts. A refusal is thrown as ApiError.
 */
export async function readEventStream(path: string, onEvent: (e: SSEvent) => void, signal: AbortSignal): Promise<void> {
  let res: Response;
  try {
    res = await fetch(path, { headers: { Accept: 'text/event-stream' }, credentials: 'same-origin', signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') return;
    throw new ApiError(0, { detail: `the request failed (${describeError(e)})` });
  }
  if (!res.ok) {
    if (res.status === 401) window.dispatchEvent(new Event(UNAUTHENTICATED_EVENT));
    throw new ApiError(res.status, parseProblem(res.status, res.statusText, await res.text()));
  }
  if (!res.body) return;
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buf = '';
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      const { events, rest } = parseSSE(buf + value);
      buf = rest;
      events.forEach(onEvent);
    }
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') return;
    throw e;
  }
  parseSSE(buf + '\n\n').events.forEach(onEvent);
}
