/** The embedded local configuration: two `process` providers, `local` and `local-b`, run by the relay `local`. */

export const LOCAL_DEFAULT_CONFIG = {
  project: 'demo-egress',
  installationId: 'local',
  echoUrl: 'http://127.0.0.1:8088/',
  checkIntervalSeconds: 5,
  gcIntervalSeconds: 15,
  gcGraceSeconds: 30,
  unhealthyAfter: 3,
  probeTimeoutSeconds: 3,
  leaseSeconds: 30,
  backoffBaseSeconds: 2,
  backoffMaxSeconds: 60,
  heartbeatSeconds: 300,
  statusRefreshSeconds: 300,
  healthIntervalSeconds: 5,
  // A provider that recovered gets pool members back after 20 s of staying healthy (60 s deployed).
  poolRecoverSeconds: 20,
  checkBatchSize: 100,
  maxEvents: 50,
  providers: [
    {
      name: 'local',
      type: 'process',
      relay: 'local',
      // The local echo answers this provider's 127.1.0.0/16 as 17.0.0.0/16, in the US (infra/local/echo-map.ts).
      country: 'US',
      catalogue: { loopback: { bindAddress: '127.0.0.1' } },
      // The local relay reports every 2 s: notice silence and lost commands quickly.
      options: { heartbeatTimeoutSeconds: 15, commandResendSeconds: 10 },
    },
    {
      // A second provider on the same relay (its own ports and egress addresses: relay/config.ts),
      // so spread over providers and failover can be seen on one machine.
      name: 'local-b',
      type: 'process',
      relay: 'local',
      // Its 127.2.0.0/16 answers as 5.9.0.0/16, in DE.
      country: 'DE',
      catalogue: { loopback: { bindAddress: '127.0.0.1' } },
      options: { heartbeatTimeoutSeconds: 15, commandResendSeconds: 10 },
    },
  ],
};
