import {
  createContext,
  useCallback,
  useContext,
  useEffect,
  useRef,
  useState,
  type ButtonHTMLAttributes,
  type ReactNode,
} from 'react';
import { ApiError, describeError } from '../api/client';
import type { RevisionMetadata } from '../api/types';
import { dateTime } from '../lib/format';
import type { Allowed } from '../session';
import { Icon, type IconName } from './icons';

// Shared building blocks: status badges (icon + text + colour), error
// messages, dialogs, permission-aware buttons, tabs and notifications.

const syncIcons: Record<string, IconName> = { Synced: 'check', OutOfSync: 'arrowUp' };
const healthIcons: Record<string, IconName> = {
  Healthy: 'heart',
  Progressing: 'refresh',
  Degraded: 'cross',
  Suspended: 'pause',
  Missing: 'ghost',
};
const phaseIcons: Record<string, IconName> = {
  Succeeded: 'check',
  Running: 'refresh',
  Pending: 'pause',
  Failed: 'cross',
  Terminated: 'stop',
  Completed: 'check',
  Canceled: 'stop',
  TimedOut: 'alert',
  // ApplicationSets and their rollouts.
  Ready: 'check',
  Error: 'cross',
  Deleting: 'trash',
  Progressing: 'refresh',
  Paused: 'pause',
  Halted: 'alert',
  Aborted: 'stop',
  Waiting: 'pause',
  Syncing: 'refresh',
  Healthy: 'heart',
};

function cls(s: string): string {
  return s.replace(/[^A-Za-z]/g, '').toLowerCase() || 'unknown';
}

/** Badge shows a status as an icon, its name and a colour, never colour alone. */
export function Badge({ kind, value, label }: { kind: 'sync' | 'health' | 'phase'; value?: string; label?: string }) {
  const v = value || 'Unknown';
  const icons = kind === 'sync' ? syncIcons : kind === 'health' ? healthIcons : phaseIcons;
  const what = label ?? (kind === 'sync' ? 'Sync status' : kind === 'health' ? 'Health' : 'Result');
  return (
    <span className={`badge badge-${kind} st-${cls(v)}`} title={`${what}: ${v}`}>
      <Icon name={icons[v] ?? 'question'} size={14} className={v === 'Progressing' || v === 'Running' || v === 'Syncing' ? 'spin' : undefined} />
      <span className="sr-only">{what}: </span>
      {v}
    </span>
  );
}

/**
 * CommitMessage shows a commit's subject on one line, cut with an ellipsis
 * where it does not fit; the tooltip has all of it, with the author and date.
 */
export function CommitMessage({ message, author, date }: RevisionMetadata) {
  if (!message) return null;
  const by = [author && `by ${author}`, date && dateTime(date)].filter(Boolean).join(', ');
  return (
    <span className="commit-msg" title={by ? `${message}\n${by}` : message}>
      {message}
    </span>
  );
}

/** ErrorMessage shows an API error (RFC 9457) or any error readably. */
export function ErrorMessage({ error, what }: { error: unknown; what?: string }) {
  if (!error) return null;
  let hint = '';
  if (error instanceof ApiError) {
    if (error.status === 403) hint = 'Your account does not have the permission for this. Ask an administrator for a role that grants it.';
    else if (error.status === 0) hint = 'Check that the Windlass server is running.';
    else if (error.status === 501) hint = 'This server version does not have this feature yet.';
  }
  return (
    <div className="error" role="alert">
      <Icon name="alert" />
      <div>
        {what && <strong>{what}: </strong>}
        <span className="error-text">{describeError(error)}</span>
        {hint && <p className="hint">{hint}</p>}
      </div>
    </div>
  );
}

export function Spinner({ label = 'Loading…' }: { label?: string }) {
  return (
    <span className="spinner" role="status">
      <Icon name="refresh" className="spin" /> {label}
    </span>
  );
}

export interface GuardedButtonProps extends ButtonHTMLAttributes<HTMLButtonElement> {
  /** The permission check's answer: false disables (or hides) the button. */
  allowed?: Allowed;
  /** What the caller lacks, for the tooltip. */
  denied?: string;
  /** Hide the button when the permission is missing, instead of disabling it. */
  hideDenied?: boolean;
  icon?: IconName;
  variant?: 'primary' | 'danger' | 'plain';
}

/**
 * Button shows an action; when the caller's permissions forbid it, the
 * button is hidden or disabled with a tooltip saying why.
 */
export function Button({ allowed, denied, hideDenied, icon, variant, children, className, title, disabled, ...rest }: GuardedButtonProps) {
  if (allowed === false && hideDenied) return null;
  const forbidden = allowed === false;
  const tip = forbidden ? `Not permitted: ${denied ?? 'your role does not allow this'}` : title;
  return (
    <button
      type="button"
      className={['btn', variant ? `btn-${variant}` : '', className ?? ''].join(' ').trim()}
      disabled={disabled || forbidden}
      title={tip}
      aria-label={forbidden && typeof children === 'string' ? `${children} (not permitted)` : undefined}
      {...rest}
    >
      {icon && <Icon name={icon} />}
      {children}
    </button>
  );
}

/** Dialog is a modal <dialog>: focus stays inside, Escape closes it. */
export function Dialog({
  title,
  open,
  onClose,
  children,
  wide,
}: {
  title: string;
  open: boolean;
  onClose: () => void;
  children: ReactNode;
  wide?: boolean;
}) {
  const ref = useRef<HTMLDialogElement>(null);
  useEffect(() => {
    const d = ref.current;
    if (!d) return;
    if (open && !d.open) {
      if (typeof d.showModal === 'function') d.showModal();
      else d.setAttribute('open', '');
    } else if (!open && d.open) d.close();
  }, [open]);
  const titleId = `dlg-${title.replace(/\W+/g, '-').toLowerCase()}`;
  return (
    <dialog
      ref={ref}
      className={wide ? 'dialog dialog-wide' : 'dialog'}
      aria-labelledby={titleId}
      onClose={onClose}
      onCancel={(e) => {
        e.preventDefault();
        onClose();
      }}
    >
      {open && (
        <>
          <header className="dialog-head">
            <h2 id={titleId}>{title}</h2>
            <button type="button" className="btn btn-plain" onClick={onClose} aria-label="Close">
              <Icon name="cross" />
            </button>
          </header>
          <div className="dialog-body">{children}</div>
        </>
      )}
    </dialog>
  );
}

export interface TabSpec {
  id: string;
  label: string;
  icon?: IconName;
}

/** Tabs is an ARIA tab list; arrow keys move between tabs. */
export function Tabs({ tabs, active, onChange, label }: { tabs: TabSpec[]; active: string; onChange: (id: string) => void; label: string }) {
  const refs = useRef<(HTMLButtonElement | null)[]>([]);
  const move = (i: number) => {
    const n = (i + tabs.length) % tabs.length;
    onChange(tabs[n].id);
    refs.current[n]?.focus();
  };
  return (
    <div className="tabs" role="tablist" aria-label={label}>
      {tabs.map((t, i) => (
        <button
          key={t.id}
          ref={(el) => {
            refs.current[i] = el;
          }}
          type="button"
          role="tab"
          id={`tab-${t.id}`}
          aria-selected={active === t.id}
          aria-controls={`panel-${t.id}`}
          tabIndex={active === t.id ? 0 : -1}
          className={active === t.id ? 'tab tab-active' : 'tab'}
          onClick={() => onChange(t.id)}
          onKeyDown={(e) => {
            if (e.key === 'ArrowRight') move(i + 1);
            else if (e.key === 'ArrowLeft') move(i - 1);
            else if (e.key === 'Home') move(0);
            else if (e.key === 'End') move(tabs.length - 1);
            else return;
            e.preventDefault();
          }}
        >
          {t.icon && <Icon name={t.icon} />}
          {t.label}
        </button>
      ))}
    </div>
  );
}

export function TabPanel({ id, children }: { id: string; children: ReactNode }) {
  return (
    <div role="tabpanel" id={`panel-${id}`} aria-labelledby={`tab-${id}`} className="tabpanel">
      {children}
    </div>
  );
}

interface Toast {
  id: number;
  text: string;
  error?: boolean;
}

const ToastContext = createContext<(text: string, error?: boolean) => void>(() => undefined);

/** useToast returns a function that shows a short notification. */
export function useToast() {
  return useContext(ToastContext);
}

export function ToastProvider({ children }: { children: ReactNode }) {
  const [toasts, setToasts] = useState<Toast[]>([]);
  const next = useRef(1);
  const show = useCallback((text: string, error?: boolean) => {
    const id = next.current++;
    setToasts((t) => [...t, { id, text, error }]);
    window.setTimeout(() => setToasts((t) => t.filter((x) => x.id !== id)), error ? 10000 : 5000);
  }, []);
  return (
    <ToastContext.Provider value={show}>
      {children}
      <div className="toasts" aria-live="polite" role="status">
        {toasts.map((t) => (
          <div key={t.id} className={t.error ? 'toast toast-error' : 'toast'}>
            {t.text}
            <button type="button" className="btn btn-plain" aria-label="Dismiss" onClick={() => setToasts((x) => x.filter((y) => y.id !== t.id))}>
              <Icon name="cross" size={14} />
            </button>
          </div>
        ))}
      </div>
    </ToastContext.Provider>
  );
}

/**
 * DialogActions are a dialog's Cancel and confirm buttons. Without onConfirm
 * the confirm button submits the dialog's form.
 */
export function DialogActions({
  onCancel,
  cancelLabel = 'Cancel',
  label,
  busyLabel,
  busy,
  disabled,
  variant = 'primary',
  icon,
  onConfirm,
}: {
  onCancel: () => void;
  cancelLabel?: string;
  label: string;
  busyLabel?: string;
  busy?: boolean;
  disabled?: boolean;
  variant?: 'primary' | 'danger';
  icon?: IconName;
  onConfirm?: () => void;
}) {
  return (
    <div className="dialog-actions">
      <Button onClick={onCancel}>{cancelLabel}</Button>
      <Button type={onConfirm ? 'button' : 'submit'} variant={variant} icon={icon} onClick={onConfirm} disabled={busy || disabled}>
        {busy && busyLabel ? busyLabel : label}
      </Button>
    </div>
  );
}

/** Pager moves through pages fetched with cursors. */
export function Pager({ page, hasNext, onPrev, onNext, label, prevLabel = 'Previous', nextLabel = 'Next' }: {
  page: number;
  hasNext: boolean;
  onPrev: () => void;
  onNext: () => void;
  label: string;
  prevLabel?: string;
  nextLabel?: string;
}) {
  return (
    <nav className="pager" aria-label={label}>
      <Button disabled={page === 0} onClick={onPrev}>
        {prevLabel}
      </Button>
      <span>Page {page + 1}</span>
      <Button disabled={!hasNext} onClick={onNext}>
        {nextLabel}
      </Button>
    </nav>
  );
}

/** THead is a table's header row; actions adds a column for row buttons, labelled for screen readers. */
export function THead({ cols, actions }: { cols: string[]; actions?: boolean }) {
  return (
    <thead>
      <tr>
        {cols.map((c) => (
          <th scope="col" key={c}>
            {c}
          </th>
        ))}
        {actions && (
          <th scope="col">
            <span className="sr-only">Actions</span>
          </th>
        )}
      </tr>
    </thead>
  );
}

/** Field is a labelled form control. */
export function Field({ label, hint, children, id }: { label: string; hint?: string; children: ReactNode; id: string }) {
  return (
    <div className="field">
      <label htmlFor={id}>{label}</label>
      {children}
      {hint && (
        <small id={`${id}-hint`} className="hint">
          {hint}
        </small>
      )}
    </div>
  );
}

/** useAction runs an API call for a form or dialog, keeping its error and busy state. */
export function useAction() {
  const [error, setError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const run = async (f: () => Promise<void>) => {
    setBusy(true);
    setError(null);
    try {
      await f();
    } catch (e) {
      setError(e);
    } finally {
      setBusy(false);
    }
  };
  return { error, busy, run, setError };
}

/** useAsync loads data and reloads when deps change. */
export function useAsync<T>(load: (signal: AbortSignal) => Promise<T>, deps: unknown[]) {
  const [state, setState] = useState<{ data?: T; error?: unknown; loading: boolean }>({ loading: true });
  const [tick, setTick] = useState(0);
  useEffect(() => {
    const ac = new AbortController();
    setState((s) => ({ ...s, loading: true }));
    load(ac.signal).then(
      (data) => !ac.signal.aborted && setState({ data, loading: false }),
      (error) => !ac.signal.aborted && setState({ error, loading: false }),
    );
    return () => ac.abort();
  }, [...deps, tick]);
  const reload = useCallback(() => setTick((t) => t + 1), []);
  return { ...state, reload, setData: (data: T) => setState({ data, loading: false }) };
}
