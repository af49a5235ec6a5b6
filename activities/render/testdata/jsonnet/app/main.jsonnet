// Top-level arguments: env (string), replicas (code). External variables:
// team (string), debug (code).
local k = import 'k.libsonnet';
local params = import 'params.libsonnet';

function(env, replicas=1)
  local name = 'web-' + env;
  local team = std.extVar('team');
  [
    k.deployment(name, params.image, replicas, team),
    k.service(name, team, params.port),
    [
      {
        apiVersion: 'v1',
        kind: 'ConfigMap',
        metadata: { name: name + '-settings' },
        data: {
          env: env,
          debug: std.toString(std.extVar('debug')),
          ratio: std.toString(replicas / 4),
          motd: importstr 'motd.txt',
        },
      },
    ],
  ]
