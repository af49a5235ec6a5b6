import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { ConditionsNotice } from './ConditionsNotice';

describe('ConditionsNotice', () => {
  it('shows nothing without conditions', () => {
    expect(renderToStaticMarkup(<ConditionsNotice />)).toBe('');
    expect(renderToStaticMarkup(<ConditionsNotice conditions={[]} />)).toBe('');
  });

  it('counts warnings and lists each, as a status', () => {
    const html = renderToStaticMarkup(
      <ConditionsNotice conditions={[{ type: 'ExcludedResourceWarning', message: 'CiliumIdentity/x is excluded: not applied' }]} />,
    );
    expect(html).toContain('role="status"');
    expect(html).toContain('class="conditions conditions-warning"');
    expect(html).toContain('<strong>1 warning</strong>');
    expect(html).toContain('data-condition="ExcludedResourceWarning"');
    expect(html).toContain('CiliumIdentity/x is excluded: not applied');
  });

  it('puts an error first and alerts', () => {
    const html = renderToStaticMarkup(
      <ConditionsNotice
        conditions={[
          { type: 'ExcludedResourceWarning', message: 'w' },
          { type: 'ComparisonError', message: 'e' },
        ]}
      />,
    );
    expect(html).toContain('role="alert"');
    expect(html).toContain('<strong>1 error, 1 warning</strong>');
    expect(html.indexOf('ComparisonError')).toBeLessThan(html.indexOf('ExcludedResourceWarning'));
  });
});
