import { useEffect, useMemo, useRef, useState } from 'react';
import { appPath } from '../api/client';
import { readEventStream } from '../api/sse';
import type { ResourceKey } from '../api/types';
import { resourceParams } from './ResourceActions';
import { ErrorMessage } from './ui';

/** The kinds with logs: a pod, or a workload whose pods the server merges. */
const logKinds = new Set(['Pod', 'Deployment', 'StatefulSet', 'DaemonSet', 'ReplicaSet', 'Job', 'CronJob']);

export function hasLogs(r: ResourceKey): boolean {
  return logKinds.has(r.kind) && (r.kind === 'Pod' ? !r.group : r.group === 'apps' || r.group === 'batch');
}

export interface LogLine {
  pod: string;
  line: string;
}

/** The lines kept in the browser; older ones are dropped. */
export const MAX_LINES = 10_000;

/** appendLines adds lines, keeping the last max of them. */
export function appendLines(lines: LogLine[], more: LogLine[], max = MAX_LINES): LogLine[] {
  const all = lines.concat(more);
  return all.length > max ? all.slice(all.length - max) : all;
}

/** matchLines keeps the lines that contain the search text (case-insensitive); `!text` keeps those without it. */
export function matchLines(lines: LogLine[], search: string): LogLine[] {
  const not = search.startsWith('!');
  const s = (not ? search.slice(1) : search).toLowerCase();
  if (!s) return lines;
  return lines.filter((l) => l.line.toLowerCase().includes(s) !== not);
}

/** logText is the download: one line a log line, prefixed with the pod for a workload. */
export function logText(lines: LogLine[], withPod: boolean): string {
  return lines.map((l) => (withPod ? `${l.pod}: ${l.line}` : l.line)).join('\n') + (lines.length ? '\n' : '');
}

type Phase = 'connecting' | 'streaming' | 'ended' | 'failed';

/**
 * LogViewer shows a pod's log, or the merged logs of a workload's pods:
 * the last lines, then new ones while following. Pause holds new lines
 * back (and counts them) until resumed; the search filters what is shown;
 * download saves what was received.
 */
export function LogViewer({ project, app, item }: { project: string; app: string; item: ResourceKey }) {
  const [lines, setLines] = useState<LogLine[]>([]);
  const [held, setHeld] = useState<LogLine[]>([]);
  const [follow, setFollow] = useState(true);
  const [paused, setPaused] = useState(false);
  const [search, setSearch] = useState('');
  const [phase, setPhase] = useState<Phase>('connecting');
  const [error, setError] = useState<unknown>(null);
  const pausedRef = useRef(paused);
  pausedRef.current = paused;
  const path = appPath(project, app, '/logs', { ...resourceParams(item), follow: follow ? 'true' : undefined, tailLines: '500' });

  useEffect(() => {
    const ac = new AbortController();
    setLines([]);
    setHeld([]);
    setError(null);
    setPhase('connecting');
    // Lines arrive one event each: gather them and render once a frame.
    let batch: LogLine[] = [];
    let timer = 0;
    const flush = () => {
      timer = 0;
      const b = batch;
      batch = [];
      if (pausedRef.current) setHeld((h) => appendLines(h, b));
      else setLines((l) => appendLines(l, b));
    };
    readEventStream(
      path,
      (e) => {
        if (e.event !== 'log') return;
        setPhase('streaming');
        batch.push(JSON.parse(e.data) as LogLine);
        if (!timer) timer = window.setTimeout(flush, 50);
      },
      ac.signal,
    ).then(
      () => {
        if (ac.signal.aborted) return;
        if (timer) window.clearTimeout(timer);
        flush();
        setPhase('ended');
      },
      (err) => {
        if (ac.signal.aborted) return;
        setError(err);
        setPhase('failed');
      },
    );
    return () => {
      ac.abort();
      if (timer) window.clearTimeout(timer);
    };
  }, [path]);

  const resume = () => {
    setPaused(false);
    setLines((l) => appendLines(l, held));
    setHeld([]);
  };
  const shown = useMemo(() => matchLines(lines, search), [lines, search]);
  const withPod = item.kind !== 'Pod';
  const bottom = useRef<HTMLPreElement>(null);
  useEffect(() => {
    const el = bottom.current;
    if (el && follow && !paused) el.scrollTop = el.scrollHeight;
  }, [shown, follow, paused]);
  const download = () => {
    const url = URL.createObjectURL(new Blob([logText(lines, withPod)], { type: 'text/plain' }));
    const a = document.createElement('a');
    a.href = url;
    a.download = `${item.name}.log`;
    a.click();
    window.setTimeout(() => URL.revokeObjectURL(url), 1000);
  };

  return (
    <div className="logs">
      <div className="log-bar" role="toolbar" aria-label="Log controls">
        <div className="check">
          <input id="log-follow" type="checkbox" checked={follow} onChange={(e) => setFollow(e.target.checked)} />
          <label htmlFor="log-follow">Follow</label>
        </div>
        {follow && (
          <button type="button" className="btn" onClick={() => (paused ? resume() : setPaused(true))} aria-pressed={paused}>
            {paused ? 'Resume' : 'Pause'}
          </button>
        )}
        <input type="search" aria-label="Search the log" placeholder="Search (!text: lines without it)" value={search} onChange={(e) => setSearch(e.target.value)} />
        <button type="button" className="btn" onClick={download} disabled={lines.length === 0}>
          Download
        </button>
      </div>
      <p className="muted log-state" role="status">
        {phase === 'connecting' ? 'Connecting…' : phase === 'failed' ? 'Stopped.' : `${lines.length} line${lines.length === 1 ? '' : 's'}`}
        {search && phase !== 'failed' && `, ${shown.length} matching`}
        {paused && `; paused, ${held.length} new held back`}
        {phase === 'ended' && (follow ? '; the log ended.' : '.')}
        {phase === 'streaming' && follow && !paused && '; following.'}
      </p>
      <ErrorMessage error={error} what="The logs could not be read" />
      <pre className="code-block log-lines" ref={bottom} tabIndex={0} aria-label={`Logs of ${item.name}`}>
        {shown.map((l, i) => (
          <div key={i} className="log-line">
            {withPod && <span className="log-pod">{l.pod} </span>}
            {l.line}
          </div>
        ))}
      </pre>
    </div>
  );
}
