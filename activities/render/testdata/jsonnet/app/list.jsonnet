{
  apiVersion: 'v1',
  kind: 'List',
  items: [
    { apiVersion: 'v1', kind: 'ServiceAccount', metadata: { name: 'web-' + i } }
    for i in std.range(1, 3)
  ],
}
