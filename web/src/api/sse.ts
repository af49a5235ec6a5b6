import { useEffect, useRef, useState } from 'react';

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
