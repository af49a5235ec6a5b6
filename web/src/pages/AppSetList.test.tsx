import { renderToStaticMarkup } from 'react-dom/server';
import { describe, expect, it } from 'vitest';
import { SetGenerators } from './AppSetList';

describe('SetGenerators', () => {
  it('names the generators from the row', () => {
    const html = renderToStaticMarkup(<SetGenerators row={{ generators: ['git directories envs apps/*', 'clusters'], repos: ['git.example/team/envs'] }} />);
    expect(html).toContain('>git directories envs apps/*</span>');
    expect(html).toContain('>clusters</span>');
    expect(html).not.toContain('git envs<');
  });

  it('shows the repositories of a row without generators', () => {
    const html = renderToStaticMarkup(<SetGenerators row={{ repos: ['git.example/team/envs.git'] }} />);
    expect(html).toContain('git envs');
  });
});
