import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import type { RolloutStatus } from '../api/types';
import { RolloutControls, RolloutSteps } from './RolloutPanel';

const halted: RolloutStatus = {
  set: 'envs',
  project: 'default',
  target: 'abc1234',
  phase: 'Halted',
  message: 'halted at step 2: default/envs-staging is Degraded',
  step: 1,
  haltedBy: 'default/envs-staging',
  steps: [
    { phase: 'Completed', maxUpdate: 1, apps: [{ project: 'default', name: 'envs-dev', phase: 'Healthy', attempt: 1 }] },
    {
      phase: 'Halted',
      maxUpdate: 2,
      apps: [
        { project: 'default', name: 'envs-staging', phase: 'Failed', attempt: 2, message: 'Deployment exceeded its progress deadline' },
        { project: 'default', name: 'envs-qa', phase: 'Healthy', attempt: 1 },
      ],
    },
    { phase: 'Waiting', maxUpdate: 1, apps: [{ project: 'default', name: 'envs-prod', phase: 'Waiting' }] },
  ],
  unmatched: ['default/envs-sandbox'],
};

const step = (env: string) => ({ matchExpressions: [{ key: 'env', operator: 'In', values: [env] }] });

/** text is the markup's text, without tags. */
const text = (html: string) => html.replace(/<[^>]+>/g, ' ').replace(/\s+/g, ' ');

describe('RolloutSteps', () => {
  const html = renderToStaticMarkup(<RolloutSteps rollout={halted} steps={[step('dev'), step('staging'), step('prod')]} />);

  it('shows each step with its selector, phase and progress', () => {
    const t = text(html);
    expect(t).toContain('Step 1 Step 1: Completed env in (dev) · 1 of 1 healthy · up to 1 at once');
    expect(t).toContain('Step 2 Step 2: Halted env in (staging) · 1 of 2 healthy · up to 2 at once');
    expect(t).toContain('Step 3 Step 3: Waiting env in (prod) · 0 of 1 healthy');
    expect(html.match(/aria-current="step"/g)).toHaveLength(1);
    expect(html).toMatch(/data-step="2" aria-current="step"|aria-current="step" data-step="2"/);
  });

  it('names the app that halted the rollout, and marks it in its step', () => {
    expect(text(html)).toContain('Halted by envs-staging : halted at step 2: default/envs-staging is Degraded');
    expect(html).toContain('role="alert"');
    expect(html).toMatch(/class="step-app halted-by" data-app="default\/envs-staging"/);
    expect(text(html)).toContain('try 2 Deployment exceeded its progress deadline');
  });

  it('links each app to its page and lists the apps no step selects', () => {
    expect(html).toContain('href="/applications/default/envs-prod"');
    expect(text(html)).toContain('No step selects this app, so the rollout never syncs it: envs-sandbox');
  });

  it('says when a step has no app, and shows a rollout without a message', () => {
    const done: RolloutStatus = { set: 's', target: 't', phase: 'Completed', step: 1, steps: [{ phase: 'Completed', maxUpdate: 0, apps: [] }] };
    const h = renderToStaticMarkup(<RolloutSteps rollout={done} steps={[{}]} />);
    expect(text(h)).toContain('every app');
    expect(text(h)).toContain('No app matches this step.');
    expect(h).not.toContain('aria-current');
    expect(h).not.toContain('role="alert"');
    // A rollout whose set does not declare its steps shows no selector.
    expect(text(renderToStaticMarkup(<RolloutSteps rollout={done} />))).not.toContain('every app');
  });
});

describe('RolloutControls', () => {
  const noop = () => undefined;
  const render = (phase: string, canUpdate: boolean | undefined) =>
    renderToStaticMarkup(<RolloutControls phase={phase} canUpdate={canUpdate} busy={false} onPause={noop} onResume={noop} onAbort={noop} />);
  const disabled = (html: string) =>
    [...html.matchAll(/<button[^>]*?(disabled="")?[^>]*>.*?<\/button>/g)].filter((m) => m[0].includes('disabled=""')).map((m) => text(m[0]).trim());

  it.each([
    ['Progressing', ['Resume']],
    ['Paused', ['Pause']],
    ['Halted', ['Pause']],
  ])('enables what applies to a %s rollout', (phase, off) => {
    expect(disabled(render(phase, true))).toEqual(off);
  });

  it('disables every control for a caller who may not update the set, saying why', () => {
    const html = render('Progressing', false);
    expect(disabled(html)).toEqual(['Pause', 'Resume', 'Abort']);
    expect(html).toContain('Not permitted: applicationsets, update');
  });
});
