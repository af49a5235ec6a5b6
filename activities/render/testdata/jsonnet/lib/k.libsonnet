// A tiny library, found through the lib path.
{
  labels(name, team):: {
    'app.kubernetes.io/name': name,
    'app.kubernetes.io/part-of': team,
  },

  deployment(name, image, replicas, team):: {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: { name: name, labels: $.labels(name, team) },
    spec: {
      replicas: replicas,
      selector: { matchLabels: $.labels(name, team) },
      template: {
        metadata: { labels: $.labels(name, team) },
        spec: { containers: [{ name: name, image: image }] },
      },
    },
  },

  service(name, team, port):: {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: { name: name, labels: $.labels(name, team) },
    spec: { selector: $.labels(name, team), ports: [{ port: port, targetPort: 8080 }] },
  },
}
