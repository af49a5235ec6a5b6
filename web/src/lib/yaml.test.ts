import { describe, expect, it } from 'vitest';
import { toYAML } from './yaml';

describe('toYAML', () => {
  it.each([
    ['a Deployment', {
      apiVersion: 'apps/v1', kind: 'Deployment',
      metadata: { name: 'web', labels: { app: 'web' }, annotations: {} },
      spec: { replicas: 2, template: { spec: { containers: [{ name: 'web', image: 'nginx:1.27', ports: [{ containerPort: 80 }] }] } } },
    }, `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  labels:
    app: web
  annotations: {}
spec:
  replicas: 2
  template:
    spec:
      containers:
      - name: web
        image: nginx:1.27
        ports:
        - containerPort: 80
`],
    ['strings that need quotes', { a: 'true', b: '80', c: '', d: 'x: y', e: '- z', f: ' lead', g: '*star', h: 'ok value' }, `a: "true"
b: "80"
c: ""
d: "x: y"
e: "- z"
f: " lead"
g: "*star"
h: ok value
`],
    ['multi-line strings', { script: 'echo a\necho b\n', keep: 'one\ntwo' }, `script: |
  echo a
  echo b
keep: |-
  one
  two
`],
    ['lists of scalars and lists', { xs: [1, 'two', null, true], ys: [[1, 2]], zs: [] }, `xs:
- 1
- two
- null
- true
ys:
-
  - 1
  - 2
zs: []
`],
    ['null and empty', null, 'null\n'],
    ['an empty object', {}, '{}\n'],
  ])('renders %s', (_name, input, want) => {
    expect(toYAML(input)).toBe(want);
  });
});
