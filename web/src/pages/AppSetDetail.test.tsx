import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { SetApps } from './AppSetDetail';

describe('SetApps', () => {
  it('lists the running apps with sync and health, linked, and the others muted', () => {
    const html = renderToStaticMarkup(
      <SetApps
        apps={[{ project: 'default', name: 'envs-dev', sync: 'Synced', health: 'Healthy' }]}
        listed={['default/envs-dev', 'team-a/envs-prod']}
      />,
    );
    expect(html).toContain('Applications (2)');
    expect(html).toContain('href="/applications/default/envs-dev"');
    expect(html).toContain('Sync status: </span>Synced');
    expect(html).toContain('Health: </span>Healthy');
    expect(html).toMatch(/data-app="team-a\/envs-prod"><td>envs-prod<\/td><td>team-a<\/td>/);
    expect(html).toContain('not running, or not yours to see');
  });

  it('says when the set has no apps', () => {
    expect(renderToStaticMarkup(<SetApps apps={[]} listed={[]} />)).toContain('The set has no apps.');
  });
});
